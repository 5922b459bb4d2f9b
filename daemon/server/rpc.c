/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "commit.h"
#include "connection.h"
#include "lease.h"
#include "log.h"
#include "regions.h"
#include "rpc.h"

int rpc_fail(struct rpc_call *call, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(call->msg, sizeof(call->msg), fmt, ap);
	va_end(ap);
	return r;
}

bool rpc_response_fits(const Pmemz__Response *resp)
{
	return protobuf_c_message_get_packed_size(&resp->base) <= PMEMZ_FRAME_MAX;
}

static int rpc_queue(struct manager *m, struct connection *c, uint8_t *frame, size_t len, int fd,
		     enum rpc_reply_mode mode)
{
	bool hold = mode == RPC_REPLY_COMMIT || (mode == RPC_REPLY_ORDERED && commit_pending(m));

	return connection_queue(c, frame, len, fd, hold);
}

int rpc_send(struct manager *m, struct connection *c, uint64_t id, Pmemz__Response *resp, int fd,
	     enum rpc_reply_mode mode)
{
	uint8_t *frame;
	size_t len;
	int r;

	resp->id = id;
	r = pmemz_frame_pack_response(resp, &frame, &len);
	if (r < 0 && fd >= 0) /* the reply owns fd, also on failure */
		(void)close(fd);
	if (r == -EMSGSIZE && resp->status == 0) {
		/* Handlers check the size first; this is the safety net. */
		log_warning("Reply to request %" PRIu64 " too large for a frame", id);
		return rpc_send_error(m, c, id, -EMSGSIZE, "reply too large", mode);
	}
	if (r < 0) {
		(void)log_warning_errno(r, "Failed to pack the reply to request %" PRIu64 ": %m",
					id);
		connection_close(c);
		return r;
	}
	return rpc_queue(m, c, frame, len, fd, mode);
}

int rpc_send_error(struct manager *m, struct connection *c, uint64_t id, int status,
		   const char *msg, enum rpc_reply_mode mode)
{
	uint8_t *frame;
	size_t len;
	int r = connection_pack_error(id, status, msg, &frame, &len);

	if (r < 0) {
		(void)log_warning_errno(r, "Failed to pack the reply to request %" PRIu64 ": %m",
					id);
		connection_close(c);
		return r;
	}
	return rpc_queue(m, c, frame, len, -1, mode);
}

int rpc_reply(struct rpc_call *call, Pmemz__Response *resp, int fd, enum rpc_reply_mode mode)
{
	resp->status = 0;
	return rpc_send(call->m, call->c, call->id, resp, fd, mode);
}

void rpc_fail_reply(struct rpc_call *call, int r)
{
	struct connection *c = call->c;

	if (!call->msg[0])
		(void)snprintf(call->msg, sizeof(call->msg), "%s", strerror(-r));
	log_debug("connection %" PRIu64 " (uid %u): %s request %" PRIu64 ": %s", c->serial,
		  (unsigned)c->uid, call->name ? call->name : "unknown", call->id,
		  LOG_ESC(call->msg));
	(void)rpc_send_error(call->m, c, call->id, r, call->msg, RPC_REPLY_ORDERED);
}

bool rpc_region_allowed(const struct connection *c, const struct manager_region *mr)
{
	/* root's pass is an admin's: with admin_cgroups, root elsewhere is a tenant. */
	if (c->uid == 0 && c->admin)
		return true;
	return conf_access_region_lists(mr->rc, c->uid, c->gid, c->groups, c->n_groups) ||
	       conf_access_region_cgroup(mr->rc, c->cgroup);
}

bool rpc_region_visible(const struct connection *c, const struct manager_region *mr)
{
	return c->admin || rpc_region_allowed(c, mr);
}

/*
 * A reload took the uid off the region's allow list: what the daemon
 * already handed this connection, it may still COMMIT or FREE (its data is
 * not lost, nothing leaks); everything new is refused.
 */
static bool rpc_finishes_own_lease(const struct rpc_call *call, const struct manager_region *mr)
{
	const Pmemz__Request *req = call->req;
	const struct lease *l = NULL;

	if (!req)
		return false;
	if (req->op_case == PMEMZ__REQUEST__OP_COMMIT && req->commit)
		l = lease_table_find(call->m->leases, req->commit->lease);
	else if (req->op_case == PMEMZ__REQUEST__OP_FREE && req->free && req->free->has_lease &&
		 !req->free->tag)
		l = lease_table_find(call->m->leases, req->free->lease);
	return l && l->owner == call->c && l->region == mr->index;
}

