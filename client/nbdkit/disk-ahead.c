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

/* A pool tag: nbd/D/pool/SEQ, committed, of up to DISK_AHEAD_BATCH extents. */
struct ahead_pool {
	struct pmemz_alloc *a;
	unsigned refs; /* its extents not moved to a chunk yet (under the lock) */
};

struct disk_ahead {
	struct disk *d;
	bool on; /* extents are owned ahead (else only pool tags are named here) */

	pthread_mutex_t lock;  /* all below */
	pthread_cond_t wake;   /* below target, or stop */
	pthread_cond_t filled; /* a refill ended */
	struct ahead_ext *v;   /* the zeroed ones, a stack */
	size_t n, cap_v;
	struct ahead_pool **pools; /* every pool with refs (for close) */
	size_t n_pools, cap_pools;
	uint64_t next_seq;
	size_t floor, target, cap, ceiling; /* extents; ceiling: after a refusal */
	uint64_t taken, empty, fallbacks, refills, refused;
	uint64_t refill_ns, refill_max_ns;	/* the refills' time: in all, the longest */
	uint64_t lat_ns, rate_t_ns, rate_taken; /* refill latency; rate's last sample */
	double rate;				/* extents taken per second, smoothed */
	uint64_t backoff_until_ns;
	pthread_t threads[DISK_AHEAD_THREADS];
	unsigned n_threads;
	bool stop;
	unsigned refilling; /* threads between wanting and getting extents */
	size_t inflight;    /* the extents they asked for */
};

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

static size_t limit(const struct disk_ahead *ah)
{
	return ah->ceiling < ah->cap ? ah->ceiling : ah->cap;
}

/* v within [floor, limit], the limit winning (a refusal may put it under the floor) */
static size_t bound(const struct disk_ahead *ah, size_t v)
{
	size_t hi = limit(ah);

	return clamp(v, ah->floor < hi ? ah->floor : hi, hi);
}

static int give_back(struct disk *d, struct pmemz_alloc *a);

/* ---- the stack and the pools (lock held) ---- */

static int push_pool(struct disk_ahead *ah, struct ahead_pool *p)
{
	int r = PMEMZ_GROW(ah->pools, &ah->cap_pools, ah->n_pools + 1);

	if (r < 0)
		return r;
	ah->pools[ah->n_pools++] = p;
	return 0;
}

static int reserve_stack(struct disk_ahead *ah, size_t more)
{
	size_t need;
	int r = pmemz_add_size(ah->n, more, &need);

	return r < 0 ? r : PMEMZ_GROW(ah->v, &ah->cap_v, need);
}

/* The pool's extents, onto the stack; 0 or -ENOMEM (nothing added). */
static int pool_add(struct disk_ahead *ah, struct ahead_pool *p)
{
	uint64_t chunk = ah->d->chunk_size;
	size_t n = pmemz_alloc_count(p->a), total = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		size_t len = 0;

		(void)pmemz_alloc_range(p->a, i, &len);
		total += len / chunk;
	}
	r = reserve_stack(ah, total);
	if (r == 0)
		r = push_pool(ah, p);
	if (r < 0)
		return r;
	/* pushed last first: fresh chunks take them in the daemon's order, lowest address first */
	for (size_t i = n; i-- > 0;) {
		size_t len = 0;
		char *base = pmemz_alloc_range(p->a, i, &len);

		for (size_t off = len / chunk * chunk; off >= chunk;) {
			off -= chunk;
			ah->v[ah->n++] = (struct ahead_ext){base + off, p};
		}
	}
	p->refs = (unsigned)total;
	return 0;
}

/* ---- refills ---- */

