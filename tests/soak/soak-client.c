/* SPDX-License-Identifier: MIT */
/*
 * soak-client: a well-behaved tenant for scripts/soak.
 *
 * Several threads share one libpmemzclient connection and the handles of
 * one or more regions.  Each thread allocates (checking every byte reads
 * zero: I1), writes a pattern derived from the tag name and the region
 * offset, persists it (or lets COMMIT flush it), commits, re-opens and
 * verifies its tags, flushes its own ranges, frees, and scribbles on
 * leases it then gives back; one thread turns the allocation reserve on
 * and off.  Every thread keeps a model of the tags it committed.
 *
 * The daemon is killed under it now and then: a call then fails with a
 * connection error, one thread reconnects (pmemz_client_reconnect) while
 * the others wait, and every thread resolves its call that was under way
 * (a COMMIT or FREE whose answer was lost happened or not: pmemz_alloc_open
 * tells) and verifies every commit that was acknowledged (I2).
 *
 * On SIGTERM (or after --seconds) the threads stop, every tag is verified
 * once more and freed, and the client exits: 0, or 3 when it saw a lost
 * commit, a stale read or another violation.
 *
 * Output (stdout, one line each, for scripts/soak):
 *   H WINDOW BUCKET:COUNT ...   latency histogram of PMEMZ_ALLOC_NOWAIT
 *                               allocations that succeeded in the 10 s
 *                               window WINDOW (from --epoch-ms)
 *   S WINDOW key=value ...      cumulative counters
 *   V message                   a violation
 *   F key=value ...             the final counters
 *
 * Usage: soak-client --socket PATH --region NAME[,NAME...] --name ID
 *          [--threads N] [--seed S] [--epoch-ms MS] [--seconds N]
 *          [--reserve on|off|toggle] [--max-extents N] [--think-us N]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libpmemzclient.h"
#include "tag-pattern.h"

#define MAX_REGIONS 4
#define MAX_THREADS 16
#define MAX_HELD 2
#define MAX_OWN 8
#define TAG_LEN 48
#define N_BUCKETS 160
#define WINDOW_MS 10000
#define RECONNECT_TIMEOUT_MS 120000
#define EXIT_VIOLATION 3

enum reserve_mode { RESERVE_OFF, RESERVE_ON, RESERVE_TOGGLE };

static struct {
	const char *sock;
	char *regions[MAX_REGIONS];
	unsigned n_regions;
	const char *name;
	unsigned threads;
	uint64_t seed;
	uint64_t epoch_ms;
	unsigned seconds;
	enum reserve_mode reserve;
	unsigned max_extents;
	unsigned think_us;
} opt = {.threads = 3, .seed = 1, .reserve = RESERVE_TOGGLE, .max_extents = 4,
	 .think_us = 2000};

/* Counters, all cumulative; "lost", "stale" and "violations" must stay 0. */
#define COUNTERS(X)                                                                                \
	X(ops)                                                                                     \
	X(allocs)                                                                                  \
	X(alloc_bytes_checked)                                                                     \
	X(commits)                                                                                 \
	X(commits_verified)                                                                        \
	X(frees)                                                                                   \
	X(lease_releases)                                                                          \
	X(flushes)                                                                                 \
	X(reserve_changes)                                                                         \
	X(reconnects)                                                                              \
	X(inflight_present)                                                                        \
	X(inflight_absent)                                                                         \
	X(lost)                                                                                    \
	X(stale)                                                                                   \
	X(violations)                                                                              \
	X(err_again)                                                                               \
	X(err_nospc)                                                                               \
	X(err_dquot)                                                                               \
	X(err_conn)                                                                                \
	X(err_stale)                                                                               \
	X(err_io)                                                                                  \
	X(err_other)

#define X_FIELD(n) uint64_t n;
static struct {
	COUNTERS(X_FIELD)
} cnt;
#define INC(n) __atomic_fetch_add(&cnt.n, 1, __ATOMIC_RELAXED)
#define ADD(n, v) __atomic_fetch_add(&cnt.n, (v), __ATOMIC_RELAXED)

