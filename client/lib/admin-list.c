/* SPDX-License-Identifier: MIT */
/*
 * pmemz_admin_list (libpmemzadmin.h): every tag of a region under a prefix,
 * LIST page by page (each page one frame), kept as the answers came.
 */
#include <errno.h>
#include <stdlib.h>

#include "libpmemzadmin.h"
#include "wire.h"
#include "vector.h"

/* More pages than this: a daemon that never says "no more". */
#define LIST_PAGES_MAX 1000000u

struct pmemz_taglist {
	Pmemz__Response **pages;
	size_t n_pages, cap_pages;
	const Pmemz__TagInfo **tags; /* into the pages */
	size_t n, cap;
};

PMEMZ_EXPORT void pmemz_taglist_free(struct pmemz_taglist *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n_pages; i++)
		pmemz_response_free(l->pages[i]);
	free(l->pages);
	free(l->tags);
	free(l);
}

/* Keep page resp (taken) and index its tags: 0, -ENOMEM or -EOVERFLOW. */
static int list_add_page(struct pmemz_taglist *l, Pmemz__Response *resp)
{
	const Pmemz__ListResp *lr = resp->list;

	size_t need;
	int r = PMEMZ_GROW(l->pages, &l->cap_pages, l->n_pages + 1);

	if (r < 0) {
		pmemz_response_free(resp);
		return r;
	}
	l->pages[l->n_pages++] = resp;
	r = pmemz_add_size(l->n, lr->n_tags, &need);
	if (r == 0)
		r = PMEMZ_GROW(l->tags, &l->cap, need);
	if (r < 0)
		return r;
	for (size_t i = 0; i < lr->n_tags; i++)
		l->tags[l->n++] = lr->tags[i];
	return 0;
}

PMEMZ_EXPORT int pmemz_admin_list(struct pmemz_client *c, const char *region, const char *prefix,
				  unsigned flags, struct pmemz_taglist **out)
{
	struct pmemz_wire_list q = {.prefix = prefix,
				    .paged = true,
				    .all_users = flags & PMEMZ_LIST_ALL_USERS,
				    .more_runs_ok = flags & PMEMZ_LIST_FIRST_RUNS};
	struct pmemz_taglist *l;
	int r = 0;

	if (!c || !out || !region)
		return pmemz_err(-EINVAL, "pmemz_admin_list: NULL argument");
	*out = NULL;
	if (flags & ~(PMEMZ_LIST_ALL_USERS | PMEMZ_LIST_FIRST_RUNS))
		return pmemz_err(-EINVAL, "pmemz_admin_list: unknown flags 0x%x", flags);
	l = calloc(1, sizeof(*l));
	if (!l)
		return pmemz_err(-ENOMEM, "out of memory");
	for (size_t page = 0; r == 0 && page < LIST_PAGES_MAX; page++) {
		Pmemz__Response *resp = NULL;
		bool more;
		uint64_t next;

		r = pmemz_wire_list(c, region, &q, &resp);
		if (r < 0)
			break;
		/* A daemon without paging answers everything at once, without next_slot. */
		more = resp->list->has_next_slot;
		next = resp->list->next_slot;
		r = list_add_page(l, resp);
		if (r < 0) {
			r = pmemz_err(r, "cannot keep the tags: %s", pmemz_strerror(r));
			break;
		}
		if (!more)
			break;
		if (next <= q.start_slot) {
			r = pmemz_err(-EPROTO, "LIST paging went backwards (slot %llu after %llu)",
				      (unsigned long long)next, (unsigned long long)q.start_slot);
			break;
		}
		q.start_slot = next;
	}
	if (r < 0) {
		pmemz_taglist_free(l);
		return r;
	}
	*out = l;
	return 0;
}

PMEMZ_EXPORT size_t pmemz_taglist_count(const struct pmemz_taglist *l)
{
	return l ? l->n : 0;
}

PMEMZ_EXPORT const char *pmemz_taglist_name(const struct pmemz_taglist *l, size_t i)
{
	return l && i < l->n ? l->tags[i]->name : NULL;
}

PMEMZ_EXPORT unsigned pmemz_taglist_uid(const struct pmemz_taglist *l, size_t i)
{
	return l && i < l->n ? l->tags[i]->uid : 0;
}

PMEMZ_EXPORT uint64_t pmemz_taglist_bytes(const struct pmemz_taglist *l, size_t i)
{
	return l && i < l->n ? l->tags[i]->bytes : 0;
}

PMEMZ_EXPORT size_t pmemz_taglist_runs(const struct pmemz_taglist *l, size_t i)
{
	return l && i < l->n ? l->tags[i]->n_runs : 0;
}

PMEMZ_EXPORT int pmemz_taglist_run(const struct pmemz_taglist *l, size_t i, size_t k,
				   uint64_t *first, uint64_t *count)
{
	if (k >= pmemz_taglist_runs(l, i) || !first || !count)
		return pmemz_err(-EINVAL, "pmemz_taglist_run: no run %zu of tag %zu", k, i);
	*first = l->tags[i]->runs[k]->first;
	*count = l->tags[i]->runs[k]->count;
	return 0;
}
