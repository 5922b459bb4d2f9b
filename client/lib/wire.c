/* SPDX-License-Identifier: MIT */
/*
 * The requests of libpmemzclient, built in one place (wire.h says why).
 * Each function fills the request's body on the stack and hands it to the
 * transport: call (send and wait), submit (send, a ticket) or submit_many
 * (one send for many).
 */
#include <errno.h>
#include <stdlib.h>

#include "wire.h"

static int wire_call(struct pmemz_client *c, Pmemz__Request *req, Pmemz__Response **resp)
{
	_cleanup_response_ Pmemz__Response *own = NULL;

	return pmemz_client_call(c, req, resp ? resp : &own);
}

/* The protocol's strings are char *; the caller's are const and never written through. */
static char *str(const char *s)
{
	return (char *)(uintptr_t)s;
}

int pmemz_wire_hello(struct pmemz_client *c, const char *client_name, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__HelloReq hello = PMEMZ__HELLO_REQ__INIT;

	hello.client_name = str(client_name);
	hello.has_min_version = hello.has_max_version = true;
	hello.min_version = PMEMZ_PROTO_VERSION_MIN;
	hello.max_version = PMEMZ_PROTO_VERSION_MAX;
	req.op_case = PMEMZ__REQUEST__OP_HELLO;
	req.hello = &hello;
	return wire_call(c, &req, resp);
}

int pmemz_wire_open_region(struct pmemz_client *c, const char *region, Pmemz__Response **resp,
			   int *fd)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__OpenRegionReq open = PMEMZ__OPEN_REGION_REQ__INIT;

	open.region = str(region);
	req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
	req.open_region = &open;
	return pmemz_client_call_fd(c, &req, resp, fd);
}

int pmemz_wire_allocate(struct pmemz_client *c, const char *region, uint64_t bytes, bool nowait,
			size_t n, struct pmemz_pending **tickets)
{
	Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
	_cleanup_free_ Pmemz__Request *reqs = NULL;
	_cleanup_free_ Pmemz__Request **rp = NULL;

	al.region = str(region);
	al.bytes = bytes;
	al.has_nowait = true;
	al.nowait = nowait;
	/* A lease of many runs comes with the first ones; RUNS reads the rest. */
	al.has_more_runs_ok = true;
	al.more_runs_ok = true;
	if (n == 1) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;

		req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		req.allocate = &al;
		return pmemz_client_submit(c, &req, tickets);
	}
	reqs = calloc(n, sizeof(*reqs));
	rp = calloc(n, sizeof(*rp));
	if (!reqs || !rp)
		return pmemz_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		pmemz__request__init(&reqs[i]);
		reqs[i].op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		reqs[i].allocate = &al;
		rp[i] = &reqs[i];
	}
	return pmemz_client_submit_many(c, rp, n, tickets);
}

bool pmemz_wire_answered(struct pmemz_client *c, struct pmemz_pending *ticket)
{
	return pmemz_client_poll(c, ticket);
}

int pmemz_wire_allocate_lease(struct pmemz_client *c, struct pmemz_pending *ticket,
			      uint64_t *lease)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	int r = pmemz_client_wait(c, ticket, &resp, NULL);

	if (r == 0)
		r = pmemz_check_response(PMEMZ__REQUEST__OP_ALLOCATE, resp);
	if (r == 0)
		*lease = resp->allocate->lease;
	return r;
}

void pmemz_wire_forget(struct pmemz_client *c, struct pmemz_pending *ticket)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;

	(void)pmemz_client_wait(c, ticket, &resp, NULL);
}

int pmemz_wire_free(struct pmemz_client *c, const char *region, uint64_t lease, const char *tag,
		    struct pmemz_pending **ticket)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FreeReq fr = PMEMZ__FREE_REQ__INIT;

	fr.region = str(region);
	if (tag) {
		fr.tag = str(tag);
	} else {
		fr.has_lease = true;
		fr.lease = lease;
	}
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &fr;
	if (ticket)
		return pmemz_client_submit(c, &req, ticket);
	return wire_call(c, &req, NULL);
}

