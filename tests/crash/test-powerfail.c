/* SPDX-License-Identifier: MIT */
/*
 * Simulated power failure: invariants I1, I2 and I5 of docs/DESIGN.md.
 *
 * The storage core (pmemzd_storage) runs in-process on a small file region
 * in /dev/shm with pmsim (pmsim.h) as the tracer of its one store module:
 * every store, flush and drain is seen, and a shadow durable image is kept.
 * A deterministic workload runs: format, zeroer batches, leases, client
 * writes (persisted by the client, or flushed by the daemon at COMMIT, or by
 * a FLUSH call), commits, frees, unleases of scribbled leases, each main-loop
 * iteration ended by region_sync() (group commit), as the daemon does.
 *
 * A first run counts the drains.  Then for every drain N the workload is run
 * again from the same start and power is cut at the N-th drain: several
 * media images are built (the durable image plus each pending 8-byte unit
 * kept or dropped, per seed), and each is recovered (region_open) and
 * checked:
 *   - recovery accepts the image, the volatile index agrees with the media
 *     (region_index_verify) and nothing is LEASED;
 *   - the media after recovery, read raw: both headers valid, every record
 *     valid, no LEASED record, no WRITTEN slot, every COMMITTED record names
 *     a VALID slot, every ZEROED extent reads zero (I1), I3 by construction;
 *     and check_image(CHECK_RECOVERED) is clean;
 *   - the commit oracle (I2): every tag whose COMMIT returned (region_sync
 *     after region_commit completed) and that was not being freed is there,
 *     with exactly its extents and its data; a tag whose free returned is
 *     gone; a tag in flight may be there, but then intact; no other tag.
 * Recovery itself is crashed too: the recovery of a crashed image is traced,
 * cut at each of its drains, and the result recovered again and checked.
 * During the runs, every lease is checked at the moment it would be handed
 * out: its extents must read zero on the durable media, whatever the cache
 * holds (I1, I5).
 *
 * Usage: test-powerfail [--long SECONDS] [--seed W] [--steps N] [--images K]
 *                       [--crash N] [--image-seed S] [--concurrent]
 *                       [--no-recovery-crash] [--recovery-images K]
 *                       [--recovery-crash D] [--recovery-seed S] [-v]
 * A violation prints the options that reproduce it.
 * Prints one summary line; exit 0 when no violation was found, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "media.h"
#include "log.h"
#include "pmsim.h"
#include "region-internal.h"
#include "region.h"

#include "check.h"

#define KiB 1024ull
#define EXTENT (64 * KiB)
#define N_EXTENTS 48
#define REGION_SIZE ((1 + N_EXTENTS) * EXTENT) /* metadata fits in the first 64 KiB */
#define UID 1000
#define MAX_LEASES 6
#define MAX_ITER_ITEMS 64
#define MAX_PRINTED 25

/* ---- configuration and totals ---- */

struct opts {
	uint64_t wseed;
	unsigned steps;
	unsigned images; /* per crash point: seeds 0 (all dropped), 1 (all kept), then random */
	uint64_t only_crash;
	uint64_t only_image_seed;
	bool has_only_image_seed;
	bool concurrent;
	bool recovery_crash;
	unsigned recovery_images; /* random images per recovery crash point (plus seeds 0, 1) */
	uint64_t only_recovery_crash, only_recovery_seed;
	bool has_only_recovery_seed;
	double long_secs;
	int verbose;
};

static struct opts opt = {
    .wseed = 1, .steps = 100, .images = 4, .recovery_crash = true, .recovery_images = 2,
};

static struct {
	uint64_t runs, crash_points, images, recovery_crash_points, violations, lease_checks;
	uint64_t nondeterministic, skipped_points, max_pending, max_pending_bytes;
	uint64_t handback_fences; /* zeroer fences beyond one per batch: hand-backs */
	uint64_t moves, moves_shared; /* MOVEs run; of them, from a source already moving */
} tot;

static struct pmsim *sim;
static char work_path[128], chk_path[128];
static struct region_conf work_rc, check_rc;
static uint8_t *img_buf, *img_buf2;
static pid_t main_tid;
static char label[256]; /* the crash being checked, as a command line */

