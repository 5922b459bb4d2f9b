/* SPDX-License-Identifier: MIT */
/*
 * The allocation reserve (pmemz_region_set_reserve): a FIFO of pipelined
 * ALLOCATE requests of `unit` extents each, sent ahead of need.
 * pmemz_alloc_new takes the oldest (whose answer has normally arrived
 * while the caller was writing); when half the reserve is used it sends the
 * replacements back to back (one daemon wakeup and group commit for the
 * batch), so the caller waits for no round trip.  A failed refill sets
 * `backoff`: no more refills until an ALLOCATE made on the caller's behalf
 * succeeds.
 *
 * The reserve deals in ALLOCATE tickets and leases only: it talks to the
 * daemon through the transport (client.c) and never makes an allocation
 * handle itself; pmemz_reserve_take hands its ticket to the caller's
 * collect function.  So region.c and alloc.c both use it, and it uses
 * neither.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "client-private.h"

/* Below the daemon's limit of 256 waiting allocations per connection. */
#define RESERVE_MAX_LEASES 64u

struct pmemz_reserve {
	pthread_mutex_t lock;
	size_t bytes;		  /* asked for; 0 = off */
	uint64_t unit;		  /* extents per reserved lease */
	size_t target;		  /* leases kept: DIV_ROUND_UP(bytes, unit bytes), capped */
	struct pmemz_pending **q; /* ring of outstanding ALLOCATE tickets, oldest first */
	size_t head, n, cap;
	bool backoff;
	uint64_t next_unit; /* size of the last allocation the reserve could not serve */
	uint64_t hits, misses, refills, refill_failures; /* for tests and benchmarks */
};

int pmemz_reserve_new(struct pmemz_reserve **out)
{
	struct pmemz_reserve *v = calloc(1, sizeof(*v));

	if (!v)
		return pmemz_err(-ENOMEM, "out of memory");
	pthread_mutex_init(&v->lock, NULL);
	*out = v;
	return 0;
}

void pmemz_reserve_free(struct pmemz_reserve *v)
{
	if (!v)
		return;
	pthread_mutex_destroy(&v->lock);
	free(v->q);
	free(v);
}

static size_t reserve_target(const struct pmemz_region *r, size_t bytes, uint64_t unit)
{
	uint64_t unit_bytes = unit * r->extent_size;

	return (size_t)MIN(DIV_ROUND_UP((uint64_t)bytes, unit_bytes), (uint64_t)RESERVE_MAX_LEASES);
}

static struct pmemz_pending *reserve_pop(struct pmemz_reserve *v)
{
	struct pmemz_pending *t = v->q[v->head];

	v->head = (v->head + 1) % v->cap;
	v->n--;
	return t;
}

static int reserve_push(struct pmemz_reserve *v, struct pmemz_pending *t)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 8;
		struct pmemz_pending **q = calloc(cap, sizeof(*q));

		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < v->n; i++)
			q[i] = v->q[(v->head + i) % v->cap];
		free(v->q);
		v->q = q;
		v->cap = cap;
		v->head = 0;
	}
	v->q[(v->head + v->n) % v->cap] = t;
	v->n++;
	return 0;
}

/*
 * Wait for a reserved ALLOCATE and build the FREE of its lease in *req
 * (fr is its body).  false when there is no lease to give back (refused,
 * or no connection: then the daemon released it).
 */
static bool reserve_free_req(struct pmemz_region *r, struct pmemz_pending *t, Pmemz__Request *req,
			     Pmemz__FreeReq *fr)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;

	if (pmemz_client_wait(r->c, t, &resp, NULL) < 0 ||
	    pmemz_check_response(PMEMZ__REQUEST__OP_ALLOCATE, resp) < 0)
		return false;
	fr->region = r->name;
	fr->has_lease = true;
	fr->lease = resp->allocate->lease;
	req->op_case = PMEMZ__REQUEST__OP_FREE;
	req->free = fr;
	return true;
}

