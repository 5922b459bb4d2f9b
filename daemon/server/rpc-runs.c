/* SPDX-License-Identifier: MIT */
/*
 * RUNS: the rest of a lease or tag too fragmented for one reply.  ALLOCATE
 * and LIST send the first slice and total_runs; the client reads the rest
 * here, one frame per request, so a reply of any size goes out at the pace
 * the client reads it and never holds more than one frame of a connection's
 * output.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "lease.h"
#include "rpc.h"

static int runs_reply(struct rpc_call *call, const struct run *runs, size_t n_runs, uint64_t start)
{
	_cleanup_free_ Pmemz__Run *pb_runs = NULL;
	_cleanup_free_ Pmemz__Run **pb_ptrs = NULL;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__RunsResp rr = PMEMZ__RUNS_RESP__INIT;
	size_t n;
	int r;

	if (start >= n_runs)
		return rpc_fail(call, -ERANGE, "run %" PRIu64 " of %zu does not exist", start,
				n_runs);
	n = rpc_runs_fitting(runs + start, n_runs - (size_t)start, RPC_RUNS_BUDGET);
	r = rpc_runs_to_pb(runs + start, n, &pb_runs, &pb_ptrs);
	if (r < 0)
		return rpc_fail(call, r, "out of memory");
	rr.n_runs = n;
	rr.runs = pb_ptrs;
	rr.total_runs = n_runs;
	resp.op_case = PMEMZ__RESPONSE__OP_RUNS;
	resp.runs = &rr;
	return rpc_reply(call, &resp, -1, RPC_REPLY_ORDERED);
}

static int rpc_runs_handler(struct rpc_call *call)
{
	const Pmemz__RunsReq *req = call->req->runs;
	struct manager_region *mr;
	_cleanup_free_ struct run *runs = NULL;
	size_t n_runs = 0;
	uint64_t n_extents;
	uint32_t id;
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
		return runs_reply(call, l->runs, l->n_runs, req->start);
	}
	r = rpc_own_tag(call, mr, req->tag, &id);
	if (r < 0)
		return r;
	r = region_tag_runs(mr->r, id, &runs, &n_runs, &n_extents);
	if (r < 0)
		return rpc_fail(call, r, "reading tag '%.64s' failed: %s", req->tag, strerror(-r));
	return runs_reply(call, runs, n_runs, req->start);
}

const struct rpc_descriptor rpc_runs = {
    .name = "RUNS",
    .op = PMEMZ__REQUEST__OP_RUNS,
    .admin_only = false,
    .handler = rpc_runs_handler,
};
