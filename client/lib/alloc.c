/* SPDX-License-Identifier: MIT */
/*
 * Allocation handles: a lease from ALLOCATE or a committed tag, as a list of
 * extent runs.  Extent i of the region lives at
 * base + data_offset + i * extent_size in the caller's mapping.  Each handle
 * holds a reference on its region, so the mapping outlives
 * pmemz_region_close() until the last handle is closed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int pmemz_runs_from_wire(const struct pmemz_region *r, Pmemz__Run *const *wr, size_t n,
			 struct pmemz_run **out, size_t *total_extents)
{
	_cleanup_free_ struct pmemz_run *runs = NULL;
	uint64_t total = 0, end;

	*out = NULL;
	*total_extents = 0;
	if (n == 0)
		return pmemz_err(-EPROTO, "daemon sent an empty extent list for region '%s'",
				 r->name);
	runs = calloc(n, sizeof(*runs));
	if (!runs)
		return pmemz_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (wr[i]->count == 0 || __builtin_add_overflow(wr[i]->first, wr[i]->count, &end) ||
		    end > r->extent_count || __builtin_add_overflow(total, wr[i]->count, &total))
			return pmemz_err(-EPROTO,
					 "daemon sent extents %llu+%llu outside region '%s' "
					 "(%llu extents)",
					 (unsigned long long)wr[i]->first,
					 (unsigned long long)wr[i]->count, r->name,
					 (unsigned long long)r->extent_count);
		runs[i].first = wr[i]->first;
		runs[i].count = wr[i]->count;
	}
	*out = TAKE_PTR(runs);
	*total_extents = (size_t)total;
	return 0;
}

static void alloc_free(struct pmemz_alloc *a)
{
	pthread_mutex_destroy(&a->lock);
	pmemz_region_unref(a->r);
	free(a->runs);
	free(a->tag);
	free(a);
}

/* Append n runs from the wire to all[*have..total), checked. */
static int runs_append(const struct pmemz_region *r, Pmemz__Run *const *wr, size_t n,
		       struct pmemz_run *all, uint64_t total, size_t *have, size_t *sum)
{
	_cleanup_free_ struct pmemz_run *part = NULL;
	size_t extents;
	int ret;

	if (n > total - *have)
		return pmemz_err(-EPROTO, "daemon sent more than %llu runs",
				 (unsigned long long)total);
	ret = pmemz_runs_from_wire(r, wr, n, &part, &extents);
	if (ret < 0)
		return ret;
	memcpy(all + *have, part, n * sizeof(*part));
	*have += n;
	*sum += extents;
	return 0;
}

/*
 * The runs of a lease or tag whose ALLOCATE or LIST reply carried only the
 * first n of total: RUNS requests, one frame each, for the rest.  *out gets
 * all total runs.
 */
static int runs_fetch(struct pmemz_region *r, uint64_t lease, const char *tag,
		      Pmemz__Run *const *wr, size_t n, uint64_t total, struct pmemz_run **out,
		      size_t *extents)
{
	_cleanup_free_ struct pmemz_run *all = NULL;
	size_t have = 0, sum = 0;
	int ret;

	if (total > r->extent_count)
		return pmemz_err(-EPROTO, "daemon announced %llu runs in region '%s'",
				 (unsigned long long)total, r->name);
	all = calloc((size_t)total, sizeof(*all));
	if (!all)
		return pmemz_err(-ENOMEM, "out of memory");
	ret = runs_append(r, wr, n, all, total, &have, &sum);
	while (ret == 0 && have < total) {
		_cleanup_response_ Pmemz__Response *resp = NULL;

		ret = pmemz_wire_runs(r->c, r->name, lease, tag, have, &resp);
		if (ret < 0)
			return ret;
		if (resp->runs->total_runs != total || resp->runs->n_runs == 0)
			return pmemz_err(-EPROTO,
					 "daemon's runs changed: %zu runs from %zu of %llu",
					 resp->runs->n_runs, have, (unsigned long long)total);
		ret = runs_append(r, resp->runs->runs, resp->runs->n_runs, all, total, &have, &sum);
	}
	if (ret < 0)
		return ret;
	if (sum > r->extent_count)
		return pmemz_err(-EPROTO, "daemon sent %zu extents for region '%s' of %llu", sum,
				 r->name, (unsigned long long)r->extent_count);
	*out = TAKE_PTR(all);
	*extents = sum;
	return 0;
}

