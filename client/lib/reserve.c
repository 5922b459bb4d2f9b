/* SPDX-License-Identifier: MIT */
/*
 * The allocation reserve (pmemz_region_set_reserve): a FIFO of pipelined
 * ALLOCATE requests of `unit` extents each, sent ahead of need.
 * pmemz_alloc_new takes the oldest (whose answer has normally arrived
 * while the caller was writing); when a batch's worth is used it sends the
 * replacements back to back (one daemon wakeup and group commit for the
 * batch), so the caller waits for no round trip.  A failed refill sets
 * `backoff`: no more refills until an ALLOCATE made on the caller's behalf
 * succeeds.
 *
 * How deep it must be depends on the machine, not the caller: a daemon
 * that answers in 30 us needs a few leases, one that waits milliseconds
 * for a CPU needs as many as the caller writes meanwhile.  So the caller's
 * `bytes` is a floor, and the depth policy (pmemz_depth_*, reserve-depth.c)
 * grows it from what the reserve sees -- each answer's latency since its
 * request went out, the caller's time between allocations, the
 * allocations that had to wait -- up to a cap, and lets it sink back
 * slowly when the daemon is prompt again.  A lease is freed or committed whole, so the reserve
 * cannot ask for k units in one lease and split it: it keeps one request
 * per lease and sends them earlier and in bigger batches instead.
 *
 * The reserve deals in ALLOCATE tickets and leases only: it never makes
 * an allocation handle, and calls nothing above it.  alloc.c consumes its
 * queue (pmemz_reserve_begin, _next, _collected, _end: client-private.h)
 * and makes the handles.  It talks to the daemon through wire.c only
 * (requests, and the answers of its own tickets), never the transport.
 * It sits on region.c,
 * which reaches it only through the hooks the first
 * pmemz_region_set_reserve registers (reserve_hooks: close, reconnected,
 * release).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "wire.h"

/*
 * Half the daemon's limit of 256 waiting allocations per connection
 * (CONNECTION_WAITERS_MAX): the caller's own requests, and another
 * region's reserve, keep room on the connection.
 */
#define RESERVE_MAX_LEASES 128u
/* Growth beyond the caller's bytes: at most this many times them, ... */
#define RESERVE_GROW_FACTOR 8u
/* ... at most this much in all, ... */
#define RESERVE_GROW_MAX_BYTES (256ull << 20)
/* ... and at most this share of the region (1/8), so others keep space. */
#define RESERVE_GROW_REGION_SHIFT 3

struct rsv_ticket {
	struct pmemz_pending *t;
	uint64_t sent_ns;
};

struct pmemz_reserve {
	pthread_mutex_t lock;
	size_t bytes;	      /* asked for; 0 = off */
	uint64_t unit;	      /* extents per reserved lease */
	struct pmemz_depth d; /* d.target: the leases kept now */
	struct rsv_ticket *q; /* ring of outstanding ALLOCATE tickets, oldest first */
	size_t head, n, cap;
	size_t seen;	       /* the first `seen` tickets of q are known answered */
	uint64_t last_look_ns; /* when reserve_observe last read the answers */
	bool backoff;
	uint64_t next_unit; /* size of the last allocation the reserve could not serve */
	uint64_t hits, misses, refills, refill_failures; /* for tests and benchmarks */
	/* Time takes spent reading answers, collecting answered and unanswered
	 * tickets, and sending refills (pmemz-bench shows where the time goes). */
	uint64_t observe_ns, collect_ns, stall_ns, refill_ns;
};

static const struct pmemz_region_hooks reserve_hooks;

/* r's reserve, NULL until the first pmemz_region_set_reserve. */
static struct pmemz_reserve *reserve_of(struct pmemz_region *r)
{
	return __atomic_load_n(&r->rsv, __ATOMIC_ACQUIRE);
}

/* r's reserve, made (and reserve_hooks registered on r) the first time; NULL with *err. */
static struct pmemz_reserve *reserve_attach(struct pmemz_region *r, int *err)
{
	struct pmemz_reserve *v;
	int ret = pmemz_region_add_hooks(r, &reserve_hooks);