int pmemz_wire_runs(struct pmemz_client *c, const char *region, uint64_t lease, const char *tag,
		    uint64_t start, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__RunsReq rq = PMEMZ__RUNS_REQ__INIT;

	rq.region = str(region);
	if (tag) {
		rq.tag = str(tag);
	} else {
		rq.has_lease = true;
		rq.lease = lease;
	}
	rq.start = start;
	req.op_case = PMEMZ__REQUEST__OP_RUNS;
	req.runs = &rq;
	return wire_call(c, &req, resp);
}

static void commit_fill(Pmemz__CommitReq *cm, const char *region,
			const struct pmemz_wire_commit *in)
{
	pmemz__commit_req__init(cm);
	cm->region = str(region);
	cm->lease = in->lease;
	cm->tag = str(in->tag);
	cm->has_flush_data = true;
	cm->flush_data = in->flush;
}

int pmemz_wire_commit(struct pmemz_client *c, const char *region,
		      const struct pmemz_wire_commit *in, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__CommitReq cm;

	commit_fill(&cm, region, in);
	req.op_case = PMEMZ__REQUEST__OP_COMMIT;
	req.commit = &cm;
	return wire_call(c, &req, resp);
}

/* The requests of one batch, on the heap: a batch has any number of entries. */
struct wire_batch {
	Pmemz__Request *reqs, **req_ptrs;
	Pmemz__CommitReq *commits;
	Pmemz__MoveReq move;
	Pmemz__Move *moves, **move_ptrs;
};

static void wire_batch_free(struct wire_batch *w)
{
	free(w->reqs);
	free(w->req_ptrs);
	free(w->commits);
	free(w->moves);
	free(w->move_ptrs);
}

int pmemz_wire_batch(struct pmemz_client *c, const char *region,
		     const struct pmemz_wire_commit *commits, size_t n_commits,
		     const struct pmemz_wire_move *moves, size_t n_moves,
		     struct pmemz_pending **tickets)
{
	_cleanup_(wire_batch_free) struct wire_batch w = {0};
	size_t n = n_commits + (n_moves ? 1 : 0);

	w.reqs = calloc(n ? n : 1, sizeof(*w.reqs));
	w.req_ptrs = calloc(n ? n : 1, sizeof(*w.req_ptrs));
	w.commits = calloc(n_commits ? n_commits : 1, sizeof(*w.commits));
	w.moves = calloc(n_moves ? n_moves : 1, sizeof(*w.moves));
	w.move_ptrs = calloc(n_moves ? n_moves : 1, sizeof(*w.move_ptrs));
	if (!w.reqs || !w.req_ptrs || !w.commits || !w.moves || !w.move_ptrs)
		return pmemz_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < n_commits; i++) {
		commit_fill(&w.commits[i], region, &commits[i]);
		pmemz__request__init(&w.reqs[i]);
		w.reqs[i].op_case = PMEMZ__REQUEST__OP_COMMIT;
		w.reqs[i].commit = &w.commits[i];
		w.req_ptrs[i] = &w.reqs[i];
	}
	if (n_moves) {
		for (size_t m = 0; m < n_moves; m++) {
			pmemz__move__init(&w.moves[m]);
			w.moves[m].from_tag = str(moves[m].from_tag);
			w.moves[m].extent = moves[m].extent;
			w.moves[m].to_tag = str(moves[m].to_tag);
			w.move_ptrs[m] = &w.moves[m];
		}
		pmemz__move_req__init(&w.move);
		w.move.region = str(region);
		w.move.n_moves = n_moves;
		w.move.moves = w.move_ptrs;
		pmemz__request__init(&w.reqs[n_commits]);
		w.reqs[n_commits].op_case = PMEMZ__REQUEST__OP_MOVE;
		w.reqs[n_commits].move = &w.move;
		w.req_ptrs[n_commits] = &w.reqs[n_commits];
	}
	return pmemz_client_submit_many(c, w.req_ptrs, n, tickets);
}