static uint64_t hist[2][N_BUCKETS];
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t stop_requested;

static struct pmemz_client *client;
static struct pmemz_region *regions[MAX_REGIONS];
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned conn_gen; /* bumped by every successful reconnect */

struct tag_rec {
	char name[TAG_LEN];
	size_t size;
};

struct lease {
	struct pmemz_alloc *a;
	unsigned gen;
	bool scribbled;
};

enum pending_kind { PENDING_NONE, PENDING_COMMIT, PENDING_FREE };

struct worker {
	pthread_t thread;
	unsigned idx;
	uint64_t rng;
	struct pmemz_region *r;
	const char *region_name;
	struct lease held[MAX_HELD];
	unsigned n_held;
	struct tag_rec own[MAX_OWN];
	unsigned n_own;
	struct tag_rec pending;
	enum pending_kind pending_kind;
	unsigned seq;
	unsigned gen; /* the connection generation this worker last checked against */
};

/* ---- small things ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static uint64_t window_now(void)
{
	uint64_t now = wall_ms();

	return now > opt.epoch_ms ? (now - opt.epoch_ms) / WINDOW_MS : 0;
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

#define VIOLATION(counter, w, ...)                                                                 \
	do {                                                                                       \
		char _m[512];                                                                      \
		INC(counter);                                                                      \
		snprintf(_m, sizeof(_m), __VA_ARGS__);                                             \
		out("V %s/%u region %s: %s: %s", opt.name, (w)->idx, (w)->region_name, #counter,  \
		    _m);                                                                           \
	} while (0)

/* Latency buckets: 1 us wide below 8 us, then four per power of two. */
static unsigned bucket_of(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned e, b;

	if (us < 8)
		return (unsigned)us;
	e = 63u - (unsigned)__builtin_clzll(us);
	b = 8 + (e - 3) * 4 + (unsigned)((us >> (e - 2)) & 3);
	return b < N_BUCKETS ? b : N_BUCKETS - 1;
}

static void record_latency(uint64_t ns)
{
	__atomic_fetch_add(&hist[window_now() & 1][bucket_of(ns)], 1, __ATOMIC_RELAXED);
}

static void print_counters(const char *prefix)
{
	char line[2048];
	size_t n = 0;

#define X_PRINT(f)                                                                                 \
	n += (size_t)snprintf(line + n, sizeof(line) - n, " %s=%" PRIu64, #f,                      \
			      __atomic_load_n(&cnt.f, __ATOMIC_RELAXED));
	COUNTERS(X_PRINT)
	out("%s%s", prefix, line);
}

/* Every window, once it is over: its histogram and the counters. */
static void *reporter(void *arg)
{
	uint64_t last = window_now();

	(void)arg;
	while (!stop_requested) {
		uint64_t w = window_now();

		if (w != last && wall_ms() - opt.epoch_ms - w * WINDOW_MS > 300) {
			char line[4096], prefix[32];
			size_t n = 0;

			for (unsigned b = 0; b < N_BUCKETS; b++) {
				uint64_t c = __atomic_exchange_n(&hist[last & 1][b], 0,
								 __ATOMIC_RELAXED);

				if (c && n < sizeof(line) - 32)
					n += (size_t)snprintf(line + n, sizeof(line) - n,
							      " %u:%" PRIu64, b, c);
			}
			line[n] = '\0';
			out("H %" PRIu64 "%s", last, line);
			snprintf(prefix, sizeof(prefix), "S %" PRIu64, last);
			print_counters(prefix);
			last = w;
		}
		sleep_us(100000);
	}
	return NULL;
}

/* ---- errors and the connection ---- */

static bool conn_error(int rc)
{
	return rc == -ECONNRESET || rc == -ENOTCONN || rc == -EPIPE || rc == -ECONNREFUSED ||
	       rc == -ECONNABORTED;
}