static void violation(const char *fmt, ...) _printf_(1, 2);
static void violation(const char *fmt, ...)
{
	va_list ap;

	tot.violations++;
	if (tot.violations > MAX_PRINTED) {
		if (tot.violations == MAX_PRINTED + 1)
			fprintf(stderr, "powerfail: more violations; not printing them\n");
		return;
	}
	fprintf(stderr, "VIOLATION [%s]: ", label);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void die(const char *fmt, ...) _printf_(1, 2);
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "powerfail: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The client's data: a word per 8 bytes from the tag's seed, the extent and the offset. */
static uint64_t pattern_word(uint64_t pat, uint64_t ext, uint64_t off)
{
	uint64_t x = pat ^ (ext * 0x100000001b3ull) ^ (off >> 3) * 0x9e3779b97f4a7c15ull;

	return splitmix(&x) | 1; /* never zero: a dropped word shows */
}

static void fill_pattern(uint8_t *buf, uint64_t pat, uint64_t ext, uint64_t off, uint64_t len)
{
	for (uint64_t o = 0; o < len; o += 8) {
		uint64_t w = pattern_word(pat, ext, off + o);
		memcpy(buf + o, &w, 8);
	}
}

/* ---- the workload and its oracle ---- */

struct olease {
	struct run *runs;
	size_t n_runs;
	uint64_t ext[8];
	size_t n_ext;
	bool returned;	/* region_sync after region_lease completed: the client has it */
	bool scribbled; /* garbage written: never committed, only released */
};

struct otag {
	char name[24];
	uint64_t ext[8]; /* a MOVE's source: the extents it keeps once the move is done */
	size_t n_ext;
	uint64_t pat, wr_off, wr_len;
	bool commit_returned, free_called, free_returned;
	bool moving; /* the source of a MOVE of the iteration in flight */
};

/* One MOVE request: extents of tag p to the new tags c[] (made by op_move). */
struct omove {
	size_t p, c[4], n;
	uint64_t old_ext[8]; /* p's extents before */
	size_t old_n;
	bool returned;
};
#define MAX_MOVES 512

struct wl {
	struct region *r;
	struct pstore *ps;
	uint64_t rng;
	struct olease leases[MAX_LEASES];
	size_t n_leases;
	struct otag *tags;
	size_t n_tags, cap_tags;
	size_t iter_tags[MAX_ITER_ITEMS];
	size_t n_iter_tags;
	struct omove moves[MAX_MOVES];
	size_t n_moves, first_iter_move; /* the iteration's moves: [first_iter_move, n_moves) */
	bool stop; /* power was cut */
	bool in_check;
	unsigned zero_calls; /* every other zeroing round runs urgent (hand-back) */
};

static uint64_t rnd(struct wl *w, uint64_t n)
{
	return n ? splitmix(&w->rng) % n : 0;
}

static uint64_t ext_off(struct wl *w, uint64_t i)
{
	return (uint64_t)(region_extent_addr(w->r, i) - w->r->base);
}

static void wl_free(struct wl *w)
{
	for (size_t i = 0; i < w->n_leases; i++)
		free(w->leases[i].runs);
	free(w->tags);
	memset(w, 0, sizeof(*w));
}

static void drop_lease(struct wl *w, size_t k)
{
	free(w->leases[k].runs);
	w->leases[k] = w->leases[--w->n_leases];
}

static bool cut(struct wl *w)
{
	if (pmsim_cut(sim))
		w->stop = true;
	return w->stop;
}

/* End of a main-loop iteration: group commit, then the replies "go out". */
static void sync_iter(struct wl *w)
{
	(void)region_sync(w->r);
	if (cut(w))
		return;
	for (size_t k = 0; k < w->n_iter_tags; k++) {
		struct otag *t = &w->tags[w->iter_tags[k]];
		t->commit_returned = true;
		if (t->free_called)
			t->free_returned = true;
	}
	w->n_iter_tags = 0;
	for (size_t k = w->first_iter_move; k < w->n_moves; k++) {
		struct omove *m = &w->moves[k];
		struct otag *p = &w->tags[m->p];

		m->returned = true;
		p->moving = false;
		if (p->n_ext == 0) /* removed by the move */
			p->free_called = p->free_returned = true;
	}
	w->first_iter_move = w->n_moves;
	for (size_t k = 0; k < w->n_leases; k++) {
		struct olease *l = &w->leases[k];
		if (l->returned)
			continue;
		l->returned = true;
		/* I1: what ALLOCATE hands out reads zero after a power failure from now on. */
		for (size_t j = 0; j < l->n_ext; j++) {
			tot.lease_checks++;
			if (!pmsim_surely_zero(sim, ext_off(w, l->ext[j]), EXTENT))
				violation("I1: extent %" PRIu64 " is leased but its zeroes are not "
					  "durable",
					  l->ext[j]);
		}
	}
	if (region_index_verify(w->r) < 0)
		violation("region_index_verify failed after region_sync");
}

static void iter_add_tag(struct wl *w, size_t idx)
{
	if (w->n_iter_tags == MAX_ITER_ITEMS)
		die("too many operations in one iteration");
	w->iter_tags[w->n_iter_tags++] = idx;
}

static void op_lease(struct wl *w)
{
	struct olease *l;
	struct run *runs = NULL;
	size_t n_runs = 0;
	uint64_t n = 1 + rnd(w, 4);
	int ret;

	if (w->n_leases == MAX_LEASES)
		return;
	ret = region_lease(w->r, n, &runs, &n_runs);
	if (ret == -EAGAIN || ret == -ENOSPC)
		return;
	if (ret < 0)
		die("region_lease: %s", strerror(-ret));
	l = &w->leases[w->n_leases++];
	memset(l, 0, sizeof(*l));
	l->runs = runs;
	l->n_runs = n_runs;
	for (size_t k = 0; k < n_runs; k++)
		for (uint64_t i = runs[k].first; i < runs[k].first + runs[k].count; i++)
			l->ext[l->n_ext++] = i;
}

/* A lease the client holds (returned), or -1. */
static ssize_t pick_lease(struct wl *w, bool clean)
{
	size_t cand[MAX_LEASES], n = 0;

	for (size_t k = 0; k < w->n_leases; k++)
		if (w->leases[k].returned && (!clean || !w->leases[k].scribbled))
			cand[n++] = k;
	return n ? (ssize_t)cand[rnd(w, n)] : -1;
}

enum wmode { WM_PERSIST, WM_COMMIT_FLUSH, WM_FLUSH_CALL, WM_NMODES };

/* The client writes its pattern into a lease and commits it; false when power was cut. */
static bool op_commit(struct wl *w, bool and_free)
{
	static uint8_t buf[EXTENT];
	ssize_t k = pick_lease(w, true);
	struct olease *l;
	struct otag *t;
	enum wmode mode = (enum wmode)rnd(w, WM_NMODES);
	bool flush_data;
	int ret;

	if (k < 0)
		return true;
	l = &w->leases[k];
	if (w->n_tags == w->cap_tags) {
		w->cap_tags = w->cap_tags ? 2 * w->cap_tags : 64;
		w->tags = realloc(w->tags, w->cap_tags * sizeof(*w->tags));
		if (!w->tags)
			die("out of memory");
	}
	t = &w->tags[w->n_tags];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "t%zu", w->n_tags);
	t->pat = splitmix(&w->rng);
	t->wr_off = rnd(w, EXTENT / 16) * 8; /* within the first half */
	t->wr_len = 8 + rnd(w, (EXTENT - t->wr_off) / 8) * 8;
	memcpy(t->ext, l->ext, sizeof(t->ext));
	t->n_ext = l->n_ext;

	for (size_t j = 0; j < l->n_ext; j++) {
		uint8_t *dst = region_extent_addr(w->r, l->ext[j]) + t->wr_off;

		fill_pattern(buf, t->pat, l->ext[j], t->wr_off, t->wr_len);
		if (mode == WM_PERSIST) {
			/* pmem2_memcpy + persist in the client: flushed as written */
			pstore_memcpy(w->ps, dst, buf, t->wr_len);
		} else {
			/* plain stores through the client's mapping, not flushed yet */
			memcpy(dst, buf, t->wr_len);
			pmsim_note_store(sim, dst, t->wr_len);
			if (mode == WM_FLUSH_CALL &&
			    region_flush(w->r, (uint64_t)(dst - w->r->base), t->wr_len) < 0)
				die("region_flush failed");
		}
	}
	if (mode == WM_PERSIST) {
		pstore_drain(w->ps);
		if (cut(w))
			return false;
		flush_data = rnd(w, 2);
	} else if (mode == WM_FLUSH_CALL) {
		/* FLUSH's reply goes out after its iteration's group commit. */
		sync_iter(w);
		if (w->stop)
			return false;
		flush_data = false;
	} else {
		flush_data = true;
	}
	ret = region_commit(w->r, l->runs, l->n_runs, t->name, UID, flush_data);
	if (ret < 0)
		die("region_commit %s: %s", t->name, strerror(-ret));
	w->n_tags++;
	iter_add_tag(w, w->n_tags - 1);
	drop_lease(w, (size_t)k);

	if (and_free) {
		uint32_t id;

		if (region_tag_lookup(w->r, t->name, UID, &id) < 0 ||
		    region_tag_free(w->r, id, NULL) < 0)
			die("freeing %s in the iteration of its commit failed", t->name);
		t->free_called = true;
	}
	return true;
}

