/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl clients: every connection to the daemon (CLIENTS, admin only)
 * with the identity taken at accept -- uid, gid, pid, cgroup and how they
 * were taken -- and what it holds: leases, waiting allocations, reply bytes.
 */
#include "pmemzctl.h"

/* Pages until the daemon says there are no more (each a frame). */
#define CLIENTS_PAGES_MAX 100000u

static void client_row(struct out *o, const Pmemz__ClientInfo *ci)
{
	o->ops->item_begin(o);
	out_u64(o, "serial", "conn", ci->serial);
	out_u64(o, "uid", "uid", ci->uid);
	out_u64(o, "gid", "gid", ci->gid);
	out_u64(o, "pid", "pid", (uint64_t)(ci->pid > 0 ? ci->pid : 0));
	out_str(o, "cgroup", "cgroup", ci->cgroup ? ci->cgroup : "-");
	out_str(o, "identity", "identity", ci->identity);
	out_bool(o, "admin", "admin", ci->admin);
	out_u64(o, "leases", "leases", ci->leases);
	out_size(o, "leased_bytes", "leased", ci->leased_bytes);
	out_u64(o, "waiters", "waiters", ci->waiters);
	out_size(o, "bytes_queued", "queued", ci->bytes_queued);
	out_duration(o, "connected_sec", "connected", ci->connected_sec);
	out_details(o, true);
	if (ci->has_cgroup_id)
		out_u64(o, "cgroup_id", "cgroup id", ci->cgroup_id);
	out_details(o, false);
	o->ops->item_end(o);
}

static int clients_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {},
	};
	Pmemz__Response **pages = NULL;
	size_t n_pages = 0;
	uint64_t after = 0;
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
	for (bool more = true; more && n_pages < CLIENTS_PAGES_MAX;) {
		Pmemz__Response **v = realloc(pages, (n_pages + 1) * sizeof(*v));

		if (!v) {
			fprintf(stderr, "pmemzctl: out of memory\n");
			r = CTL_EXIT_FAIL;
			goto out;
		}
		pages = v;
		if (pmemz_wire_clients(ctl->client, after, &pages[n_pages]) < 0) {
			r = ctl_fail();
			goto out;
		}
		more = pages[n_pages]->clients->has_next && pages[n_pages]->clients->next > after;
		after = pages[n_pages]->clients->next;
		n_pages++;
	}
	r = ctl_output(ctl);
	if (r)
		goto out;
	o = ctl->out;
	o->ops->list_begin(o, "clients", "no connections");
	for (size_t p = 0; p < n_pages; p++)
		for (size_t i = 0; i < pages[p]->clients->n_clients; i++)
			client_row(o, pages[p]->clients->clients[i]);
	o->ops->list_end(o);
	r = ctl_finish(ctl);
out:
	for (size_t p = 0; p < n_pages; p++)
		pmemz__response__free_unpacked(pages[p], NULL);
	free(pages);
	return r;
}

const struct ctl_cmd cmd_clients = {
    .name = "clients",
    .args = "",
    .summary = "the daemon's connections: uid, cgroup, pid, leases, waiters, bytes queued "
	       "(admin)",
    .options = NULL,
    .exec = clients_exec,
};
