/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "connection.h"
#include "heap.h"
#include "lease.h"
#include "pmemz-version.h"
#include "regions.h"
#include "rpc.h"
#include "waitq.h"

struct stat_reply {
	Pmemz__RegionStat *stats;
	Pmemz__RegionStat **ptrs;
	Pmemz__RegionInfo *infos;
	uint64_t (*wait_counts)[MANAGER_WAIT_BUCKETS];
};

static void stat_reply_done(struct stat_reply *s)
{
	free(s->stats);
	free(s->ptrs);
	free(s->infos);
	free(s->wait_counts);
}

/* The zeroing policy's state (zeroer-policy.h); its strings are static. */
static void region_stat_policy(const struct manager_region *mr, Pmemz__RegionStat *rs)
{
	struct region_policy_state ps;

	if (!mr->r) /* never opened (failed at start): no policy runs */
		return;
	region_zeroer_policy_state(mr->r, &ps);
	rs->zero_policy = (char *)(uintptr_t)ps.policy;
	rs->zero_zone = (char *)(uintptr_t)ps.zone;
	rs->has_reserve_low = rs->has_reserve_high = true;
	rs->reserve_low = ps.low;
	rs->reserve_high = ps.high;
	rs->has_alloc_rate = true;
	rs->alloc_rate = ps.alloc_rate;
	rs->has_zone_changes = true;
	rs->zone_changes = ps.changes;
}

/* The ALLOCATE wait histogram, cumulative as Prometheus has it; counts has MANAGER_WAIT_BUCKETS. */
static void region_stat_wait(const struct wait_histogram *h, Pmemz__RegionStat *rs,
			     uint64_t *counts)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < MANAGER_WAIT_BUCKETS; i++) {
		sum += h->bucket[i];
		counts[i] = sum;
	}
	rs->n_wait_bucket_le = MANAGER_WAIT_BUCKETS;
	rs->wait_bucket_le = (double *)(uintptr_t)waitq_wait_bounds_sec;
	rs->n_wait_bucket_count = MANAGER_WAIT_BUCKETS;
	rs->wait_bucket_count = counts;
	rs->has_wait_sum_sec = true;
	rs->wait_sum_sec = (double)h->sum_ns / 1e9;
	rs->has_wait_count = true;
	rs->wait_count = h->count;
}

/* "removing": gone from the configuration, still serving its users (reload.c). */
static const char *region_state_name(const struct manager_region *mr)
{
	if (mr->failed)
		return "failed";
	return regions_removing(mr) ? "removing" : "online";
}

static void region_stat_fill(const struct rpc_call *call, const struct manager_region *mr,
			     Pmemz__RegionStat *rs, Pmemz__RegionInfo *info, uint64_t *wait_counts)
{
	struct region_stats st = {0};

	if (mr->r)
		region_get_stats(mr->r, &st);
	pmemz__region_stat__init(rs);
	rpc_region_info_to_pb(&mr->info, info);
	rs->info = info;
	rs->zeroed = st.count[EXT_ZEROED];
	rs->dirty = st.count[EXT_DIRTY];
	rs->leased = st.count[EXT_LEASED];
	rs->committed = st.count[EXT_COMMITTED];
	rs->bad = st.count[EXT_BAD];
	rs->zeroing = st.zeroing;
	rs->bytes_zeroed = st.bytes_zeroed;
	rs->zero_bytes_per_sec =
	    st.zero_busy_ns ? (double)st.bytes_zeroed * 1e9 / (double)st.zero_busy_ns : 0.0;
	rs->zero_batches = st.zero_batches;
	rs->drains = st.drains;
	rs->allocations = mr->allocations;
	rs->commits = mr->commits;
	rs->frees = mr->frees;
	rs->has_moves = true;
	rs->moves = mr->moves;
	rs->waiters = waitq_count(mr);
	rs->zeroer_threads = mr->rc->zeroer_threads;
	rs->zero_rate_limit = mr->zero_rate;
	rs->has_paused = true;
	rs->paused = mr->r && !mr->failed && region_zeroer_paused(mr->r);
	rs->tags = st.tags;
	rs->has_zero_fences = true;
	rs->zero_fences = st.zero_fences;
	/* Absent when unknown (a file region): no node is better than a wrong one. */
	rs->has_numa_node = mr->r && st.numa_node >= 0;
	rs->numa_node = st.numa_node;
	region_stat_wait(waitq_histogram(mr), rs, wait_counts);
	/* protobuf-c only reads these while packing. */
	rs->state = (char *)(uintptr_t)region_state_name(mr);
	/* The reason names paths: for those who may open the region (and admins). */
	if (mr->failed)
		rs->failure = (char *)(uintptr_t)(call->c->admin || rpc_region_allowed(call->c, mr)
						      ? mr->failure
						      : "(reason withheld: not your region)");
	region_stat_policy(mr, rs);
}

