/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>

#include "connection.h"
#include "log.h"
#include "pmemz-version.h"
#include "rpc.h"

/*
 * The versions the client speaks: the range it states, or the version of
 * its HELLO alone when it states none (a client from before the ranges).
 */
static void hello_client_range(const Pmemz__Request *req, uint32_t *min, uint32_t *max)
{
	const Pmemz__HelloReq *h = req->hello;

	*min = *max = req->version;
	if (h && h->has_min_version && h->has_max_version && h->min_version <= h->max_version) {
		*min = h->min_version;
		*max = h->max_version;
	}
}

/* HELLO: protocol version, daemon version, and who the daemon thinks we are. */
static int rpc_hello_handler(struct rpc_call *call)
{
	const Pmemz__HelloReq *req = call->req->hello;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__HelloResp hello = PMEMZ__HELLO_RESP__INIT;
	struct connection *c = call->c;
	uint32_t cmin, cmax, lo, hi;

	if (req && req->client_name)
		log_debug("connection %" PRIu64 ": client '%s'", c->serial,
			  LOG_ESC(req->client_name));
	/* The connection uses the highest version both sides speak. */
	hello_client_range(call->req, &cmin, &cmax);
	lo = cmin > PMEMZ_PROTO_VERSION_MIN ? cmin : PMEMZ_PROTO_VERSION_MIN;
	hi = cmax < PMEMZ_PROTO_VERSION_MAX ? cmax : PMEMZ_PROTO_VERSION_MAX;
	if (lo > hi)
		return rpc_fail(call, -EPROTO,
				"no protocol version in common: the client speaks %u to %u, "
				"pmemzerod %s speaks %u to %u",
				cmin, cmax, PMEMZ_VERSION, PMEMZ_PROTO_VERSION_MIN,
				PMEMZ_PROTO_VERSION_MAX);
	hello.version = hi;
	hello.daemon_version = (char *)PMEMZ_VERSION;
	hello.uid = (uint32_t)c->uid;
	hello.gid = (uint32_t)c->gid;
	hello.admin = c->admin;
	hello.has_pid = true;
	hello.pid = (int32_t)c->pid;
	hello.cgroup = c->cgroup;
	hello.identity = (char *)(uintptr_t)peer_how_name(c->how);
	hello.has_cgroup_id = c->cgroup_id != 0;
	hello.cgroup_id = c->cgroup_id;
	hello.has_min_version = hello.has_max_version = true;
	hello.min_version = PMEMZ_PROTO_VERSION_MIN;
	hello.max_version = PMEMZ_PROTO_VERSION_MAX;
	resp.op_case = PMEMZ__RESPONSE__OP_HELLO;
	resp.hello = &hello;
	return rpc_reply(call, &resp, -1, RPC_REPLY_NOW);
}

const struct rpc_descriptor rpc_hello = {
    .name = "HELLO",
    .op = PMEMZ__REQUEST__OP_HELLO,
    .admin_only = false,
    .handler = rpc_hello_handler,
};