/* Count an error by kind; true when it is one a tenant must expect. */
static bool count_error(struct worker *w, const char *what, int rc)
{
	switch (-rc) {
	case EAGAIN:
		INC(err_again);
		return true;
	case ENOSPC:
		INC(err_nospc);
		return true;
	case EDQUOT:
		INC(err_dquot);
		return true;
	case ESTALE:
		INC(err_stale);
		return true;
	case EIO:
		INC(err_io);
		break;
	default:
		if (conn_error(rc)) {
			INC(err_conn);
			return true;
		}
		INC(err_other);
		break;
	}
	out("E %s/%u region %s: %s: %s (%s)", opt.name, w->idx, w->region_name, what,
	    strerror(-rc), pmemz_errormsg());
	return false;
}

/*
 * Reconnect unless another thread did since this worker last looked.
 * Waits while the daemon is down (it is restarted by the soak).
 */
static void reconnect(struct worker *w)
{
	uint64_t deadline = mono_ns() + (uint64_t)RECONNECT_TIMEOUT_MS * 1000000ull;
	int rc;

	pthread_mutex_lock(&conn_lock);
	if (conn_gen != w->gen) {
		pthread_mutex_unlock(&conn_lock);
		return;
	}
	for (;;) {
		rc = pmemz_client_reconnect(client);
		if (rc == 0)
			break;
		if (rc == -ESTALE) {
			VIOLATION(violations, w, "reconnect: a region turned stale: %s",
				  pmemz_errormsg());
			break;
		}
		if (mono_ns() > deadline) {
			VIOLATION(violations, w, "reconnect: no daemon for %d s: %s (%s)",
				  RECONNECT_TIMEOUT_MS / 1000, strerror(-rc), pmemz_errormsg());
			pthread_mutex_unlock(&conn_lock);
			exit(EXIT_VIOLATION);
		}
		sleep_us(50000);
	}
	conn_gen++;
	INC(reconnects);
	pthread_mutex_unlock(&conn_lock);
}

static unsigned current_gen(void)
{
	return __atomic_load_n(&conn_gen, __ATOMIC_ACQUIRE);
}

/* ---- the model ---- */

static void own_add(struct worker *w, const struct tag_rec *t)
{
	w->own[w->n_own++] = *t;
}

static void own_del(struct worker *w, unsigned k)
{
	w->own[k] = w->own[--w->n_own];
}

/*
 * Open an acknowledged tag and check its size and data.  0: verified;
 * -ENOENT / -EBADMSG: lost (counted here); a connection error to retry.
 */
static int verify_tag(struct worker *w, const struct tag_rec *t, struct pmemz_alloc **keep)
{
	struct pmemz_alloc *a = NULL;
	int64_t bad;
	int rc;

	rc = pmemz_alloc_open(w->r, t->name, &a);
	if (rc == -ENOENT) {
		VIOLATION(lost, w, "acknowledged tag %s is gone", t->name);
		return -ENOENT;
	}
	if (rc < 0)
		return rc;
	if (pmemz_alloc_size(a) != t->size) {
		VIOLATION(lost, w, "tag %s has %zu bytes, committed %zu", t->name,
			  pmemz_alloc_size(a), t->size);
		pmemz_alloc_close(a);
		return -EBADMSG;
	}
	bad = check_alloc(w->r, a, name_seed(t->name), false);
	if (bad >= 0) {
		VIOLATION(lost, w, "tag %s: wrong data at offset %" PRId64, t->name, bad);
		pmemz_alloc_close(a);
		return -EBADMSG;
	}
	INC(commits_verified);
	if (keep)
		*keep = a;
	else
		pmemz_alloc_close(a);
	return 0;
}

/*
 * A COMMIT or FREE whose answer was lost: the tag is there (intact) or
 * not, and the model follows.  Connection errors are returned to retry.
 */
