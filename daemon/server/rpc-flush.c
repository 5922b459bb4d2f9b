/* SPDX-License-Identifier: MIT */
/*
 * FLUSH: make byte ranges of the region durable (optionally deep flush).
 *
 * Only the caller's own extents: those leased to this connection and those
 * committed under tags of its uid (anything else is -EPERM), at most
 * FLUSH_RANGES_MAX ranges per request.  Overlapping ranges are merged, so
 * one request flushes each byte at most once, and the flushing runs as a
 * sliced job (rpc.h), so a FLUSH of gigabytes does not hold the main loop.
 * The reply waits for the group commit's drain: the ranges are durable
 * when it arrives.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "lease.h"
#include "rpc.h"
#include "vector.h"

#define FLUSH_RANGES_MAX 256u
/* Bytes flushed between two looks at the clock. */
#define FLUSH_CHUNK (4ull << 20)

struct byte_range {
	uint64_t off, len;
};

struct flush_job {
	struct manager_region *mr; /* stable: reload keeps a region a job names (rpc_job_region) */
	bool deep;
	struct byte_range *ranges; /* sorted, disjoint */
	size_t n, next;
	uint64_t done; /* bytes of ranges[next] already flushed */
};

static void flush_job_free(void *p)
{
	struct flush_job *j = p;

	if (!j)
		return;
	free(j->ranges);
	free(j);
}

struct run_set {
	struct run *runs;
	size_t n, cap;
};

