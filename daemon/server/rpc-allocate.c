/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "connection.h"
#include "lease.h"
#include "log.h"
#include "regions.h"
#include "rpc.h"
#include "usage.h"
#include "waitq.h"

/*
 * A lease with more runs than one frame holds: a client that reads the rest
 * with RUNS gets the first slice and the total, others -EMSGSIZE.
 */
static int allocate_first_slice(const struct connection *c, const struct lease *l,
				Pmemz__AllocateResp *alloc)
{
	if (!c->more_runs_ok)
		return -EMSGSIZE;
	alloc->n_runs = rpc_runs_fitting(l->runs, l->n_runs, RPC_RUNS_BUDGET);
	alloc->has_total_runs = true;
	alloc->total_runs = l->n_runs;
	return 0;
}

/*
 * Lease n extents for c, whose tenant row (usage_tenant, resolved once per
 * request by the handler) is u, and queue the reply for after the group commit.
 * -EAGAIN (nothing changed) when too few extents are zeroed now.
 */
static int allocate_now(struct manager *m, struct connection *c, struct manager_region *mr,
			struct uid_usage *u, uint64_t n, uint64_t id, char *msg, size_t msg_len)
{
	_cleanup_free_ struct run *runs = NULL;
	_cleanup_free_ Pmemz__Run *pb_runs = NULL;
	_cleanup_free_ Pmemz__Run **pb_ptrs = NULL;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__AllocateResp alloc = PMEMZ__ALLOCATE_RESP__INIT;
	struct lease *l;
	size_t n_runs = 0;
	int r;

	r = region_lease(mr->r, n, &runs, &n_runs);
	if (r == -EAGAIN) {
		(void)snprintf(msg, msg_len, "%" PRIu64 " extents wanted, %" PRIu64 " zeroed now",
			       n, region_count_zeroed(mr->r));
		return r;
	}
	if (r == -ENOSPC) {
		(void)snprintf(msg, msg_len,
			       "region '%s' has %" PRIu64 " free extents, %" PRIu64 " wanted",
			       mr->info.name, region_count_free(mr->r), n);
		return r;
	}
	if (r < 0) {
		(void)snprintf(msg, msg_len, "lease failed: %s", strerror(-r));
		return r;
	}
	/* From here on, LEASED states were stored: undo them on any failure. */
	commit_request(m);
	r = lease_table_add(m->leases, &c->leases, c, mr->index, runs, n_runs, &l);
	if (r < 0) {
		region_unlease(mr->r, runs, n_runs);
		(void)snprintf(msg, msg_len, "%s", strerror(-r));
		return r;
	}
	runs = NULL; /* the lease has them */
	l->uid = c->uid;
	l->row = u;
	u->leased += l->n_extents;

	r = rpc_runs_to_pb(l->runs, l->n_runs, &pb_runs, &pb_ptrs);
	if (r >= 0) {
		alloc.n_runs = l->n_runs;
		alloc.runs = pb_ptrs;
		alloc.lease = l->id;
		resp.op_case = PMEMZ__RESPONSE__OP_ALLOCATE;
		resp.allocate = &alloc;
		if (!rpc_response_fits(&resp))
			r = allocate_first_slice(c, l, &alloc);
	}
	if (r < 0) {
		usage_release_lease(m, l);
		(void)snprintf(msg, msg_len, "%s",
			       r == -EMSGSIZE ? "free space too fragmented for one reply"
					      : strerror(-r));
		return r;
	}
	mr->allocations++;
	log_debug("connection %" PRIu64 ": lease %" PRIu64 ": %" PRIu64
		  " extents of '%s' in %zu runs",
		  c->serial, l->id, l->n_extents, mr->info.name, l->n_runs);
	(void)rpc_send(m, c, id, &resp, -1, RPC_REPLY_COMMIT);
	return 0;
}

/* A waiting ALLOCATE's turn (a waitq_grant_fn), remembered like a request naming mr. */
static int allocate_grant(struct manager *m, struct connection *c, struct manager_region *mr,
			  struct uid_usage *u, uint64_t n_extents, uint64_t req_id)
{
	char msg[RPC_MSG_MAX];
	int r;

