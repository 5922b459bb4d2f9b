/* SPDX-License-Identifier: MIT */
/* conf_print: the configuration as `pmemzerod -n` shows it (the golden tests' output). */
#include <syslog.h>

#include "conf-private.h"

static void print_cgroups(FILE *out, const char *key, char *const *v, size_t n)
{
	if (!n)
		return; /* unset: not printed (the default, see pmemzerod.conf(5)) */
	fprintf(out, "%s =", key);
	for (size_t i = 0; i < n; i++)
		fprintf(out, " %s", v[i]);
	fputc('\n', out);
}

static void print_tenant(FILE *out, const struct region_conf *rc)
{
	/* The default, tenant = uid, is not printed. */
	if (rc->tenant_cgroup && rc->tenant_levels)
		fprintf(out, "tenant = cgroup:%u\n", rc->tenant_levels);
	else if (rc->tenant_cgroup)
		fprintf(out, "tenant = cgroup\n");
}

static void conn_print(const struct daemon_conf *c, FILE *out)
{
	if (c->max_connections_per_uid)
		fprintf(out, "max_connections_per_uid = %u\n", c->max_connections_per_uid);
	else
		fprintf(out, "max_connections_per_uid = unlimited\n");
	if (c->idle_timeout_sec)
		fprintf(out, "idle_timeout = %u\n", c->idle_timeout_sec);
	else
		fprintf(out, "idle_timeout = off\n");
	fprintf(out, "max_connection_memory = %llu\n",
		(unsigned long long)c->max_connection_memory);
	fprintf(out, "max_total_connection_memory = %llu\n",
		(unsigned long long)c->max_total_connection_memory);
}

static void print_uid_limit(FILE *out, const char *key, uint64_t v)
{
	/* Only what was set: unset limits are unlimited (pmemzerod.conf(5)). */
	if (v)
		fprintf(out, "%s = %llu\n", key, (unsigned long long)v);
}

static void print_uid_limits(FILE *out, const struct region_conf *rc)
{
	/* The new names, also for a file that used the old ones (uid_*). */
	print_uid_limit(out, "tenant_quota", rc->uid_quota);
	print_uid_limit(out, "tenant_max_tags", rc->uid_max_tags);
	print_uid_limit(out, "tenant_max_waiters", rc->uid_max_waiters);
}

static void policy_print(FILE *out, const struct region_conf *rc)
{
	const struct zero_policy_conf *pc = &rc->policy;

	/* The default policy uses none of the other keys: "full" is not printed. */
	if (!pc->adaptive)
		return;
	fprintf(out, "zero_policy = adaptive\n");
	fprintf(out, "reserve_min = %llu\n", (unsigned long long)pc->reserve_min);
	fprintf(out, "reserve_low_ms = %u\nreserve_high_ms = %u\n", pc->low_ms, pc->high_ms);
	fprintf(out, "zero_pace_rate = %llu\n", (unsigned long long)pc->pace_rate);
}
static const char *log_level_name(int level)
{
	switch (level) {
	case LOG_ERR:
		return "err";
	case LOG_WARNING:
		return "warning";
	case LOG_NOTICE:
		return "notice";
	case LOG_INFO:
		return "info";
	case LOG_DEBUG:
		return "debug";
	default:
		return "?";
	}
}

static void print_ids(FILE *out, const char *key, const unsigned *ids, size_t n)
{
	if (!n) {
		fprintf(out, "# %s: none\n", key);
		return;
	}
	fprintf(out, "%s =", key);
	for (size_t i = 0; i < n; i++)
		fprintf(out, " %u", ids[i]);
	fputc('\n', out);
}

void conf_print(const struct daemon_conf *c, FILE *out)
{
	fprintf(out, "# configuration file: %s\n", c->config_path ? c->config_path : "(none)");
	fprintf(out, "[daemon]\n");
	fprintf(out, "socket = %s\n", c->socket_path ? c->socket_path : "");
	fprintf(out, "state_directory = %s\n", c->state_dir ? c->state_dir : "");
	if (c->admin_group)
		fprintf(out, "admin_group = %s\n", c->admin_group);
	else
		fprintf(out, "# admin_group: none (admin operations need root)\n");
	print_cgroups(out, "admin_cgroups", c->admin_cgroups, c->n_admin_cgroups);
	fprintf(out, "log_level = %s\n", log_level_name(c->log_level));
	conn_print(c, out);
	for (size_t i = 0; i < c->n_regions; i++) {
		const struct region_conf *rc = &c->regions[i];

		fprintf(out, "\n[region %s]\n", rc->name);
		fprintf(out, "# from %s\n", rc->source);
		fprintf(out, "path = %s\n", rc->path ? rc->path : "");
		fprintf(out, "size = %llu\n", (unsigned long long)rc->size);
		fprintf(out, "extent_size = %llu\n", (unsigned long long)rc->extent_size);
		print_ids(out, "allow_users", rc->allow_uids, rc->n_allow_uids);
		print_ids(out, "allow_groups", rc->allow_gids, rc->n_allow_gids);
		print_cgroups(out, "allow_cgroups", rc->allow_cgroups, rc->n_allow_cgroups);
		print_tenant(out, rc);
		fprintf(out, "zeroer_threads = %u\n", rc->zeroer_threads);
		if (rc->zero_rate)
			fprintf(out, "zero_rate = %llu\n", (unsigned long long)rc->zero_rate);
		else
			fprintf(out, "zero_rate = unlimited\n");
		fprintf(out, "batch_extents = %u\n", rc->batch_extents);
		print_uid_limits(out, rc);
		if (rc->metadata)
			fprintf(out, "metadata = %s\n", rc->metadata);
		policy_print(out, rc);
	}
}
