/* SPDX-License-Identifier: MIT */
/*
 * CLAIM: take or give back an exclusive, volatile name (claim.h).  An
 * application uses it to make sure one process at a time works on its
 * data in a region (the nbdkit plugin: one server per disk), without a
 * lock file that a crashed holder would leave behind: the daemon drops a
 * connection's claims when it closes.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "claim.h"
#include "connection.h"
#include "media.h"
#include "rpc.h"

static int claim_reply(struct rpc_call *call)
{
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__ClaimResp cr = PMEMZ__CLAIM_RESP__INIT;

	resp.op_case = PMEMZ__RESPONSE__OP_CLAIM;
	resp.claim = &cr;
	/* Claims are volatile: nothing for a group commit to make durable. */
	return rpc_reply(call, &resp, -1, RPC_REPLY_NOW);
}

/* Releasing needs no access to the region: only to hold the claim. */
static int claim_release(struct rpc_call *call, const char *region, const char *name)
{
	struct connection *c = call->c;
	struct claim *cl = claim_table_find(call->m->claims, region, c->uid, name);

	if (!cl || cl->owner != c)
		return rpc_fail(call, -ENOENT,
				"this connection holds no claim '%s' in region '%.64s'", name,
				region);
	claim_table_remove(call->m->claims, cl);
	c->n_claims--;
	return claim_reply(call);
}

/*
 * Has the holder's peer hung up?  Its end of file may wait behind this
 * request in the loop: a client that reconnects closes its old connection
 * and claims again on the new one at once, and must not find itself in
 * the way.  A holder that hung up is closed now (it could send nothing
 * more anyway).
 */
static bool claim_holder_gone(struct connection *h)
{
	struct pollfd p = {.fd = h->fd, .events = POLLRDHUP};

	if (h->closing || h->fd < 0)
		return true;
	if (poll(&p, 1, 0) != 1 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return false;
	connection_close(h); /* releases its claims */
	return true;
}

static int rpc_claim_handler(struct rpc_call *call)
{
	const Pmemz__ClaimReq *req = call->req->claim;
	struct connection *c = call->c;
	struct manager_region *mr;
	struct claim *cl;
	int r;

	if (!req->name || !*req->name)
		return rpc_fail(call, -EINVAL, "empty claim name");
	if (strlen(req->name) > CLAIM_NAME_MAX)
		return rpc_fail(call, -EINVAL, "claim name longer than %u bytes", CLAIM_NAME_MAX);
	if (req->has_release && req->release) {
		if (!req->region || !*req->region)
			return rpc_fail(call, -EINVAL, "no region named");
		return claim_release(call, req->region, req->name);
	}

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	/* The rule for new tag names: printable, and displayed as what it is. */
	if (layout_tag_name_new_valid(req->name) < 0)
		return rpc_fail(call, -EINVAL, "invalid claim name");

	cl = claim_table_find(call->m->claims, mr->info.name, c->uid, req->name);
	if (cl && cl->owner == c)
		return claim_reply(call);
	if (cl && claim_holder_gone((struct connection *)(uintptr_t)cl->owner))
		cl = claim_table_find(call->m->claims, mr->info.name, c->uid, req->name);
	if (cl)
		return rpc_fail(call, -EBUSY, "'%s' in region '%s' is claimed by pid %d", req->name,
				mr->info.name, (int)cl->pid);
	if (c->n_claims >= CLAIM_PER_CONNECTION_MAX)
		return rpc_fail(call, -EMFILE, "a connection may hold at most %u claims",
				CLAIM_PER_CONNECTION_MAX);
	r = claim_table_add(call->m->claims, &c->claims, c, c->pid, c->uid, mr->info.name,
			    req->name, NULL);
	if (r < 0)
		return rpc_fail(call, r, "cannot claim '%s': %s", req->name, strerror(-r));
	c->n_claims++;
	return claim_reply(call);
}

const struct rpc_descriptor rpc_claim = {
    .name = "CLAIM",
    .op = PMEMZ__REQUEST__OP_CLAIM,
    .admin_only = false,
    .handler = rpc_claim_handler,
};
