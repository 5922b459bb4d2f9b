/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: folding the journal (disk-journal.c) into chunk
 * tags.  A fresh chunk written into an extent of a pool tag is mapped by
 * its journal record at once; here, off the write path, its extent moves
 * to the chunk's own tag, in MOVE requests of up to PMEMZ_BATCH_MOVES_MAX
 * moves, all sent before any answer is awaited, each failure-atomic in
 * pmemzerod.  Then the journal's base moves past the folded records, which
 * frees their slots.
 *
 * A fold runs when half the journal waits (the thread is told), when the
 * disk made no fresh chunk for DISK_FOLD_IDLE_TICKS sync intervals, before
 * a folded chunk is given back (TRIM, ZERO: disk-io.c), and at close, so
 * that a disk at rest is chunk tags alone.  What a crash leaves at any
 * point: the record still maps the chunk (its extent still in the pool),
 * or the chunk's tag does (the record then names an extent no pool holds,
 * and counts for nothing).
 *
 * Only one fold runs at a time; callers that arrive meanwhile wait for it,
 * and the next one takes everything made since.
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
#include "util.h"
#include "vector.h"
#include "libpmemzclient.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

int disk_fold_init(struct disk *d)
{
	pthread_mutex_init(&d->fold.lock, NULL);
	pthread_cond_init(&d->fold.done, NULL);
	pthread_cond_init(&d->fold.tick, NULL);
	d->fold.initialised = true;
	return 0;
}

static int grow(struct disk *d, size_t more)
{
	size_t need;
	int r = pmemz_add_size(d->fold.n, more, &need);

	return r < 0 ? r : PMEMZ_GROW(d->fold.v, &d->fold.cap, need);
}

int disk_map_add(struct disk *d, uint64_t idx, const struct ahead_ext *e)
{
	int r;

	pthread_mutex_lock(&d->fold.lock);
	if (!d->fold.slots || d->fold.refused || d->fold.next - d->fold.base >= d->fold.slots) {
		/*
		 * Full until the fold that is coming (half full told the
		 * thread), or folds are refused (the uid's tag limit): the
		 * fallback's COMMIT fails the write that would go over it.
		 */
		d->fold.full++;
		if (d->fold.timer_on)
			pthread_cond_signal(&d->fold.tick);
		pthread_mutex_unlock(&d->fold.lock);
		return -ENOSPC;
	}
	r = grow(d, 1);
	if (r == 0)
		r = disk_journal_write(d, d->fold.next, idx, e->addr);
	if (r == 0) {
		d->fold.next++;
		d->fold.v[d->fold.n++] = (struct fold_entry){.idx = idx, .e = *e};
		__atomic_add_fetch(&d->fold.made, 1, __ATOMIC_ACQ_REL);
		if (d->fold.next - d->fold.base == d->fold.slots / 2 && d->fold.timer_on)
			pthread_cond_signal(&d->fold.tick);
	}
	pthread_mutex_unlock(&d->fold.lock);
	return r;
}

/* Moved: the chunk's tag is its mapping now. */
static void apply(struct disk *d, struct fold_entry *e)
{
	pthread_rwlock_t *l = &d->stripes[e->idx % DISK_STRIPES].lock;

	pthread_rwlock_wrlock(l);
	d->map[e->idx].a = e->out;
	pthread_rwlock_unlock(l);
	e->out = NULL;
	disk_ahead_moved(d, &e->e);
}