static struct otag *new_otag(struct wl *w)
{
	if (w->n_tags == w->cap_tags) {
		w->cap_tags = w->cap_tags ? 2 * w->cap_tags : 64;
		w->tags = realloc(w->tags, w->cap_tags * sizeof(*w->tags));
		if (!w->tags)
			die("out of memory");
	}
	memset(&w->tags[w->n_tags], 0, sizeof(w->tags[0]));
	return &w->tags[w->n_tags];
}

/*
 * MOVE 1..4 extents of a committed tag (not in flight) to new tags, as the
 * nbdkit disk does at a sync point; a tag left empty is removed.
 */
static void op_move(struct wl *w)
{
	size_t cand[256], n = 0, pi;
	struct region_move mv[4];
	uint32_t ids[4];
	struct omove *m;
	struct otag *p;
	int ret;

	/* A source of a MOVE of this iteration too: each MOVE is all or nothing on its own. */
	for (size_t i = 0; i < w->n_tags && n < 256; i++)
		if (w->tags[i].commit_returned && !w->tags[i].free_called && w->tags[i].n_ext)
			cand[n++] = i;
	if (!n || w->n_moves == MAX_MOVES)
		return;
	pi = cand[rnd(w, n)];
	/* Half the time, the source of a MOVE of this iteration (the nbdkit disk's pool). */
	if (rnd(w, 2))
		for (size_t k = 0; k < n; k++)
			if (w->tags[cand[k]].moving) {
				pi = cand[k];
				break;
			}
	m = &w->moves[w->n_moves];
	memset(m, 0, sizeof(*m));
	m->p = pi;
	m->n = 1 + rnd(w, MIN(w->tags[pi].n_ext, (size_t)4));
	m->old_n = w->tags[pi].n_ext;
	memcpy(m->old_ext, w->tags[pi].ext, sizeof(m->old_ext));
	for (size_t k = 0; k < m->n; k++) {
		struct otag *c = new_otag(w);

		p = &w->tags[pi];
		*c = *p;
		c->commit_returned = c->free_called = c->free_returned = c->moving = false;
		snprintf(c->name, sizeof(c->name), "m%zu", w->n_tags);
		c->ext[0] = p->ext[p->n_ext - 1 - k]; /* the last ones */
		c->n_ext = 1;
		m->c[k] = w->n_tags++;
	}
	for (size_t k = 0; k < m->n; k++) /* w->tags may have moved */
		mv[k] = (struct region_move){w->tags[pi].name, w->tags[m->c[k]].ext[0],
					     w->tags[m->c[k]].name};
	ret = region_move(w->r, mv, m->n, UID, ids, NULL);
	if (ret == -ENOSPC) {
		w->n_tags -= m->n;
		return;
	}
	if (ret < 0)
		die("region_move from %s: %s", w->tags[pi].name, strerror(-ret));
	p = &w->tags[pi];
	p->n_ext -= m->n;
	tot.moves++;
	tot.moves_shared += p->moving;
	p->moving = true;
	for (size_t k = 0; k < m->n; k++)
		iter_add_tag(w, m->c[k]);
	w->n_moves++;
}

static void op_free(struct wl *w)
{
	size_t cand[256], n = 0;
	struct otag *t;
	uint32_t id;
	int ret;

	/* A tag taking part in a MOVE of this iteration is busy (-EBUSY). */
	for (size_t i = 0; i < w->n_tags && n < 256; i++)
		if (w->tags[i].commit_returned && !w->tags[i].free_called && !w->tags[i].moving)
			cand[n++] = i;
	if (!n)
		return;
	t = &w->tags[cand[rnd(w, n)]];
	ret = region_tag_lookup(w->r, t->name, UID, &id);
	if (ret < 0) {
		violation("committed tag %s not found by region_tag_lookup: %s", t->name,
			  strerror(-ret));
		return;
	}
	ret = region_tag_free(w->r, id, NULL);
	if (ret < 0)
		die("region_tag_free %s: %s", t->name, strerror(-ret));
	t->free_called = true;
	iter_add_tag(w, (size_t)(t - w->tags));
}

/*
 * The client writes garbage into a lease: plain stores (left in the cache)
 * or persisted, over a random part.  release: then it frees the lease (or
 * disconnects); else it keeps it (and never commits it).
 */
static bool op_scribble(struct wl *w, bool release)
{
	static uint8_t buf[EXTENT];
	ssize_t k = pick_lease(w, false);
	struct olease *l;
	bool persist = rnd(w, 2);

	if (k < 0)
		return true;
	l = &w->leases[k];
	for (size_t j = 0; j < l->n_ext; j++) {
		uint64_t off = rnd(w, EXTENT / 8) * 8, len = 8 + rnd(w, (EXTENT - off) / 8) * 8;
		uint8_t *dst = region_extent_addr(w->r, l->ext[j]) + off;

		if (rnd(w, 3) == 0)
			continue;
		memset(buf, 0xd0 + (int)(j & 0xf), len);
		if (persist) {
			pstore_memcpy(w->ps, dst, buf, len);
		} else {
			memcpy(dst, buf, len);
			pmsim_note_store(sim, dst, len);
		}
		l->scribbled = true;
	}
	if (persist) {
		pstore_drain(w->ps);
		if (cut(w))
			return false;
	}
	if (release) {
		region_unlease(w->r, l->runs, l->n_runs);
		drop_lease(w, (size_t)k);
	}
	return true;
}

