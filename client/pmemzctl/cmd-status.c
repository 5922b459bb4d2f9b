/* SPDX-License-Identifier: MIT */
/* pmemzctl status: the daemon and, per region, extent totals and zeroing progress. */
#include <string.h>

#include "pmemzctl.h"

static double stat_double(const struct pmemz_stat *s, size_t i, enum pmemz_region_stat_key k)
{
	double d = 0;

	return pmemz_stat_region_double(s, i, k, &d) == 0 ? d : 0;
}

/* The zeroing policy (zero_policy in pmemzerod.conf(5)), when the daemon reports it. */
static void status_policy(struct out *o, const struct pmemz_stat *s, size_t i)
{
	const char *policy = pmemz_stat_region_str(s, i, PMEMZ_RS_ZERO_POLICY);
	const char *zone = pmemz_stat_region_str(s, i, PMEMZ_RS_ZERO_ZONE);

	if (!policy)
		return;
	out_str(o, "zero_policy", "zero policy", policy);
	if (strcmp(policy, "adaptive") != 0)
		return;
	out_str(o, "zero_zone", "zeroing now", zone ? zone : "?");
	out_u64(o, "reserve_low", "reserve low watermark", ctl_stat_u64(s, i, PMEMZ_RS_RESERVE_LOW));
	out_u64(o, "reserve_high", "reserve high watermark",
		ctl_stat_u64(s, i, PMEMZ_RS_RESERVE_HIGH));
	out_u64(o, "alloc_rate", "allocations (extents/s)",
		(uint64_t)(stat_double(s, i, PMEMZ_RS_ALLOC_RATE) + 0.5));
	out_u64(o, "zone_changes", "zone changes", ctl_stat_u64(s, i, PMEMZ_RS_ZONE_CHANGES));
}

/* The JSON-only numbers of region i. */
static void status_details(struct out *o, const struct pmemz_stat *s, size_t i)
{
	uint64_t v;

	out_details(o, true);
	out_size(o, "extent_size", "extent size", ctl_stat_u64(s, i, PMEMZ_RS_EXTENT_SIZE));
	out_u64(o, "zero_batches", "zero batches", ctl_stat_u64(s, i, PMEMZ_RS_ZERO_BATCHES));
	if (pmemz_stat_region_u64(s, i, PMEMZ_RS_ZERO_FENCES, &v) == 0)
		out_u64(o, "zero_fences", "zeroer fences", v);
	out_u64(o, "drains", "drains", ctl_stat_u64(s, i, PMEMZ_RS_DRAINS));
	out_u64(o, "allocations", "allocations", ctl_stat_u64(s, i, PMEMZ_RS_ALLOCATIONS));
	out_u64(o, "commits", "commits", ctl_stat_u64(s, i, PMEMZ_RS_COMMITS));
	if (pmemz_stat_region_u64(s, i, PMEMZ_RS_MOVES, &v) == 0)
		out_u64(o, "moves", "MOVE requests", v);
	out_u64(o, "frees", "frees", ctl_stat_u64(s, i, PMEMZ_RS_FREES));
	out_u64(o, "tags", "tags", ctl_stat_u64(s, i, PMEMZ_RS_TAGS));
	out_u64(o, "zeroer_threads", "zeroer threads", ctl_stat_u64(s, i, PMEMZ_RS_ZEROER_THREADS));
	out_rate(o, "zero_rate_limit", "zero rate limit",
		 (double)ctl_stat_u64(s, i, PMEMZ_RS_ZERO_RATE_LIMIT));
	out_bool(o, "zeroer_paused", "zeroer paused", ctl_stat_u64(s, i, PMEMZ_RS_PAUSED));
	status_policy(o, s, i);
	out_details(o, false);
}

