/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: zeroed extents the disk owns ahead of need, so that
 * the first write into a chunk waits for no daemon round trip.
 *
 * They are committed under the disk's pool tags (nbd/D/pool/SEQ: up to
 * DISK_AHEAD_BATCH extents in two round trips, disk-ahead-batch.c, or one
 * by one out of the client reserve), so they survive a restart of
 * pmemzerod: a write into one is safe whenever it lands.  (A lease would
 * not be: it dies with the connection, and the restarted daemon may zero
 * it and grant it to someone else while a late store of ours is on its
 * way.)  A fresh chunk takes one (disk_ahead_take), records its mapping in
 * the journal (disk-journal.c) and is written at once; disk-fold.c moves
 * it to the chunk's tag later.  A pool tag found at open may hold writes
 * whose record never became durable: disk-journal.c moves out what the
 * journal maps and frees the rest, which pmemzerod zeroes again.
 *
 * Depth: the floor (DISK_AHEAD_FLOOR extents) at least; it doubles each
 * time a fresh chunk finds none left, and otherwise follows the rate the
 * disk takes them at times the refill latency, twice over; an eighth of
 * the excess goes each quiet second.  Never above the cap (ahead=, at most
 * an eighth of the region), nor above the ceiling a refusal (-ENOSPC,
 * -EDQUOT) left: half of what was held then, until a refill succeeds.
 * A refill starts once a quarter of the depth is gone and fills to twice
 * it; DISK_AHEAD_THREADS refills overlap.  The refills charge the uid's
 * quota like any allocation.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "vector.h"
#include "libpmemzclient.h"

#define NS 1000000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

static size_t clamp(size_t v, size_t lo, size_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static size_t limit(const struct disk *d)
{
	return d->ahead.ceiling < d->ahead.cap ? d->ahead.ceiling : d->ahead.cap;
}

/* v within [floor, limit], the limit winning (a refusal may put it under the floor) */
static size_t bound(const struct disk *d, size_t v)
{
	size_t hi = limit(d);

	return clamp(v, d->ahead.floor < hi ? d->ahead.floor : hi, hi);
}

static int give_back(struct disk *d, struct pmemz_alloc *a);

/* ---- the stack and the pools (ahead.lock held) ---- */

static int push_pool(struct disk *d, struct ahead_pool *p)
{
	int r = PMEMZ_GROW(d->ahead.pools, &d->ahead.cap_pools, d->ahead.n_pools + 1);

	if (r < 0)
		return r;
	d->ahead.pools[d->ahead.n_pools++] = p;
	return 0;
}

static int reserve_stack(struct disk *d, size_t more)
{
	size_t need;
	int r = pmemz_add_size(d->ahead.n, more, &need);

	return r < 0 ? r : PMEMZ_GROW(d->ahead.v, &d->ahead.cap_v, need);
}

/* The pool's extents, onto the stack; 0 or -ENOMEM (nothing added). */
static int pool_add(struct disk *d, struct ahead_pool *p)
{
	size_t n = pmemz_alloc_count(p->a), total = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		size_t len = 0;

		(void)pmemz_alloc_range(p->a, i, &len);
		total += len / d->chunk_size;
	}
	r = reserve_stack(d, total);
	if (r == 0)
		r = push_pool(d, p);
	if (r < 0)
		return r;
	/* pushed last first: fresh chunks take them in the daemon's order, lowest address first */
	for (size_t i = n; i-- > 0;) {
		size_t len = 0;
		char *base = pmemz_alloc_range(p->a, i, &len);

		for (size_t off = len / d->chunk_size * d->chunk_size; off >= d->chunk_size;) {
			off -= d->chunk_size;
			d->ahead.v[d->ahead.n++] = (struct ahead_ext){base + off, p};
		}
	}
	p->refs = (unsigned)total;
	return 0;
}

/* ---- refills ---- */

