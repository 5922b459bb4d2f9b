/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "commit.h"
#include "connection.h"
#include "lease.h"
#include "log.h"
#include "rpc.h"
#include "usage.h"

/* FREE: one lease of this connection, or one tag of the caller's uid. */
static int rpc_free_handler(struct rpc_call *call)
{
	const Pmemz__FreeReq *req = call->req->free;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__FreeResp fr = PMEMZ__FREE_RESP__INIT;
	struct manager_region *mr;
	uint64_t n = 0;
	int r;

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	if (req->has_lease == (req->tag != NULL))
		return rpc_fail(call, -EINVAL, "give exactly one of lease and tag");

	if (req->has_lease) {
		struct lease *l;

		r = rpc_own_lease(call, mr, req->lease, &l);
		if (r < 0)
			return r;
		n = l->n_extents;
		usage_release_lease(call->m, l);
		log_debug("connection %" PRIu64 ": lease %" PRIu64 " freed", call->c->serial,
			  req->lease);
	} else {
		_cleanup_free_ struct run *runs = NULL;
		struct uid_usage *u;
		size_t n_runs = 0;
		uint32_t id;

		r = rpc_own_tag(call, mr, req->tag, &id);
		if (r < 0)
			return r;
		/* The runs, for charging their zeroing to the tag's tenant (usage.c). */
		r = usage_tag_owner(mr, id, call->c->uid, &u);
		if (r >= 0 && u->tenant && !call->c->admin) {
			struct uid_usage *mine = NULL;

			/* Tags are the uid's; with tenant = cgroup, also the committer's. */
			if (usage_tenant(mr, call->c, &mine) < 0 || mine != u)
				return rpc_fail(call, -EPERM,
						"tag '%.64s' belongs to another tenant", req->tag);
		}
		if (r >= 0)
			r = region_tag_runs(mr->r, id, &runs, &n_runs, &n);
		if (r < 0)
			return rpc_fail(call, r, "freeing tag '%.64s' failed: %s", req->tag,
					strerror(-r));
		r = region_tag_free(mr->r, id, &n);
		if (r < 0)
			return rpc_fail(call, r, "freeing tag '%.64s' failed: %s", req->tag,
					strerror(-r));
		usage_tag_freed(mr, u, id, runs, n_runs, n);
		log_debug("connection %" PRIu64 ": tag '%s' of uid %u freed", call->c->serial,
			  LOG_ESC(req->tag), (unsigned)call->c->uid);
	}
	mr->frees++;
	commit_request(call->m);

	fr.extents = n;
	resp.op_case = PMEMZ__RESPONSE__OP_FREE;
	resp.free = &fr;
	return rpc_reply(call, &resp, -1, RPC_REPLY_COMMIT);
}

const struct rpc_descriptor rpc_free = {
    .name = "FREE",
    .op = PMEMZ__REQUEST__OP_FREE,
    .admin_only = false,
    .handler = rpc_free_handler,
};