/* Wait until `want` batches have signalled completion on the zeroer's eventfd. */
static void wait_batches(struct wl *w, unsigned want)
{
	int fd = region_zeroer_fd(w->r);
	uint64_t got = 0, deadline = pmemz_now_ns() + 30ull * 1000000000ull;

	while (got < want) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t v;

		if (poll(&p, 1, 100) > 0 && read(fd, &v, sizeof(v)) == sizeof(v))
			got += v;
		if (pmemz_now_ns() > deadline)
			die("zeroer batches did not complete within 30 s");
	}
}

/*
 * Background zeroing, in lock step so the drain sequence is the same in
 * every run: the zeroer is let go only while the main loop waits for it,
 * and throttled (rate 1 byte/s: it holds its next batch without storing)
 * while the main loop collects and syncs.  The concurrent mode instead
 * lets it run free all the time and just collects what is done.
 *
 * Every other round runs urgent, as while an allocation waits: the worker
 * fences and hands back each extent on its own, so a cut falls
 * between an extent's fence and its ZEROED state, and in the concurrent
 * mode the main loop collects extents out of batches still running.
 */
static void op_zero(struct wl *w, bool until_done)
{
	bool urgent = w->zero_calls++ % 2 == 1;

	if (opt.concurrent) {
		struct pollfd p = {.fd = region_zeroer_fd(w->r), .events = POLLIN};

		region_zeroer_set_urgent(w->r, urgent);
		do {
			if (poll(&p, 1, until_done ? 50 : 0) > 0 && region_zeroer_collect(w->r))
				sync_iter(w);
			if (w->stop)
				return;
		} while (until_done && (w->r->n_ready || w->r->zeroer_outstanding));
		return;
	}
	while (w->r->zeroer_outstanding) {
		/*
		 * Urgent: one signal per extent (a hand-back each, the last
		 * one's the batch's own), the rate limit lifted by urgency.
		 */
		if (urgent) {
			region_zeroer_set_urgent(w->r, true);
			wait_batches(w, (unsigned)w->r->n_in_batch);
			region_zeroer_set_urgent(w->r, false);
		} else {
			region_zeroer_set_rate(w->r, 0);
			wait_batches(w, w->r->zeroer_outstanding);
			region_zeroer_set_rate(w->r, 1);
		}
		if (cut(w))
			return;
		(void)region_zeroer_collect(w->r); /* stores ZEROED, submits the next batches */
		sync_iter(w);
		if (w->stop || !until_done)
			return;
	}
}

/*
 * One workload run from a fresh file.  Power is cut at drain cut_at (0: never).
 * On return *w holds the oracle; the region is closed (abandoned when cut).
 */
static void run_workload(struct wl *w, uint64_t wseed, uint64_t cut_at, uint64_t *fplog,
			 size_t fpcap)
{
	int ret;

	memset(w, 0, sizeof(*w));
	w->rng = wseed * 0x9e3779b97f4a7c15ull + 12345;
	tot.runs++;
	if (unlink(work_path) < 0 && errno != ENOENT)
		die("unlink %s: %m", work_path);
	pmsim_reset(sim, NULL);
	pmsim_set_main(sim, main_tid);
	pmsim_arm(sim, cut_at, 0);
	pmsim_log_fingerprints(sim, fplog, fpcap);
	pmsim_trace_next_opens(sim);
	ret = region_open(&work_rc, &w->r); /* format: traced too */
	pmsim_trace_next_opens(NULL);
	if (ret < 0)
		die("region_open of a fresh region failed: %s", strerror(-ret));
	w->ps = region_get_pstore(w->r);

	op_zero(w, true);
	for (unsigned step = 0; step < opt.steps && !w->stop; step++) {
		unsigned n_ops = 1 + (unsigned)rnd(w, 3);

		for (unsigned o = 0; o < n_ops && !w->stop; o++) {
			switch (rnd(w, 19)) {
			case 0 ... 3:
				op_lease(w);
				break;
			case 4 ... 7:
				(void)op_commit(w, false);
				break;
			case 8:
				(void)op_commit(w, true);
				break;
			case 9 ... 11:
				op_free(w);
				break;
			case 12 ... 13:
				(void)op_scribble(w, true);
				break;
			case 14:
				(void)op_scribble(w, rnd(w, 2));
				break;
			case 15:
				op_zero(w, false);
				break;
			case 16 ... 18:
				op_move(w);
				break;
			}
		}
		if (!w->stop)
			sync_iter(w);
		if (!w->stop && (step % 6 == 5 || opt.concurrent))
			op_zero(w, step % 6 == 5);
	}
	if (!w->stop)
		op_zero(w, true);
	if (!w->stop) {
		struct region_stats st;

		region_get_stats(w->r, &st);
		tot.handback_fences += st.zero_fences - st.zero_batches;
	}
	if (w->stop || pmsim_cut(sim)) {
		w->stop = true;
		region_close_abandon(w->r);
	} else {
		region_close(w->r); /* its drains are crash points too */
		if (pmsim_cut(sim))
			w->stop = true;
	}
	w->r = NULL;
	w->ps = NULL;
	pmsim_log_fingerprints(sim, NULL, 0);
}

/* ---- checks ---- */

/*
 * The check file stays mapped here: images are copied in and read back
 * through this mapping (region_open() maps the same pages).
 */
static uint8_t *chk_map;

static void chk_map_init(void)
{
	int fd = open(chk_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || ftruncate(fd, (off_t)REGION_SIZE) < 0)
		die("create %s: %m", chk_path);
	chk_map = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (chk_map == MAP_FAILED)
		die("mmap %s: %m", chk_path);
	close(fd);
}

static void write_image(const void *img)
{
	memcpy(chk_map, img, REGION_SIZE);
}

static size_t first_nonzero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return i;
	return SIZE_MAX;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Is the tag's data (pattern in its written range, zero elsewhere) intact in img? */
