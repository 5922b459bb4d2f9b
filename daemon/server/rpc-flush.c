/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "rpc.h"

/* FLUSH: make byte ranges of the region durable (optionally deep flush). */
static int rpc_flush_handler(struct rpc_call *call)
{
	const Pmemz__FlushReq *req = call->req->flush;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__FlushResp fl = PMEMZ__FLUSH_RESP__INIT;
	bool deep = req->has_deep && req->deep;
	struct manager_region *mr;
	uint64_t size;
	int r;

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	size = mr->info.size;
	/* Check every range before flushing any. */
	for (size_t i = 0; i < req->n_ranges; i++) {
		const Pmemz__ByteRange *br = req->ranges[i];

		if (br->offset > size || br->length > size - br->offset)
			return rpc_fail(call, -ERANGE,
					"range %" PRIu64 "+%" PRIu64
					" outside region '%s' (%" PRIu64 " bytes)",
					br->offset, br->length, mr->info.name, size);
	}
	for (size_t i = 0; i < req->n_ranges; i++) {
		const Pmemz__ByteRange *br = req->ranges[i];

		if (br->length == 0)
			continue;
		r = deep ? region_deep_flush(mr->r, br->offset, br->length)
			 : region_flush(mr->r, br->offset, br->length);
		if (r < 0)
			return rpc_fail(call, r, "%sflush failed: %s", deep ? "deep " : "",
					strerror(-r));
	}
	resp.op_case = PMEMZ__RESPONSE__OP_FLUSH;
	resp.flush = &fl;
	return rpc_reply(call, &resp, -1, RPC_REPLY_NOW);
}

const struct rpc_descriptor rpc_flush = {
    .name = "FLUSH",
    .op = PMEMZ__REQUEST__OP_FLUSH,
    .admin_only = false,
    .handler = rpc_flush_handler,
};