/* Lock held: send ALLOCATEs, back to back, until target leases are outstanding. */
static void reserve_refill(struct pmemz_region *r)
{
	struct pmemz_reserve *v = r->rsv;
	Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__Request reqs[RESERVE_MAX_LEASES], *rp[RESERVE_MAX_LEASES];
	struct pmemz_pending *t[RESERVE_MAX_LEASES];
	size_t k = v->backoff || v->n >= v->target ? 0 : v->target - v->n;

	if (!k)
		return;
	al.region = r->name;
	al.bytes = v->unit * r->extent_size;
	al.has_nowait = true;
	al.nowait = false;
	al.has_more_runs_ok = true;
	al.more_runs_ok = true;
	for (size_t i = 0; i < k; i++) {
		reqs[i] = (Pmemz__Request)PMEMZ__REQUEST__INIT;
		reqs[i].op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		reqs[i].allocate = &al;
		rp[i] = &reqs[i];
	}
	if (pmemz_client_submit_many(r->c, rp, k, t) < 0) {
		v->backoff = true;
		v->refill_failures++;
		return;
	}
	for (size_t i = 0; i < k; i++) {
		if (reserve_push(v, t[i]) < 0) {
			/* Cannot track it: take the answer now and give the lease back. */
			Pmemz__Request req = PMEMZ__REQUEST__INIT;
			Pmemz__FreeReq fr = PMEMZ__FREE_REQ__INIT;

			if (reserve_free_req(r, t[i], &req, &fr)) {
				_cleanup_response_ Pmemz__Response *fresp = NULL;

				(void)pmemz_client_call(r->c, &req, &fresp);
			}
			v->backoff = true;
			continue;
		}
		v->refills++;
	}
}

/* Lock held: give every reserved lease back (pipelined FREEs), keeping the caller's error. */
static void reserve_drain(struct pmemz_region *r)
{
	struct pmemz_reserve *v = r->rsv;
	_cleanup_free_ struct pmemz_pending **frees = NULL;
	size_t n_frees = 0;
	char msg[512];

	if (!v->n)
		return;
	(void)snprintf(msg, sizeof(msg), "%s", pmemz_errormsg());
	frees = calloc(v->n, sizeof(*frees));
	while (v->n) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__FreeReq fr = PMEMZ__FREE_REQ__INIT;

		if (!reserve_free_req(r, reserve_pop(v), &req, &fr))
			continue;
		if (frees) {
			if (pmemz_client_submit(r->c, &req, &frees[n_frees]) == 0)
				n_frees++;
		} else {
			_cleanup_response_ Pmemz__Response *fresp = NULL;

			(void)pmemz_client_call(r->c, &req, &fresp);
		}
	}
	for (size_t i = 0; i < n_frees; i++) {
		_cleanup_response_ Pmemz__Response *resp = NULL;

		(void)pmemz_client_wait(r->c, frees[i], &resp, NULL);
	}
	(void)pmemz_err(0, "%s", msg);
}

int pmemz_reserve_take(struct pmemz_region *r, uint64_t n, unsigned flags,
		       pmemz_reserve_collect_fn collect, struct pmemz_alloc **out)
{
	struct pmemz_reserve *v = r->rsv;
	int served = 0;

	if (!__atomic_load_n(&v->bytes, __ATOMIC_RELAXED))
		return 0;
	if (flags & PMEMZ_ALLOC_NOWAIT) {
		if (pthread_mutex_trylock(&v->lock) != 0)
			return 0;
	} else {
		pthread_mutex_lock(&v->lock);
	}
	if (v->bytes && n == v->unit) {
		while (v->n && !served) {
			if ((flags & PMEMZ_ALLOC_NOWAIT) && !pmemz_client_poll(r->c, v->q[v->head]))
				break;
			if (collect(r, reserve_pop(v), out) == 0) {
				served = 1;
			} else {
				/* ENOSPC, or the connection broke: the caller's own ALLOCATE says
				 * why. */
				v->backoff = true;
				v->refill_failures++;
			}
		}
		/* Top up in batches: back-to-back requests cost the daemon one wakeup
		 * and one group commit, where one request per allocation costs each. */
		if (served && v->n <= v->target / 2)
			reserve_refill(r);
	}
	if (v->bytes) {
		if (served)
			v->hits++;
		else
			v->misses++;
	}
	pthread_mutex_unlock(&v->lock);
	return served;
}