static bool tag_data_ok(const uint8_t *img, const struct layout_header *h, const struct otag *t,
			const uint64_t *ext, size_t n_ext, char *why, size_t why_len)
{
	for (size_t j = 0; j < n_ext; j++) {
		const uint8_t *e = img + h->data_off + ext[j] * h->extent_size;
		size_t z;

		if ((z = first_nonzero(e, t->wr_off)) != SIZE_MAX ||
		    (z = first_nonzero(e + t->wr_off + t->wr_len,
				       EXTENT - t->wr_off - t->wr_len)) != SIZE_MAX) {
			snprintf(why, why_len, "extent %" PRIu64 ": stale byte outside the data",
				 ext[j]);
			return false;
		}
		for (uint64_t o = 0; o < t->wr_len; o += 8) {
			uint64_t v;
			memcpy(&v, e + t->wr_off + o, 8);
			if (v != pattern_word(t->pat, ext[j], t->wr_off + o)) {
				snprintf(why, why_len,
					 "extent %" PRIu64 " offset %" PRIu64 ": 0x%016" PRIx64
					 " instead of the data",
					 ext[j], t->wr_off + o, v);
				return false;
			}
		}
	}
	return true;
}

/* What the oracle expects of each tag once the moves in the image are known. */
struct expect {
	const uint64_t *ext; /* its extents */
	size_t n_ext;
	bool must, may; /* must be there; may be there */
	uint64_t buf[8]; /* a source's extents, worked out */
};

static bool slot_named(const struct layout_tag *slots, uint64_t tag_count, const char *name)
{
	for (uint32_t id = 1; id <= tag_count; id++)
		if (slots[id - 1].state == TAG_VALID &&
		    strncmp(slots[id - 1].name, name, sizeof(slots[id - 1].name)) == 0)
			return true;
	return false;
}

/* Did move k happen (all its new tags there, or gone since)?  Violations if partly. */
static bool move_applied(const struct layout_tag *slots, uint64_t tag_count, const struct wl *w,
			 const struct omove *m)
{
	size_t there = 0, later = 0;

	/*
	 * A new tag freed since, or emptied by a later MOVE (gone if that one
	 * went forward, there if not): its own move returned.
	 */
	for (size_t j = 0; j < m->n; j++) {
		const struct otag *c = &w->tags[m->c[j]];
		bool in = slot_named(slots, tag_count, c->name);

		there += in;
		later += !in && (c->free_called || c->n_ext == 0);
	}
	if (there && there + later < m->n)
		violation("MOVE from %s: %zu of its %zu new tags after recovery (%zu freed since)",
			  w->tags[m->p].name, there, m->n, later);
	if (!there && !later && m->returned)
		violation("MOVE from %s is lost: it returned before the cut", w->tags[m->p].name);
	return there + later > 0;
}

/*
 * A source with moves in flight (several MOVEs of one iteration may take
 * from it, each all or nothing on its own): what it had before the first,
 * less what the moves that happened took.
 */
static void source_expect(const struct wl *w, size_t first, const bool *applied,
			  struct expect *ex)
{
	const struct omove *m0 = &w->moves[first];
	struct expect *e = &ex[m0->p];
	size_t n = m0->old_n;

	memcpy(e->buf, m0->old_ext, sizeof(e->buf));
	for (size_t k = first; k < w->n_moves; k++) {
		const struct omove *m = &w->moves[k];

		if (m->p != m0->p || m->returned || !applied[k])
			continue;
		for (size_t j = 0; j < m->n; j++)
			for (size_t i = 0; i < n; i++)
				if (e->buf[i] == w->tags[m->c[j]].ext[0]) {
					e->buf[i] = e->buf[--n];
					break;
				}
	}
	e->ext = e->buf;
	e->n_ext = n;
	e->must = e->may = n > 0; /* emptied: removed */
}

/*
 * A MOVE is all or nothing: a move in flight shows all its new tags or
 * none; a move that returned shows all of them; its source keeps what
 * the moves that happened left it (removed when emptied).
 */
static void move_expect(const struct layout_tag *slots, uint64_t tag_count, const struct wl *w,
			struct expect *ex)
{
	static bool applied[MAX_MOVES], done[MAX_MOVES];

	for (size_t ti = 0; ti < w->n_tags; ti++) {
		const struct otag *t = &w->tags[ti];

		ex[ti] = (struct expect){.ext = t->ext,
					 .n_ext = t->n_ext,
					 .must = t->commit_returned && !t->free_called,
					 .may = !t->free_returned};
	}
	for (size_t k = 0; k < w->n_moves; k++) {
		const struct omove *m = &w->moves[k];

		applied[k] = move_applied(slots, tag_count, w, m);
		done[k] = false;
		if (!applied[k] && !m->returned)
			for (size_t j = 0; j < m->n; j++) /* rolled back */
				ex[m->c[j]].must = ex[m->c[j]].may = false;
	}
	for (size_t k = 0; k < w->n_moves; k++) {
		if (w->moves[k].returned || done[k])
			continue;
		source_expect(w, k, applied, ex);
		for (size_t j = k; j < w->n_moves; j++)
			done[j] |= w->moves[j].p == w->moves[k].p;
	}
}