static int resolve_pending(struct worker *w)
{
	struct pmemz_alloc *a = NULL;
	int64_t bad;
	int rc;

	if (w->pending_kind == PENDING_NONE)
		return 0;
	rc = pmemz_alloc_open(w->r, w->pending.name, &a);
	if (rc == -ENOENT) {
		INC(inflight_absent);
		w->pending_kind = PENDING_NONE;
		return 0;
	}
	if (rc < 0)
		return rc;
	INC(inflight_present);
	bad = check_alloc(w->r, a, name_seed(w->pending.name), false);
	if (pmemz_alloc_size(a) != w->pending.size || bad >= 0)
		VIOLATION(lost, w, "in-flight %s of tag %s: there, but %zu bytes (want %zu), "
			  "first wrong word at %" PRId64,
			  w->pending_kind == PENDING_COMMIT ? "commit" : "free", w->pending.name,
			  pmemz_alloc_size(a), w->pending.size, bad);
	else
		own_add(w, &w->pending);
	pmemz_alloc_close(a);
	w->pending_kind = PENDING_NONE;
	return 0;
}

/* After a reconnect: the leases are gone; resolve, then verify everything. */
static int after_reconnect(struct worker *w)
{
	int rc;

	for (unsigned k = 0; k < w->n_held; k++)
		pmemz_alloc_close(w->held[k].a);
	w->n_held = 0;
	rc = resolve_pending(w);
	if (rc < 0)
		return rc;
	for (unsigned k = 0; k < w->n_own;) {
		rc = verify_tag(w, &w->own[k], NULL);
		if (rc == -ENOENT || rc == -EBADMSG) {
			own_del(w, k); /* counted; do not count it again */
			continue;
		}
		if (rc < 0)
			return rc;
		k++;
	}
	return 0;
}

/* ---- operations ---- */

static int op_alloc(struct worker *w)
{
	struct pmemz_alloc *a = NULL;
	size_t ext = pmemz_region_extent_size(w->r);
	size_t bytes = ext * (1 + rnd(&w->rng, opt.max_extents));
	unsigned flags = rnd(&w->rng, 4) ? PMEMZ_ALLOC_NOWAIT : 0;
	uint64_t t0;
	int64_t bad;
	int rc;

	if (w->n_held == MAX_HELD)
		return 0;
	/* Half the time one extent: what the reserve serves. */
	if (rnd(&w->rng, 2))
		bytes = ext;
	t0 = mono_ns();
	rc = pmemz_alloc_new(w->r, bytes, flags, &a);
	if (rc < 0)
		return rc;
	if (flags & PMEMZ_ALLOC_NOWAIT)
		record_latency(mono_ns() - t0);
	INC(allocs);
	if (pmemz_alloc_size(a) < bytes)
		VIOLATION(violations, w, "allocation of %zu bytes has %zu", bytes,
			  pmemz_alloc_size(a));
	bad = check_alloc(w->r, a, 0, true);
	if (bad >= 0)
		VIOLATION(stale, w, "I1: fresh allocation of %zu bytes: non-zero at offset %" PRId64,
			  pmemz_alloc_size(a), bad);
	ADD(alloc_bytes_checked, pmemz_alloc_size(a));
	w->held[w->n_held++] = (struct lease){.a = a, .gen = current_gen()};
	return 0;
}

static void drop_held(struct worker *w, unsigned k)
{
	w->held[k] = w->held[--w->n_held];
}

