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

/* COMMIT: this connection's lease becomes a tag of the caller's uid. */
static int rpc_commit_handler(struct rpc_call *call)
{
	const Pmemz__CommitReq *req = call->req->commit;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__CommitResp commit = PMEMZ__COMMIT_RESP__INIT;
	struct manager_region *mr;
	struct uid_usage *u;
	struct lease *l;
	uint64_t lease_id = req->lease;
	size_t tag_len;
	int r;

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	tag_len = req->tag ? strlen(req->tag) : 0;
	if (tag_len == 0)
		return rpc_fail(call, -EINVAL, "empty tag name");
	if (tag_len > RPC_TAG_MAX)
		return rpc_fail(call, -ENAMETOOLONG, "tag name too long");
	/* The media rule for new names (layout_tag_name_new_valid), with a message. */
	r = layout_tag_name_new_valid(req->tag);
	if (r == -ENAMETOOLONG)
		return rpc_fail(call, r, "tag name longer than %u bytes", LAYOUT_TAG_NAME_MAX);
	if (r < 0)
		return rpc_fail(call, r,
				"invalid tag name: not UTF-8, or holds control or bidirectional "
				"formatting characters");
	r = rpc_own_lease(call, mr, lease_id, &l);
	if (r < 0)
		return r;
	r = usage_tenant(mr, call->c, &u);
	if (r < 0)
		return rpc_fail(call, r, "usage accounting: %s", strerror(-r));
	r = usage_check_tags(mr, u, call->msg, sizeof(call->msg));
	if (r < 0)
		return r;

	r = region_commit(mr->r, l->runs, l->n_runs, req->tag, call->c->uid,
			  req->has_flush_data && req->flush_data);
	switch (r) {
	case 0:
		break;
	case -EEXIST:
		return rpc_fail(call, r, "tag '%.64s' exists", req->tag);
	case -ENAMETOOLONG:
		return rpc_fail(call, r, "tag name too long");
	case -EINVAL:
		return rpc_fail(call, r, "invalid tag name");
	case -ENOSPC:
		return rpc_fail(call, r, "tag table of region '%s' is full", mr->info.name);
	default:
		return rpc_fail(call, r, "commit failed: %s", strerror(-r));
	}
	log_debug("connection %" PRIu64 ": lease %" PRIu64 " committed as '%s' (uid %u)",
		  call->c->serial, lease_id, LOG_ESC(req->tag), (unsigned)call->c->uid);
	{
		struct uid_usage *lu = l->row ? l->row : u;
		uint32_t id = 0;

		lu->leased -= MIN(lu->leased, l->n_extents);
		/* The new tag's id, to remember its tenant (usage.h). */
		(void)region_tag_lookup(mr->r, req->tag, call->c->uid, &id);
		usage_tag_committed(mr, u, id, l->n_extents);
	}
	lease_table_remove(call->m->leases, l);
	mr->commits++;
	commit_request(call->m);

	resp.op_case = PMEMZ__RESPONSE__OP_COMMIT;
	resp.commit = &commit;
	return rpc_reply(call, &resp, -1, RPC_REPLY_COMMIT);
}

const struct rpc_descriptor rpc_commit = {
    .name = "COMMIT",
    .op = PMEMZ__REQUEST__OP_COMMIT,
    .admin_only = false,
    .handler = rpc_commit_handler,
};
