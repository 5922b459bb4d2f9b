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

static void usage_limit(struct out *o, const struct pmemz_usage *u, enum pmemz_usage_key k,
			const char *key, const char *label, bool size)
{
	uint64_t v;

	/* An unset limit is "unlimited", in JSON too (a string where a number would be). */
	if (pmemz_usage_limit(u, k, &v) < 0)
		out_str(o, key, label, "unlimited");
	else if (size)
		out_size(o, key, label, v);
	else
		out_u64(o, key, label, v);
}

static void usage_freep(struct pmemz_usage **u)
{
	pmemz_usage_free(*u);
}

static uint64_t row_u64(const struct pmemz_usage *u, size_t i, enum pmemz_usage_key k)
{
	uint64_t v = 0;

	(void)pmemz_usage_row_u64(u, i, k, &v);
	return v;
}

static void usage_row(struct out *o, const struct pmemz_usage *u, size_t i, bool by_uid)
{
	const char *tenant = pmemz_usage_row_tenant(u, i);

	o->ops->item_begin(o);
	if (tenant)
		out_str(o, "tenant", "tenant", tenant);
	else if (!by_uid) /* a uid's row: tags from before the start */
		out_str(o, "tenant", "tenant", "-");
	out_u64(o, "uid", "uid", row_u64(u, i, PMEMZ_USAGE_UID));
	out_size(o, "leased", "leased", row_u64(u, i, PMEMZ_USAGE_LEASED));
	out_size(o, "committed", "committed", row_u64(u, i, PMEMZ_USAGE_COMMITTED));
	out_u64(o, "tags", "tags", row_u64(u, i, PMEMZ_USAGE_TAGS));
	out_u64(o, "waiters", "waiters", row_u64(u, i, PMEMZ_USAGE_WAITERS));
	out_size(o, "rezeroed", "re-zeroed", row_u64(u, i, PMEMZ_USAGE_REZEROED));
	o->ops->item_end(o);
}

static int usage_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {},
	};
	_cleanup_(usage_freep) struct pmemz_usage *u = NULL;
	const char *region, *key;
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
	if (pmemz_admin_usage(ctl->client, region, &u) < 0)
		return ctl_fail();
	r = ctl_output(ctl);
	if (r)
		return r;
	o = ctl->out;

	key = pmemz_usage_tenant_key(u);
	out_str(o, "region", "region", region);
	out_str(o, "tenant_key", "tenant", key);
	/* Text: the key names of the region's tenant (uid_* with tenant = uid, as before). */
	by_uid = strcmp(key, "uid") == 0;
	usage_limit(o, u, PMEMZ_USAGE_QUOTA, "uid_quota", by_uid ? "uid_quota" : "tenant_quota",
		    true);
	usage_limit(o, u, PMEMZ_USAGE_MAX_TAGS, "uid_max_tags",
		    by_uid ? "uid_max_tags" : "tenant_max_tags", false);
	usage_limit(o, u, PMEMZ_USAGE_MAX_WAITERS, "uid_max_waiters",
		    by_uid ? "uid_max_waiters" : "tenant_max_waiters", false);
	o->ops->list_begin(o, "uids", "no usage");
	for (size_t i = 0; i < pmemz_usage_rows(u); i++)
		usage_row(o, u, i, by_uid);
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
