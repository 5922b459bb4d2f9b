/* SPDX-License-Identifier: MIT */
#include "rpc.h"

/* NOOP: echo the payload; the transport floor for benchmarks. */
static int rpc_noop_handler(struct rpc_call *call)
{
	const Pmemz__NoopReq *req = call->req->noop;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__NoopResp noop = PMEMZ__NOOP_RESP__INIT;

	if (req && req->has_payload) {
		noop.has_payload = true;
		noop.payload = req->payload;
	}
	resp.op_case = PMEMZ__RESPONSE__OP_NOOP;
	resp.noop = &noop;
	if (!rpc_response_fits(&resp))
		return rpc_fail(call, -EMSGSIZE, "payload too large to echo");
	return rpc_reply(call, &resp, -1, RPC_REPLY_NOW);
}

const struct rpc_descriptor rpc_noop = {
    .name = "NOOP",
    .op = PMEMZ__REQUEST__OP_NOOP,
    .admin_only = false,
    .handler = rpc_noop_handler,
};