	if (ret < 0) {
		*err = pmemz_err(ret, "cannot keep a reserve on region '%s': %s", r->name,
				 pmemz_strerror(ret));
		return NULL;
	}
	/* Under the client's lock: two threads setting the first reserve make one. */
	pthread_mutex_lock(&r->c->lock);
	v = r->rsv;
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (v) {
			pthread_mutex_init(&v->lock, NULL);
			__atomic_store_n(&r->rsv, v, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&r->c->lock);
	if (!v)
		*err = pmemz_err(-ENOMEM, "out of memory");
	return v;
}

/* Lock held: the floor (the caller's bytes) and cap of the depth, for lease size unit. */
static void reserve_size(struct pmemz_region *r, struct pmemz_reserve *v)
{
	uint64_t unit_bytes = v->unit * r->extent_size;
	uint64_t floor =
	    MIN(DIV_ROUND_UP((uint64_t)v->bytes, unit_bytes), (uint64_t)RESERVE_MAX_LEASES);
	uint64_t grown = MIN(floor * RESERVE_GROW_FACTOR, RESERVE_GROW_MAX_BYTES / unit_bytes);

	grown = MIN(grown, (r->extent_count >> RESERVE_GROW_REGION_SHIFT) / v->unit);
	pmemz_depth_resize(&v->d, (size_t)floor,
			   (size_t)MIN(MAX(floor, grown), (uint64_t)RESERVE_MAX_LEASES));
}

static struct pmemz_pending *reserve_pop(struct pmemz_reserve *v, uint64_t *sent_ns)
{
	struct rsv_ticket *e = &v->q[v->head];

	v->head = (v->head + 1) % v->cap;
	v->n--;
	if (v->seen)
		v->seen--;
	if (sent_ns)
		*sent_ns = e->sent_ns;
	return e->t;
}

static int reserve_push(struct pmemz_reserve *v, struct pmemz_pending *t, uint64_t sent_ns)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 8;
		struct rsv_ticket *q = calloc(cap, sizeof(*q));

		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < v->n; i++)
			q[i] = v->q[(v->head + i) % v->cap];
		free(v->q);
		v->q = q;
		v->cap = cap;
		v->head = 0;
	}
	v->q[(v->head + v->n) % v->cap] = (struct rsv_ticket){.t = t, .sent_ns = sent_ns};
	v->n++;
	return 0;
}

/*
 * Lock held: read the answers that came (no waiting) and give the policy
 * the latency of each newly answered ticket.  An answer seen now was not
 * there at the last look (answers come in order), so its latency is at
 * least the time from its request to that look: that lower bound, not
 * now - sent, which would count the caller's pauses as the daemon's.
 */
static void reserve_observe(struct pmemz_region *r, uint64_t now)
{
	struct pmemz_reserve *v = r->rsv;

	while (v->seen < v->n) {
		struct rsv_ticket *e = &v->q[(v->head + v->seen) % v->cap];

		if (!pmemz_wire_answered(r->c, e->t))
			break;
		pmemz_depth_answered(
		    &v->d, v->last_look_ns > e->sent_ns ? v->last_look_ns - e->sent_ns : 0, false);
		v->seen++;
	}
	if (v->seen < v->n) {
		const struct rsv_ticket *e = &v->q[(v->head + v->seen) % v->cap];

		pmemz_depth_pending(&v->d, now > e->sent_ns ? now - e->sent_ns : 0);
	}
	v->last_look_ns = now;
}

/*
 * Wait for a reserved ALLOCATE: its lease, to give back.  false when there
 * is none (refused, or no connection: then the daemon released it).
 */
static bool reserve_lease_of(struct pmemz_region *r, struct pmemz_pending *t, uint64_t *lease)
{
	return pmemz_wire_allocate_lease(r->c, t, lease) == 0;
}

