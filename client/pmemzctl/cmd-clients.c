/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl clients: every connection to the daemon (CLIENTS, admin only)
 * with the identity taken at accept -- uid, gid, pid, cgroup and how they
 * were taken -- and what it holds: leases, waiting allocations, reply bytes.
 */
#include "pmemzctl.h"

static uint64_t conn_u64(const struct pmemz_clients *l, size_t i, enum pmemz_clients_key k)
{
	uint64_t v = 0;

	(void)pmemz_clients_u64(l, i, k, &v);
	return v;
}

static void client_row(struct out *o, const struct pmemz_clients *l, size_t i)
{
	const char *cgroup = pmemz_clients_cgroup(l, i);
	uint64_t id;

	o->ops->item_begin(o);
	out_u64(o, "serial", "conn", conn_u64(l, i, PMEMZ_CONN_SERIAL));
	out_u64(o, "uid", "uid", conn_u64(l, i, PMEMZ_CONN_UID));
	out_u64(o, "gid", "gid", conn_u64(l, i, PMEMZ_CONN_GID));
	out_u64(o, "pid", "pid", conn_u64(l, i, PMEMZ_CONN_PID));
	out_str(o, "cgroup", "cgroup", cgroup ? cgroup : "-");
	out_str(o, "identity", "identity", pmemz_clients_identity(l, i));
	out_bool(o, "admin", "admin", conn_u64(l, i, PMEMZ_CONN_ADMIN));
	out_u64(o, "leases", "leases", conn_u64(l, i, PMEMZ_CONN_LEASES));
	out_size(o, "leased_bytes", "leased", conn_u64(l, i, PMEMZ_CONN_LEASED_BYTES));
	out_u64(o, "waiters", "waiters", conn_u64(l, i, PMEMZ_CONN_WAITERS));
	out_size(o, "bytes_queued", "queued", conn_u64(l, i, PMEMZ_CONN_BYTES_QUEUED));
	out_duration(o, "connected_sec", "connected", conn_u64(l, i, PMEMZ_CONN_CONNECTED_SEC));
	out_details(o, true);
	if (pmemz_clients_u64(l, i, PMEMZ_CONN_CGROUP_ID, &id) == 0)
		out_u64(o, "cgroup_id", "cgroup id", id);
	out_details(o, false);
	o->ops->item_end(o);
}

static void clients_freep(struct pmemz_clients **l)
{
	pmemz_clients_free(*l);
}

static int clients_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {},
	};
	_cleanup_(clients_freep) struct pmemz_clients *l = NULL;
	struct out *o;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT, opts, NULL)) != -1)
		if ((r = ctl_common_opt(ctl, &cmd_clients, c)) >= 0)
			return r;
	if (optind < argc)
		return ctl_usage_error(&cmd_clients, "unexpected argument '%s'", argv[optind]);
	r = ctl_connect(ctl);
	if (r)
		return r;
	/* Every page first: a failure half-way prints nothing. */
	if (pmemz_admin_clients(ctl->client, &l) < 0)
		return ctl_fail();
	r = ctl_output(ctl);
	if (r)
		return r;
	o = ctl->out;
	o->ops->list_begin(o, "clients", "no connections");
	for (size_t i = 0; i < pmemz_clients_count(l); i++)
		client_row(o, l, i);
	o->ops->list_end(o);
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_clients = {
    .name = "clients",
    .args = "",
    .summary = "the daemon's connections: uid, cgroup, pid, leases, waiters, bytes queued "
	       "(admin)",
    .options = NULL,
    .exec = clients_exec,
};