static int op_commit(struct worker *w)
{
	struct tag_rec t;
	struct pmemz_alloc *a;
	unsigned k, flags = 0;
	int rc;

	if (!w->n_held || w->n_own == MAX_OWN)
		return 0;
	k = (unsigned)rnd(&w->rng, w->n_held);
	if (w->held[k].scribbled)
		return 0;
	a = w->held[k].a;
	snprintf(t.name, sizeof(t.name), "soak-%s-%u-%u", opt.name, w->idx, w->seq++);
	t.size = pmemz_alloc_size(a);
	fill_alloc(w->r, a, name_seed(t.name));
	if (rnd(&w->rng, 2)) {
		for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
			size_t len;
			void *p = pmemz_alloc_range(a, i, &len);

			rc = pmemz_persist(w->r, p, len);
			if (rc < 0)
				VIOLATION(violations, w, "pmemz_persist: %s", strerror(-rc));
		}
	} else {
		flags = PMEMZ_COMMIT_FLUSH;
	}
	w->pending = t;
	w->pending_kind = PENDING_COMMIT;
	rc = pmemz_alloc_commit(a, t.name, flags);
	if (rc == 0) {
		w->pending_kind = PENDING_NONE;
		INC(commits);
		own_add(w, &t);
		pmemz_alloc_close(a);
		drop_held(w, k);
		return 0;
	}
	if (rc == -ENOSPC || rc == -EDQUOT) {
		/* A definite no: the space goes back. */
		w->pending_kind = PENDING_NONE;
		(void)count_error(w, "commit", rc);
		(void)pmemz_alloc_release(a);
		drop_held(w, k);
		return 0;
	}
	/* Anything else: it happened or not; resolve_pending finds out. */
	pmemz_alloc_close(a);
	drop_held(w, k);
	return rc;
}

static int op_verify(struct worker *w)
{
	unsigned k;
	int rc;

	if (!w->n_own)
		return 0;
	k = (unsigned)rnd(&w->rng, w->n_own);
	rc = verify_tag(w, &w->own[k], NULL);
	if (rc == -ENOENT || rc == -EBADMSG) {
		own_del(w, k);
		return 0;
	}
	return rc;
}

static int op_free_tag(struct worker *w)
{
	struct pmemz_alloc *a = NULL;
	unsigned k;
	int rc;

	if (!w->n_own)
		return 0;
	k = (unsigned)rnd(&w->rng, w->n_own);
	rc = verify_tag(w, &w->own[k], &a);
	if (rc == -ENOENT || rc == -EBADMSG) {
		own_del(w, k);
		return 0;
	}
	if (rc < 0)
		return rc;
	w->pending = w->own[k];
	w->pending_kind = PENDING_FREE;
	own_del(w, k);
	rc = pmemz_alloc_release(a);
	if (rc < 0)
		return rc; /* resolved later: it is there (kept) or not */
	w->pending_kind = PENDING_NONE;
	INC(frees);
	return 0;
}

static int op_release_lease(struct worker *w)
{
	struct lease *l;
	unsigned k;
	int rc;

	if (!w->n_held)
		return 0;
	k = (unsigned)rnd(&w->rng, w->n_held);
	l = &w->held[k];
	/* Garbage in it first: a later allocation must read zero again. */
	for (size_t i = 0; i < pmemz_alloc_count(l->a); i++) {
		size_t len;
		uint8_t *p = pmemz_alloc_range(l->a, i, &len);
		size_t off = (size_t)rnd(&w->rng, len);

		memset(p + off, 0xa5, (size_t)rnd(&w->rng, len - off) + 1);
	}
	l->scribbled = true;
	if (rnd(&w->rng, 4) == 0)
		return 0; /* kept a while with garbage in it */
	rc = pmemz_alloc_release(l->a);
	drop_held(w, k);
	if (rc == 0)
		INC(lease_releases);
	return rc;
}