static void status_region(struct out *o, const struct pmemz_stat *s, size_t i)
{
	uint64_t node;

	o->ops->item_begin(o);
	out_str(o, "name", "region", pmemz_stat_region_str(s, i, PMEMZ_RS_NAME));
	out_str(o, "state", "state", ctl_region_state(s, i));
	out_size(o, "capacity", "capacity",
		 ctl_stat_u64(s, i, PMEMZ_RS_EXTENTS) * ctl_stat_u64(s, i, PMEMZ_RS_EXTENT_SIZE));
	out_u64(o, "extents", "extents", ctl_stat_u64(s, i, PMEMZ_RS_EXTENTS));
	out_u64(o, "zeroed", "zeroed", ctl_stat_u64(s, i, PMEMZ_RS_ZEROED));
	out_u64(o, "zeroing", "zeroing", ctl_stat_u64(s, i, PMEMZ_RS_ZEROING));
	out_u64(o, "dirty", "dirty", ctl_stat_u64(s, i, PMEMZ_RS_DIRTY));
	out_u64(o, "leased", "leased", ctl_stat_u64(s, i, PMEMZ_RS_LEASED));
	out_u64(o, "committed", "committed", ctl_stat_u64(s, i, PMEMZ_RS_COMMITTED));
	out_u64(o, "bad", "bad", ctl_stat_u64(s, i, PMEMZ_RS_BAD));
	out_size(o, "bytes_zeroed", "bytes zeroed", ctl_stat_u64(s, i, PMEMZ_RS_BYTES_ZEROED));
	out_rate(o, "zero_bytes_per_sec", "zero rate",
		 stat_double(s, i, PMEMZ_RS_ZERO_BYTES_PER_SEC));
	out_u64(o, "waiters", "waiters", ctl_stat_u64(s, i, PMEMZ_RS_WAITERS));
	/*
	 * The node of the region's memory (device-DAX), where its zeroer
	 * runs.  Unknown: "-" in the table (its columns are positional),
	 * absent from JSON.
	 */
	if (pmemz_stat_region_u64(s, i, PMEMZ_RS_NUMA_NODE, &node) == 0)
		out_u64(o, "numa_node", "NUMA node", node);
	else if (o->ops != &out_json_ops)
		out_str(o, "numa_node", "NUMA node", "-");
	/* Last: a failure's reason is long text. */
	out_str(o, "failure", "failure", pmemz_stat_region_str(s, i, PMEMZ_RS_FAILURE));
	status_details(o, s, i);
	o->ops->item_end(o);
}

static int status_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {CTL_COMMON_OPTS, {}};
	_cleanup_(pmemz_stat_freep) struct pmemz_stat *s = NULL;
	uint64_t v;
	struct out *o;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT, opts, NULL)) != -1)
		if ((r = ctl_common_opt(ctl, &cmd_status, c)) >= 0)
			return r;
	if (optind < argc)
		return ctl_usage_error(&cmd_status, "unexpected argument '%s'", argv[optind]);

	r = ctl_stat(ctl, NULL, &s);
	if (r)
		return r;
	o = ctl->out;

	out_str(o, "daemon_version", "daemon", pmemz_stat_daemon_version(s));
	out_str(o, "socket", "socket", pmemz_client_socket(ctl->client));
	(void)pmemz_stat_u64(s, PMEMZ_STAT_UPTIME_SEC, &v);
	out_duration(o, "uptime_sec", "uptime", v);
	(void)pmemz_stat_u64(s, PMEMZ_STAT_CONNECTIONS, &v);
	out_u64(o, "connections", "connections", v);
	out_details(o, true);
	out_u64(o, "protocol_version", "protocol", pmemz_client_protocol(ctl->client));
	out_u64(o, "uid", "uid", pmemz_client_uid(ctl->client));
	out_bool(o, "admin", "admin", pmemz_client_is_admin(ctl->client));
	if (pmemz_stat_u64(s, PMEMZ_STAT_HEAP_IN_USE, &v) == 0) {
		out_size(o, "heap_in_use", "heap in use", v);
		(void)pmemz_stat_u64(s, PMEMZ_STAT_HEAP_FREE, &v);
		out_size(o, "heap_free", "heap free", v);
		(void)pmemz_stat_u64(s, PMEMZ_STAT_HEAP_TRIMS, &v);
		out_u64(o, "heap_trims", "heap trims", v);
	}
	out_details(o, false);

	o->ops->list_begin(o, "regions", "no regions");
	for (size_t i = 0; i < pmemz_stat_regions(s); i++)
		status_region(o, s, i);
	o->ops->list_end(o);
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_status = {
    .name = "status",
    .args = "",
    .summary = "daemon version, uptime, connections; per region extent states and zeroing",
    .exec = status_exec,
};