int rpc_region(struct rpc_call *call, const char *name, struct manager_region **out)
{
	struct manager_region *mr;

	if (!name || !*name)
		return rpc_fail(call, -EINVAL, "no region named");
	if (strlen(name) > CONF_REGION_NAME_MAX)
		return rpc_fail(call, -ENOENT, "no region '%.*s...'", (int)CONF_REGION_NAME_MAX,
				name);
	mr = regions_find(call->m, name);
	if (!mr)
		return rpc_fail(call, -ENOENT, "no region '%s'", name);
	/* Before the access check: no caller (admins included) gets past a failed region. */
	if (mr->failed)
		return rpc_region_allowed(call->c, mr)
			   ? rpc_fail(call, -EIO, "region '%s' has failed: %s", name, mr->failure)
			   : rpc_fail(call, -EIO, "region '%s' has failed", name);
	if (!rpc_region_allowed(call->c, mr) && !rpc_finishes_own_lease(call, mr))
		return rpc_fail(call, -EACCES, "uid %u may not use region '%s'",
				(unsigned)call->c->uid, name);
	if (regions_removing(mr) && call->req && (call->req->op_case == PMEMZ__REQUEST__OP_OPEN_REGION ||
			     call->req->op_case == PMEMZ__REQUEST__OP_ALLOCATE))
		return rpc_fail(call, -ENOENT,
				"region '%s' was removed from the configuration; it goes away once "
				"its users are done",
				name);
	regions_touch(mr, call->c);
	*out = mr;
	return 0;
}

int rpc_own_lease(struct rpc_call *call, const struct manager_region *mr, uint64_t id,
		  struct lease **out)
{
	struct lease *l = lease_table_find(call->m->leases, id);

	if (!l)
		return rpc_fail(call, -ENOENT, "no lease %" PRIu64, id);
	if (l->owner != call->c)
		return rpc_fail(call, -EPERM, "lease %" PRIu64 " belongs to another connection",
				id);
	if (l->region != mr->index)
		return rpc_fail(call, -EINVAL, "lease %" PRIu64 " is not in region '%s'", id,
				mr->info.name);
	*out = l;
	return 0;
}

int rpc_own_tag(struct rpc_call *call, const struct manager_region *mr, const char *tag,
		uint32_t *id)
{
	int r;

	if (!*tag || strlen(tag) > RPC_TAG_MAX)
		return rpc_fail(call, -EINVAL, "invalid tag name");
	r = region_tag_lookup(mr->r, tag, call->c->uid, id);
	if (r == -ENOENT)
		return rpc_fail(call, r, "no tag '%.64s' of uid %u in region '%s'", tag,
				(unsigned)call->c->uid, mr->info.name);
	if (r < 0)
		return rpc_fail(call, r, "tag lookup failed: %s", strerror(-r));
	return 0;
}

