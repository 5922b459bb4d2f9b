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
 * A fold runs when half the journal waits (the journal wakes the thread),
 * when the disk made no fresh chunk for DISK_FOLD_IDLE_TICKS sync
 * intervals, before a folded chunk is given back (TRIM, ZERO: disk-io.c),
 * and at close, so that a disk at rest is chunk tags alone.  What a crash
 * leaves at any point: the record still maps the chunk (its extent still
 * in the pool), or the chunk's tag does (the record then names an extent
 * no pool holds, and counts for nothing).
 *
 * Only one fold runs at a time (disk_journal_take); callers that arrive
 * meanwhile wait for it, and the next one takes everything made since.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "util.h"
#include "libpmemzclient.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

struct disk_fold {
	struct disk *d;
	struct disk_journal *j;
	pthread_t thread;
	bool running; /* the thread */
	/* for the debug lines (atomic: the debug line reads them from any thread) */
	uint64_t folds, moves, requests;
};

int disk_fold_new(struct disk *d, struct disk_fold **out)
{
	struct disk_fold *f = calloc(1, sizeof(*f));

	if (!f) {
		nbdkit_error("pmemz: out of memory");
		return -ENOMEM;
	}
	f->d = d;
	f->j = d->journal;
	*out = f;
	return 0;
}

/* Moved: the chunk's tag is its mapping now. */
static void apply(struct disk_fold *f, struct journal_entry *e)
{
	disk_chunk_tagged(f->d, e->idx, e->out);
	e->out = NULL;
	disk_ahead_moved(f->d->ahead, &e->e);
}