/* The image after recovery, read raw (no region code), against the layout and the oracle. */
static void raw_check(const uint8_t *img, const struct wl *w)
{
	struct layout_header h, hb;
	char why[160];
	const uint64_t *recs;
	const struct layout_tag *slots;
	uint64_t *found_ext = NULL;
	size_t *found_n = NULL;
	bool *seen = NULL;
	struct expect *ex = NULL;

	if (layout_header_check(img, &h, why, sizeof(why)) != HDR_OK) {
		violation("primary header after recovery: %s", why);
		return;
	}
	if (layout_header_check(img + LAYOUT_BACKUP_OFF, &hb, why, sizeof(why)) != HDR_OK ||
	    memcmp(&h, &hb, sizeof(h)) != 0)
		violation("backup header after recovery: %s", why);
	if (h.extent_count != N_EXTENTS || h.extent_size != EXTENT)
		die("unexpected geometry: %" PRIu64 " extents of %" PRIu64, h.extent_count,
		    h.extent_size);
	recs = (const uint64_t *)(img + h.extent_table_off);
	slots = (const struct layout_tag *)(img + h.tag_table_off);
	found_ext = calloc(h.tag_count * 8 + 1, sizeof(*found_ext));
	found_n = calloc(h.tag_count + 1, sizeof(*found_n));
	seen = calloc(w->n_tags + 1, sizeof(*seen));
	ex = calloc(w->n_tags + 1, sizeof(*ex));
	if (!found_ext || !found_n || !seen || !ex)
		die("out of memory");
	move_expect(slots, h.tag_count, w, ex);

	for (uint64_t i = 0; i < h.extent_count; i++) {
		unsigned s = layout_rec_state(recs[i]);
		uint32_t tag = layout_rec_tag(recs[i]);

		if (s >= EXT_NSTATES) {
			violation("extent %" PRIu64 ": invalid record 0x%016" PRIx64, i, recs[i]);
			continue;
		}
		if (s == EXT_LEASED)
			violation("extent %" PRIu64 " is LEASED after recovery (I3)", i);
		if (s != EXT_COMMITTED && tag)
			violation("extent %" PRIu64 " state %u names tag %u", i, s, tag);
		if (s == EXT_COMMITTED) {
			if (tag == 0 || tag > h.tag_count || slots[tag - 1].state != TAG_VALID) {
				violation("extent %" PRIu64 " COMMITTED to tag %u whose slot is "
					  "not VALID",
					  i, tag);
				continue;
			}
			if (found_n[tag] < 8)
				found_ext[tag * 8 + found_n[tag]] = i;
			found_n[tag]++;
		}
		if (s == EXT_ZEROED) {
			size_t z = first_nonzero(img + h.data_off + i * h.extent_size, EXTENT);
			if (z != SIZE_MAX)
				violation("I1: ZEROED extent %" PRIu64 " has a non-zero byte at "
					  "offset %zu",
					  i, z);
		}
	}

	for (uint32_t id = 1; id <= h.tag_count; id++) {
		const struct layout_tag *sl = &slots[id - 1];
		const struct otag *t = NULL;
		size_t ti = 0;

		if (sl->state == TAG_FREE)
			continue;
		if (sl->state != TAG_VALID) {
			violation("tag slot %u in state %" PRIu64 " after recovery", id, sl->state);
			continue;
		}
		if (layout_tag_checksum(sl) != sl->checksum) {
			violation("tag slot %u: VALID with a bad checksum", id);
			continue;
		}
		if (found_n[id] == 0)
			violation("tag slot %u ('%.63s') VALID without extents", id, sl->name);
		for (ti = 0; ti < w->n_tags; ti++)
			if (strncmp(w->tags[ti].name, sl->name, sizeof(sl->name)) == 0) {
				t = &w->tags[ti];
				break;
			}
		if (!t || sl->uid != UID) {
			violation("unknown tag '%.63s' (uid %u) in slot %u", sl->name, sl->uid, id);
			continue;
		}
		if (seen[ti])
			violation("tag %s in two slots", t->name);
		seen[ti] = true;
		if (!ex[ti].may) {
			violation("tag %s is back after its free (or the MOVE emptying it) "
				  "returned, or a MOVE rolled back made it",
				  t->name);
			continue;
		}
		if (found_n[id] != ex[ti].n_ext) {
			violation("tag %s has %zu extents, committed (or moved) with %zu", t->name,
				  found_n[id], ex[ti].n_ext);
			continue;
		}
		{
			uint64_t a[8], b[8];
			memcpy(a, &found_ext[id * 8], ex[ti].n_ext * 8);
			memcpy(b, ex[ti].ext, ex[ti].n_ext * 8);
			qsort(a, ex[ti].n_ext, 8, cmp_u64);
			qsort(b, ex[ti].n_ext, 8, cmp_u64);
			if (memcmp(a, b, ex[ti].n_ext * 8) != 0) {
				violation("tag %s owns other extents than it committed", t->name);
				continue;
			}
		}
		if (!tag_data_ok(img, &h, t, ex[ti].ext, ex[ti].n_ext, why, sizeof(why)))
			violation("I2: tag %s (%s): data not intact: %s", t->name,
				  !t->commit_returned ? "commit in flight"
				  : t->free_called    ? "being freed"
						      : "committed",
				  why);
	}
	for (size_t ti = 0; ti < w->n_tags; ti++) {
		const struct otag *t = &w->tags[ti];
		if (ex[ti].must && !seen[ti])
			violation("I2: tag %s is lost: its commit (or MOVE) returned before the "
				  "cut, or a MOVE rolled back left it",
				  t->name);
	}
	free(found_ext);
	free(found_n);
	free(seen);
	free(ex);
}

static void checker(const uint8_t *img)
{
	struct check_report rep;
	int ret;

	memset(&rep, 0, sizeof(rep));
	ret = check_image(img, REGION_SIZE, CHECK_RECOVERED, &rep);
	if (ret < 0) {
		violation("check_image failed: %s", strerror(-ret));
		return;
	}
	if (rep.status != CHECK_CLEAN) {
		violation("check_image: status %d, %zu problems%s", (int)rep.status,
			  rep.n_problems, rep.n_problems ? ":" : "");
		for (size_t i = 0; i < rep.n_problems && i < 5; i++)
			fprintf(stderr, "    %s\n", rep.problems[i]);
	}
	check_report_free(&rep);
}

/* Recover an image (a file written from img), check what recovery made of it. */
static void recover_and_check(const uint8_t *img, const struct wl *w)
{
	struct region *r = NULL;
	struct region_stats st;
	int ret;

	tot.images++;
	write_image(img);
	ret = region_open(&check_rc, &r);
	if (ret < 0) {
		violation("recovery refused the image: region_open: %s", strerror(-ret));
		return;
	}
	if (region_index_verify(r) < 0)
		violation("region_index_verify failed after recovery");
	region_get_stats(r, &st);
	if (st.count[EXT_LEASED])
		violation("%" PRIu64 " extents LEASED after recovery", st.count[EXT_LEASED]);
	/* Every committed tag is visible through the region API too. */
	for (size_t ti = 0; ti < w->n_tags; ti++) {
		const struct otag *t = &w->tags[ti];
		uint32_t id;

		/* A MOVE's source in flight may be gone (raw_check says which way it went). */
		if (t->commit_returned && !t->free_called && !t->moving &&
		    region_tag_lookup(r, t->name, UID, &id) < 0)
			violation("I2: region_tag_lookup does not find committed tag %s", t->name);
	}
	(void)region_sync(r);
	region_close(r);
	raw_check(chk_map, w);
	checker(chk_map);
}

