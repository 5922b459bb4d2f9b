/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the sync point.  A fresh chunk written into an
 * extent owned ahead (disk-ahead.c) is readable at once, but its mapping
 * -- the extent under the chunk's tag -- becomes durable only here: at a
 * FLUSH, at a FUA write, and on a timer (sync-interval=, 1 s by default,
 * dm-thin's COMMIT_PERIOD).  Every mapping made since the last sync point
 * moves then, in MOVE requests of up to PMEMZ_BATCH_MOVES_MAX moves, all
 * sent before any answer is awaited: one round trip however many chunks
 * are new.  Each request is failure-atomic in pmemzerod.
 *
 * What a crash leaves (NBD's rules: a write no FLUSH or FUA covered may
 * read as its old contents): a chunk covered by a completed sync reads its
 * data; one not yet covered reads its data (its move went through) or
 * zero (its extent is still under an ahead tag, which the next open frees
 * and pmemzerod zeroes again).  Nothing else: the extent was zeroed and
 * owned by this disk before the first byte went into it.
 *
 * Only one sync runs at a time; callers that arrive meanwhile wait for it,
 * and the next one takes everything they made (group commit).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "util.h"
#include "vector.h"
#include "libpmemzclient.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

int disk_sync_init(struct disk *d)
{
	pthread_mutex_init(&d->sync.lock, NULL);
	pthread_cond_init(&d->sync.done, NULL);
	pthread_cond_init(&d->sync.tick, NULL);
	d->sync.initialised = true;
	return 0;
}

static int grow(struct disk *d, size_t more)
{
	size_t need;
	int r = pmemz_add_size(d->sync.n, more, &need);

	return r < 0 ? r : PMEMZ_GROW(d->sync.v, &d->sync.cap, need);
}

int disk_sync_add(struct disk *d, uint64_t idx, const struct ahead_ext *e)
{
	int r;

	pthread_mutex_lock(&d->sync.lock);
	r = grow(d, 1);
	if (r == 0) {
		d->sync.v[d->sync.n++] = (struct sync_entry){.idx = idx, .e = *e};
		__atomic_add_fetch(&d->sync.made, 1, __ATOMIC_ACQ_REL);
		/*
		 * A MOVE request's worth waiting: the timer thread moves them
		 * now, while writes go on, so that the next FLUSH finds only
		 * the rest (earlier durability is always allowed).
		 */
		if (d->sync.n % PMEMZ_BATCH_MOVES_MAX == 0 && d->sync.timer_on)
			pthread_cond_signal(&d->sync.tick);
	}
	pthread_mutex_unlock(&d->sync.lock);
	return r;
}

/* Moved: the chunk's tag is its mapping now. */
static void apply(struct disk *d, struct sync_entry *e)
{
	pthread_rwlock_t *l = &d->stripes[e->idx % DISK_STRIPES].lock;

	pthread_rwlock_wrlock(l);
	d->map[e->idx].a = e->out;
	pthread_rwlock_unlock(l);
	e->out = NULL;
	disk_ahead_moved(d, &e->e);
}

static void apply_all(struct disk *d, struct sync_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		apply(d, &v[i]);
}

/* One MOVE request of entries v[0..n), submitted; *out: the batch. */
static int submit(struct disk *d, struct sync_entry *v, size_t n, struct pmemz_batch **out)
{
	struct pmemz_batch *b = NULL;
	int r = pmemz_batch_new(d->r, &b);

	for (size_t i = 0; r == 0 && i < n; i++) {
		char tag[PMEMZ_DISK_TAG_MAX];

		(void)pmemz_disk_chunk_tag(tag, sizeof(tag), d->cfg.name, v[i].idx);
		r = pmemz_batch_move(b, v[i].e.pool->a, v[i].e.addr, tag, &v[i].out);
	}
	if (r == 0)
		r = pmemz_batch_submit(b);
	if (r < 0) {
		pmemz_batch_free(b);
		return r;
	}
	*out = b;
	return 0;
}

/*
 * A MOVE whose answer was lost with the connection happened whole or not
 * at all: its first chunk's tag tells.  1 (done: every handle opened), 0
 * (not done), or -errno.
 */
static int settle(struct disk *d, struct sync_entry *v, size_t n)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	int r;

	for (size_t i = 0; i < n; i++) {
		(void)pmemz_disk_chunk_tag(tag, sizeof(tag), d->cfg.name, v[i].idx);
		r = pmemz_alloc_open(d->r, tag, &v[i].out);
		if (r == -ENOENT && i == 0)
			return 0;
		if (disk_conn_lost(r)) {
			/* gone again: the caller reconnects and asks again */
			while (i-- > 0) {
				pmemz_alloc_close(v[i].out);
				v[i].out = NULL;
			}
			return r;
		}
		if (r < 0) {
			nbdkit_error("pmemz: chunk %" PRIu64 " in an unknown state: %s", v[i].idx,
				     pmemz_errormsg());
			__atomic_store_n(&d->failed, -EIO, __ATOMIC_RELEASE);
			return -EIO;
		}
	}
	return 1;
}