/* Lock held: send ALLOCATEs, back to back, until target leases are outstanding. */
static void reserve_refill(struct pmemz_region *r)
{
	struct pmemz_reserve *v = r->rsv;
	struct pmemz_pending *t[RESERVE_MAX_LEASES];
	size_t k = v->backoff || v->n >= v->d.target ? 0 : v->d.target - v->n;
	uint64_t now;

	if (!k)
		return;
	k = MIN(k, (size_t)RESERVE_MAX_LEASES);
	now = pmemz_now_ns();
	if (pmemz_wire_allocate(r->c, r->name, v->unit * r->extent_size, false, k, t) < 0) {
		v->backoff = true;
		v->refill_failures++;
		return;
	}
	for (size_t i = 0; i < k; i++) {
		if (reserve_push(v, t[i], now) < 0) {
			/* Cannot track it: take the answer now and give the lease back. */
			uint64_t lease;

			if (reserve_lease_of(r, t[i], &lease))
				(void)pmemz_wire_free(r->c, r->name, lease, NULL, NULL);
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
		uint64_t lease;

		if (!reserve_lease_of(r, reserve_pop(v, NULL), &lease))
			continue;
		if (frees) {
			if (pmemz_wire_free(r->c, r->name, lease, NULL, &frees[n_frees]) == 0)
				n_frees++;
		} else {
			(void)pmemz_wire_free(r->c, r->name, lease, NULL, NULL);
		}
	}
	for (size_t i = 0; i < n_frees; i++)
		pmemz_wire_forget(r->c, frees[i]);
	(void)pmemz_err(0, "%s", msg);
}

bool pmemz_reserve_begin(struct pmemz_region *r, uint64_t n, unsigned flags,
			 struct pmemz_reserve_take *tk)
{
	struct pmemz_reserve *v = reserve_of(r);

	*tk = (struct pmemz_reserve_take){.flags = flags};
	if (!v || !__atomic_load_n(&v->bytes, __ATOMIC_RELAXED))
		return false;
	if (flags & PMEMZ_ALLOC_NOWAIT) {
		if (pthread_mutex_trylock(&v->lock) != 0)
			return false;
	} else {
		pthread_mutex_lock(&v->lock);
	}
	tk->v = v;
	tk->serves = v->bytes && n == v->unit;
	if (tk->serves)
		pmemz_depth_begin(&v->d, pmemz_now_ns());
	return true;
}

/*
 * The oldest reserved ticket, for the caller to collect; NULL once served,
 * when empty, or with NOWAIT when its answer has not come.
 */
struct pmemz_pending *pmemz_reserve_next(struct pmemz_region *r, struct pmemz_reserve_take *tk)
{
	struct pmemz_reserve *v = tk->v;
	uint64_t t0;

	if (!v || !tk->serves || tk->served || tk->stop || !v->n)
		return NULL;
	t0 = pmemz_now_ns();
	reserve_observe(r, t0);
	tk->answered = v->seen > 0;
	tk->t1 = pmemz_now_ns();
	v->observe_ns += tk->t1 - t0;
	if ((tk->flags & PMEMZ_ALLOC_NOWAIT) && !tk->answered) {
		tk->stop = true;
		return NULL;
	}
	return reserve_pop(v, &tk->sent);
}

void pmemz_reserve_collected(struct pmemz_region *r, struct pmemz_reserve_take *tk, int ret)
{
	struct pmemz_reserve *v = tk->v;
	uint64_t t2 = pmemz_now_ns();

	(void)r;
	if (!tk->answered) {
		/* Ran dry: this caller waited for the daemon. */
		pmemz_depth_answered(&v->d, t2 > tk->sent ? t2 - tk->sent : 0, true);
		v->stall_ns += t2 - tk->t1;
	} else {
		v->collect_ns += t2 - tk->t1;
	}
	if (ret == 0) {
		tk->served = true;
		return;
	}
	/* ENOSPC, EDQUOT, or the connection broke: the caller's own ALLOCATE says why. */
	if (ret == -EDQUOT || ret == -ENOSPC)
		pmemz_depth_refused(&v->d, v->n);
	v->backoff = true;
	v->refill_failures++;
}

bool pmemz_reserve_end(struct pmemz_region *r, struct pmemz_reserve_take *tk)
{
	struct pmemz_reserve *v = tk->v;

	if (!v)
		return false;
	if (tk->serves) {
		/* Top up in batches: back-to-back requests cost the daemon one wakeup
		 * and one group commit, where one request per allocation costs each. */
		if (tk->served && v->n + pmemz_depth_batch(&v->d) <= v->d.target) {
			uint64_t t0 = pmemz_now_ns();

			reserve_refill(r);
			v->refill_ns += pmemz_now_ns() - t0;
		}
		pmemz_depth_end(&v->d, pmemz_now_ns());
	}
	if (v->bytes) {
		if (tk->served)
			v->hits++;
		else
			v->misses++;
	}
	pthread_mutex_unlock(&v->lock);
	return tk->served;
}

void pmemz_reserve_after_direct(struct pmemz_region *r, uint64_t n)
{
	struct pmemz_reserve *v = reserve_of(r);

	if (!v || !__atomic_load_n(&v->bytes, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&v->lock);
	if (v->bytes) {
		if (n != v->unit) {
			if (v->next_unit == n) {
				reserve_drain(r);
				v->unit = n;
				reserve_size(r, v);
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

/* Release every reserved lease and switch the reserve off (pmemz_region_close, set_reserve 0). */
static void reserve_drop(struct pmemz_region *r)
{
	struct pmemz_reserve *v = reserve_of(r);

	if (!v)
		return;
	pthread_mutex_lock(&v->lock);
	reserve_drain(r);
	__atomic_store_n(&v->bytes, 0, __ATOMIC_RELAXED);
	pmemz_depth_resize(&v->d, 0, 0);
	v->next_unit = 0;
	pthread_mutex_unlock(&v->lock);
}

/*
 * The connection was replaced (pmemz_client_reconnect): the reserved
 * leases died with the old one; forget them (nothing is sent) and refill
 * on the new one, unless r turned stale.
 */
static int reserve_reconnected(struct pmemz_region *r, int state)
{
	struct pmemz_reserve *v = reserve_of(r);

	(void)state; /* a failed connection fails the refill, which backs off */
	if (!v)
		return 0;
	pthread_mutex_lock(&v->lock);
	/*
	 * The tickets are of the old epoch: waiting fails at once, whether or
	 * not their answer came, so no FREE of a dead lease id reaches the new
	 * connection (where the id may name another lease).
	 */
	while (v->n)
		pmemz_wire_forget(r->c, reserve_pop(v, NULL));
	v->next_unit = 0;
	v->backoff = false;
	if (v->bytes && pmemz_region_check(r) == 0)
		reserve_refill(r);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

/* The region's last reference is gone: nothing is outstanding (reserve_drop at close). */
static void reserve_release(struct pmemz_region *r)
{
	struct pmemz_reserve *v = reserve_of(r);

	if (!v)
		return;
	pthread_mutex_destroy(&v->lock);
	free(v->q);
	free(v);
	r->rsv = NULL;
}

static const struct pmemz_region_hooks reserve_hooks = {
    .reconnected = reserve_reconnected,
    .close = reserve_drop,
    .release = reserve_release,
};

void pmemz_reserve_get_stats(struct pmemz_region *r, struct pmemz_reserve_stats *st)
{
	struct pmemz_reserve *v = reserve_of(r);

	*st = (struct pmemz_reserve_stats){0};
	if (!v)
		return;
	pthread_mutex_lock(&v->lock);
	st->bytes = v->bytes;
	st->target = v->d.target;
	st->floor = v->d.floor;
	st->cap = v->d.cap;
	st->max_target = v->d.max_target;
	st->stalls = v->d.stalls;
	st->cuts = v->d.cuts;
	st->latency_ns = v->d.lat_ns;
	st->gap_ns = v->d.gap_ns;
	st->observe_ns = v->observe_ns;
	st->collect_ns = v->collect_ns;
	st->stall_ns = v->stall_ns;
	st->refill_ns = v->refill_ns;
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
		reserve_drop(r);
		return 0;
	}
	ret = pmemz_region_check(r);
	if (ret < 0)
		return ret;
	if ((uint64_t)bytes > r->extent_count * r->extent_size)
		return pmemz_err(
		    -EINVAL, "pmemz_region_set_reserve: %zu bytes exceed region '%s' (%llu bytes)",
		    bytes, r->name, (unsigned long long)(r->extent_count * r->extent_size));
	v = reserve_attach(r, &ret);
	if (!v)
		return ret;
	pthread_mutex_lock(&v->lock);
	if (!v->unit)
		v->unit = 1;
	__atomic_store_n(&v->bytes, bytes, __ATOMIC_RELAXED);
	/* Set anew: the depth starts over from the caller's bytes and what
	 * the reserve has seen of the daemon's latency and the caller's rate. */
	reserve_size(r, v);
	if (v->n > v->d.target)
		reserve_drain(r); /* shrunk: start over at the new size */
	v->backoff = false;
	reserve_refill(r);
	pthread_mutex_unlock(&v->lock);
	return 0;
}