/*
 * Crash the recovery of img: count its drains, cut at each, check the
 * result (with a few image seeds).
 */
static void crash_recovery(const uint8_t *img, const struct wl *w, const char *base_label,
			   uint64_t rseed_base)
{
	struct region *r = NULL;
	uint64_t n;
	int ret;

	pmsim_reset(sim, img);
	pmsim_arm(sim, 0, main_tid);
	write_image(img);
	pmsim_trace_next_opens(sim);
	ret = region_open(&check_rc, &r);
	pmsim_trace_next_opens(NULL);
	if (ret < 0)
		return; /* reported by recover_and_check */
	pmsim_detach(sim);
	n = pmsim_drains(sim);
	region_close_abandon(r);

	for (uint64_t d = 1; d <= n; d++) {
		pmsim_reset(sim, img);
		pmsim_arm(sim, d, main_tid);
		write_image(img);
		pmsim_trace_next_opens(sim);
		ret = region_open(&check_rc, &r);
		pmsim_trace_next_opens(NULL);
		if (ret < 0)
			die("recovery of the same image failed the second time");
		region_close_abandon(r);
		if (!pmsim_cut(sim))
			die("recovery did not reach its drain %" PRIu64 " again", d);
		if (opt.only_recovery_crash && d != opt.only_recovery_crash)
			continue;
		tot.recovery_crash_points++;
		for (uint64_t s = 0; s < 2 + (uint64_t)opt.recovery_images; s++) {
			uint64_t x = rseed_base ^ (d << 32) ^ s;
			uint64_t seed = s < 2 ? s : 2 + splitmix(&x) % 1000003;

			if (opt.only_recovery_crash && d != opt.only_recovery_crash)
				break;
			if (opt.has_only_recovery_seed) {
				if (s)
					break;
				seed = opt.only_recovery_seed;
			}
			snprintf(label, sizeof(label), "%s --recovery-crash %" PRIu64 " --recovery-seed %" PRIu64,
				 base_label, d, seed);
			pmsim_image(sim, seed, img_buf2);
			recover_and_check(img_buf2, w);
		}
	}
}

/* Image k of crash point n: all pending dropped, all kept, then random. */
static uint64_t image_seed(uint64_t wseed, uint64_t n, unsigned k)
{
	uint64_t x = wseed ^ (n << 20) ^ k;

	if (opt.has_only_image_seed)
		return opt.only_image_seed;
	return k < 2 ? k : 2 + splitmix(&x) % 1000003;
}

/* Cut power at drain n of workload wseed; check opt.images images. */
static void crash_point(uint64_t wseed, uint64_t n, const uint64_t *fplog, uint64_t n_drains)
{
	struct wl w;
	uint64_t pbytes;
	char base[200];

	snprintf(label, sizeof(label),
		 "test-powerfail --seed %" PRIu64 " --steps %u%s --crash %" PRIu64 " (before the cut)",
		 wseed, opt.steps, opt.concurrent ? " --concurrent" : "", n);
	run_workload(&w, wseed, n, NULL, 0);
	if (!pmsim_cut(sim)) {
		if (!opt.concurrent)
			die("run %" PRIu64 ": drain %" PRIu64 " never came (nondeterministic run?)",
			    wseed, n);
		tot.skipped_points++;
		wl_free(&w);
		return;
	}
	if (fplog && n <= n_drains && pmsim_fingerprint(sim) != fplog[n - 1]) {
		tot.nondeterministic++;
		if (tot.nondeterministic <= 3)
			fprintf(stderr,
				"powerfail: seed %" PRIu64 " drain %" PRIu64
				": the run differs from the first (nondeterministic)\n",
				wseed, n);
	}
	tot.crash_points++;
	if (pmsim_pending(sim, &pbytes) > tot.max_pending)
		tot.max_pending = pmsim_pending(sim, NULL);
	tot.max_pending_bytes = MAX(tot.max_pending_bytes, pbytes);
	/* pmsim state is the cut's: build every image before anything else uses it. */
	for (unsigned k = 0; k < opt.images; k++) {
		pmsim_image(sim, image_seed(wseed, n, k), img_buf + (size_t)k * REGION_SIZE);
		if (opt.has_only_image_seed)
			break;
	}
	for (unsigned k = 0; k < opt.images; k++) {
		uint8_t *img = img_buf + (size_t)k * REGION_SIZE;
		uint64_t seed = image_seed(wseed, n, k);

		snprintf(base, sizeof(base),
			 "test-powerfail --seed %" PRIu64 " --steps %u%s --crash %" PRIu64
			 " --image-seed %" PRIu64,
			 wseed, opt.steps, opt.concurrent ? " --concurrent" : "", n, seed);
		snprintf(label, sizeof(label), "%s", base);
		recover_and_check(img, &w);
		/* Crash the recovery of each image too. */
		if (opt.recovery_crash)
			crash_recovery(img, &w, base, wseed ^ (n << 16) ^ k);
		if (opt.has_only_image_seed)
			break;
	}
	wl_free(&w);
}