/*
 * The connection went while the MOVE of v[0..n) was being sent or
 * answered: reconnect, then 0 when its moves are done, 1 when they did
 * not happen and may be sent again, or -errno.  A FUA write or FLUSH
 * then goes round again on the new connection instead of failing.
 */
static int lost(struct disk *d, struct sync_entry *v, size_t n, uint64_t gen)
{
	int r;

	do {
		r = disk_reconnect(d, gen);
		if (r < 0)
			return r;
		/* the connection settle asks on; if it goes too, reconnect that one */
		gen = disk_gen(d);
		r = settle(d, v, n);
	} while (disk_conn_lost(r));
	return r < 0 ? r : !r;
}

/*
 * The answer of one MOVE (batch b of v[0..n)): 0 when its moves are done
 * (applied), 1 when they did not happen and may be sent again, or -errno.
 */
static int finish(struct disk *d, struct pmemz_batch *b, struct sync_entry *v, size_t n,
		  uint64_t gen, size_t per)
{
	int r = pmemz_batch_wait(b);

	pmemz_batch_free(b);
	if (r < 0 && disk_conn_lost(r)) {
		r = lost(d, v, n, gen);
		if (r != 0)
			return r;
	}
	if (r == -ENOSPC && per > 1) {
		nbdkit_debug("pmemz: %zu mapping(s) at once do not fit: %s", n, pmemz_errormsg());
		return r; /* the caller tries again in smaller requests */
	}
	if (r < 0) {
		nbdkit_error("pmemz: cannot make %zu chunk mapping(s) durable: %s", n,
			     pmemz_errormsg());
		return r;
	}
	apply_all(d, v, n);
	return 0;
}

/*
 * Move every entry of v[0..n), per of them in each request; the ones not
 * moved are left at the front, *left of them.  Requests of a full size
 * all go out before any answer is awaited (one round trip); smaller ones
 * (a nearly full tag table) one after the other, each in a loop iteration
 * of the daemon's own, which gives back the slots the previous one freed.
 */
static int run(struct disk *d, struct sync_entry *v, size_t n, size_t per, size_t *left)
{
	size_t nb = (n + per - 1) / per, kept = 0;
	size_t wave = per == PMEMZ_BATCH_MOVES_MAX ? nb : 1;
	struct pmemz_batch **b = calloc(nb ? nb : 1, sizeof(*b));
	uint64_t gen = disk_gen(d);
	int first = b ? 0 : -ENOMEM;

	for (size_t w = 0; w < nb; w += wave) {
		size_t end = MIN(nb, w + wave), failed = end;
		int r = 0, send_err = 0;

		for (size_t k = w; first == 0 && r == 0 && k < end; k++) {
			r = submit(d, v + k * per, MIN(per, n - k * per), &b[k]);
			if (r == 0)
				d->sync.requests++;
			else
				failed = k;
		}
		if (r < 0 && disk_conn_lost(r)) {
			nbdkit_debug("pmemz: sending the chunk mappings: %s", pmemz_errormsg());
			send_err = r;
		} else if (r < 0) {
			nbdkit_error("pmemz: cannot send the chunk mappings: %s", pmemz_errormsg());
			first = r;
		}
		for (size_t k = w; k < end; k++) {
			struct sync_entry *part = v + k * per;
			size_t m = MIN(per, n - k * per);

			if (b && b[k]) {
				r = finish(d, b[k], part, m, gen, per);
			} else if (k == failed && send_err < 0) {
				/* part of its frame may be out: ask what happened */
				r = lost(d, part, m, gen);
				if (r == 0)
					apply_all(d, part, m);
			} else {
				r = 1;
			}
			if (r == 0)
				continue;
			/* not moved: kept for the next sync point */
			memmove(v + kept, part, m * sizeof(*v));
			kept += m;
			if (first == 0)
				first = r < 0 ? r : -EAGAIN;
		}
	}
	free(b);
	*left = kept;
	return first;
}

/* Put what a failed sync did not move back in front of what was made since. */
static void requeue(struct disk *d, struct sync_entry *v, size_t n)
{
	if (grow(d, n) < 0) {
		/* cannot keep them: those chunks are not mapped, stop serving */
		__atomic_store_n(&d->failed, -EIO, __ATOMIC_RELEASE);
		nbdkit_error("pmemz: out of memory keeping %zu chunk mappings", n);
		return;
	}
	memmove(d->sync.v + n, d->sync.v, d->sync.n * sizeof(*v));
	memcpy(d->sync.v, v, n * sizeof(*v));
	d->sync.n += n;
}

/*
 * One line per sync point (nbdkit -v): scripts/bench-disk reads the totals
 * to tell how many fresh chunks went to the daemon on their write path.
 */