int rpc_runs_to_pb(const struct run *runs, size_t n_runs, Pmemz__Run **storage, Pmemz__Run ***ptrs)
{
	Pmemz__Run *s;
	Pmemz__Run **p;

	*storage = NULL;
	*ptrs = NULL;
	if (n_runs == 0)
		return 0;
	s = calloc(n_runs, sizeof(*s));
	p = calloc(n_runs, sizeof(*p));
	if (!s || !p) {
		free(s);
		free(p);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_runs; i++) {
		pmemz__run__init(&s[i]);
		s[i].first = runs[i].first;
		s[i].count = runs[i].count;
		p[i] = &s[i];
	}
	*storage = s;
	*ptrs = p;
	return 0;
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t rpc_runs_fitting(const struct run *runs, size_t n_runs, size_t budget)
{
	size_t used = 0, k;

	for (k = 0; k < n_runs; k++) {
		/* field key + length byte, then first's and count's keys and varints */
		size_t one = 4 + varint_size(runs[k].first) + varint_size(runs[k].count);

		if (used + one > budget)
			break;
		used += one;
	}
	return k;
}

size_t rpc_runs_packed(const struct run *runs, size_t n_runs)
{
	size_t used = 0;

	for (size_t k = 0; k < n_runs; k++)
		used += 4 + varint_size(runs[k].first) + varint_size(runs[k].count);
	return used;
}

void rpc_region_info_to_pb(const struct region_info *info, Pmemz__RegionInfo *pb)
{
	pmemz__region_info__init(pb);
	/* protobuf-c only reads these while packing. */
	pb->name = (char *)(uintptr_t)(info->name ? info->name : "");
	pb->path = (char *)(uintptr_t)(info->path ? info->path : "");
	pb->size = info->size;
	pb->extent_size = info->extent_size;
	pb->extent_count = info->extent_count;
	pb->data_offset = info->data_offset;
	pb->uuid.len = sizeof(info->uuid);
	pb->uuid.data = (uint8_t *)(uintptr_t)info->uuid;
	pb->devdax = info->devdax;
	pb->alignment = info->alignment;
	pb->granularity = (char *)(uintptr_t)(info->granularity ? info->granularity : "");
	pb->persistence_domain = (char *)(uintptr_t)info->persistence_domain; /* NULL: absent */
}

struct rpc_job {
	struct rpc_call call; /* req is NULL: the request is gone */
	struct manager_region *region; /* what it works on: busy for reload */
	rpc_step_fn step;
	void (*free_state)(void *);
	void *state;
	size_t mem;
	TAILQ_ENTRY(rpc_job) link; /* the jobs' list, round robin */
};

/* The sliced requests in progress, for m->jobs: nobody else writes them. */
struct rpc_jobs {
	TAILQ_HEAD(rpc_job_list, rpc_job) list;
	struct event *ev; /* runs the next step */
};

static void rpc_job_free(struct rpc_job *j)
{
	if (j->free_state)
		j->free_state(j->state);
	free(j);
}

/* The step's outcome: the error reply, if any; then the connection goes on. */
static void rpc_job_end(struct rpc_job *j, int r)
{
	struct connection *c = j->call.c;

	if (r < 0)
		rpc_fail_reply(&j->call, r);
	c->job = NULL;
	c->job_mem = 0;
	rpc_job_free(j);
	connection_kick(c);
}

static void rpc_jobs_arm(struct manager *m, uint64_t delay_ns)
{
	struct timeval tv = {.tv_sec = (time_t)(delay_ns / 1000000000ull),
			     .tv_usec = (suseconds_t)(delay_ns % 1000000000ull / 1000)};

	if (TAILQ_EMPTY(&m->jobs->list) || evtimer_pending(m->jobs->ev, NULL))
		return;
	if (event_add(m->jobs->ev, &tv) < 0)
		log_warning("Failed to schedule the long requests' next step");
}

/*
 * One step of the job at the head, which then goes to the tail.  The next
 * step comes after a pause as long as this one took, so long work gets at
 * most about half of the main loop, whoever asks for it and however many
 * ask: the rest is idle time in which the loop answers at once.
 */
static void rpc_jobs_cb(evutil_socket_t fd, short what, void *arg)
{
	struct manager *m = arg;
	struct rpc_job *j = TAILQ_FIRST(&m->jobs->list);
	uint64_t t0 = pmemz_now_ns(), took;
	int r;

	if (!j)
		return;
	TAILQ_REMOVE(&m->jobs->list, j, link);
	r = j->step(&j->call, j->state, t0 + RPC_SLICE_NS);
	if (r > 0)
		TAILQ_INSERT_TAIL(&m->jobs->list, j, link);
	else
		rpc_job_end(j, r);
	took = pmemz_now_ns() - t0;
	rpc_jobs_arm(m, took);
	/*
	 * Below the job event's priority, a pending group commit would wait
	 * for the last job to end: replies held for it (other clients'
	 * ALLOCATEs, STATs) must not.
	 */
	commit_if_overdue(m);
}

bool rpc_job_region(const struct manager *m, const struct manager_region *mr)
{
	const struct rpc_job *j;

	TAILQ_FOREACH(j, &m->jobs->list, link)
		if (j->region == mr)
			return true;
	return false;
}

int rpc_job_start(struct rpc_call *call, struct manager_region *mr, rpc_step_fn step,
		  void (*free_state)(void *), void *state, size_t mem)
{
	struct manager *m = call->m;
	struct rpc_job *j;
	int r;

	/* Nothing else long to do: the first step now (short requests end here). */
	if (TAILQ_EMPTY(&m->jobs->list)) {
		r = step(call, state, pmemz_now_ns() + RPC_SLICE_NS);
		if (r <= 0) {
			free_state(state);
			return r;
		}
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		free_state(state);
		return rpc_fail(call, -ENOMEM, "out of memory");
	}
	j->call = *call;
	j->call.req = NULL;
	j->region = mr;
	j->step = step;
	j->free_state = free_state;
	j->state = state;
	j->mem = mem;
	call->c->job = j;
	call->c->job_mem = mem + sizeof(*j);
	TAILQ_INSERT_TAIL(&m->jobs->list, j, link);
	rpc_jobs_arm(m, 0);
	return 0;
}

void rpc_job_cancel(struct connection *c)
{
	struct rpc_job *j = c->job;

	if (!j)
		return;
	TAILQ_REMOVE(&c->m->jobs->list, j, link);
	rpc_job_free(j);
	c->job = NULL;
	c->job_mem = 0;
}

int rpc_jobs_new(struct manager *m, struct rpc_jobs **out)
{
	struct rpc_jobs *js = calloc(1, sizeof(*js));

	if (!js)
		return -ENOMEM;
	TAILQ_INIT(&js->list);
	js->ev = evtimer_new(m->base, rpc_jobs_cb, m);
	if (!js->ev || event_priority_set(js->ev, MANAGER_PRIO_IO) < 0) {
		rpc_jobs_free(js);
		return -ENOMEM;
	}
	*out = js;
	return 0;
}

void rpc_jobs_free(struct rpc_jobs *js)
{
	if (!js)
		return;
	/* Each job goes with its connection (rpc_job_cancel), closed before this. */
	if (js->ev)
		event_free(js->ev);
	free(js);
}