/* One workload: count its drains, then cut at each (or only opt.only_crash). */
static void sweep(uint64_t wseed)
{
	struct wl w;
	uint64_t n_drains, *fplog;
	size_t cap = 1 << 16;

	fplog = calloc(cap, sizeof(*fplog));
	if (!fplog)
		die("out of memory");
	snprintf(label, sizeof(label), "test-powerfail --seed %" PRIu64 " --steps %u%s (no crash)",
		 wseed, opt.steps, opt.concurrent ? " --concurrent" : "");
	run_workload(&w, wseed, 0, fplog, cap);
	n_drains = pmsim_drains(sim);
	if (opt.verbose)
		fprintf(stderr, "powerfail: seed %" PRIu64 ": %" PRIu64 " drains, %zu tags\n", wseed,
			n_drains, w.n_tags);
	/* The clean shutdown's image must pass too. */
	pmsim_image(sim, 1, img_buf);
	recover_and_check(img_buf, &w);
	wl_free(&w);

	for (uint64_t n = 1; n <= n_drains; n++) {
		if (opt.only_crash && n != opt.only_crash)
			continue;
		crash_point(wseed, n, opt.concurrent ? NULL : fplog, n_drains);
	}
	free(fplog);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: test-powerfail [--long SECONDS] [--seed W] [--steps N] [--images K]\n"
		"                      [--crash N] [--image-seed S] [--concurrent]\n"
		"                      [--no-recovery-crash] [--recovery-images K]\n"
		"                      [--recovery-crash D] [--recovery-seed S] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"long", required_argument, NULL, 'L'},
	    {"seed", required_argument, NULL, 's'},
	    {"steps", required_argument, NULL, 'n'},
	    {"images", required_argument, NULL, 'k'},
	    {"crash", required_argument, NULL, 'c'},
	    {"image-seed", required_argument, NULL, 'i'},
	    {"concurrent", no_argument, NULL, 'C'},
	    {"no-recovery-crash", no_argument, NULL, 'R'},
	    {"recovery-images", required_argument, NULL, 'K'},
	    {"recovery-crash", required_argument, NULL, 'D'},
	    {"recovery-seed", required_argument, NULL, 'S'},
	    {"verbose", no_argument, NULL, 'v'},
	    {NULL, 0, NULL, 0},
	};
	static char name_work[] = "pf", name_check[] = "pfcheck", src[] = "test";
	uint64_t t0 = pmemz_now_ns(), workloads = 0;
	int c;

	while ((c = getopt_long(argc, argv, "v", lopts, NULL)) != -1) {
		switch (c) {
		case 'L':
			opt.long_secs = strtod(optarg, NULL);
			break;
		case 's':
			opt.wseed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			opt.steps = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			opt.images = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			opt.only_crash = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			opt.only_image_seed = strtoull(optarg, NULL, 0);
			opt.has_only_image_seed = true;
			break;
		case 'C':
			opt.concurrent = true;
			break;
		case 'R':
			opt.recovery_crash = false;
			break;
		case 'K':
			opt.recovery_images = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'D':
			opt.only_recovery_crash = strtoull(optarg, NULL, 0);
			break;
		case 'S':
			opt.only_recovery_seed = strtoull(optarg, NULL, 0);
			opt.has_only_recovery_seed = true;
			break;
		case 'v':
			opt.verbose++;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || opt.images == 0)
		usage();
	log_set_max_level(opt.verbose > 1 ? LOG_DEBUG : opt.verbose ? LOG_WARNING : LOG_CRIT);
	/* The model does not depend on it; cache-line flushes are just faster than msync. */
	(void)setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	main_tid = pmsim_gettid();

	snprintf(work_path, sizeof(work_path), "/dev/shm/pmemz-powerfail-%d.img", (int)getpid());
	snprintf(chk_path, sizeof(chk_path), "/dev/shm/pmemz-powerfail-%d-check.img",
		 (int)getpid());
	work_rc = (struct region_conf){
	    .name = name_work,
	    .path = work_path,
	    .size = REGION_SIZE,
	    .extent_size = EXTENT,
	    .zeroer_threads = 1,
	    .zero_rate = 1, /* held; op_zero lets it go */
	    .batch_extents = 8,
	    .source = src,
	};
	check_rc = work_rc;
	check_rc.name = name_check;
	check_rc.path = chk_path;
	check_rc.zero_rate = 1; /* recovery is what is checked, not zeroing */

	chk_map_init();
	sim = pmsim_new(REGION_SIZE);
	img_buf = malloc((size_t)opt.images * REGION_SIZE);
	img_buf2 = malloc(REGION_SIZE);
	if (!sim || !img_buf || !img_buf2)
		die("out of memory");

	if (opt.long_secs > 0) {
		uint64_t end = t0 + (uint64_t)(opt.long_secs * 1e9), x = opt.wseed ^ (uint64_t)time(NULL);

		fprintf(stderr, "powerfail: long run, %.0f s, first workload seed %" PRIu64 "\n",
			opt.long_secs, x);
		while (pmemz_now_ns() < end) {
			uint64_t wseed = splitmix(&x) % 1000000007;

			opt.concurrent = wseed % 4 == 0; /* a quarter with the zeroer running free */
			opt.steps = 20 + (unsigned)(wseed % 41);
			work_rc.zero_rate = opt.concurrent ? 0 : 1;
			work_rc.zeroer_threads = opt.concurrent ? 2 : 1;
			sweep(wseed);
			workloads++;
			if (opt.verbose || workloads % 10 == 0)
				fprintf(stderr,
					"powerfail: %" PRIu64 " workloads, %" PRIu64
					" crash points, %" PRIu64 " images, %" PRIu64
					" violations, %.0f s\n",
					workloads, tot.crash_points, tot.images, tot.violations,
					(double)(pmemz_now_ns() - t0) / 1e9);
		}
	} else {
		if (opt.concurrent) {
			work_rc.zero_rate = 0;
			work_rc.zeroer_threads = 2;
		}
		sweep(opt.wseed);
		workloads = 1;
	}

	(void)unlink(work_path);
	(void)unlink(chk_path);
	printf("powerfail: %" PRIu64 " workloads, %" PRIu64 " crash points x %u images + %" PRIu64
	       " recovery crash points: %" PRIu64 " images checked, %" PRIu64
	       " lease checks, %" PRIu64 " hand-back fences, %" PRIu64
	       " MOVEs run (%" PRIu64 " from a source already moving), %" PRIu64
	       " violations (%" PRIu64 " nondeterministic runs, %.1f s)\n",
	       workloads, tot.crash_points, opt.images, tot.recovery_crash_points, tot.images,
	       tot.lease_checks, tot.handback_fences, tot.moves, tot.moves_shared, tot.violations,
	       tot.nondeterministic,
	       (double)(pmemz_now_ns() - t0) / 1e9);
	pmsim_free(sim);
	free(img_buf);
	free(img_buf2);
	(void)munmap(chk_map, REGION_SIZE);
	return tot.violations || tot.nondeterministic ? 1 : 0;
}
