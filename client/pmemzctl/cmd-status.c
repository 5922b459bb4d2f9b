/* SPDX-License-Identifier: MIT */
/* pmemzctl status: the daemon and, per region, extent totals and zeroing progress. */
#include <string.h>

#include "pmemzctl.h"

/* The zeroing policy (zero_policy in pmemzerod.conf(5)), when the daemon reports it. */
static void status_policy(struct out *o, const Pmemz__RegionStat *rs)
{
	if (!rs->zero_policy)
		return;
	out_str(o, "zero_policy", "zero policy", rs->zero_policy);
	if (strcmp(rs->zero_policy, "adaptive") != 0)
		return;
	out_str(o, "zero_zone", "zeroing now", rs->zero_zone ? rs->zero_zone : "?");
	out_u64(o, "reserve_low", "reserve low watermark", rs->reserve_low);
	out_u64(o, "reserve_high", "reserve high watermark", rs->reserve_high);
	out_u64(o, "alloc_rate", "allocations (extents/s)", (uint64_t)(rs->alloc_rate + 0.5));
	out_u64(o, "zone_changes", "zone changes", rs->zone_changes);
}

static int status_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {CTL_COMMON_OPTS, {}};
	_cleanup_response_ Pmemz__Response *resp = NULL;
	const struct pmemz_hello *hello;
	const Pmemz__StatResp *s;
	struct out *o;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT, opts, NULL)) != -1)
		if ((r = ctl_common_opt(ctl, &cmd_status, c)) >= 0)
			return r;
	if (optind < argc)
		return ctl_usage_error(&cmd_status, "unexpected argument '%s'", argv[optind]);

	r = ctl_stat(ctl, NULL, &resp);
	if (r)
		return r;
	s = resp->stat;
	hello = pmemz_client_hello(ctl->client);
	o = ctl->out;

	out_str(o, "daemon_version", "daemon", s->daemon_version);
	out_str(o, "socket", "socket", pmemz_client_path(ctl->client));
	out_duration(o, "uptime_sec", "uptime", s->uptime_sec);
	out_u64(o, "connections", "connections", s->connections);
	out_details(o, true);
	out_u64(o, "protocol_version", "protocol", hello->version);
	out_u64(o, "uid", "uid", hello->uid);
	out_bool(o, "admin", "admin", hello->admin);
	if (s->has_heap_in_use) {
		out_size(o, "heap_in_use", "heap in use", s->heap_in_use);
		out_size(o, "heap_free", "heap free", s->heap_free);
		out_u64(o, "heap_trims", "heap trims", s->heap_trims);
	}
	out_details(o, false);

	o->ops->list_begin(o, "regions", "no regions");
	for (size_t i = 0; i < s->n_regions; i++) {
		const Pmemz__RegionStat *rs = s->regions[i];

		o->ops->item_begin(o);
		out_str(o, "name", "region", rs->info->name);
		out_str(o, "state", "state", ctl_region_state(rs));
		out_size(o, "capacity", "capacity", rs->info->extent_count * rs->info->extent_size);
		out_u64(o, "extents", "extents", rs->info->extent_count);
		out_u64(o, "zeroed", "zeroed", rs->zeroed);
		out_u64(o, "zeroing", "zeroing", rs->zeroing);
		out_u64(o, "dirty", "dirty", rs->dirty);
		out_u64(o, "leased", "leased", rs->leased);
		out_u64(o, "committed", "committed", rs->committed);
		out_u64(o, "bad", "bad", rs->bad);
		out_size(o, "bytes_zeroed", "bytes zeroed", rs->bytes_zeroed);
		out_rate(o, "zero_bytes_per_sec", "zero rate", rs->zero_bytes_per_sec);
		out_u64(o, "waiters", "waiters", rs->waiters);
		/*
		 * The node of the region's memory (device-DAX), where its zeroer
		 * runs.  Unknown: "-" in the table (its columns are positional),
		 * absent from JSON.
		 */
		if (rs->has_numa_node && rs->numa_node >= 0)
			out_u64(o, "numa_node", "NUMA node", (uint64_t)rs->numa_node);
		else if (o->ops != &out_json_ops)
			out_str(o, "numa_node", "NUMA node", "-");
		/* Last: a failure's reason is long text. */
		out_str(o, "failure", "failure", rs->failure);
		out_details(o, true);
		out_size(o, "extent_size", "extent size", rs->info->extent_size);
		out_u64(o, "zero_batches", "zero batches", rs->zero_batches);
		if (rs->has_zero_fences)
			out_u64(o, "zero_fences", "zeroer fences", rs->zero_fences);
		out_u64(o, "drains", "drains", rs->drains);
		out_u64(o, "allocations", "allocations", rs->allocations);
		out_u64(o, "commits", "commits", rs->commits);
		if (rs->has_moves)
			out_u64(o, "moves", "MOVE requests", rs->moves);
		out_u64(o, "frees", "frees", rs->frees);
		out_u64(o, "tags", "tags", rs->tags);
		out_u64(o, "zeroer_threads", "zeroer threads", rs->zeroer_threads);
		out_rate(o, "zero_rate_limit", "zero rate limit", (double)rs->zero_rate_limit);
		out_bool(o, "zeroer_paused", "zeroer paused", rs->has_paused && rs->paused);
		status_policy(o, rs);
		out_details(o, false);
		o->ops->item_end(o);
	}
	o->ops->list_end(o);
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_status = {
    .name = "status",
    .args = "",
    .summary = "daemon version, uptime, connections; per region extent states and zeroing",
    .exec = status_exec,
};