static int op_flush(struct worker *w)
{
	unsigned flags = rnd(&w->rng, 4) == 0 ? PMEMZ_FLUSH_DEEP : 0;
	unsigned gen = current_gen();
	struct pmemz_alloc *a = NULL;
	bool own_tag = w->n_own && (!w->n_held || rnd(&w->rng, 2));
	size_t len;
	void *p;
	int rc;

	if (own_tag) {
		rc = pmemz_alloc_open(w->r, w->own[rnd(&w->rng, w->n_own)].name, &a);
		if (rc == -ENOENT)
			return op_verify(w); /* the model decides; verify_tag reports */
		if (rc < 0)
			return rc;
	} else if (w->n_held) {
		struct lease *l = &w->held[rnd(&w->rng, w->n_held)];

		if (l->gen != gen)
			return 0;
		a = l->a;
	} else {
		return 0;
	}
	p = pmemz_alloc_range(a, 0, &len);
	rc = pmemz_flush(w->r, p, len, flags);
	if (own_tag)
		pmemz_alloc_close(a);
	if (rc == -EPERM && current_gen() == gen)
		VIOLATION(violations, w, "FLUSH of its own %s: EPERM (%s)",
			  own_tag ? "tag" : "lease", pmemz_errormsg());
	else if (rc == 0)
		INC(flushes);
	else if (rc != -EPERM)
		return rc;
	return 0;
}

static int op_reserve(struct worker *w)
{
	size_t ext = pmemz_region_extent_size(w->r);
	size_t bytes = rnd(&w->rng, 3) ? ext * (1 + rnd(&w->rng, 4)) : 0;
	int rc;

	if (opt.reserve != RESERVE_TOGGLE)
		return 0;
	rc = pmemz_region_set_reserve(w->r, bytes);
	if (rc == 0)
		INC(reserve_changes);
	return rc;
}

static int run_op(struct worker *w, unsigned which)
{
	switch (which) {
	case 0 ... 3:
		return op_alloc(w);
	case 4 ... 6:
		return op_commit(w);
	case 7 ... 8:
		return op_verify(w);
	case 9 ... 10:
		return op_free_tag(w);
	case 11:
		return op_release_lease(w);
	case 12:
		return op_flush(w);
	default:
		return w->idx == 0 ? op_reserve(w) : op_verify(w);
	}
}

/* Handle a failed call; returns after a reconnect when it was the connection. */
static void handle_error(struct worker *w, const char *what, int rc)
{
	bool expected = count_error(w, what, rc);

	if (conn_error(rc)) {
		reconnect(w);
		return;
	}
	if (!expected)
		INC(violations);
	sleep_us(1000 + rnd(&w->rng, 5000));
}

static void catch_up(struct worker *w)
{
	for (;;) {
		unsigned gen = current_gen();
		int rc;

		if (gen == w->gen && w->pending_kind == PENDING_NONE)
			return;
		w->gen = gen;
		rc = after_reconnect(w);
		if (rc == 0)
			return;
		handle_error(w, "verify after reconnect", rc);
	}
}

static void *worker_main(void *arg)
{
	static const char *const names[] = {"alloc",  "alloc",	 "alloc",  "alloc", "commit",
					    "commit", "commit",	 "verify", "verify", "free",
					    "free",   "release", "flush",  "reserve"};
	struct worker *w = arg;

	while (!stop_requested) {
		unsigned which = (unsigned)rnd(&w->rng, 14);
		int rc;

		catch_up(w);
		rc = run_op(w, which);
		INC(ops);
		if (rc < 0)
			handle_error(w, names[which], rc);
		if (opt.think_us)
			sleep_us(rnd(&w->rng, 2 * (uint64_t)opt.think_us));
	}
	return NULL;
}

