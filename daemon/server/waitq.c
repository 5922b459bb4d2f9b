/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "connection.h"
#include "usage.h"
#include "waitq.h"

struct waiter {
	struct connection *conn;
	uint64_t req_id;
	uint64_t n_extents;
	uint64_t since_ns;		 /* waitq_add: the wait time counts from here, across re-queues */
	struct manager_region *mr;	 /* stable: regions are allocated one by one */
	struct uid_usage *owner;	 /* the uid's row in that region */
	waitq_grant_fn grant;
	waitq_fail_fn fail;
	TAILQ_ENTRY(waiter) region_link; /* owner->waitq */
	TAILQ_ENTRY(waiter) conn_link;	 /* conn->waiters */
};

/*
 * A region's waiting allocations: nobody else writes them (waitq.h has the
 * readers).  turns: uids with waiters, the next to serve first.
 */
struct waitq {
	struct uid_usage_list turns;
	uint64_t n_waiters;
	bool urgent; /* told the zeroer that allocations wait */
	struct wait_histogram wait_hist;
};

int waitq_new(struct waitq **out)
{
	struct waitq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	TAILQ_INIT(&q->turns);
	*out = q;
	return 0;
}

void waitq_free(struct waitq *q)
{
	free(q); /* waiters go with their connections or with waitq_fail first */
}

uint64_t waitq_count(const struct manager_region *mr)
{
	return mr->waitq->n_waiters;
}

const struct wait_histogram *waitq_histogram(const struct manager_region *mr)
{
	return &mr->waitq->wait_hist;
}

/* From 100 us (a zeroer batch of a few extents) to 30 s (a paused or starved zeroer). */
const double waitq_wait_bounds_sec[MANAGER_WAIT_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0, 30.0,
};

static void wait_observe(struct wait_histogram *h, uint64_t ns)
{
	double sec = (double)ns / 1e9;

	for (size_t i = 0; i < MANAGER_WAIT_BUCKETS; i++) {
		if (sec <= waitq_wait_bounds_sec[i]) {
			h->bucket[i]++;
			break;
		}
	}
	h->count++;
	h->sum_ns += ns;
}

/* Extents the waiter served next still lacks (at least 1), or 0 when none waits. */
static uint64_t waitq_need(const struct manager_region *mr)
{
	const struct uid_usage *u = TAILQ_FIRST(&mr->waitq->turns);
	const struct waiter *w = u ? TAILQ_FIRST(&u->waitq) : NULL;
	uint64_t zeroed;

	if (!w)
		return 0;
	zeroed = region_count_zeroed(mr->r);
	return w->n_extents > zeroed ? w->n_extents - zeroed : 1;
}

/*
 * The zeroer ignores its rate limit exactly while allocations wait on it,
 * and hands extents back as soon as there are as many as the next waiter
 * lacks (updated at every serve: it shrinks as extents come).
 */
static void waitq_update_urgent(struct manager_region *mr)
{
	bool urgent = mr->waitq->n_waiters > 0;

	if (!mr->r)
		return;
	if (urgent)
		region_zeroer_set_need(mr->r, waitq_need(mr));
	if (urgent == mr->waitq->urgent)
		return;
	mr->waitq->urgent = urgent;
	region_zeroer_set_urgent(mr->r, urgent);
}

/*
 * first: w goes back to the head of its uid's queue, and the uid to the
 * head of the turns (its turn is not over: it waits for the zeroer).
 */
static void waiter_link(struct manager_region *mr, struct waiter *w, bool first)
{
	struct uid_usage *u = w->owner;

	if (first)
		TAILQ_INSERT_HEAD(&u->waitq, w, region_link);
	else
		TAILQ_INSERT_TAIL(&u->waitq, w, region_link);
	if (!u->has_turn) {
		if (first)
			TAILQ_INSERT_HEAD(&mr->waitq->turns, u, turn_link);
		else
			TAILQ_INSERT_TAIL(&mr->waitq->turns, u, turn_link);
		u->has_turn = true;
	}
	u->waiters++;
	u->waiting += w->n_extents;
	mr->waitq->n_waiters++;
	TAILQ_INSERT_TAIL(&w->conn->waiters, w, conn_link);
	w->conn->n_waiters++;
}

static void waiter_unlink(struct manager_region *mr, struct waiter *w)
{
	struct uid_usage *u = w->owner;

	TAILQ_REMOVE(&u->waitq, w, region_link);
	if (TAILQ_EMPTY(&u->waitq)) {
		TAILQ_REMOVE(&mr->waitq->turns, u, turn_link);
		u->has_turn = false;
	}
	u->waiters--;
	u->waiting -= w->n_extents;
	mr->waitq->n_waiters--;
	TAILQ_REMOVE(&w->conn->waiters, w, conn_link);
	w->conn->n_waiters--;
}

int waitq_add(struct manager_region *mr, struct connection *c, struct uid_usage *u,
	      uint64_t req_id, uint64_t n_extents, waitq_grant_fn grant, waitq_fail_fn fail)
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
	w->since_ns = pmemz_now_ns();
	w->mr = mr;
	w->owner = u;
	w->grant = grant;
	w->fail = fail;
	waiter_link(mr, w, false);
	waitq_update_urgent(mr);
	return 0;
}

/*
 * Round robin between uids, first come first served within one: a uid
 * that queued a thousand allocations delays another's by one, not by a
 * thousand.  The uid whose turn it is keeps it while its allocation waits
 * for the zeroer, so that a large request is not starved by small ones.
 */
void waitq_serve(struct manager_region *mr)
{
	struct uid_usage *u;
	struct waiter *w;

	if (TAILQ_EMPTY(&mr->waitq->turns))
		return;
	while ((u = TAILQ_FIRST(&mr->waitq->turns))) {
		int r;

		w = TAILQ_FIRST(&u->waitq);
		/*
		 * Off the lists while granted: a reply that cannot be queued
		 * closes the connection, which cancels its waiters.
		 */
		waiter_unlink(mr, w);
		r = mr->failed ? w->fail(mr->m, w->conn, mr, w->req_id)
			       : w->grant(mr->m, w->conn, mr, w->owner, w->n_extents, w->req_id);
		if (r == -EAGAIN) {
			waiter_link(mr, w, true);
			break;
		}
		if (r == 0)
			wait_observe(&mr->waitq->wait_hist, pmemz_now_ns() - w->since_ns);
		free(w);
		if (u->has_turn) { /* next uid's turn */
			TAILQ_REMOVE(&mr->waitq->turns, u, turn_link);
			TAILQ_INSERT_TAIL(&mr->waitq->turns, u, turn_link);
		}
	}
	waitq_update_urgent(mr);
}

void waitq_fail(struct manager_region *mr)
{
	waitq_serve(mr); /* mr->failed: each waiter's fail callback */
}

bool waitq_cancel(struct connection *c)
{
	struct waiter *w;
	bool others = false;

	while ((w = TAILQ_FIRST(&c->waiters))) {
		struct manager_region *mr = w->mr;

		waiter_unlink(mr, w);
		free(w);
		waitq_update_urgent(mr);
		/* Those queued behind it may fit now: the commit pass serves them. */
		others |= mr->waitq->n_waiters > 0;
	}
	return others;
}
