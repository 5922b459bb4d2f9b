/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "reload.h"
#include "rpc.h"

/* OPEN_REGION: region geometry, and the region fd on the reply's first byte. */
static int rpc_open_region_handler(struct rpc_call *call)
{
	const Pmemz__OpenRegionReq *req = call->req->open_region;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__OpenRegionResp open = PMEMZ__OPEN_REGION_RESP__INIT;
	Pmemz__RegionInfo info;
	struct manager_region *mr;
	int fd, r;

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	/* A new open file description: never the daemon's own (truncation, locks). */
	fd = region_open_fd(mr->r);
	if (fd < 0)
		return rpc_fail(call, fd, "cannot open region '%s' for you: %s", req->region,
				strerror(-fd));
	reload_region_opened(mr, call->c); /* keeps it up across a reload that removes it */
	rpc_region_info_to_pb(&mr->info, &info);
	open.info = &info;
	open.fd_follows = true;
	resp.op_case = PMEMZ__RESPONSE__OP_OPEN_REGION;
	resp.open_region = &open;
	return rpc_reply(call, &resp, fd, RPC_REPLY_NOW);
}

const struct rpc_descriptor rpc_open_region = {
    .name = "OPEN_REGION",
    .op = PMEMZ__REQUEST__OP_OPEN_REGION,
    .admin_only = false,
    .handler = rpc_open_region_handler,
};
