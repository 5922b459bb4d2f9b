/* SPDX-License-Identifier: MIT */
/*
 * The group commit and the replies held for it (manager.h): handlers ask
 * for a commit (commit_request); the commit event, at the lowest priority,
 * serves the waiting allocations, makes every region's changes durable
 * (region_sync: one or two drains for the whole loop iteration) and only
 * then releases the held replies.  A region that fails first turns the
 * held replies that attest its state into -EIO errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "commit.h"
#include "connection.h"
#include "lease.h"
#include "regions.h"
#include "rpc.h"
#include "waitq.h"

/* A commit held back longer than this by a stream of requests runs inline. */
#define COMMIT_MAX_DELAY_NS 1000000ull

/* The group commit's state: nobody else writes it (commit.h has the readers). */
struct commit {
	struct event *ev; /* at MANAGER_PRIO_COMMIT: after the iteration's requests */
	bool pending;
	uint64_t since_ns;	  /* when the pending commit was asked for */
	struct connection_list held; /* connections with held replies */
	uint64_t group_commits;	  /* commit passes that had work */
	uint64_t group_commit_drains;
	uint64_t held_replies; /* replies released by a commit pass */
};

/* Does this held reply attest state of mr?  ALLOCATE replies name their lease. */
static bool held_reply_attests(const struct manager_region *mr, const struct connection *c,
			       const Pmemz__Response *resp)
{
	const struct lease *l;

	if (resp->status != 0)
		return false;
	switch (resp->op_case) {
	case PMEMZ__RESPONSE__OP_ALLOCATE:
		l = resp->allocate ? lease_table_find(mr->m->leases, resp->allocate->lease) : NULL;
		return l && l->region == mr->index;
	case PMEMZ__RESPONSE__OP_COMMIT:
	case PMEMZ__RESPONSE__OP_FREE:
		/* They do not name a region: a connection that named mr may mean it. */
		return regions_touched_by(mr, c->serial);
	default:
		return false; /* reads and NOOPs attest nothing durable */
	}
}

/*
 * c's held replies that attest state of mr, which failed before a commit
 * pass made that state durable, become -EIO error replies with the same
 * request ids: the client learns the truth and the connection goes on.
 */
static void commit_fail_held_of(struct manager_region *mr, struct connection *c)
{
	struct out_frame *f;

	for (f = TAILQ_FIRST(&c->held); f; f = TAILQ_NEXT(f, link)) {
		_cleanup_(pmemz__response__free_unpackedp) Pmemz__Response *resp = NULL;
		Pmemz__Response err = PMEMZ__RESPONSE__INIT;
		char msg[RPC_MSG_MAX];
		uint8_t *frame;
		size_t len;

		if (f->off || f->len < PMEMZ_FRAME_HDR ||
		    pmemz_frame_unpack_response(f->data + PMEMZ_FRAME_HDR, f->len - PMEMZ_FRAME_HDR,
						&resp) < 0 ||
		    !held_reply_attests(mr, c, resp))
			continue;
		(void)snprintf(msg, sizeof(msg), "region '%s' failed before this was durable: %s",
			       mr->rc->name, mr->failure);
		err.id = resp->id;
		err.status = -EIO;
		err.message = msg;
		if (pmemz_frame_pack_response(&err, &frame, &len) < 0) {
			/* No memory for the truth: close rather than lie. */
			connection_close(c);
			return;
		}
		connection_frame_replace(c, f, frame, len);
	}
}

void commit_fail_region(struct manager_region *mr, const char *why)
{
	struct manager *m = mr->m;
	struct connection *c, *next;

	if (mr->failed)
		return;
	regions_fail(mr, why);
	/*
	 * Replies held for a commit pass that this region's state did not
	 * survive would claim what is not durable (I5): they become -EIO.
	 */
	for (c = TAILQ_FIRST(&m->commit->held); c; c = next) {
		next = TAILQ_NEXT(c, held_link); /* commit_fail_held_of may close c */
		commit_fail_held_of(mr, c);
	}
	regions_touched_clear(mr);
}

void commit_hold(struct connection *c)
{
	if (!c->on_held_list) {
		c->on_held_list = true;
		TAILQ_INSERT_TAIL(&c->m->commit->held, c, held_link);
	}
	commit_request(c->m);
}

void commit_forget(struct connection *c)
{
	if (c->on_held_list) {
		TAILQ_REMOVE(&c->m->commit->held, c, held_link);
		c->on_held_list = false;
	}
}

/* After region_sync: queue every held reply to its connection and send. */
static void commit_release(struct manager *m)
{
	struct connection *c;

	while ((c = TAILQ_FIRST(&m->commit->held))) {
		TAILQ_REMOVE(&m->commit->held, c, held_link);
		c->on_held_list = false;
		m->commit->held_replies += c->n_held;
		connection_release_held(c);
	}
}

void commit_request(struct manager *m)
{
	if (m->commit->pending)
		return;
	m->commit->pending = true;
	m->commit->since_ns = pmemz_now_ns();
	event_active(m->commit->ev, EV_TIMEOUT, 0);
}

/*
 * The group commit: serve waiting allocations, make every change of this
 * loop iteration durable, then send the replies that attest them.
 */
static void commit_pass(struct manager *m)
{
	uint64_t drains = 0;

	for (size_t i = 0; i < m->n_regions; i++)
		if (!m->regions[i]->failed)
			waitq_serve(m->regions[i]);
	m->commit->pending = false;

	for (size_t i = 0; i < m->n_regions; i++) {
		struct manager_region *mr = m->regions[i];
		char why[160];
		int r;

		if (mr->failed)
			continue;
		r = region_sync(mr->r);
		if (r < 0) {
			/* Replies must not claim durability we could not get. */
			if (!region_failed(mr->r, why, sizeof(why)))
				(void)snprintf(why, sizeof(why),
					       "cannot make its state durable: %s", strerror(-r));
			commit_fail_region(mr, why);
			continue;
		}
		drains += (uint64_t)r;
		regions_touched_clear(mr);
	}
	if (drains) {
		m->commit->group_commits++;
		m->commit->group_commit_drains += drains;
	}
	commit_release(m);
}

static void commit_cb(evutil_socket_t fd, short what, void *arg)
{
	commit_pass(arg);
}

void commit_now(struct manager *m)
{
	if (!m->commit->pending)
		return;
	(void)event_del(m->commit->ev);
	commit_pass(m);
}

void commit_if_overdue(struct manager *m)
{
	if (!m->commit->pending || pmemz_now_ns() - m->commit->since_ns < COMMIT_MAX_DELAY_NS)
		return;
	(void)event_del(m->commit->ev);
	commit_pass(m);
}

int commit_new(struct manager *m, struct commit **out)
{
	struct commit *cm = calloc(1, sizeof(*cm));

	if (!cm)
		return -ENOMEM;
	TAILQ_INIT(&cm->held);
	cm->ev = event_new(m->base, -1, 0, commit_cb, m);
	if (!cm->ev || event_priority_set(cm->ev, MANAGER_PRIO_COMMIT) < 0) {
		commit_free(cm);
		return -ENOMEM;
	}
	*out = cm;
	return 0;
}

void commit_free(struct commit *cm)
{
	if (!cm)
		return;
	if (cm->ev)
		event_free(cm->ev);
	free(cm);
}

bool commit_pending(const struct manager *m)
{
	return m->commit->pending;
}

uint64_t commit_group_commits(const struct manager *m)
{
	return m->commit->group_commits;
}