/* The extents of pool tag a, onto the stack. */
static int keep(struct disk_ahead *ah, struct pmemz_alloc *a)
{
	struct ahead_pool *p = calloc(1, sizeof(*p));
	int r = p ? 0 : -ENOMEM;

	if (p) {
		p->a = a;
		pthread_mutex_lock(&ah->lock);
		r = pool_add(ah, p);
		/* a fresh write waiting for this refill need not wait for all of it */
		if (r == 0)
			pthread_cond_broadcast(&ah->filled);
		pthread_mutex_unlock(&ah->lock);
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

static uint64_t take_seq(struct disk_ahead *ah)
{
	uint64_t seq;

	pthread_mutex_lock(&ah->lock);
	seq = ah->next_seq++;
	pthread_mutex_unlock(&ah->lock);
	return seq;
}

/*
 * A refill of up to n extents out of the client reserve (what it has
 * answered), each committed under a pool tag of its own, all commits in
 * one batch: one round trip.  A lease is never written before its commit is confirmed;
 * a commit whose answer was lost is settled by its tag.  0 when at least
 * one extent was added, else -errno.
 */
static int refill_leases(struct disk_ahead *ah, size_t n)
{
	struct disk *d = ah->d;
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
	for (size_t i = 0; r == 0 && i < got; i++)
		r = pmemz_disk_pool_tag(tags[i], sizeof(tags[i]), d->cfg.name, take_seq(ah));
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
			s = keep(ah, v[i]);
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
static int refill(struct disk_ahead *ah, size_t n)
{
	struct pmemz_alloc *a = NULL;
	int r;

	if (n < 2)
		return refill_leases(ah, n);
	r = disk_ahead_batch(ah->d, n, take_seq(ah), &a);
	if (r == -ENOSPC || r == -EDQUOT || r == -EINVAL)
		return refill_leases(ah, n);
	return r < 0 ? r : keep(ah, a);
}

/* The depth from the rate seen since the last sample, and the refill latency. */
static void retarget(struct disk_ahead *ah, uint64_t now)
{
	uint64_t dt = now - ah->rate_t_ns;
	size_t want;

	if (dt < NS / 10)
		return;
	ah->rate =
	    0.5 * ah->rate + 0.5 * (double)(ah->taken - ah->rate_taken) * (double)NS / (double)dt;
	ah->rate_taken = ah->taken;
	ah->rate_t_ns = now;
	want = (size_t)(2.0 * ah->rate * (double)ah->lat_ns / (double)NS) + 1;
	if (want > ah->target)
		ah->target = want;
	else if (dt >= NS)
		ah->target -= (ah->target - want) / 8;
	ah->target = bound(ah, ah->target);
}

/*
 * A refill costs three round trips whatever it takes: it waits until a
 * quarter of the target is gone (or the stack is empty), and then brings
 * it back up in one (lock held).
 */
static bool refill_due(const struct disk_ahead *ah)
{
	size_t have = ah->n + ah->inflight;

	return !have || have + ah->target / 4 <= ah->target;
}

/* What one refill should take now (lock held); 0: nothing. */
static size_t wanted(struct disk_ahead *ah, uint64_t now)
{
	size_t want, have = ah->n + ah->inflight;

	if (ah->stop || now < ah->backoff_until_ns)
		return 0;
	retarget(ah, now);
	if (!refill_due(ah) || have >= limit(ah))
		return 0;
	/* up to twice the target: a burst goes on taking while the refill is under way */
	want = 2 * ah->target > have ? 2 * ah->target - have : 1;
	if (want > limit(ah) - have)
		want = limit(ah) - have;
	return clamp(want, 1, DISK_AHEAD_BATCH);
}

static void refused(struct disk_ahead *ah, int r, uint64_t now)
{
	pthread_mutex_lock(&ah->lock);
	ah->refused++;
	if (r == -ENOSPC || r == -EDQUOT) {
		ah->ceiling = ah->n / 2 > 1 ? ah->n / 2 : 1;
		ah->target = bound(ah, ah->target);
	}
	ah->backoff_until_ns = now + NS;
	pthread_mutex_unlock(&ah->lock);
	nbdkit_debug("pmemz: no extents ahead for now: %s", pmemz_errormsg());
}

/* A refill of lat ns succeeded (lock held). */
static void refilled(struct disk_ahead *ah, uint64_t lat)
{
	ah->refills++;
	ah->refill_ns += lat;
	if (lat > ah->refill_max_ns)
		ah->refill_max_ns = lat;
	ah->ceiling = SIZE_MAX;
	/* a slowly decaying maximum: one slow answer deepens for a while */
	ah->lat_ns = lat > ah->lat_ns ? lat : ah->lat_ns - ah->lat_ns / 16;
}

static void wait_tick(struct disk_ahead *ah)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 100000000;
	if (until.tv_nsec >= (long)NS) {
		until.tv_sec++;
		until.tv_nsec -= (long)NS;
	}
	(void)pthread_cond_timedwait(&ah->wake, &ah->lock, &until);
}

static void *refill_thread(void *arg)
{
	struct disk_ahead *ah = arg;

	pthread_mutex_lock(&ah->lock);
	while (!ah->stop) {
		uint64_t t0 = now_ns();
		size_t n = wanted(ah, t0);
		int r;

		if (n == 0) {
			wait_tick(ah);
			continue;
		}
		ah->refilling++;
		ah->inflight += n;
		pthread_mutex_unlock(&ah->lock);
		r = __atomic_load_n(&ah->d->failed, __ATOMIC_ACQUIRE);
		if (r == 0)
			r = refill(ah, n);
		if (r < 0 && r != -EAGAIN) /* -EAGAIN: reconnected, nothing was refused */
			refused(ah, r, now_ns());
		pthread_mutex_lock(&ah->lock);
		if (r == 0)
			refilled(ah, now_ns() - t0);
		ah->refilling--;
		ah->inflight -= n;
		pthread_cond_broadcast(&ah->filled);
	}
	pthread_mutex_unlock(&ah->lock);
	return NULL;
}

/* ---- the disk's side ---- */

bool disk_ahead_on(const struct disk_ahead *ah)
{
	return ah->on;
}

/*
 * Will a refill end soon (lock held)?  One is under way, or an idle
 * thread starts one when woken: the stack is empty, so one is due,
 * unless a refusal's backoff holds them (refused() broadcasts filled).
 */
static bool refill_coming(const struct disk_ahead *ah)
{
	if (ah->refilling)
		return true;
	return ah->n_threads && !ah->stop && now_ns() >= ah->backoff_until_ns &&
	       !__atomic_load_n(&ah->d->failed, __ATOMIC_ACQUIRE);
}

bool disk_ahead_take(struct disk_ahead *ah, struct ahead_ext *e, bool wait)
{
	bool got = false;

	if (!ah->on)
		return false;
	pthread_mutex_lock(&ah->lock);
	if (!ah->n && !wait) {
		pthread_cond_signal(&ah->wake);
		pthread_mutex_unlock(&ah->lock);
		return false;
	}
	if (!ah->n) {
		ah->empty++;
		/* ran dry: deepen at once, as the client reserve does */
		ah->target = bound(ah, ah->target * 2);
		pthread_cond_signal(&ah->wake);
		/*
		 * A refill on its way is as quick as the fallback's own round
		 * trip, and waiting for it keeps ENOSPC for when nothing is
		 * held: the fallback would be refused what the refill holds.
		 * One that a thread is about to start counts too (the signal
		 * above starts it): only a refusal's backoff, or the end,
		 * sends the write down the fallback.
		 */
		while (!ah->n && refill_coming(ah))
			pthread_cond_wait(&ah->filled, &ah->lock);
	}
	if (ah->n) {
		*e = ah->v[--ah->n];
		ah->taken++;
		got = true;
	} else {
		ah->fallbacks++;
	}
	/* not at every take: a wakeup that finds nothing to do is a thread hop per write */
	if (refill_due(ah))
		pthread_cond_signal(&ah->wake);
	pthread_mutex_unlock(&ah->lock);
	return got;
}

void disk_ahead_put(struct disk_ahead *ah, const struct ahead_ext *e)
{
	pthread_mutex_lock(&ah->lock);
	/* untouched, still zero; kept for close to give back if there is no room */
	if (reserve_stack(ah, 1) == 0)
		ah->v[ah->n++] = *e;
	pthread_mutex_unlock(&ah->lock);
}

/* Forget pool p (lock held): it has no extent left, its tag is gone. */
static void pool_drop(struct disk_ahead *ah, struct ahead_pool *p)
{
	for (size_t i = 0; i < ah->n_pools; i++)
		if (ah->pools[i] == p) {
			ah->pools[i] = ah->pools[--ah->n_pools];
			break;
		}
}

void disk_ahead_moved(struct disk_ahead *ah, const struct ahead_ext *e)
{
	struct ahead_pool *p = e->pool;
	bool last;

	pthread_mutex_lock(&ah->lock);
	last = --p->refs == 0;
	if (last)
		pool_drop(ah, p);
	pthread_mutex_unlock(&ah->lock);
	if (!last)
		return;
	/* its tag went with its last extent, unless an adopted pool keeps unused ones */
	if (pmemz_alloc_count(p->a) == 0)
		pmemz_alloc_close(p->a);
	else if (give_back(ah->d, p->a) < 0)
		nbdkit_debug("pmemz: a pool tag stays until the next start: %s", pmemz_errormsg());
	free(p);
}

struct pmemz_alloc *disk_ahead_pool_alloc(const struct ahead_pool *p)
{
	return p->a;
}

int disk_ahead_adopt(struct disk_ahead *ah, struct pmemz_alloc *a, unsigned refs,
		     struct ahead_pool **out)
{
	struct ahead_pool *p = calloc(1, sizeof(*p));
	int r = p ? 0 : -ENOMEM;

	if (p) {
		*p = (struct ahead_pool){.a = a, .refs = refs};
		pthread_mutex_lock(&ah->lock);
		r = push_pool(ah, p);
		pthread_mutex_unlock(&ah->lock);
	}
	if (r < 0) {
		free(p);
		return r;
	}
	*out = p;
	return 0;
}

void disk_ahead_keep_pools(struct disk_ahead *ah)
{
	pthread_mutex_lock(&ah->lock);
	for (size_t i = 0; i < ah->n_pools; i++) {
		pmemz_alloc_close(ah->pools[i]->a);
		free(ah->pools[i]);
	}
	ah->n_pools = 0;
	ah->n = 0; /* their extents went with them */
	pthread_mutex_unlock(&ah->lock);
}

void disk_ahead_seen(struct disk_ahead *ah, uint64_t seq)
{
	pthread_mutex_lock(&ah->lock);
	/* never the name of a pool that might still be on its way out */
	if (seq >= ah->next_seq)
		ah->next_seq = seq + 1;
	pthread_mutex_unlock(&ah->lock);
}

/* ---- open and close ---- */

int disk_ahead_new(struct disk *d, bool on, struct disk_ahead **out)
{
	struct disk_ahead *ah = calloc(1, sizeof(*ah));

	if (!ah) {
		nbdkit_error("pmemz: out of memory");
		return -ENOMEM;
	}
	ah->d = d;
	ah->on = on;
	pthread_mutex_init(&ah->lock, NULL);
	pthread_cond_init(&ah->wake, NULL);
	pthread_cond_init(&ah->filled, NULL);
	ah->ceiling = SIZE_MAX;
	if (on) {
		ah->cap = d->cfg.ahead / d->chunk_size;
		if (ah->cap > d->region_size / 8 / d->chunk_size)
			ah->cap = d->region_size / 8 / d->chunk_size;
		if (ah->cap == 0)
			ah->cap = 1;
		ah->floor = ah->cap < DISK_AHEAD_FLOOR ? ah->cap : DISK_AHEAD_FLOOR;
		ah->target = ah->floor;
	}
	*out = ah;
	return 0;
}

struct stale {
	struct disk_ahead *ah;
	uint64_t freed;
	int error;
};

static int free_stale(struct pmemz_alloc *a, const char *tag, void *arg)
{
	struct stale *s = arg;
	char name[PMEMZ_DISK_NAME_MAX + 1];
	uint64_t seq = 0;

	if (pmemz_disk_tag_parse(tag, name, &seq) != PMEMZ_DISK_TAG_AHEAD ||
	    strcmp(name, s->ah->d->cfg.name) != 0) {
		pmemz_alloc_close(a);
		return 0;
	}
	disk_ahead_seen(s->ah, seq);
	if (pmemz_alloc_release(a) < 0 && !s->error) {
		s->error = -EIO;
		nbdkit_error("pmemz: cannot free ahead tag '%s' of an earlier run: %s", tag,
			     pmemz_errormsg());
	}
	s->freed++;
	return 0;
}

int disk_ahead_open(struct disk_ahead *ah)
{
	struct disk *d = ah->d;
	char prefix[PMEMZ_DISK_TAG_MAX];
	struct stale s = {.ah = ah};
	int r;

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
	if (!ah->on)
		return 0;
	ah->rate_t_ns = now_ns();
	/* the first ones now, so that the first writes find them; a refusal is no error */
	r = refill(ah, ah->floor);
	if (r < 0)
		nbdkit_debug("pmemz: no extents ahead at start: %s", pmemz_errormsg());
	return 0;
}

int disk_ahead_start(struct disk_ahead *ah)
{
	int r;

	if (!ah->on)
		return 0;
	/* refills overlap: while one waits for an answer, the next is on its way */
	for (unsigned i = 0; i < DISK_AHEAD_THREADS; i++) {
		r = pthread_create(&ah->threads[i], NULL, refill_thread, ah);
		if (r) {
			nbdkit_error("pmemz: cannot start an ahead thread: %s", strerror(r));
			return -r;
		}
		ah->n_threads++;
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

static void close_debug(struct disk_ahead *ah, size_t n_free)
{
	nbdkit_debug("pmemz: ahead: %" PRIu64 " taken, %" PRIu64
		     " refills (%.2f ms each on average, %.2f ms the longest), %" PRIu64
		     " times none left (%" PRIu64 " fell back), %" PRIu64
		     " refused; %zu given back at close",
		     ah->taken, ah->refills,
		     ah->refills ? (double)ah->refill_ns / 1e6 / (double)ah->refills : 0.0,
		     (double)ah->refill_max_ns / 1e6, ah->empty, ah->fallbacks, ah->refused,
		     n_free);
}

void disk_ahead_free(struct disk_ahead *ah)
{
	if (!ah)
		return;
	pthread_mutex_lock(&ah->lock);
	ah->stop = true;
	pthread_cond_broadcast(&ah->wake);
	pthread_cond_broadcast(&ah->filled);
	pthread_mutex_unlock(&ah->lock);
	for (unsigned i = 0; i < ah->n_threads; i++)
		pthread_join(ah->threads[i], NULL);
	/* every fold is done (disk-fold.c ran last, or the pools were kept): the rest is zero */
	for (size_t i = 0; i < ah->n_pools; i++) {
		struct ahead_pool *p = ah->pools[i];

		if (give_back(ah->d, p->a) < 0)
			nbdkit_debug("pmemz: a pool tag stays until the next start: %s",
				     pmemz_errormsg());
		free(p);
	}
	if (ah->on)
		close_debug(ah, ah->n);
	free(ah->pools);
	free(ah->v);
	pthread_mutex_destroy(&ah->lock);
	pthread_cond_destroy(&ah->wake);
	pthread_cond_destroy(&ah->filled);
	free(ah);
}
