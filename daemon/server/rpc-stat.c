/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"
#include "rpc.h"

struct stat_reply {
	Pmemz__RegionStat *stats;
	Pmemz__RegionStat **ptrs;
	Pmemz__RegionInfo *infos;
};

static void stat_reply_done(struct stat_reply *s)
{
	free(s->stats);
	free(s->ptrs);
	free(s->infos);
}

/* The zeroing policy's state (zeroer-policy.h); its strings are static. */
static void region_stat_policy(const struct manager_region *mr, Pmemz__RegionStat *rs)
{
	struct region_policy_state ps;

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

static void region_stat_fill(const struct manager_region *mr, Pmemz__RegionStat *rs,
			     Pmemz__RegionInfo *info)
{
	struct region_stats st = {0};

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
	rs->waiters = mr->n_waiters;
	rs->zeroer_threads = mr->rc->zeroer_threads;
	rs->zero_rate_limit = mr->zero_rate;
	rs->has_paused = true;
	rs->paused = region_zeroer_paused(mr->r);
	rs->tags = st.tags;
	region_stat_policy(mr, rs);
}

/* STAT: daemon and per-region counters; open to every peer. */
static int rpc_stat_handler(struct rpc_call *call)
{
	const Pmemz__StatReq *req = call->req->stat;
	struct manager *m = call->m;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__StatResp sr = PMEMZ__STAT_RESP__INIT;
	_cleanup_(stat_reply_done) struct stat_reply s = {0};
	size_t first = 0, n = m->n_regions;

	if (req && req->region) {
		struct manager_region *mr = manager_find_region(m, req->region);

		if (!mr)
			return rpc_fail(call, -ENOENT, "no region '%.64s'", req->region);
		first = mr->index;
		n = 1;
	}
	if (n) {
		s.stats = calloc(n, sizeof(*s.stats));
		s.ptrs = calloc(n, sizeof(*s.ptrs));
		s.infos = calloc(n, sizeof(*s.infos));
		if (!s.stats || !s.ptrs || !s.infos)
			return rpc_fail(call, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		region_stat_fill(&m->regions[first + i], &s.stats[i], &s.infos[i]);
		s.ptrs[i] = &s.stats[i];
	}
	sr.daemon_version = (char *)PMEMZ_VERSION;
	sr.uptime_sec = (pmemz_now_ns() - m->start_ns) / 1000000000ull;
	sr.connections = m->n_connections;
	sr.n_regions = n;
	sr.regions = s.ptrs;
	sr.has_group_commits = true;
	sr.group_commits = m->group_commits;
	sr.has_leases = true;
	sr.leases = lease_table_count(m->leases);
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