/* The extents of pool tag a, onto the stack. */
static int keep(struct disk *d, struct pmemz_alloc *a)
{
	struct ahead_pool *p = calloc(1, sizeof(*p));
	int r = p ? 0 : -ENOMEM;

	if (p) {
		p->a = a;
		disk_warm(d, a);
		pthread_mutex_lock(&d->ahead.lock);
		r = pool_add(d, p);
		/* a fresh write waiting for this refill need not wait for all of it */
		if (r == 0)
			pthread_cond_broadcast(&d->ahead.filled);
		pthread_mutex_unlock(&d->ahead.lock);
	}
	if (r < 0) {
		(void)pmemz_alloc_release(a);
		free(p);
	}
	return r;
}

/*
 * Lease up to n extents, one by one (the client reserve answers them
 * without a round trip); 0 with *got of them, or -errno when none.
 */
static int lease(struct disk *d, struct pmemz_alloc **v, size_t n, size_t *got)
{
	uint64_t gen = disk_gen(d);
	int r = 0;

	*got = 0;
	while (*got < n) {
		r = pmemz_alloc_new(d->r, d->chunk_size, *got ? PMEMZ_ALLOC_NOWAIT : 0, &v[*got]);
		if (r < 0)
			break;
		(*got)++;
	}
	if (*got)
		return 0; /* enough for now: the next refill asks for the rest */
	if (disk_conn_lost(r) && disk_reconnect(d, gen) == 0)
		return -EAGAIN; /* try again at once, on the new connection */
	return r;
}

/*
 * A refill of up to n extents out of the client reserve (what it has
 * answered), each committed under a pool tag of its own, all commits in
 * one batch: one round trip.  A lease is never written before its commit is confirmed;
 * a commit whose answer was lost is settled by its tag.  0 when at least
 * one extent was added, else -errno.
 */
static int refill_leases(struct disk *d, size_t n)
{
	struct pmemz_alloc *v[DISK_AHEAD_BATCH];
	char tags[DISK_AHEAD_BATCH][PMEMZ_DISK_TAG_MAX];
	struct pmemz_batch *b = NULL;
	size_t got = 0, kept = 0;
	uint64_t gen = disk_gen(d);
	int r, first = 0;

	r = lease(d, v, n < DISK_AHEAD_BATCH ? n : DISK_AHEAD_BATCH, &got);
	if (r < 0)
		return r;
	r = pmemz_batch_new(d->r, &b);
	pthread_mutex_lock(&d->ahead.lock);
	for (size_t i = 0; r == 0 && i < got; i++)
		r = pmemz_disk_pool_tag(tags[i], sizeof(tags[i]), d->cfg.name,
					d->ahead.next_seq++);
	pthread_mutex_unlock(&d->ahead.lock);
	for (size_t i = 0; r == 0 && i < got; i++)
		r = pmemz_batch_commit(b, v[i], tags[i], 0);
	if (r == 0)
		r = pmemz_batch_wait(b);
	if (r < 0 && disk_conn_lost(r))
		(void)disk_reconnect(d, gen);
	for (size_t i = 0; i < got; i++) {
		int s = b ? pmemz_batch_status(b, i) : r;

		if (s != 0 && disk_conn_lost(s)) {
			pmemz_alloc_close(v[i]); /* the lease died with its connection */
			v[i] = NULL;
			s = pmemz_alloc_open(d->r, tags[i], &v[i]);
		}
		if (s == 0)
			s = keep(d, v[i]);
		else
			pmemz_alloc_close(v[i]);
		kept += s == 0;
		if (s < 0 && !first)
			first = s == -ENOENT ? -EAGAIN : s;
	}
	pmemz_batch_free(b);
	if (kept)
		return 0;
	return first ? first : r;
}

/*
 * One refill: many extents in two round trips (disk-ahead-batch.c), or,
 * for one extent or when the lot was refused, one by one out of the
 * client reserve, as many as fit.
 */