/*
 * A handle for runs from the wire; total > n: the reply held the first n of
 * total runs, the rest of lease (or tag) is read with RUNS.
 */
static int alloc_make(struct pmemz_region *r, Pmemz__Run *const *wr, size_t n, uint64_t total,
		      uint64_t lease, const char *tag, struct pmemz_alloc **out)
{
	struct pmemz_alloc *a;
	size_t extents;
	int ret;

	a = calloc(1, sizeof(*a));
	if (!a)
		return pmemz_err(-ENOMEM, "out of memory");
	if (total > n) {
		ret = runs_fetch(r, lease, tag, wr, n, total, &a->runs, &extents);
		n = (size_t)total;
	} else {
		ret = pmemz_runs_from_wire(r, wr, n, &a->runs, &extents);
	}
	if (ret < 0) {
		free(a);
		return ret;
	}
	pthread_mutex_init(&a->lock, NULL);
	a->n_runs = n;
	a->bytes = extents * (size_t)r->extent_size; /* inside the mapping: no overflow */
	a->r = r;
	pmemz_region_ref(r);
	*out = a;
	return 0;
}

/* A lease of a connection that pmemz_client_reconnect() replaced: the daemon released it. */
static bool alloc_lease_lost(const struct pmemz_alloc *a)
{
	return !a->committed && a->epoch != pmemz_client_epoch(a->r->c);
}

/* FREE a lease or a tag. */
static int alloc_free_rpc(struct pmemz_region *r, uint64_t lease, const char *tag)
{
	int ret = pmemz_region_check(r);

	if (ret < 0)
		return ret;
	return pmemz_wire_free(r->c, r->name, lease, tag, NULL);
}

static int allocate_submit(struct pmemz_region *r, uint64_t bytes, bool nowait,
			   struct pmemz_pending **ticket)
{
	return pmemz_wire_allocate(r->c, r->name, bytes, nowait, 1, ticket);
}

/* Wait for an ALLOCATE and make its handle; a lease we cannot describe is given back. */
static int allocate_collect(struct pmemz_region *r, struct pmemz_pending *ticket,
			    struct pmemz_alloc **out)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	uint64_t epoch = 0;
	int ret;

	ret = pmemz_client_wait_epoch(r->c, ticket, &resp, NULL, &epoch);
	if (ret < 0)
		return ret;
	ret = pmemz_check_response(PMEMZ__REQUEST__OP_ALLOCATE, resp);
	if (ret < 0)
		return ret;
	/*
	 * A reserved answer may have waited while the daemon died: its lease
	 * died with the connection and may be re-zeroed and granted to someone
	 * else, so writing into it would leak into their extent.  Hand out no
	 * lease of a connection the daemon has hung up.
	 */
	ret = pmemz_client_check_alive(r->c, epoch);
	if (ret < 0)
		return ret; /* nothing to give back: the lease died with the connection */
	ret = alloc_make(r, resp->allocate->runs, resp->allocate->n_runs,
			 resp->allocate->has_total_runs ? resp->allocate->total_runs : 0,
			 resp->allocate->lease, NULL, out);
	if (ret < 0) {
		char msg[512];

		/* Do not keep a lease we cannot describe; keep the reason. */
		(void)snprintf(msg, sizeof(msg), "%s", pmemz_errormsg());
		(void)alloc_free_rpc(r, resp->allocate->lease, NULL);
		return pmemz_err(ret, "%s", msg);
	}
	(*out)->lease = resp->allocate->lease;
	(*out)->epoch = epoch;
	return 0;
}

/* An allocation of n extents out of the reserve's queue: true when *out is set. */
static bool alloc_from_reserve(struct pmemz_region *r, uint64_t n, unsigned flags,
			       struct pmemz_alloc **out)
{
	struct pmemz_reserve_take tk;
	struct pmemz_pending *t;