/* One MOVE request of entries v[0..n), submitted; *out: the batch. */
static int submit(struct disk_fold *f, struct journal_entry *v, size_t n, struct pmemz_batch **out)
{
	struct pmemz_batch *b = NULL;
	int r = pmemz_batch_new(f->d->r, &b);

	for (size_t i = 0; r == 0 && i < n; i++) {
		char tag[PMEMZ_DISK_TAG_MAX];

		(void)pmemz_disk_chunk_tag(tag, sizeof(tag), f->d->cfg.name, v[i].idx);
		r = pmemz_batch_move(b, disk_ahead_pool_alloc(v[i].e.pool), v[i].e.addr, tag,
				     &v[i].out);
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
static int settle(struct disk *d, struct journal_entry *v, size_t n)
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
static int lost(struct disk *d, struct journal_entry *v, size_t n, uint64_t gen)
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
static int finish(struct disk *d, struct pmemz_batch *b, struct journal_entry *v, size_t n,
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

/* Requests k in [w, end) of a wave sent, into b[k]; the first that failed, or end. */
static size_t send_wave(struct disk_fold *f, struct journal_entry *v, size_t n, size_t per,
			size_t w, size_t end, struct pmemz_batch **b, int *first, int *send_err)
{
	int r = 0;
	size_t k;

	for (k = w; b && *first == 0 && k < end; k++) {
		r = submit(f, v + k * per, MIN(per, n - k * per), &b[k]);
		if (r < 0)
			break;
		__atomic_add_fetch(&f->requests, 1, __ATOMIC_RELAXED);
	}
	if (r < 0 && disk_conn_lost(r)) {
		nbdkit_debug("pmemz: sending the chunk moves: %s", pmemz_errormsg());
		*send_err = r;
	} else if (r < 0) {
		nbdkit_error("pmemz: cannot send the chunk moves: %s", pmemz_errormsg());
		*first = r;
	}
	return r < 0 ? k : end;
}

/*
 * Move every entry of v[0..n), per of them in each request; a moved one
 * gets its out.  Requests of a full size all go out before any answer is
 * awaited (one round trip); smaller ones (a nearly full tag table) one
 * after the other, each in a loop iteration of the daemon's own, which
 * gives back the slots the previous one freed.
 */
static int run(struct disk_fold *f, struct journal_entry *v, size_t n, size_t per)
{
	struct disk *d = f->d;
	size_t nb = (n + per - 1) / per;
	size_t wave = per == PMEMZ_BATCH_MOVES_MAX ? nb : 1;
	struct pmemz_batch **b = calloc(nb ? nb : 1, sizeof(*b));
	uint64_t gen = disk_gen(d);
	int first = b ? 0 : -ENOMEM;

	for (size_t w = 0; w < nb; w += wave) {
		size_t end = MIN(nb, w + wave);
		int send_err = 0;
		size_t failed = send_wave(f, v, n, per, w, end, b, &first, &send_err);

		for (size_t k = w; k < end; k++) {
			struct journal_entry *part = v + k * per;
			size_t m = MIN(per, n - k * per);
			int r;

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

/*
 * The moved entries of v[0..n) published (after the base moved past their
 * records, so that a TRIM that frees a chunk's tag finds its record gone);
 * the others left at the front: their number.
 */
static size_t apply_moved(struct disk_fold *f, struct journal_entry *v, size_t n)
{
	size_t left = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].out)
			apply(f, &v[i]);
		else
			v[left++] = v[i];
	return left;
}

/* One fold of what jf took out of the journal: 0, -EAGAIN (go round again), or -errno. */
static int fold_once(struct disk_fold *f, struct journal_fold *jf, size_t per)
{
	size_t left, moved = 0;
	uint64_t t0 = pmemz_now_ns();
	int r, b = -1;

	r = run(f, jf->v, jf->n, per);
	for (size_t i = 0; i < jf->n; i++)
		moved += jf->v[i].out != NULL;
	/*
	 * The base past cut, after the unmoved ones' records are written
	 * again (none when all moved); none moved: the records all stand.
	 */
	if (moved || !jf->n)
		b = disk_journal_rewrite(f->j, jf);
	left = apply_moved(f, jf->v, jf->n);
	if (r == 0 && b < 0)
		r = b;
	__atomic_add_fetch(&f->folds, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&f->moves, moved, __ATOMIC_RELAXED);
	disk_journal_settle(f->j, jf, left, r == -EDQUOT || (r == -ENOSPC && per == 1));
	nbdkit_debug("pmemz: fold: %zu chunk(s) moved to their tags in %.2f ms", moved,
		     (double)(pmemz_now_ns() - t0) / 1e6);
	return r;
}

int disk_fold(struct disk_fold *f)
{
	size_t per = PMEMZ_BATCH_MOVES_MAX;
	uint64_t want = disk_journal_made(f->j);
	struct journal_fold jf;
	int r = 0;

	while (r == 0 && disk_journal_take(f->j, want, &jf)) {
		r = fold_once(f, &jf, per);
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
	return r;
}

static void *fold_thread(void *arg)
{
	struct disk_fold *f = arg;
	/* sync-interval=0 asks for no timed sync: mappings never needed one anyway */
	unsigned ms =
	    f->d->cfg.sync_interval_ms ? f->d->cfg.sync_interval_ms : DISK_SYNC_INTERVAL_MS;
	uint64_t idle_made = 0;
	unsigned idle_ticks = 0;
	bool said = false;
	int due;

	while ((due = disk_journal_wait(f->j, ms)) >= 0) {
		uint64_t made = disk_journal_made(f->j);

		if (!due && made != idle_made) {
			idle_made = made;
			idle_ticks = 0;
			continue;
		}
		if (!due && (!disk_journal_pending(f->j) || ++idle_ticks < DISK_FOLD_IDLE_TICKS))
			continue;
		int r = disk_fold(f);
		if (r < 0 && !said)
			nbdkit_error(
			    "pmemz: a fold failed; the journal keeps the mappings, and fresh "
			    "chunks fall back once it is full");
		said = r < 0;
		idle_ticks = 0;
	}
	return NULL;
}

int disk_fold_start(struct disk_fold *f)
{
	int r;

	if (!disk_ahead_on(f->d->ahead) || !disk_journal_on(f->j))
		return 0;
	r = pthread_create(&f->thread, NULL, fold_thread, f);
	if (r) {
		nbdkit_error("pmemz: cannot start the fold thread: %s", strerror(r));
		return -r;
	}
	f->running = true;
	return 0;
}

void disk_fold_free(struct disk_fold *f)
{
	if (!f)
		return;
	disk_journal_stop(f->j);
	if (f->running)
		pthread_join(f->thread, NULL);
	f->running = false;
	if (disk_journal_pending(f->j) && disk_fold(f) < 0)
		/* the journal maps them still: the next open moves them, and frees the rest */
		nbdkit_error("pmemz: chunks of the journal stay there until the next start");
	/* scripts/bench-disk reads it: how many fresh chunks missed the journal */
	if (disk_journal_on(f->j))
		nbdkit_debug("pmemz: folds: %" PRIu64 ", %" PRIu64 " chunks moved in %" PRIu64
			     " MOVE requests; %" PRIu64 " fresh chunk(s) found the journal full",
			     f->folds, f->moves, f->requests, disk_journal_full(f->j));
	free(f);
}