int pmemz_wire_list(struct pmemz_client *c, const char *region, const struct pmemz_wire_list *q,
		    Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ListReq ls = PMEMZ__LIST_REQ__INIT;

	ls.region = str(region);
	ls.tag = str(q->tag);
	ls.prefix = str(q->prefix);
	if (q->all_users)
		ls.has_all_users = ls.all_users = true;
	if (q->more_runs_ok)
		ls.has_more_runs_ok = ls.more_runs_ok = true;
	if (q->paged) {
		ls.has_start_slot = true;
		ls.start_slot = q->start_slot;
	}
	req.op_case = PMEMZ__REQUEST__OP_LIST;
	req.list = &ls;
	return wire_call(c, &req, resp);
}

int pmemz_wire_claim(struct pmemz_client *c, const char *region, const char *name, bool release)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ClaimReq cl = PMEMZ__CLAIM_REQ__INIT;

	cl.region = str(region);
	cl.name = str(name);
	cl.has_release = release;
	cl.release = release;
	req.op_case = PMEMZ__REQUEST__OP_CLAIM;
	req.claim = &cl;
	return wire_call(c, &req, NULL);
}

int pmemz_wire_flush(struct pmemz_client *c, const char *region, uint64_t offset, uint64_t length,
		     bool deep)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FlushReq flush = PMEMZ__FLUSH_REQ__INIT;
	Pmemz__ByteRange range = PMEMZ__BYTE_RANGE__INIT;
	Pmemz__ByteRange *ranges[1] = {&range};

	range.offset = offset;
	range.length = length;
	flush.region = str(region);
	flush.n_ranges = 1;
	flush.ranges = ranges;
	flush.has_deep = true;
	flush.deep = deep;
	req.op_case = PMEMZ__REQUEST__OP_FLUSH;
	req.flush = &flush;
	return wire_call(c, &req, NULL);
}

int pmemz_wire_stat(struct pmemz_client *c, const char *region, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq st = PMEMZ__STAT_REQ__INIT;

	st.region = str(region);
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &st;
	return wire_call(c, &req, resp);
}

int pmemz_wire_usage(struct pmemz_client *c, const char *region, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__UsageReq ur = PMEMZ__USAGE_REQ__INIT;

	ur.region = str(region);
	req.op_case = PMEMZ__REQUEST__OP_USAGE;
	req.usage = &ur;
	return wire_call(c, &req, resp);
}

int pmemz_wire_map(struct pmemz_client *c, const char *region, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__MapReq mq = PMEMZ__MAP_REQ__INIT;

	mq.region = str(region);
	req.op_case = PMEMZ__REQUEST__OP_MAP;
	req.map = &mq;
	return wire_call(c, &req, resp);
}

int pmemz_wire_zeroer(struct pmemz_client *c, const char *region, int pause, const uint64_t *rate)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq zq = PMEMZ__ZEROER_REQ__INIT;

	/* The protocol's "every region" is the empty name. */
	zq.region = str(region ? region : "");
	if (pause >= 0) {
		zq.has_pause = true;
		zq.pause = pause > 0;
	}
	if (rate) {
		zq.has_rate = true;
		zq.rate = *rate;
	}
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &zq;
	return wire_call(c, &req, NULL);
}

int pmemz_wire_clients(struct pmemz_client *c, uint64_t after, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ClientsReq cr = PMEMZ__CLIENTS_REQ__INIT;

	cr.has_after = after != 0;
	cr.after = after;
	req.op_case = PMEMZ__REQUEST__OP_CLIENTS;
	req.clients = &cr;
	return wire_call(c, &req, resp);
}