	if (!pmemz_reserve_begin(r, n, flags, &tk))
		return false;
	while ((t = pmemz_reserve_next(r, &tk)))
		pmemz_reserve_collected(r, &tk, allocate_collect(r, t, out));
	return pmemz_reserve_end(r, &tk);
}

PMEMZ_EXPORT int pmemz_alloc_new(struct pmemz_region *r, size_t bytes, unsigned flags,
				 struct pmemz_alloc **out)
{
	struct pmemz_pending *ticket;
	uint64_t n;
	int ret;

	if (!out)
		return pmemz_err(-EINVAL, "pmemz_alloc_new: out is NULL");
	*out = NULL;
	if (!r)
		return pmemz_err(-EINVAL, "pmemz_alloc_new: region is NULL");
	if (bytes == 0)
		return pmemz_err(-EINVAL, "pmemz_alloc_new: cannot allocate 0 bytes");
	if (flags & ~(PMEMZ_ALLOC_NOWAIT | PMEMZ_ALLOC_DIRECT))
		return pmemz_err(-EINVAL, "pmemz_alloc_new: unknown flags 0x%x", flags);
	ret = pmemz_region_check(r);
	if (ret < 0)
		return ret;

	n = (uint64_t)bytes / r->extent_size + ((uint64_t)bytes % r->extent_size != 0);
	if (!(flags & PMEMZ_ALLOC_DIRECT) && alloc_from_reserve(r, n, flags, out))
		return 0;

	ret = allocate_submit(r, bytes, !!(flags & PMEMZ_ALLOC_NOWAIT), &ticket);
	if (ret < 0)
		return ret;
	ret = allocate_collect(r, ticket, out);
	if (ret < 0)
		return ret;
	if (!(flags & PMEMZ_ALLOC_DIRECT))
		pmemz_reserve_after_direct(r, n);
	return 0;
}

PMEMZ_EXPORT size_t pmemz_alloc_count(const struct pmemz_alloc *a)
{
	return a ? a->n_runs : 0;
}

PMEMZ_EXPORT void *pmemz_alloc_range(const struct pmemz_alloc *a, size_t i, size_t *len)
{
	const struct pmemz_region *r;

	if (len)
		*len = 0;
	if (!a) {
		(void)pmemz_err(-EINVAL, "pmemz_alloc_range: allocation is NULL");
		return NULL;
	}
	if (i >= a->n_runs) {
		(void)pmemz_err(-EINVAL, "pmemz_alloc_range: range %zu of %zu does not exist", i,
				a->n_runs);
		return NULL;
	}
	r = a->r;
	if (len)
		*len = (size_t)(a->runs[i].count * r->extent_size);
	return r->base + r->data_offset + a->runs[i].first * r->extent_size;
}

PMEMZ_EXPORT size_t pmemz_alloc_size(const struct pmemz_alloc *a)
{
	return a ? a->bytes : 0;
}