static int refill(struct disk *d, size_t n)
{
	struct pmemz_alloc *a = NULL;
	int r;

	if (n < 2)
		return refill_leases(d, n);
	r = disk_ahead_batch(d, n, &a);
	if (r == -ENOSPC || r == -EDQUOT || r == -EINVAL)
		return refill_leases(d, n);
	return r < 0 ? r : keep(d, a);
}

/* The depth from the rate seen since the last sample, and the refill latency. */
static void retarget(struct disk *d, uint64_t now)
{
	uint64_t dt = now - d->ahead.rate_t_ns;
	size_t want;

	if (dt < NS / 10)
		return;
	d->ahead.rate = 0.5 * d->ahead.rate + 0.5 * (double)(d->ahead.taken - d->ahead.rate_taken) *
						  (double)NS / (double)dt;
	d->ahead.rate_taken = d->ahead.taken;
	d->ahead.rate_t_ns = now;
	want = (size_t)(2.0 * d->ahead.rate * (double)d->ahead.lat_ns / (double)NS) + 1;
	if (want > d->ahead.target)
		d->ahead.target = want;
	else if (dt >= NS)
		d->ahead.target -= (d->ahead.target - want) / 8;
	d->ahead.target = bound(d, d->ahead.target);
}

/*
 * A refill costs three round trips whatever it takes: it waits until a
 * quarter of the target is gone (or the stack is empty), and then brings
 * it back up in one (ahead.lock held).
 */
static bool refill_due(const struct disk *d)
{
	size_t have = d->ahead.n + d->ahead.inflight;

	return !have || have + d->ahead.target / 4 <= d->ahead.target;
}

/* What one refill should take now (ahead.lock held); 0: nothing. */
static size_t wanted(struct disk *d, uint64_t now)
{
	size_t want, have = d->ahead.n + d->ahead.inflight;

	if (d->ahead.stop || now < d->ahead.backoff_until_ns)
		return 0;
	retarget(d, now);
	if (!refill_due(d) || have >= limit(d))
		return 0;
	/* up to twice the target: a burst goes on taking while the refill is under way */
	want = 2 * d->ahead.target > have ? 2 * d->ahead.target - have : 1;
	if (want > limit(d) - have)
		want = limit(d) - have;
	return clamp(want, 1, DISK_AHEAD_BATCH);
}

static void refused(struct disk *d, int r, uint64_t now)
{
	pthread_mutex_lock(&d->ahead.lock);
	d->ahead.refused++;
	if (r == -ENOSPC || r == -EDQUOT) {
		d->ahead.ceiling = d->ahead.n / 2 > 1 ? d->ahead.n / 2 : 1;
		d->ahead.target = bound(d, d->ahead.target);
	}
	d->ahead.backoff_until_ns = now + NS;
	pthread_mutex_unlock(&d->ahead.lock);
	nbdkit_debug("pmemz: no extents ahead for now: %s", pmemz_errormsg());
}

static void *refill_thread(void *arg)
{
	struct disk *d = arg;

	pthread_mutex_lock(&d->ahead.lock);
	while (!d->ahead.stop) {
		uint64_t t0 = now_ns();
		size_t n = wanted(d, t0);
		struct timespec until;
		int r;

		if (n == 0) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 100000000;
			if (until.tv_nsec >= (long)NS) {
				until.tv_sec++;
				until.tv_nsec -= (long)NS;
			}
			(void)pthread_cond_timedwait(&d->ahead.wake, &d->ahead.lock, &until);
			continue;
		}
		d->ahead.refilling++;
		d->ahead.inflight += n;
		pthread_mutex_unlock(&d->ahead.lock);
		r = __atomic_load_n(&d->failed, __ATOMIC_ACQUIRE);
		if (r == 0)
			r = refill(d, n);
		if (r == -EAGAIN) {
			/* reconnected: nothing was refused */
		} else if (r < 0) {
			refused(d, r, now_ns());
		} else {
			uint64_t lat = now_ns() - t0;

			pthread_mutex_lock(&d->ahead.lock);
			d->ahead.refills++;
			d->ahead.refill_ns += lat;
			if (lat > d->ahead.refill_max_ns)
				d->ahead.refill_max_ns = lat;
			d->ahead.ceiling = SIZE_MAX;
			/* a slowly decaying maximum: one slow answer deepens for a while */
			d->ahead.lat_ns =
			    lat > d->ahead.lat_ns ? lat : d->ahead.lat_ns - d->ahead.lat_ns / 16;
			pthread_mutex_unlock(&d->ahead.lock);
		}
		pthread_mutex_lock(&d->ahead.lock);
		d->ahead.refilling--;
		d->ahead.inflight -= n;
		pthread_cond_broadcast(&d->ahead.filled);
	}
	pthread_mutex_unlock(&d->ahead.lock);
	return NULL;
}