/* One MOVE request of entries v[0..n), submitted; *out: the batch. */
static int submit(struct disk *d, struct fold_entry *v, size_t n, struct pmemz_batch **out)
{
	struct pmemz_batch *b = NULL;
	int r = disk_journal_refuse_move(d) ? -EDQUOT : pmemz_batch_new(d->r, &b);

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
static int settle(struct disk *d, struct fold_entry *v, size_t n)
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
static int lost(struct disk *d, struct fold_entry *v, size_t n, uint64_t gen)
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
 * (each entry's out set), 1 when they did not happen and may be sent
 * again, or -errno.
 */
static int finish(struct disk *d, struct pmemz_batch *b, struct fold_entry *v, size_t n,
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
		nbdkit_error("pmemz: cannot move %zu chunk(s) of the journal to their tags: %s", n,
			     pmemz_errormsg());
		return r;
	}
	return 0;
}

/*
 * Move every entry of v[0..n), per of them in each request; a moved one
 * gets its out.  Requests of a full size all go out before any answer is
 * awaited (one round trip); smaller ones (a nearly full tag table) one
 * after the other, each in a loop iteration of the daemon's own, which
 * gives back the slots the previous one freed.
 */
static int run(struct disk *d, struct fold_entry *v, size_t n, size_t per)
{
	size_t nb = (n + per - 1) / per;
	size_t wave = per == disk_journal_moves_max() ? nb : 1;
	struct pmemz_batch **b = calloc(nb ? nb : 1, sizeof(*b));
	uint64_t gen = disk_gen(d);
	int first = b ? 0 : -ENOMEM;

	for (size_t w = 0; w < nb; w += wave) {
		size_t end = MIN(nb, w + wave), failed = end;
		int r = 0, send_err = 0;

		for (size_t k = w; first == 0 && r == 0 && k < end; k++) {
			r = submit(d, v + k * per, MIN(per, n - k * per), &b[k]);
			if (r == 0)
				d->fold.requests++;
			else
				failed = k;
		}
		if (r < 0 && disk_conn_lost(r)) {
			nbdkit_debug("pmemz: sending the chunk moves: %s", pmemz_errormsg());
			send_err = r;
		} else if (r < 0) {
			nbdkit_error("pmemz: cannot send the chunk moves: %s", pmemz_errormsg());
			first = r;
		}
		for (size_t k = w; k < end; k++) {
			struct fold_entry *part = v + k * per;
			size_t m = MIN(per, n - k * per);

			if (b && b[k])
				r = finish(d, b[k], part, m, gen, per);
			else if (k == failed && send_err < 0)
				r = lost(d, part, m, gen); /* part of its frame may be out */
			else
				r = 1;
			if (r == 0)
				continue;
			for (size_t i = 0; i < m; i++)
				if (part[i].out) {
					pmemz_alloc_close(part[i].out);
					part[i].out = NULL;
				}
			if (first == 0)
				first = r < 0 ? r : -EAGAIN;
		}
	}
	free(b);
	return first;
}

/* Put what a failed fold did not move back in front of what was made since. */
static void requeue(struct disk *d, struct fold_entry *v, size_t n)
{
	if (grow(d, n) < 0) {
		/* their records map them still: the next open moves them */
		__atomic_store_n(&d->failed, -EIO, __ATOMIC_RELEASE);
		nbdkit_error("pmemz: out of memory keeping %zu chunk mappings", n);
		return;
	}
	memmove(d->fold.v + n, d->fold.v, d->fold.n * sizeof(*v));
	memcpy(d->fold.v, v, n * sizeof(*v));
	d->fold.n += n;
}

/*
 * The moved entries of v[0..n) published (after the base moved past their
 * records, so that a TRIM that frees a chunk's tag finds its record gone);
 * the others left at the front: their number.
 */
static size_t apply_moved(struct disk *d, struct fold_entry *v, size_t n)
{
	size_t left = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].out)
			apply(d, &v[i]);
		else
			v[left++] = v[i];
	return left;
}

/*
 * One line per fold (nbdkit -v): scripts/bench-disk reads the totals to
 * tell how many fresh chunks went to the daemon on their write path.
 */
static void fold_debug(struct disk *d, size_t moved, uint64_t ns)
{
	char what[80];

	(void)snprintf(what, sizeof(what), "fold: %zu chunk(s) moved to their tags in %.2f ms",
		       moved, (double)ns / 1e6);
	disk_fold_debug(d, what);
}

void disk_fold_debug(struct disk *d, const char *what)
{
	uint64_t taken, fallbacks;

	disk_ahead_counts(d, &taken, &fallbacks);
	nbdkit_debug("pmemz: %s; totals: %" PRIu64 " MOVE requests, %" PRIu64
		     " fresh chunks taken ahead, %" PRIu64 " fell back, %" PRIu64
		     " found the journal full",
		     what, __atomic_load_n(&d->fold.requests, __ATOMIC_RELAXED), taken, fallbacks,
		     __atomic_load_n(&d->fold.full, __ATOMIC_RELAXED));
}

