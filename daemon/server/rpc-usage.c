/* SPDX-License-Identifier: MIT */
/*
 * USAGE: one region's per-uid accounting (usage.c).  An admin sees every
 * uid; anyone else allowed on the region sees their own row only, so that
 * the command does not tell tenants who else uses the region or how much.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "regions.h"
#include "rpc.h"
#include "usage.h"

struct usage_reply {
	Pmemz__UidUsage *rows;
	Pmemz__UidUsage **ptrs;
};

static void usage_reply_done(struct usage_reply *s)
{
	free(s->rows);
	free(s->ptrs);
}

static void uid_usage_to_pb(const struct usage *u, const struct uid_usage *row, uid_t uid,
			    Pmemz__UidUsage *pb)
{
	pmemz__uid_usage__init(pb);
	pb->uid = uid;
	if (!row)
		return;
	pb->uid = row->uid;
	pb->tenant = row->tenant;
	pb->leased = row->leased * u->extent_size;
	pb->committed = row->committed * u->extent_size;
	pb->tags = row->tags;
	pb->waiters = row->waiters;
	pb->rezeroed = row->zeroed_bytes;
}

static int rpc_usage_handler(struct rpc_call *call)
{
	const Pmemz__UsageReq *req = call->req->usage;
	const struct connection *c = call->c;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__UsageResp ur = PMEMZ__USAGE_RESP__INIT;
	_cleanup_(usage_reply_done) struct usage_reply s = {0};
	struct manager_region *mr;
	struct usage *u;
	struct uid_usage *own = NULL;
	char key[32];
	size_t n;
	int r;

	if (c->admin) {
		mr = req->region ? regions_find(call->m, req->region) : NULL;
		if (!mr)
			return rpc_fail(call, -ENOENT, "no region '%.64s'",
					req->region ? req->region : "");
	} else {
		r = rpc_region(call, req->region, &mr);
		if (r < 0)
			return r;
	}
	r = usage_get(mr, &u);
	if (r < 0)
		return rpc_fail(call, r, "usage of region '%s': %s", mr->info.name, strerror(-r));

	/* One's own row (zeroes when it has none: asking does not make one). */
	if (!c->admin)
		own = usage_tenant_find(mr, c);
	n = c->admin ? u->n_rows : 1;
	s.rows = calloc(n ? n : 1, sizeof(*s.rows));
	s.ptrs = calloc(n ? n : 1, sizeof(*s.ptrs));
	if (!s.rows || !s.ptrs)
		return rpc_fail(call, -ENOMEM, "out of memory");
	for (size_t k = 0; k < n; k++) {
		if (c->admin)
			uid_usage_to_pb(u, u->rows[k], u->rows[k]->uid, &s.rows[k]);
		else
			uid_usage_to_pb(u, own, c->uid, &s.rows[k]);
		s.ptrs[k] = &s.rows[k];
	}
	ur.n_uids = n;
	ur.uids = s.ptrs;
	ur.has_uid_quota = mr->rc->uid_quota != 0;
	ur.uid_quota = mr->rc->uid_quota;
	ur.has_uid_max_tags = mr->rc->uid_max_tags != 0;
	ur.uid_max_tags = mr->rc->uid_max_tags;
	ur.has_uid_max_waiters = mr->rc->uid_max_waiters != 0;
	ur.uid_max_waiters = mr->rc->uid_max_waiters;
	if (mr->rc->tenant_cgroup && mr->rc->tenant_levels)
		(void)snprintf(key, sizeof(key), "cgroup:%u", mr->rc->tenant_levels);
	else
		(void)snprintf(key, sizeof(key), "%s", mr->rc->tenant_cgroup ? "cgroup" : "uid");
	ur.tenant_key = key;
	resp.op_case = PMEMZ__RESPONSE__OP_USAGE;
	resp.usage = &ur;
	if (!rpc_response_fits(&resp))
		return rpc_fail(call, -EMSGSIZE, "too many uids for one reply");
	return rpc_reply(call, &resp, -1, RPC_REPLY_ORDERED);
}

const struct rpc_descriptor rpc_usage = {
    .name = "USAGE",
    .op = PMEMZ__REQUEST__OP_USAGE,
    .admin_only = false,
    .handler = rpc_usage_handler,
};