/* ---- the disk's side ---- */

/*
 * Will a refill end soon (ahead.lock held)?  One is under way, or an idle
 * thread starts one when woken: the stack is empty, so one is due,
 * unless a refusal's backoff holds them (refused() broadcasts filled).
 */
static bool refill_coming(const struct disk *d)
{
	if (d->ahead.refilling)
		return true;
	return d->ahead.n_threads && !d->ahead.stop && now_ns() >= d->ahead.backoff_until_ns &&
	       !__atomic_load_n(&d->failed, __ATOMIC_ACQUIRE);
}

bool disk_ahead_take(struct disk *d, struct ahead_ext *e, bool wait)
{
	bool got = false;

	if (!disk_ahead_on(d))
		return false;
	pthread_mutex_lock(&d->ahead.lock);
	if (!d->ahead.n && !wait) {
		pthread_cond_signal(&d->ahead.wake);
		pthread_mutex_unlock(&d->ahead.lock);
		return false;
	}
	if (!d->ahead.n) {
		d->ahead.empty++;
		/* ran dry: deepen at once, as the client reserve does */
		d->ahead.target = bound(d, d->ahead.target * 2);
		pthread_cond_signal(&d->ahead.wake);
		/*
		 * A refill on its way is as quick as the fallback's own round
		 * trip, and waiting for it keeps ENOSPC for when nothing is
		 * held: the fallback would be refused what the refill holds.
		 * One that a thread is about to start counts too (the signal
		 * above starts it): only a refusal's backoff, or the end,
		 * sends the write down the fallback.
		 */
		while (!d->ahead.n && refill_coming(d))
			pthread_cond_wait(&d->ahead.filled, &d->ahead.lock);
	}
	if (d->ahead.n) {
		*e = d->ahead.v[--d->ahead.n];
		d->ahead.taken++;
		got = true;
	} else {
		d->ahead.fallbacks++;
	}
	/* not at every take: a wakeup that finds nothing to do is a thread hop per write */
	if (refill_due(d))
		pthread_cond_signal(&d->ahead.wake);
	pthread_mutex_unlock(&d->ahead.lock);
	return got;
}

void disk_ahead_put(struct disk *d, const struct ahead_ext *e)
{
	pthread_mutex_lock(&d->ahead.lock);
	/* untouched, still zero; kept for close to give back if there is no room */
	if (reserve_stack(d, 1) == 0)
		d->ahead.v[d->ahead.n++] = *e;
	pthread_mutex_unlock(&d->ahead.lock);
}

/* Forget pool p (ahead.lock held): it has no extent left, its tag is gone. */
static void pool_drop(struct disk *d, struct ahead_pool *p)
{
	for (size_t i = 0; i < d->ahead.n_pools; i++)
		if (d->ahead.pools[i] == p) {
			d->ahead.pools[i] = d->ahead.pools[--d->ahead.n_pools];
			break;
		}
}

void disk_ahead_moved(struct disk *d, const struct ahead_ext *e)
{
	struct ahead_pool *p = e->pool;
	bool last;

	pthread_mutex_lock(&d->ahead.lock);
	last = --p->refs == 0;
	if (last)
		pool_drop(d, p);
	pthread_mutex_unlock(&d->ahead.lock);
	if (!last)
		return;
	/* its tag went with its last extent, unless an adopted pool keeps unused ones */
	if (pmemz_alloc_count(p->a) == 0)
		pmemz_alloc_close(p->a);
	else if (give_back(d, p->a) < 0)
		nbdkit_debug("pmemz: a pool tag stays until the next start: %s", pmemz_errormsg());
	free(p);
}

