/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl usage REGION: per-tenant accounting of a region and its limits.
 * The tenant is the uid, or with tenant = cgroup the cgroup key (a uid's
 * row there holds tags committed before the daemon started).  An admin
 * sees every row, anyone else their own.  The limits keep their JSON keys
 * (uid_quota, ...): scripts read them.
 */
#include <string.h>

#include "pmemzctl.h"

static void usage_limit(struct out *o, const char *key, const char *label, bool has, uint64_t v,
			bool size)
{
	/* An unset limit is "unlimited", in JSON too (a string where a number would be). */
	if (!has)
		out_str(o, key, label, "unlimited");
	else if (size)
		out_size(o, key, label, v);
	else
		out_u64(o, key, label, v);
}

static int usage_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {},
	};
	_cleanup_response_ Pmemz__Response *resp = NULL;
	const Pmemz__UsageResp *u;
	const char *region;
	struct out *o;
	bool by_uid;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT, opts, NULL)) != -1)
		if ((r = ctl_common_opt(ctl, &cmd_usage, c)) >= 0)
			return r;
	if (optind >= argc)
		return ctl_usage_error(&cmd_usage, "which region?");
	region = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(&cmd_usage, "unexpected argument '%s'", argv[optind]);

	r = ctl_connect(ctl);
	if (r)
		return r;
	if (pmemz_wire_usage(ctl->client, region, &resp) < 0)
		return ctl_fail();
	r = ctl_output(ctl);
	if (r)
		return r;
	u = resp->usage;
	o = ctl->out;

	out_str(o, "region", "region", region);
	out_str(o, "tenant_key", "tenant", u->tenant_key ? u->tenant_key : "uid");
	/* Text: the key names of the region's tenant (uid_* with tenant = uid, as before). */
	by_uid = !u->tenant_key || strcmp(u->tenant_key, "uid") == 0;
	usage_limit(o, "uid_quota", by_uid ? "uid_quota" : "tenant_quota", u->has_uid_quota,
		    u->uid_quota, true);
	usage_limit(o, "uid_max_tags", by_uid ? "uid_max_tags" : "tenant_max_tags",
		    u->has_uid_max_tags, u->uid_max_tags, false);
	usage_limit(o, "uid_max_waiters", by_uid ? "uid_max_waiters" : "tenant_max_waiters",
		    u->has_uid_max_waiters, u->uid_max_waiters, false);
	o->ops->list_begin(o, "uids", "no usage");
	for (size_t i = 0; i < u->n_uids; i++) {
		const Pmemz__UidUsage *row = u->uids[i];

		o->ops->item_begin(o);
		if (row->tenant)
			out_str(o, "tenant", "tenant", row->tenant);
		else if (!by_uid) /* a uid's row: tags from before the start */
			out_str(o, "tenant", "tenant", "-");
		out_u64(o, "uid", "uid", row->uid);
		out_size(o, "leased", "leased", row->leased);
		out_size(o, "committed", "committed", row->committed);
		out_u64(o, "tags", "tags", row->tags);
		out_u64(o, "waiters", "waiters", row->waiters);
		out_size(o, "rezeroed", "re-zeroed", row->rezeroed);
		o->ops->item_end(o);
	}
	o->ops->list_end(o);
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_usage = {
    .name = "usage",
    .args = "REGION",
    .summary = "per-tenant usage of a region: leased, committed, tags, waiters, re-zeroed bytes",
    .options = NULL,
    .exec = usage_exec,
};