int disk_fold(struct disk *d)
{
	size_t per;
	uint64_t want;
	int r = 0;

	pthread_mutex_lock(&d->fold.lock);
	want = d->fold.made;
	per = disk_journal_moves_max();
	while (r == 0 && d->fold.folded < want) {
		struct fold_entry *v;
		size_t n, left, moved = 0;
		uint64_t upto, cut, t0;
		int b = -1;

		if (d->fold.running) {
			pthread_cond_wait(&d->fold.done, &d->fold.lock);
			continue;
		}
		v = d->fold.v;
		n = d->fold.n;
		upto = d->fold.made;
		cut = d->fold.next; /* every record below it is one of v's */
		d->fold.v = NULL;
		d->fold.n = d->fold.cap = 0;
		d->fold.running = true;
		pthread_mutex_unlock(&d->fold.lock);

		t0 = pmemz_now_ns();
		r = run(d, v, n, per);
		for (size_t i = 0; i < n; i++)
			moved += v[i].out != NULL;
		/*
		 * The base past cut, after the unmoved ones' records are written
		 * again (none when all moved); none moved: the records all stand.
		 */
		if (moved || !n) {
			pthread_mutex_lock(&d->fold.lock);
			b = disk_journal_rewrite(d, v, n, cut);
			pthread_mutex_unlock(&d->fold.lock);
		}
		left = apply_moved(d, v, n);
		t0 = pmemz_now_ns() - t0;

		pthread_mutex_lock(&d->fold.lock);
		if (r == 0 && b < 0)
			r = b;
		d->fold.refused = r == -EDQUOT || (r == -ENOSPC && per == 1);
		d->fold.running = false;
		d->fold.folds++;
		d->fold.moves += moved;
		if (left)
			requeue(d, v, left);
		else
			__atomic_store_n(&d->fold.folded, upto, __ATOMIC_RELEASE);
		d->fold.last_error = r;
		free(v);
		fold_debug(d, moved, t0);
		pthread_cond_broadcast(&d->fold.done);
		if (r == -EAGAIN)
			r = 0; /* reconnected: go round again */
		/*
		 * A MOVE needs a free tag slot per move and one more (the
		 * daemon frees an emptied pool tag only as it decides): in a
		 * nearly full tag table, smaller requests still fit.
		 */
		if (r == -ENOSPC && per > 1) {
			per /= 2;
			r = 0;
		}
	}
	pthread_mutex_unlock(&d->fold.lock);
	return r;
}

/* Is a fold due (fold.lock held)?  Half the journal waits, or the disk went quiet. */
static bool fold_due(struct disk *d)
{
	if (!d->fold.n)
		return false;
	if (d->fold.next - d->fold.base >= d->fold.slots / 2)
		return true;
	if (d->fold.made != d->fold.idle_made) {
		d->fold.idle_made = d->fold.made;
		d->fold.idle_ticks = 0;
		return false;
	}
	return ++d->fold.idle_ticks >= DISK_FOLD_IDLE_TICKS;
}

static void *fold_thread(void *arg)
{
	struct disk *d = arg;
	bool said = false;

	pthread_mutex_lock(&d->fold.lock);
	while (!d->fold.stop) {
		struct timespec until;
		uint64_t ns;

		clock_gettime(CLOCK_REALTIME, &until);
		/* sync-interval=0 asks for no timed sync: mappings never needed one anyway */
		ns = (uint64_t)until.tv_nsec + (uint64_t)(d->cfg.sync_interval_ms
							      ? d->cfg.sync_interval_ms
							      : DISK_SYNC_INTERVAL_MS) *
						   1000000u;
		until.tv_sec += (time_t)(ns / 1000000000u);
		until.tv_nsec = (long)(ns % 1000000000u);
		(void)pthread_cond_timedwait(&d->fold.tick, &d->fold.lock, &until);
		if (d->fold.stop || !fold_due(d))
			continue;
		pthread_mutex_unlock(&d->fold.lock);
		int r = disk_fold(d);
		if (r < 0 && !said)
			nbdkit_error("pmemz: a fold failed; the journal keeps the mappings, and fresh "
				     "chunks fall back once it is full");
		said = r < 0;
		pthread_mutex_lock(&d->fold.lock);
		d->fold.idle_ticks = 0;
	}
	pthread_mutex_unlock(&d->fold.lock);
	return NULL;
}

int disk_fold_start(struct disk *d)
{
	int r;

	if (!disk_ahead_on(d) || !d->fold.slots)
		return 0;
	r = pthread_create(&d->fold.timer, NULL, fold_thread, d);
	if (r) {
		nbdkit_error("pmemz: cannot start the fold thread: %s", strerror(r));
		return -r;
	}
	d->fold.timer_on = true;
	return 0;
}

void disk_fold_stop(struct disk *d)
{
	pthread_mutex_lock(&d->fold.lock);
	d->fold.stop = true;
	pthread_cond_broadcast(&d->fold.tick);
	pthread_mutex_unlock(&d->fold.lock);
	if (d->fold.timer_on)
		pthread_join(d->fold.timer, NULL);
	d->fold.timer_on = false;
	if (disk_fold_pending(d) && disk_fold(d) < 0) {
		/* the journal maps them still: the next open moves them, and frees the rest */
		nbdkit_error("pmemz: %zu chunk(s) of the journal stay there until the next start",
			     d->fold.n);
		disk_ahead_keep_pools(d);
	}
	if (d->fold.folds)
		nbdkit_debug("pmemz: folds: %" PRIu64 ", %" PRIu64 " chunks moved in %" PRIu64
			     " MOVE requests; the journal was full %" PRIu64 " time(s)",
			     d->fold.folds, d->fold.moves, d->fold.requests, d->fold.full);
	free(d->fold.v);
	d->fold.v = NULL;
	d->fold.n = d->fold.cap = 0;
	pthread_mutex_destroy(&d->fold.lock);
	pthread_cond_destroy(&d->fold.done);
	pthread_cond_destroy(&d->fold.tick);
	d->fold.initialised = false;
}