PMEMZ_EXPORT int pmemz_alloc_commit(struct pmemz_alloc *a, const char *tag, unsigned flags)
{
	_cleanup_free_ char *name = NULL;
	struct pmemz_wire_commit cm;
	int ret;

	if (!a)
		return pmemz_err(-EINVAL, "pmemz_alloc_commit: allocation is NULL");
	if (!tag || !*tag)
		return pmemz_err(-EINVAL, "pmemz_alloc_commit: empty tag");
	if (flags & ~PMEMZ_COMMIT_FLUSH)
		return pmemz_err(-EINVAL, "pmemz_alloc_commit: unknown flags 0x%x", flags);
	name = strdup(tag);
	if (!name)
		return pmemz_err(-ENOMEM, "out of memory");

	pthread_mutex_lock(&a->lock);
	if (a->committed) {
		ret =
		    pmemz_err(-EINVAL, "pmemz_alloc_commit: already committed as tag '%s'", a->tag);
		pthread_mutex_unlock(&a->lock);
		return ret;
	}
	if (alloc_lease_lost(a)) {
		ret = pmemz_err(-ESTALE,
				"pmemz_alloc_commit: lease %llu of region '%s' was lost with the "
				"connection that pmemz_client_reconnect() replaced",
				(unsigned long long)a->lease, a->r->name);
		pthread_mutex_unlock(&a->lock);
		return ret;
	}
	ret = pmemz_region_check(a->r);
	if (ret < 0) {
		pthread_mutex_unlock(&a->lock);
		return ret;
	}

	cm = (struct pmemz_wire_commit){
	    .lease = a->lease, .tag = name, .flush = !!(flags & PMEMZ_COMMIT_FLUSH)};
	ret = pmemz_wire_commit(a->r->c, a->r->name, &cm, NULL);
	if (ret == 0) {
		a->tag = TAKE_PTR(name);
		a->committed = true;
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

PMEMZ_EXPORT int pmemz_alloc_open(struct pmemz_region *r, const char *tag, struct pmemz_alloc **out)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	const Pmemz__TagInfo *t = NULL;
	int ret;

	if (!out)
		return pmemz_err(-EINVAL, "pmemz_alloc_open: out is NULL");
	*out = NULL;
	if (!r)
		return pmemz_err(-EINVAL, "pmemz_alloc_open: region is NULL");
	if (!tag || !*tag)
		return pmemz_err(-EINVAL, "pmemz_alloc_open: empty tag");
	ret = pmemz_region_check(r);
	if (ret < 0)
		return ret;
	ret = pmemz_wire_list(r->c, r->name,
			      &(struct pmemz_wire_list){.tag = tag, .more_runs_ok = true}, &resp);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < resp->list->n_tags && !t; i++)
		if (strcmp(resp->list->tags[i]->name, tag) == 0)
			t = resp->list->tags[i];
	if (!t)
		return pmemz_err(-ENOENT, "no tag '%s' in region '%s'", tag, r->name);

	return pmemz_alloc_from_taginfo(r, t, out);
}

int pmemz_alloc_from_taginfo(struct pmemz_region *r, const Pmemz__TagInfo *t,
			     struct pmemz_alloc **out)
{
	_cleanup_free_ char *name = strdup(t->name);
	int ret;

	if (!name)
		return pmemz_err(-ENOMEM, "out of memory");
	ret =
	    alloc_make(r, t->runs, t->n_runs, t->has_total_runs ? t->total_runs : 0, 0, name, out);
	if (ret < 0)
		return ret;
	(*out)->tag = TAKE_PTR(name);
	(*out)->committed = true;
	return 0;
}

int pmemz_alloc_from_runs(struct pmemz_region *r, Pmemz__Run *const *wr, size_t n, char *tag,
			  struct pmemz_alloc **out)
{
	int ret = alloc_make(r, wr, n, 0, 0, tag, out);

	if (ret < 0)
		return ret;
	(*out)->tag = tag;
	(*out)->committed = true;
	return 0;
}

PMEMZ_EXPORT const char *pmemz_alloc_tag(const struct pmemz_alloc *a)
{
	return a && a->committed ? a->tag : NULL;
}

PMEMZ_EXPORT int pmemz_alloc_release(struct pmemz_alloc *a)
{
	int ret;

	if (!a)
		return pmemz_err(-EINVAL, "pmemz_alloc_release: allocation is NULL");
	/*
	 * A lost lease is free already: the daemon released it with its
	 * connection; a tag whose every extent a batch moved away is gone.
	 */
	if (alloc_lease_lost(a) || (a->committed && a->n_runs == 0))
		ret = 0;
	else
		ret = alloc_free_rpc(a->r, a->lease, a->committed ? a->tag : NULL);
	alloc_free(a);
	return ret;
}

PMEMZ_EXPORT void pmemz_alloc_close(struct pmemz_alloc *a)
{
	if (!a)
		return;
	if (!a->committed && !alloc_lease_lost(a)) {
		char msg[512];

		/* Best effort (the daemon frees it at disconnect anyway); keep the last error. */
		(void)snprintf(msg, sizeof(msg), "%s", pmemz_errormsg());
		if (alloc_free_rpc(a->r, a->lease, NULL) < 0)
			(void)pmemz_err(0, "%s", msg);
	}
	alloc_free(a);
}