static int run_set_add(struct run_set *s, const struct run *runs, size_t n)
{
	size_t need;
	int r = pmemz_add_size(s->n, n, &need);

	if (r < 0 || (r = PMEMZ_GROW(s->runs, &s->cap, need)) < 0)
		return r;
	memcpy(s->runs + s->n, runs, n * sizeof(*runs));
	s->n += n;
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_range(const void *a, const void *b)
{
	const struct byte_range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The extents c may flush in mr, sorted: its leases there and its uid's tags. */
static int owned_runs(struct rpc_call *call, struct manager_region *mr, struct run_set *s)
{
	struct lease *l;
	int r;

	LIST_FOREACH(l, &call->c->leases, owner_link) {
		if (l->region != mr->index)
			continue;
		r = run_set_add(s, l->runs, l->n_runs);
		if (r < 0)
			return r;
	}
	for (uint32_t id = region_tag_next(mr->r, 0); id; id = region_tag_next(mr->r, id)) {
		_cleanup_free_ struct run *runs = NULL;
		const char *name;
		uint64_t n_extents;
		size_t n = 0;
		uid_t uid;

		if (region_tag_get(mr->r, id, &name, &uid) < 0 || uid != call->c->uid)
			continue;
		r = region_tag_runs(mr->r, id, &runs, &n, &n_extents);
		if (r < 0)
			return r;
		r = run_set_add(s, runs, n);
		if (r < 0)
			return r;
	}
	if (s->n > 1)
		qsort(s->runs, s->n, sizeof(*s->runs), cmp_run);
	return 0;
}

/* Extents [first, first + count) all in the sorted runs? */
static bool runs_cover(const struct run_set *s, uint64_t first, uint64_t count)
{
	size_t lo = 0, hi = s->n;

	/* The last run starting at or before first. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->runs[mid].first <= first)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	for (size_t i = lo - 1; i < s->n && count > 0; i++) {
		const struct run *rn = &s->runs[i];
		uint64_t end = rn->first + rn->count, take;

		if (rn->first > first || end <= first)
			return false;
		take = MIN(count, end - first);
		first += take;
		count -= take;
	}
	return count == 0;
}

static int flush_step(struct rpc_call *call, void *state, uint64_t deadline_ns)
{
	struct flush_job *j = state;
	struct manager_region *mr = j->mr;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__FlushResp fl = PMEMZ__FLUSH_RESP__INIT;

	while (j->next < j->n) {
		const struct byte_range *br = &j->ranges[j->next];
		uint64_t len = MIN(FLUSH_CHUNK, br->len - j->done);
		int r = j->deep ? region_deep_flush(mr->r, br->off + j->done, len)
				: region_flush(mr->r, br->off + j->done, len);

		if (r < 0)
			return rpc_fail(call, r, "%sflush failed: %s", j->deep ? "deep " : "",
					strerror(-r));
		j->done += len;
		if (j->done == br->len) {
			j->next++;
			j->done = 0;
		}
		if (j->next < j->n && pmemz_now_ns() >= deadline_ns)
			return 1;
	}
	resp.op_case = PMEMZ__RESPONSE__OP_FLUSH;
	resp.flush = &fl;
	return rpc_reply(call, &resp, -1, RPC_REPLY_COMMIT);
}

static int rpc_flush_handler(struct rpc_call *call)
{
	const Pmemz__FlushReq *req = call->req->flush;
	_cleanup_free_ struct run *owned_storage = NULL;
	struct run_set owned = {0};
	struct flush_job *j;
	struct manager_region *mr;
	uint64_t size, data_start, data_end, esz;
	size_t n = 0;
	int r;

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	if (req->n_ranges > FLUSH_RANGES_MAX)
		return rpc_fail(call, -E2BIG, "%zu ranges in one FLUSH, at most %u", req->n_ranges,
				FLUSH_RANGES_MAX);
	size = mr->info.size;
	esz = mr->info.extent_size;
	data_start = mr->info.data_offset;
	data_end = data_start + mr->info.extent_count * esz;
	/* Check every range before flushing any. */
	for (size_t i = 0; i < req->n_ranges; i++) {
		const Pmemz__ByteRange *br = req->ranges[i];

		if (br->offset > size || br->length > size - br->offset)
			return rpc_fail(call, -ERANGE,
					"range %" PRIu64 "+%" PRIu64
					" outside region '%s' (%" PRIu64 " bytes)",
					br->offset, br->length, mr->info.name, size);
		if (br->length && (br->offset < data_start || br->offset + br->length > data_end))
			return rpc_fail(call, -ERANGE,
					"range %" PRIu64 "+%" PRIu64
					" outside the data area of region '%s'",
					br->offset, br->length, mr->info.name);
	}
	r = owned_runs(call, mr, &owned);
	owned_storage = owned.runs;
	if (r < 0)
		return rpc_fail(call, r, "listing your extents failed: %s", strerror(-r));
	j = calloc(1, sizeof(*j));
	if (j)
		j->ranges = calloc(MAX(req->n_ranges, (size_t)1), sizeof(*j->ranges));
	if (!j || !j->ranges) {
		flush_job_free(j);
		return rpc_fail(call, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < req->n_ranges; i++) {
		const Pmemz__ByteRange *br = req->ranges[i];
		uint64_t first, last;

		if (br->length == 0)
			continue;
		first = (br->offset - data_start) / esz;
		last = (br->offset + br->length - 1 - data_start) / esz;
		if (!runs_cover(&owned, first, last - first + 1)) {
			flush_job_free(j);
			return rpc_fail(call, -EPERM,
					"range %" PRIu64 "+%" PRIu64
					" is not in your leases or tags in region '%s'",
					br->offset, br->length, mr->info.name);
		}
		j->ranges[n++] = (struct byte_range){.off = br->offset, .len = br->length};
	}
	/* Merge overlaps: each byte once. */
	if (n > 1) {
		size_t k = 0;

		qsort(j->ranges, n, sizeof(*j->ranges), cmp_range);
		for (size_t i = 1; i < n; i++) {
			struct byte_range *last = &j->ranges[k];
			uint64_t end = last->off + last->len;

			if (j->ranges[i].off <= end)
				last->len = MAX(end, j->ranges[i].off + j->ranges[i].len) - last->off;
			else
				j->ranges[++k] = j->ranges[i];
		}
		n = k + 1;
	}
	j->n = n;
	j->mr = mr;
	j->deep = req->has_deep && req->deep;
	return rpc_job_start(call, mr, flush_step, flush_job_free, j,
			     sizeof(*j) + n * sizeof(*j->ranges));
}

const struct rpc_descriptor rpc_flush = {
    .name = "FLUSH",
    .op = PMEMZ__REQUEST__OP_FLUSH,
    .admin_only = false,
    .handler = rpc_flush_handler,
};