static void sync_debug(struct disk *d, size_t moved, uint64_t ns)
{
	uint64_t taken, fallbacks;

	disk_ahead_counts(d, &taken, &fallbacks);
	nbdkit_debug("pmemz: sync point: %zu mapping(s) durable in %.2f ms; totals: %" PRIu64
		     " MOVE requests, %" PRIu64 " fresh chunks taken ahead, %" PRIu64 " fell back",
		     moved, (double)ns / 1e6, d->sync.requests, taken, fallbacks);
}

int disk_sync(struct disk *d)
{
	size_t per;
	uint64_t want;
	int r = 0;

	pthread_mutex_lock(&d->sync.lock);
	want = d->sync.made;
	per = PMEMZ_BATCH_MOVES_MAX;
	while (r == 0 && d->sync.synced < want) {
		struct sync_entry *v;
		size_t n, left = 0;
		uint64_t upto, t0;

		if (d->sync.running) {
			pthread_cond_wait(&d->sync.done, &d->sync.lock);
			continue;
		}
		v = d->sync.v;
		n = d->sync.n;
		upto = d->sync.made;
		d->sync.v = NULL;
		d->sync.n = d->sync.cap = 0;
		d->sync.running = true;
		pthread_mutex_unlock(&d->sync.lock);

		t0 = pmemz_now_ns();
		r = run(d, v, n, per, &left);
		t0 = pmemz_now_ns() - t0;

		pthread_mutex_lock(&d->sync.lock);
		d->sync.running = false;
		d->sync.syncs++;
		d->sync.moves += n - left;
		if (left)
			requeue(d, v, left);
		else
			__atomic_store_n(&d->sync.synced, upto, __ATOMIC_RELEASE);
		d->sync.last_error = r;
		free(v);
		sync_debug(d, n - left, t0);
		pthread_cond_broadcast(&d->sync.done);
		if (r == -EAGAIN)
			r = 0; /* reconnected: go round again */
		/*
		 * A MOVE needs a free tag slot per move and one more (the
		 * daemon frees the ahead tags only as it decides): in a
		 * nearly full tag table, smaller requests still fit.
		 */
		if (r == -ENOSPC && per > 1) {
			per /= 2;
			r = 0;
		}
	}
	pthread_mutex_unlock(&d->sync.lock);
	return r;
}

static void *timer_thread(void *arg)
{
	struct disk *d = arg;
	bool said = false;

	pthread_mutex_lock(&d->sync.lock);
	while (!d->sync.stop) {
		struct timespec until;
		uint64_t ns;

		clock_gettime(CLOCK_REALTIME, &until);
		ns = (uint64_t)until.tv_nsec + (uint64_t)d->cfg.sync_interval_ms * 1000000u;
		until.tv_sec += (time_t)(ns / 1000000000u);
		until.tv_nsec = (long)(ns % 1000000000u);
		(void)pthread_cond_timedwait(&d->sync.tick, &d->sync.lock, &until);
		if (d->sync.stop || !disk_sync_pending(d))
			continue;
		pthread_mutex_unlock(&d->sync.lock);
		int r = disk_sync(d);
		if (r < 0 && !said)
			nbdkit_error("pmemz: the timed sync failed; the next FLUSH reports it");
		said = r < 0;
		pthread_mutex_lock(&d->sync.lock);
	}
	pthread_mutex_unlock(&d->sync.lock);
	return NULL;
}

int disk_sync_start(struct disk *d)
{
	int r;

	if (!disk_ahead_on(d) || d->cfg.sync_interval_ms == 0)
		return 0;
	r = pthread_create(&d->sync.timer, NULL, timer_thread, d);
	if (r) {
		nbdkit_error("pmemz: cannot start the sync timer: %s", strerror(r));
		return -r;
	}
	d->sync.timer_on = true;
	return 0;
}

void disk_sync_stop(struct disk *d)
{
	pthread_mutex_lock(&d->sync.lock);
	d->sync.stop = true;
	pthread_cond_broadcast(&d->sync.tick);
	pthread_mutex_unlock(&d->sync.lock);
	if (d->sync.timer_on)
		pthread_join(d->sync.timer, NULL);
	d->sync.timer_on = false;
	if (disk_sync_pending(d) && disk_sync(d) < 0)
		nbdkit_error("pmemz: %zu chunk(s) written since the last FLUSH are not mapped and "
			     "read as zeros after this exit",
			     d->sync.n);
	if (d->sync.syncs)
		nbdkit_debug("pmemz: sync points: %" PRIu64 ", %" PRIu64 " chunks moved in %" PRIu64
			     " MOVE requests",
			     d->sync.syncs, d->sync.moves, d->sync.requests);
	free(d->sync.v);
	d->sync.v = NULL;
	d->sync.n = d->sync.cap = 0;
	pthread_mutex_destroy(&d->sync.lock);
	pthread_cond_destroy(&d->sync.done);
	pthread_cond_destroy(&d->sync.tick);
	d->sync.initialised = false;
}