/* The end: every tag verified once more, then freed; nothing left behind. */
static void finish(struct worker *w)
{
	for (;;) {
		int rc = 0;

		catch_up(w);
		while (w->n_held) {
			rc = pmemz_alloc_release(w->held[0].a);
			drop_held(w, 0);
			if (rc < 0)
				break;
		}
		while (rc == 0 && w->n_own)
			rc = op_free_tag(w);
		if (rc == 0)
			rc = resolve_pending(w);
		if (rc == 0 && w->pending_kind == PENDING_NONE && !w->n_own)
			return;
		if (rc < 0)
			handle_error(w, "final free", rc);
	}
}

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: soak-client --socket PATH --region NAME[,NAME...] --name ID\n"
			"         [--threads N] [--seed S] [--epoch-ms MS] [--seconds N]\n"
			"         [--reserve on|off|toggle] [--max-extents N] [--think-us N]\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"socket", required_argument, NULL, 's'},	  {"region", required_argument, NULL, 'r'},
	    {"name", required_argument, NULL, 'n'},	  {"threads", required_argument, NULL, 't'},
	    {"seed", required_argument, NULL, 'S'},	  {"epoch-ms", required_argument, NULL, 'e'},
	    {"seconds", required_argument, NULL, 'T'},	  {"reserve", required_argument, NULL, 'R'},
	    {"max-extents", required_argument, NULL, 'x'}, {"think-us", required_argument, NULL, 'k'},
	    {NULL, 0, NULL, 0}};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			opt.sock = optarg;
			break;
		case 'r':
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (opt.n_regions == MAX_REGIONS)
					usage();
				opt.regions[opt.n_regions++] = tok;
			}
			break;
		case 'n':
			opt.name = optarg;
			break;
		case 't':
			opt.threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'e':
			opt.epoch_ms = strtoull(optarg, NULL, 10);
			break;
		case 'T':
			opt.seconds = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'R':
			if (strcmp(optarg, "on") == 0)
				opt.reserve = RESERVE_ON;
			else if (strcmp(optarg, "off") == 0)
				opt.reserve = RESERVE_OFF;
			else if (strcmp(optarg, "toggle") == 0)
				opt.reserve = RESERVE_TOGGLE;
			else
				usage();
			break;
		case 'x':
			opt.max_extents = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'k':
			opt.think_us = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (!opt.sock || !opt.n_regions || !opt.name || optind != argc || !opt.threads ||
	    opt.threads > MAX_THREADS || !opt.max_extents)
		usage();
	if (!opt.epoch_ms)
		opt.epoch_ms = wall_ms();
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	struct sigaction sa = {.sa_handler = on_term};
	uint64_t end_ns;
	pthread_t rep;
	int rc;

	parse(argc, argv);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = pmemz_client_new(opt.sock, &client);
	if (rc < 0) {
		fprintf(stderr, "soak-client %s: connect: %s (%s)\n", opt.name, strerror(-rc),
			pmemz_errormsg());
		return 1;
	}
	for (unsigned i = 0; i < opt.n_regions; i++) {
		rc = pmemz_region_open(client, opt.regions[i], &regions[i]);
		if (rc < 0) {
			fprintf(stderr, "soak-client %s: open region %s: %s (%s)\n", opt.name,
				opt.regions[i], strerror(-rc), pmemz_errormsg());
			return 1;
		}
		if (opt.reserve == RESERVE_ON) {
			rc = pmemz_region_set_reserve(regions[i],
						      2 * pmemz_region_extent_size(regions[i]));
			if (rc < 0) {
				fprintf(stderr, "soak-client %s: reserve: %s\n", opt.name,
					pmemz_errormsg());
				return 1;
			}
		}
	}
	rc = pthread_create(&rep, NULL, reporter, NULL);
	if (rc)
		return 1;
	for (unsigned i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];

		w->idx = i;
		w->rng = opt.seed * 1000003u + i;
		w->r = regions[i % opt.n_regions];
		w->region_name = opt.regions[i % opt.n_regions];
		if (pthread_create(&w->thread, NULL, worker_main, w))
			return 1;
	}
	end_ns = mono_ns() + (uint64_t)opt.seconds * 1000000000ull;
	while (!stop_requested && (!opt.seconds || mono_ns() < end_ns))
		sleep_us(100000);
	stop_requested = 1;
	for (unsigned i = 0; i < opt.threads; i++)
		pthread_join(workers[i].thread, NULL);
	pthread_join(rep, NULL);
	for (unsigned i = 0; i < opt.threads; i++)
		finish(&workers[i]);
	for (unsigned i = 0; i < opt.n_regions; i++)
		pmemz_region_close(regions[i]);
	pmemz_client_free(client);
	print_counters("F");
	return cnt.lost || cnt.stale || cnt.violations ? EXIT_VIOLATION : 0;
}
