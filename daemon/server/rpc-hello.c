/* SPDX-License-Identifier: MIT */
#include <inttypes.h>

#include "connection.h"
#include "log.h"
#include "pmemz-version.h"
#include "rpc.h"

/* HELLO: protocol version, daemon version, and who the daemon thinks we are. */
static int rpc_hello_handler(struct rpc_call *call)
{
	const Pmemz__HelloReq *req = call->req->hello;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__HelloResp hello = PMEMZ__HELLO_RESP__INIT;
	struct connection *c = call->c;

	if (req && req->client_name)
		log_debug("connection %" PRIu64 ": client '%s'", c->serial,
			  LOG_ESC(req->client_name));
	hello.version = PMEMZ_PROTO_VERSION;
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