int disk_ahead_adopt(struct disk *d, struct ahead_pool *p)
{
	return push_pool(d, p);
}

void disk_ahead_counts(struct disk *d, uint64_t *taken, uint64_t *fallbacks)
{
	pthread_mutex_lock(&d->ahead.lock);
	*taken = d->ahead.taken;
	*fallbacks = d->ahead.fallbacks;
	pthread_mutex_unlock(&d->ahead.lock);
}

uint64_t disk_ahead_held(struct disk *d)
{
	uint64_t n = 0;

	pthread_mutex_lock(&d->ahead.lock);
	for (size_t i = 0; i < d->ahead.n_pools; i++)
		n += d->ahead.pools[i]->refs;
	pthread_mutex_unlock(&d->ahead.lock);
	return n * d->chunk_size;
}

void disk_ahead_keep_pools(struct disk *d)
{
	pthread_mutex_lock(&d->ahead.lock);
	for (size_t i = 0; i < d->ahead.n_pools; i++) {
		pmemz_alloc_close(d->ahead.pools[i]->a);
		free(d->ahead.pools[i]);
	}
	d->ahead.n_pools = 0;
	pthread_mutex_unlock(&d->ahead.lock);
}

struct stale {
	struct disk *d;
	uint64_t max_seq, freed;
	int error;
};

static int free_stale(struct pmemz_alloc *a, const char *tag, void *arg)
{
	struct stale *s = arg;
	char name[PMEMZ_DISK_NAME_MAX + 1];
	uint64_t seq = 0;

	if (pmemz_disk_tag_parse(tag, name, &seq) != PMEMZ_DISK_TAG_AHEAD ||
	    strcmp(name, s->d->cfg.name) != 0) {
		pmemz_alloc_close(a);
		return 0;
	}
	if (seq > s->max_seq)
		s->max_seq = seq;
	if (pmemz_alloc_release(a) < 0 && !s->error) {
		s->error = -EIO;
		nbdkit_error("pmemz: cannot free ahead tag '%s' of an earlier run: %s", tag,
			     pmemz_errormsg());
	}
	s->freed++;
	return 0;
}

int disk_ahead_open(struct disk *d)
{
	char prefix[PMEMZ_DISK_TAG_MAX];
	struct stale s = {.d = d};
	int r;

	pthread_mutex_init(&d->ahead.lock, NULL);
	pthread_cond_init(&d->ahead.wake, NULL);
	pthread_cond_init(&d->ahead.filled, NULL);
	d->ahead.ceiling = SIZE_MAX;
	d->ahead.warm = d->cfg.warm;
	d->ahead.initialised = true;
	/* a plugin's before the journal: held, and maybe written into: zeroed again, never used */
	(void)pmemz_disk_chunk_prefix(prefix, sizeof(prefix), d->cfg.name);
	strcat(prefix, "ahead/");
	r = pmemz_tag_foreach(d->r, prefix, free_stale, &s);
	if (r == 0)
		r = s.error;
	if (r < 0) {
		if (!s.error)
			nbdkit_error("pmemz: cannot list the ahead tags of disk '%s': %s",
				     d->cfg.name, pmemz_errormsg());
		return r;
	}
	if (s.freed)
		nbdkit_debug("pmemz: freed %" PRIu64 " ahead tag(s) of an earlier run", s.freed);
	if (s.max_seq >= d->ahead.next_seq) /* the pool tags' (disk-open.c) may be above */
		d->ahead.next_seq = s.max_seq + 1;
	if (!disk_ahead_on(d))
		return 0;
	d->ahead.cap = d->cfg.ahead / d->chunk_size;
	if (d->ahead.cap > d->region_size / 8 / d->chunk_size)
		d->ahead.cap = d->region_size / 8 / d->chunk_size;
	if (d->ahead.cap == 0)
		d->ahead.cap = 1;
	d->ahead.floor = d->ahead.cap < DISK_AHEAD_FLOOR ? d->ahead.cap : DISK_AHEAD_FLOOR;
	d->ahead.target = d->ahead.floor;
	d->ahead.rate_t_ns = now_ns();
	/* the first ones now, so that the first writes find them; a refusal is no error */
	r = refill(d, d->ahead.floor);
	if (r < 0)
		nbdkit_debug("pmemz: no extents ahead at start: %s", pmemz_errormsg());
	return 0;
}