void pmemz_reserve_after_direct(struct pmemz_region *r, uint64_t n)
{
	struct pmemz_reserve *v = r->rsv;

	if (!__atomic_load_n(&v->bytes, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&v->lock);
	if (v->bytes) {
		if (n != v->unit) {
			if (v->next_unit == n) {
				reserve_drain(r);
				v->unit = n;
				v->target = reserve_target(r, v->bytes, n);
				v->next_unit = 0;
			} else {
				v->next_unit = n;
			}
		} else {
			v->next_unit = 0;
		}
		v->backoff = false;
		reserve_refill(r);
	}
	pthread_mutex_unlock(&v->lock);
}

void pmemz_reserve_drop(struct pmemz_region *r)
{
	struct pmemz_reserve *v = r->rsv;

	pthread_mutex_lock(&v->lock);
	reserve_drain(r);
	__atomic_store_n(&v->bytes, 0, __ATOMIC_RELAXED);
	v->target = 0;
	v->next_unit = 0;
	pthread_mutex_unlock(&v->lock);
}

void pmemz_reserve_forget(struct pmemz_region *r)
{
	struct pmemz_reserve *v = r->rsv;

	pthread_mutex_lock(&v->lock);
	/*
	 * The tickets are of the old epoch: waiting fails at once, whether or
	 * not their answer came, so no FREE of a dead lease id reaches the new
	 * connection (where the id may name another lease).
	 */
	while (v->n) {
		_cleanup_response_ Pmemz__Response *resp = NULL;

		(void)pmemz_client_wait(r->c, reserve_pop(v), &resp, NULL);
	}
	v->next_unit = 0;
	v->backoff = false;
	if (v->bytes && pmemz_region_check(r) == 0)
		reserve_refill(r);
	pthread_mutex_unlock(&v->lock);
}

void pmemz_reserve_get_stats(struct pmemz_region *r, struct pmemz_reserve_stats *st)
{
	struct pmemz_reserve *v = r->rsv;

	pthread_mutex_lock(&v->lock);
	st->bytes = v->bytes;
	st->target = v->target;
	st->outstanding = v->n;
	st->unit_bytes = v->unit * r->extent_size;
	st->hits = v->hits;
	st->misses = v->misses;
	st->refills = v->refills;
	st->refill_failures = v->refill_failures;
	pthread_mutex_unlock(&v->lock);
}

PMEMZ_EXPORT int pmemz_region_set_reserve(struct pmemz_region *r, size_t bytes)
{
	struct pmemz_reserve *v;
	int ret;

	if (!r)
		return pmemz_err(-EINVAL, "pmemz_region_set_reserve: region is NULL");
	if (bytes == 0) {
		pmemz_reserve_drop(r);
		return 0;
	}
	ret = pmemz_region_check(r);
	if (ret < 0)
		return ret;
	if ((uint64_t)bytes > r->extent_count * r->extent_size)
		return pmemz_err(
		    -EINVAL, "pmemz_region_set_reserve: %zu bytes exceed region '%s' (%llu bytes)",
		    bytes, r->name, (unsigned long long)(r->extent_count * r->extent_size));
	v = r->rsv;
	pthread_mutex_lock(&v->lock);
	if (!v->unit)
		v->unit = 1;
	__atomic_store_n(&v->bytes, bytes, __ATOMIC_RELAXED);
	v->target = reserve_target(r, bytes, v->unit);
	if (v->n > v->target)
		reserve_drain(r); /* shrunk: start over at the new size */
	v->backoff = false;
	reserve_refill(r);
	pthread_mutex_unlock(&v->lock);
	return 0;
}
