/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>

#include "connection.h"
#include "dispatch.h"
#include "util.h"

static const struct rpc_descriptor *const dispatch_table[] = {
    &rpc_clients, &rpc_hello,  &rpc_open_region, &rpc_allocate, &rpc_commit,
    &rpc_free,	  &rpc_flush,  &rpc_list,	 &rpc_stat,	&rpc_noop,
    &rpc_map,	  &rpc_zeroer, &rpc_usage,	 &rpc_runs,	&rpc_claim,
    &rpc_move,
};

const struct rpc_descriptor *dispatch_lookup(Pmemz__Request__OpCase op)
{
	for (size_t i = 0; i < ARRAY_SIZE(dispatch_table); i++)
		if (dispatch_table[i]->op == op)
			return dispatch_table[i];
	return NULL;
}

void dispatch_request(struct connection *c, const Pmemz__Request *req, const char *nul_field)
{
	struct manager *m = c->m;
	const struct rpc_descriptor *d = dispatch_lookup(req->op_case);
	struct rpc_call call = {
	    .m = m, .c = c, .req = req, .id = req->id, .name = d ? d->name : NULL};
	int r;

	if (nul_field)
		/* Before any other check: the handler would see another name. */
		r = rpc_fail(&call, -EINVAL, "field %s holds a NUL byte", nul_field);
	else if (!d)
		r = rpc_fail(&call, -EOPNOTSUPP, "unknown operation");
	else if (d->admin_only && !c->admin)
		r = rpc_fail(&call, -EPERM, "%s needs root or the admin group%s", d->name,
			     m->conf->n_admin_cgroups ? " in an admin cgroup" : "");
	else
		r = d->handler(&call);
	if (r < 0)
		rpc_fail_reply(&call, r);
}