int disk_ahead_start(struct disk *d)
{
	int r;

	if (!disk_ahead_on(d))
		return 0;
	/* refills overlap: while one waits for an answer, the next is on its way */
	for (unsigned i = 0; i < DISK_AHEAD_THREADS; i++) {
		r = pthread_create(&d->ahead.threads[i], NULL, refill_thread, d);
		if (r) {
			nbdkit_error("pmemz: cannot start an ahead thread: %s", strerror(r));
			return -r;
		}
		d->ahead.n_threads++;
	}
	return 0;
}

/* Free pool tag a, reconnecting once if pmemzerod restarted meanwhile. */
static int give_back(struct disk *d, struct pmemz_alloc *a)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	uint64_t gen = disk_gen(d);
	int r;

	(void)snprintf(tag, sizeof(tag), "%s", pmemz_alloc_tag(a));
	r = pmemz_alloc_release(a);
	if (r == 0 || !disk_conn_lost(r) || disk_reconnect(d, gen) < 0)
		return r;
	/* freed or not, its answer lost: the tag tells */
	r = pmemz_alloc_open(d->r, tag, &a);
	if (r == -ENOENT)
		return 0;
	return r < 0 ? r : pmemz_alloc_release(a);
}

void disk_ahead_close(struct disk *d)
{
	size_t n_free;

	pthread_mutex_lock(&d->ahead.lock);
	d->ahead.stop = true;
	pthread_cond_broadcast(&d->ahead.wake);
	pthread_cond_broadcast(&d->ahead.filled);
	pthread_mutex_unlock(&d->ahead.lock);
	for (unsigned i = 0; i < d->ahead.n_threads; i++)
		pthread_join(d->ahead.threads[i], NULL);
	d->ahead.n_threads = 0;
	n_free = d->ahead.n;
	/* every fold is done (disk-fold.c ran last, or kept the pools): what is left is zeroed */
	for (size_t i = 0; i < d->ahead.n_pools; i++) {
		struct ahead_pool *p = d->ahead.pools[i];

		if (give_back(d, p->a) < 0)
			nbdkit_debug("pmemz: a pool tag stays until the next start: %s",
				     pmemz_errormsg());
		free(p);
	}
	if (disk_ahead_on(d))
		nbdkit_debug("pmemz: ahead: %" PRIu64 " taken, %" PRIu64
			     " refills (%.2f ms each on average, %.2f ms the longest), %" PRIu64
			     " times none left (%" PRIu64 " fell back), %" PRIu64
			     " refused; %zu given back at close",
			     d->ahead.taken, d->ahead.refills,
			     d->ahead.refills
				 ? (double)d->ahead.refill_ns / 1e6 / (double)d->ahead.refills
				 : 0.0,
			     (double)d->ahead.refill_max_ns / 1e6, d->ahead.empty,
			     d->ahead.fallbacks, d->ahead.refused, n_free);
	free(d->ahead.pools);
	free(d->ahead.v);
	d->ahead.pools = NULL;
	d->ahead.v = NULL;
	d->ahead.n = d->ahead.n_pools = 0;
	pthread_mutex_destroy(&d->ahead.lock);
	pthread_cond_destroy(&d->ahead.wake);
	pthread_cond_destroy(&d->ahead.filled);
	d->ahead.initialised = false;
}