/*
 * A region the caller may not open: its name only.  Its path, uuid and
 * usage would tell a tenant about another's data (docs/SECURITY.md).
 */
static void region_stat_name_only(const struct manager_region *mr, Pmemz__RegionStat *rs,
				  Pmemz__RegionInfo *info)
{
	struct region_info none = {.name = mr->info.name ? mr->info.name : mr->rc->name};

	pmemz__region_stat__init(rs);
	rpc_region_info_to_pb(&none, info);
	info->uuid.len = 0;
	rs->info = info;
	rs->has_name_only = true;
	rs->name_only = true;
	/* Whether it serves is no secret (monitoring); why it failed names paths. */
	rs->state = (char *)(uintptr_t)region_state_name(mr);
	if (mr->failed)
		rs->failure = (char *)(uintptr_t)"(reason withheld: not your region)";
}

/* STAT: daemon and per-region counters; open to every peer (details: rpc_region_visible). */
static int rpc_stat_handler(struct rpc_call *call)
{
	const Pmemz__StatReq *req = call->req->stat;
	struct manager *m = call->m;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__StatResp sr = PMEMZ__STAT_RESP__INIT;
	_cleanup_(stat_reply_done) struct stat_reply s = {0};
	size_t first = 0, n = m->n_regions;

	if (req && req->region) {
		struct manager_region *mr = regions_find(m, req->region);

		if (!mr)
			return rpc_fail(call, -ENOENT, "no region '%.64s'", req->region);
		first = mr->index;
		n = 1;
	}
	if (n) {
		s.stats = calloc(n, sizeof(*s.stats));
		s.ptrs = calloc(n, sizeof(*s.ptrs));
		s.infos = calloc(n, sizeof(*s.infos));
		s.wait_counts = calloc(n, sizeof(*s.wait_counts));
		if (!s.stats || !s.ptrs || !s.infos || !s.wait_counts)
			return rpc_fail(call, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		const struct manager_region *mr = m->regions[first + i];

		if (rpc_region_visible(call->c, mr))
			region_stat_fill(call, mr, &s.stats[i], &s.infos[i], s.wait_counts[i]);
		else
			region_stat_name_only(mr, &s.stats[i], &s.infos[i]);
		s.ptrs[i] = &s.stats[i];
	}
	sr.daemon_version = (char *)PMEMZ_VERSION;
	sr.uptime_sec = (pmemz_now_ns() - m->start_ns) / 1000000000ull;
	sr.connections = connections_count(m);
	sr.n_regions = n;
	sr.regions = s.ptrs;
	sr.has_group_commits = true;
	sr.group_commits = commit_group_commits(m);
	sr.has_leases = true;
	sr.leases = lease_table_count(m->leases);
	if (call->c->admin) {
		struct heap_stats hs;

		heap_stats_get(&hs);
		sr.has_heap_in_use = sr.has_heap_free = sr.has_heap_trims = true;
		sr.heap_in_use = hs.in_use;
		sr.heap_free = hs.free;
		sr.heap_trims = hs.trims;
	}
	resp.op_case = PMEMZ__RESPONSE__OP_STAT;
	resp.stat = &sr;
	if (!rpc_response_fits(&resp))
		return rpc_fail(call, -EMSGSIZE, "too many regions for one reply; ask for one");
	return rpc_reply(call, &resp, -1, RPC_REPLY_ORDERED);
}

const struct rpc_descriptor rpc_stat = {
    .name = "STAT",
    .op = PMEMZ__REQUEST__OP_STAT,
    .admin_only = false,
    .handler = rpc_stat_handler,
};
