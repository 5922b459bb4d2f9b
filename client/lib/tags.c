/* SPDX-License-Identifier: MIT */
/*
 * pmemz_tag_foreach: the caller's tags in a region, any number of them.
 * LIST with a name prefix, one page (one frame) per request: the daemon
 * answers with the tags from a tag-table slot on and where the next page
 * starts, so the walk sees every tag that exists throughout exactly once
 * (slots do not move), and never holds more than one page of the reply.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* One page from slot start: 0 with *resp, or -errno. */
static int tags_page(struct pmemz_region *r, const char *prefix, uint64_t start,
		     Pmemz__Response **resp)
{
	const struct pmemz_wire_list q = {
	    .prefix = prefix, .paged = true, .start_slot = start, .more_runs_ok = true};

	return pmemz_wire_list(r->c, r->name, &q, resp);
}

PMEMZ_EXPORT int pmemz_tag_foreach(struct pmemz_region *r, const char *prefix,
				   int (*fn)(struct pmemz_alloc *a, const char *tag, void *arg),
				   void *arg)
{
	uint64_t start = 0;
	size_t plen;
	int ret;

	if (!r || !fn)
		return pmemz_err(-EINVAL, "pmemz_tag_foreach: NULL %s", r ? "callback" : "region");
	if (!prefix)
		prefix = "";
	plen = strlen(prefix);
	ret = pmemz_region_check(r);
	if (ret < 0)
		return ret;

	for (;;) {
		_cleanup_response_ Pmemz__Response *resp = NULL;
		const Pmemz__ListResp *lr;

		ret = tags_page(r, prefix, start, &resp);
		if (ret < 0)
			return ret;
		lr = resp->list;
		/* Slots only go up: a daemon that sends us back would loop for ever. */
		if (lr->has_next_slot && lr->next_slot <= start)
			return pmemz_err(-EPROTO, "daemon's tag listing went back to slot %llu",
					 (unsigned long long)lr->next_slot);
		for (size_t i = 0; i < lr->n_tags; i++) {
			const Pmemz__TagInfo *t = lr->tags[i];
			struct pmemz_alloc *a;

			/* A daemon older than 1.3 knows no prefix: it lists every tag. */
			if (strncmp(t->name, prefix, plen) != 0)
				continue;
			ret = pmemz_alloc_from_taginfo(r, t, &a);
			if (ret < 0)
				return ret;
			/* fn owns a (and may keep it after the walk, its tag name too) */
			ret = fn(a, pmemz_alloc_tag(a), arg);
			if (ret != 0)
				return ret;
		}
		if (!lr->has_next_slot)
			return 0;
		start = lr->next_slot;
	}
}