	regions_touch(mr, c);
	r = allocate_now(m, c, mr, u, n_extents, req_id, msg, sizeof(msg));
	if (r < 0 && r != -EAGAIN) {
		log_debug("connection %" PRIu64 ": ALLOCATE request %" PRIu64 ": %s", c->serial,
			  req_id, msg);
		(void)rpc_send_error(m, c, req_id, r, msg, RPC_REPLY_COMMIT);
	}
	return r;
}

/* A waiting ALLOCATE on a region that has failed (a waitq_fail_fn): its answer is -EIO. */
static int allocate_failed(struct manager *m, struct connection *c, struct manager_region *mr,
			   uint64_t req_id)
{
	char msg[RPC_MSG_MAX];

	(void)snprintf(msg, sizeof(msg), "region '%s' has failed: %s", mr->rc->name, mr->failure);
	(void)rpc_send_error(m, c, req_id, -EIO, msg, RPC_REPLY_ORDERED);
	return 0;
}

/* ALLOCATE: ceil(bytes / extent size) zeroed extents, leased to this connection. */
static int rpc_allocate_handler(struct rpc_call *call)
{
	const Pmemz__AllocateReq *req = call->req->allocate;
	struct connection *c = call->c;
	struct manager *m = call->m;
	struct manager_region *mr;
	struct uid_usage *u;
	uint64_t n, es;
	int r;

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	/* A capability: a waiting ALLOCATE is granted without its request. */
	if (req->has_more_runs_ok && req->more_runs_ok)
		c->more_runs_ok = true;
	if (req->bytes == 0)
		return rpc_fail(call, -EINVAL, "cannot allocate 0 bytes");
	es = mr->info.extent_size;
	n = req->bytes / es + (req->bytes % es != 0);
	if (n > mr->info.extent_count)
		return rpc_fail(call, -ENOSPC, "%" PRIu64 " bytes exceed region '%s'", req->bytes,
				req->region);

	r = usage_tenant(mr, c, &u);
	if (r == -EACCES)
		return rpc_fail(call, r,
				"region '%s' counts tenants by cgroup, and this peer's cgroup is "
				"unknown",
				mr->info.name);
	if (r < 0)
		return rpc_fail(call, r, "usage accounting: %s", strerror(-r));
	/* What this tenant waits for counts too: a waiter's grant must fit the quota. */
	r = usage_check_bytes(mr, u, n, call->msg, sizeof(call->msg));
	if (r < 0)
		return r;

	/* Waiters are served in turn (waitq.c): nobody overtakes them. */
	if (waitq_count(mr) == 0) {
		r = allocate_now(m, c, mr, u, n, call->id, call->msg, sizeof(call->msg));
		if (r != -EAGAIN)
			return r;
	}
	if (req->has_nowait && req->nowait)
		return rpc_fail(
		    call, -EAGAIN, "%" PRIu64 " extents wanted, %" PRIu64 " zeroed now%s", n,
		    region_count_zeroed(mr->r), waitq_count(mr) ? ", others waiting" : "");
	if (n > region_count_free(mr->r))
		return rpc_fail(call, -ENOSPC,
				"region '%s' has %" PRIu64 " free extents, %" PRIu64 " wanted",
				req->region, region_count_free(mr->r), n);
	r = usage_check_waiters(mr, u, call->msg, sizeof(call->msg));
	if (r < 0)
		return r;
	r = waitq_add(mr, c, u, call->id, n, allocate_grant, allocate_failed);
	if (r == -EBUSY)
		return rpc_fail(call, r, "too many allocations waiting on this connection");
	if (r < 0)
		return rpc_fail(call, r, "out of memory");
	log_debug("connection %" PRIu64 ": ALLOCATE request %" PRIu64 " waits for %" PRIu64
		  " extents of '%s'",
		  c->serial, call->id, n, mr->info.name);
	return 0;
}

const struct rpc_descriptor rpc_allocate = {
    .name = "ALLOCATE",
    .op = PMEMZ__REQUEST__OP_ALLOCATE,
    .admin_only = false,
    .handler = rpc_allocate_handler,
};
