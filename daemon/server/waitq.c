/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "connection.h"
#include "manager.h"
#include "waitq.h"

struct waiter {
	struct connection *conn;
	uint64_t req_id;
	uint64_t n_extents;
	unsigned region;		 /* index in m->regions */
	TAILQ_ENTRY(waiter) region_link; /* mr->waiters */
	TAILQ_ENTRY(waiter) conn_link;	 /* conn->waiters */
};

/* The zeroer ignores its rate limit exactly while allocations wait on it. */
static void waitq_update_urgent(struct manager_region *mr)
{
	bool urgent = mr->n_waiters > 0;

	if (urgent == mr->urgent || !mr->r)
		return;
	mr->urgent = urgent;
	region_zeroer_set_urgent(mr->r, urgent);
}

static void waiter_link(struct manager_region *mr, struct waiter *w, bool first)
{
	if (first)
		TAILQ_INSERT_HEAD(&mr->waiters, w, region_link);
	else
		TAILQ_INSERT_TAIL(&mr->waiters, w, region_link);
	mr->n_waiters++;
	TAILQ_INSERT_TAIL(&w->conn->waiters, w, conn_link);
	w->conn->n_waiters++;
}

static void waiter_unlink(struct manager_region *mr, struct waiter *w)
{
	TAILQ_REMOVE(&mr->waiters, w, region_link);
	mr->n_waiters--;
	TAILQ_REMOVE(&w->conn->waiters, w, conn_link);
	w->conn->n_waiters--;
}

int waitq_add(struct manager_region *mr, struct connection *c, uint64_t req_id, uint64_t n_extents)
{
	struct waiter *w;

	if (c->n_waiters >= CONNECTION_WAITERS_MAX)
		return -EBUSY;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->conn = c;
	w->req_id = req_id;
	w->n_extents = n_extents;
	w->region = mr->index;
	waiter_link(mr, w, false);
	waitq_update_urgent(mr);
	return 0;
}

void waitq_serve(struct manager_region *mr, waitq_grant_fn grant)
{
	struct waiter *w;

	if (TAILQ_EMPTY(&mr->waiters))
		return;
	while ((w = TAILQ_FIRST(&mr->waiters))) {
		int r;

		/*
		 * Off the lists while granted: a reply that cannot be queued
		 * closes the connection, which cancels its waiters.
		 */
		waiter_unlink(mr, w);
		r = grant(mr->m, w->conn, mr, w->n_extents, w->req_id);
		if (r == -EAGAIN) {
			waiter_link(mr, w, true); /* FIFO: the head waits for the zeroer */
			break;
		}
		free(w);
	}
	waitq_update_urgent(mr);
}

void waitq_hold(struct connection *c, struct out_frame *f)
{
	TAILQ_INSERT_TAIL(&c->held, f, link);
	c->n_held++;
	if (!c->on_held_list) {
		c->on_held_list = true;
		TAILQ_INSERT_TAIL(&c->m->held, c, held_link);
	}
	manager_request_commit(c->m);
}

void waitq_release(struct manager *m)
{
	struct connection *c;
	struct out_frame *f;

	while ((c = TAILQ_FIRST(&m->held))) {
		TAILQ_REMOVE(&m->held, c, held_link);
		c->on_held_list = false;
		m->held_replies += c->n_held;
		while ((f = TAILQ_FIRST(&c->held))) {
			TAILQ_REMOVE(&c->held, f, link);
			connection_push(c, f);
		}
		c->n_held = 0;
		connection_flush(c);
	}
}

void waitq_cancel(struct connection *c)
{
	struct manager *m = c->m;
	struct waiter *w;
	struct out_frame *f;

	while ((w = TAILQ_FIRST(&c->waiters))) {
		struct manager_region *mr = &m->regions[w->region];

		waiter_unlink(mr, w);
		free(w);
		waitq_update_urgent(mr);
		/* Those queued behind it may fit now: the commit pass serves them. */
		if (mr->n_waiters)
			manager_request_commit(m);
	}

	while ((f = TAILQ_FIRST(&c->held))) {
		TAILQ_REMOVE(&c->held, f, link);
		connection_frame_drop(c, f); /* its fd closed, its memory uncharged */
	}
	c->n_held = 0;
	if (c->on_held_list) {
		TAILQ_REMOVE(&m->held, c, held_link);
		c->on_held_list = false;
	}
}
