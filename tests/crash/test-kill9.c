/* SPDX-License-Identifier: MIT */
/*
 * kill -9 torture: invariants I1-I3 (docs/DESIGN.md) across SIGKILLs.
 *
 * The real pmemzerod on a 64 MiB file region (1 MiB extents) in /dev/shm.
 * Each cycle: several client processes (libpmemzclient) allocate, check the
 * allocation reads zero (I1), write a pattern derived from the tag name,
 * persist it (or let COMMIT flush it), commit under a unique tag, reopen and
 * check their own tags, release tags and leases (some after scribbling
 * garbage on them).  At a random moment the daemon is SIGKILLed (sometimes
 * a client first, sometimes the daemon while it starts up).  Then:
 *   1. the crashed image, daemon down, is checked raw: check_path(0) clean
 *      (a crashed image may hold leases and half-made commits, nothing else);
 *   2. the daemon is restarted (recovery), nothing is leased (I3), and the
 *      commit oracle is verified through libpmemzclient: every commit that
 *      returned success before the kill is there (pmemz_alloc_open) with its
 *      pattern intact and its size (I2); every free that returned is gone;
 *      a commit or free in flight may have happened or not, but a tag that
 *      is there is intact, and from then on it is committed; no tag the
 *      clients never tried to commit exists;
 *   3. the daemon re-zeroes what recovery freed (STAT bytes_zeroed counts
 *      it), is stopped with SIGTERM (exit 0, no sanitizer report) and the
 *      image is checked with check_path(CHECK_RECOVERED): clean, every
 *      ZEROED extent zero, and its VALID tags exactly the oracle's.
 * Clients append to a shared log: "c TAG" before COMMIT, "C TAG" after it
 * returned 0, "f TAG" / "F TAG" around the release of a tag, "E ..." for an
 * unexpected error (a violation unless it came after the kill) and "V ..."
 * for a violation they saw themselves.  The oracle is exact: nothing is
 * inferred from timing.
 *
 * Usage: test-kill9 [--long SECONDS] [--cycles N] [--seed S] [--clients K] [-v]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"
#include "libpmemzclient.h"
#include "tag-pattern.h"

#define REGION "r"
#define MIB (1024ull * 1024ull)
#define REGION_MIB 64
#define MAX_CLIENTS 8
#define MAX_HELD 3
#define MAX_OWN 64
#define CLIENT_EXIT_VIOLATION 3

static struct {
	uint64_t seed;
	unsigned cycles;
	unsigned clients;
	double long_secs;
	int verbose;
} opt = {.seed = 1, .cycles = 50, .clients = 3};

static struct {
	uint64_t cycles, startup_kills, client_kills, commits_returned, commits_verified,
	    tag_checks, inflight_present, inflight_absent, frees_verified, rezeroed_extents,
	    violations, allocs_checked, client_ops, parent_frees;
	uint64_t handback_fences; /* zeroer fences beyond one per batch: hand-backs */
} tot;

static char log_path[PATH_MAX];
static char img_path[PATH_MAX];

#define VIOLATION(...)                                                                             \
	do {                                                                                       \
		tot.violations++;                                                                  \
		fprintf(stderr, "VIOLATION (seed %" PRIu64 ", cycle %" PRIu64 "): ", opt.seed,     \
			tot.cycles);                                                               \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "kCYCLE-CLIENT-SEQ-MIB": unique, and its size is in its name. */
static unsigned name_mib(const char *name)
{
	const char *p = strrchr(name, '-');

	return p ? (unsigned)strtoul(p + 1, NULL, 10) : 0;
}

/* ---- clients (forked; no cmocka here) ---- */

struct client {
	int logfd;
	uint64_t rng;
	unsigned cycle, idx, seq;
	struct pmemz_region *r;
	struct pmemz_alloc *held[MAX_HELD];
	bool scribbled[MAX_HELD];
	unsigned n_held;
	char own[MAX_OWN][32]; /* committed, not released */
	unsigned n_own;
};

static void clog_line(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void clog_line(struct client *c, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		_exit(2);
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One O_APPEND write per line: whole lines, whatever kills whom. */
	if (write(c->logfd, line, (size_t)n) != n)
		_exit(2);
}

/* An error from the daemon: expected once it is dead, else logged as unexpected. */
static _Noreturn void client_error(struct client *c, const char *what, int rc)
{
	clog_line(c, "E %" PRIu64 " client %u: %s: %s (%s)", now_ns(), c->idx, what,
		  strerror(-rc), pmemz_errormsg());
	_exit(0);
}

static void client_violation(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void client_violation(struct client *c, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clog_line(c, "V client %u: %s", c->idx, msg);
	_exit(CLIENT_EXIT_VIOLATION);
}

static void drop_held(struct client *c, unsigned k)
{
	c->held[k] = c->held[--c->n_held];
	c->scribbled[k] = c->scribbled[c->n_held];
}

static void c_alloc(struct client *c)
{
	struct pmemz_alloc *a = NULL;
	unsigned mib = 1 + (unsigned)rnd(&c->rng, 4);
	unsigned flags = rnd(&c->rng, 2) ? PMEMZ_ALLOC_NOWAIT : 0;
	int64_t bad;
	int rc;

	if (c->n_held == MAX_HELD)
		return;
	rc = pmemz_alloc_new(c->r, mib * MIB, flags, &a);
	if (rc == -EAGAIN || rc == -ENOSPC) {
		itest_msleep(1);
		return;
	}
	if (rc < 0)
		client_error(c, "allocate", rc);
	if (pmemz_alloc_size(a) != mib * MIB)
		client_violation(c, "allocation of %u MiB has %zu bytes", mib, pmemz_alloc_size(a));
	bad = check_alloc(c->r, a, 0, true);
	if (bad >= 0)
		client_violation(c, "I1: fresh allocation of %u MiB: non-zero at offset %" PRId64,
				 mib, bad);
	c->held[c->n_held] = a;
	c->scribbled[c->n_held] = false;
	c->n_held++;
}

static void c_commit(struct client *c)
{
	char name[32];
	unsigned k, flags = 0;
	struct pmemz_alloc *a;
	int rc;

	if (!c->n_held || c->n_own == MAX_OWN)
		return;
	k = (unsigned)rnd(&c->rng, c->n_held);
	if (c->scribbled[k])
		return;
	a = c->held[k];
	snprintf(name, sizeof(name), "k%u-%u-%u-%zu", c->cycle, c->idx, c->seq++,
		 (size_t)(pmemz_alloc_size(a) / MIB));
	fill_alloc(c->r, a, name_seed(name));
	if (rnd(&c->rng, 2)) {
		for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
			size_t len;
			void *p = pmemz_alloc_range(a, i, &len);
			rc = pmemz_persist(c->r, p, len);
			if (rc < 0)
				client_violation(c, "pmemz_persist: %s", strerror(-rc));
		}
	} else {
		flags = PMEMZ_COMMIT_FLUSH;
	}
	clog_line(c, "c %s", name);
	rc = pmemz_alloc_commit(a, name, flags);
	if (rc == -ENOSPC) { /* the tag table is full: give the space back */
		clog_line(c, "N %s", name);
		rc = pmemz_alloc_release(a);
		drop_held(c, k);
		if (rc < 0)
			client_error(c, "release after ENOSPC", rc);
		return;
	}
	if (rc < 0)
		client_error(c, "commit", rc);
	clog_line(c, "C %s", name);
	pmemz_alloc_close(a);
	drop_held(c, k);
	snprintf(c->own[c->n_own++], sizeof(c->own[0]), "%s", name);
}

static void c_scribble_release(struct client *c)
{
	unsigned k;
	struct pmemz_alloc *a;
	int rc;

	if (!c->n_held)
		return;
	k = (unsigned)rnd(&c->rng, c->n_held);
	a = c->held[k];
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		uint8_t *p = pmemz_alloc_range(a, i, &len);
		size_t off = (size_t)rnd(&c->rng, len), n = (size_t)rnd(&c->rng, len - off) + 1;

		memset(p + off, 0xa5, n);
		if (rnd(&c->rng, 2))
			(void)pmemz_persist(c->r, p + off, n);
	}
	c->scribbled[k] = true;
	if (rnd(&c->rng, 4) == 0)
		return; /* keep the garbage leased; it dies with us or the daemon */
	rc = pmemz_alloc_release(a);
	drop_held(c, k);
	if (rc < 0)
		client_error(c, "release lease", rc);
}

static void c_release_tag(struct client *c)
{
	struct pmemz_alloc *a = NULL;
	unsigned k;
	int rc;

	if (!c->n_own)
		return;
	k = (unsigned)rnd(&c->rng, c->n_own);
	rc = pmemz_alloc_open(c->r, c->own[k], &a);
	if (rc == -ENOENT)
		client_violation(c, "I2: own committed tag %s not found", c->own[k]);
	if (rc < 0)
		client_error(c, "open own tag", rc);
	clog_line(c, "f %s", c->own[k]);
	rc = pmemz_alloc_release(a);
	if (rc < 0)
		client_error(c, "release tag", rc);
	clog_line(c, "F %s", c->own[k]);
	memcpy(c->own[k], c->own[--c->n_own], sizeof(c->own[0]));
}

static void c_reopen(struct client *c)
{
	struct pmemz_alloc *a = NULL;
	const char *name;
	int64_t bad;
	int rc;

	if (!c->n_own)
		return;
	name = c->own[rnd(&c->rng, c->n_own)];
	rc = pmemz_alloc_open(c->r, name, &a);
	if (rc == -ENOENT)
		client_violation(c, "I2: own committed tag %s not found", name);
	if (rc < 0)
		client_error(c, "open own tag", rc);
	if (pmemz_alloc_size(a) != name_mib(name) * MIB)
		client_violation(c, "tag %s has %zu bytes", name, pmemz_alloc_size(a));
	bad = check_alloc(c->r, a, name_seed(name), false);
	if (bad >= 0)
		client_violation(c, "I2: tag %s: wrong data at offset %" PRId64, name, bad);
	pmemz_alloc_close(a);
}

static _Noreturn void client_main(const char *sock, uint64_t seed, unsigned cycle, unsigned idx)
{
	struct client c = {.rng = seed, .cycle = cycle, .idx = idx};
	struct pmemz_client *pc = NULL;
	int rc;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_IGN);
	c.logfd = open(log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (c.logfd < 0)
		_exit(2);
	rc = pmemz_client_new(sock, &pc);
	if (rc < 0)
		client_error(&c, "connect", rc);
	rc = pmemz_region_open(pc, REGION, &c.r);
	if (rc < 0)
		client_error(&c, "open region", rc);
	for (;;) {
		switch (rnd(&c.rng, 10)) {
		case 0 ... 2:
			c_alloc(&c);
			break;
		case 3 ... 5:
			c_commit(&c);
			break;
		case 6:
			c_scribble_release(&c);
			break;
		case 7 ... 8:
			c_release_tag(&c);
			break;
		case 9:
			c_reopen(&c);
			break;
		}
	}
}

/* ---- the parent's oracle ---- */

enum tstate {
	T_COMMITTING, /* "c": COMMIT sent, reply not seen */
	T_COMMITTED,  /* "C", or seen after a restart */
	T_FREEING,    /* "f": release sent, reply not seen */
	T_GONE,	      /* "F", "N", or absent after a restart */
};

struct otag {
	char name[32];
	enum tstate st;
	bool returned; /* its commit returned success (not just found) */
	bool verified; /* found intact after a kill at least once */
};

static struct otag *tags;
static size_t n_tags, cap_tags;

static struct otag *tag_find(const char *name)
{
	for (size_t i = 0; i < n_tags; i++)
		if (strcmp(tags[i].name, name) == 0)
			return &tags[i];
	return NULL;
}

static struct otag *tag_add(const char *name)
{
	struct otag *t = tag_find(name);

	if (t)
		return t;
	if (n_tags == cap_tags) {
		cap_tags = cap_tags ? 2 * cap_tags : 256;
		tags = realloc(tags, cap_tags * sizeof(*tags));
		assert_non_null(tags);
	}
	t = &tags[n_tags++];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->st = T_COMMITTING;
	return t;
}

/* Forget tags that are gone for good (keeps the table small over long runs). */
static void tags_compact(void)
{
	size_t out = 0;

	for (size_t i = 0; i < n_tags; i++)
		if (tags[i].st != T_GONE)
			tags[out++] = tags[i];
	n_tags = out;
}

/* Apply the clients' log; kill_ns: when the daemon was killed. */
static void read_log(uint64_t kill_ns)
{
	size_t len;
	char *buf = itest_read_file(log_path, &len), *line, *save = NULL;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char kind = line[0];
		const char *arg = line[1] == ' ' ? line + 2 : "";
		struct otag *t;

		switch (kind) {
		case 'c':
			t = tag_add(arg);
			t->st = T_COMMITTING;
			break;
		case 'C':
			t = tag_add(arg);
			t->st = T_COMMITTED;
			t->returned = true;
			tot.commits_returned++;
			break;
		case 'N':
			tag_add(arg)->st = T_GONE;
			break;
		case 'f':
			t = tag_add(arg);
			if (t->st != T_COMMITTED)
				VIOLATION("log: release of %s which is not committed", arg);
			t->st = T_FREEING;
			break;
		case 'F':
			tag_add(arg)->st = T_GONE;
			tot.frees_verified++;
			break;
		case 'E': {
			uint64_t when = strtoull(arg, NULL, 10);
			if (when < kill_ns)
				VIOLATION("a client failed while the daemon was up: %s", arg);
			else if (opt.verbose > 1)
				fprintf(stderr, "kill9: after the kill: %s\n", arg);
			break;
		}
		case 'V':
			VIOLATION("%s", arg);
			break;
		default:
			VIOLATION("log: garbled line '%s'", line);
		}
	}
	free(buf);
	/* Truncate for the next cycle. */
	itest_write_file(log_path, "", 0);
}

/* ---- the parent ---- */

static void connect_region(struct itest_env *e, struct pmemz_client **c, struct pmemz_region **r)
{
	int rc = pmemz_client_new(e->sock, c);

	if (rc)
		fail_msg("pmemz_client_new: %s (%s)", strerror(-rc), pmemz_errormsg());
	rc = pmemz_region_open(*c, REGION, r);
	if (rc)
		fail_msg("pmemz_region_open: %s (%s)", strerror(-rc), pmemz_errormsg());
}

/* Verify the oracle against the restarted daemon; resolve what was in flight. */
static void verify_oracle(struct itest_env *e)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;

	connect_region(e, &c, &r);
	for (size_t i = 0; i < n_tags; i++) {
		struct otag *t = &tags[i];
		struct pmemz_alloc *a = NULL;
		int rc = pmemz_alloc_open(r, t->name, &a);
		int64_t bad;

		if (rc < 0 && rc != -ENOENT)
			fail_msg("pmemz_alloc_open %s: %s (%s)", t->name, strerror(-rc),
				 pmemz_errormsg());
		if (rc == -ENOENT) {
			if (t->st == T_COMMITTED)
				VIOLATION("I2: tag %s is lost (its commit %s)", t->name,
					  t->returned ? "returned" : "was seen after a restart");
			else if (t->st == T_COMMITTING)
				tot.inflight_absent++;
			t->st = T_GONE;
			continue;
		}
		tot.tag_checks++;
		if (t->st == T_GONE) {
			VIOLATION("tag %s is there after its release returned", t->name);
		} else if (t->st == T_COMMITTING) {
			tot.inflight_present++;
		}
		if (pmemz_alloc_size(a) != name_mib(t->name) * MIB)
			VIOLATION("tag %s has %zu bytes", t->name, pmemz_alloc_size(a));
		else if ((bad = check_alloc(r, a, name_seed(t->name), false)) >= 0)
			VIOLATION("I2: tag %s: wrong data at offset %" PRId64, t->name, bad);
		else if (t->returned && !t->verified) {
			t->verified = true;
			tot.commits_verified++;
		}
		pmemz_alloc_close(a);
		t->st = T_COMMITTED; /* there after recovery: committed for good */
	}
	pmemz_region_close(r);
	pmemz_client_free(c);
	tags_compact();
}

/* Keep the region from filling up: release random tags (the parent is the same uid). */
static void make_room(struct itest_env *e, uint64_t *rng)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	uint64_t used = 0;

	for (size_t i = 0; i < n_tags; i++)
		used += name_mib(tags[i].name);
	if (used < REGION_MIB / 2 && n_tags < 30)
		return;
	connect_region(e, &c, &r);
	while (used > REGION_MIB / 4 || n_tags > 15) {
		struct otag *t = &tags[rnd(rng, n_tags)];
		struct pmemz_alloc *a = NULL;
		int rc = pmemz_alloc_open(r, t->name, &a);

		if (rc < 0)
			fail_msg("make_room: open %s: %s", t->name, strerror(-rc));
		rc = pmemz_alloc_release(a);
		if (rc < 0)
			fail_msg("make_room: release %s: %s", t->name, strerror(-rc));
		used -= name_mib(t->name);
		t->st = T_GONE;
		tags_compact();
		tot.parent_frees++;
	}
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void check_image_file(unsigned flags, const char *when)
{
	struct check_report rep;
	int rc;

	memset(&rep, 0, sizeof(rep));
	rc = check_path(img_path, flags, &rep);
	if (rc < 0) {
		VIOLATION("check_path %s (%s): %s", img_path, when, strerror(-rc));
		return;
	}
	if (rep.status != CHECK_CLEAN) {
		VIOLATION("checker (%s): %s, %zu problems", when, check_status_str(rep.status),
			  rep.n_problems);
		for (size_t i = 0; i < rep.n_problems && i < 10; i++)
			fprintf(stderr, "    %s\n", rep.problems[i]);
	}
	if (flags & CHECK_RECOVERED) {
		/* Its VALID tags are exactly the oracle's (which is resolved now). */
		size_t valid = 0;

		for (size_t i = 0; i < rep.n_tags; i++) {
			struct otag *t;

			if (rep.tags[i].state != TAG_VALID)
				continue;
			valid++;
			t = tag_find(rep.tags[i].name);
			if (!t || t->st != T_COMMITTED)
				VIOLATION("checker sees tag '%s' the oracle does not have",
					  rep.tags[i].name);
		}
		if (valid != n_tags)
			VIOLATION("checker sees %zu tags, the oracle %zu", valid, n_tags);
	}
	check_report_free(&rep);
}

static void kill_children(pid_t *pids, unsigned n)
{
	uint64_t deadline = itest_now_ms() + 5000;
	unsigned left = n;

	while (left) {
		left = 0;
		for (unsigned i = 0; i < n; i++) {
			int status;
			pid_t p;

			if (pids[i] <= 0)
				continue;
			p = waitpid(pids[i], &status, WNOHANG);
			if (p == pids[i]) {
				if (WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
				    WEXITSTATUS(status) != CLIENT_EXIT_VIOLATION)
					VIOLATION("client %u exited with %d", i, WEXITSTATUS(status));
				pids[i] = 0;
				continue;
			}
			if (itest_now_ms() > deadline) {
				(void)kill(pids[i], SIGKILL);
				(void)waitpid(pids[i], NULL, 0);
				pids[i] = 0;
				continue;
			}
			left++;
		}
		if (left)
			itest_msleep(2);
	}
}

static void one_cycle(struct itest_env *e, uint64_t *rng)
{
	pid_t pids[MAX_CLIENTS] = {0};
	uint64_t kill_ns, window = 10 + rnd(rng, 240);
	struct itest_stat st;
	int status;

	tot.cycles++;
	/* Sometimes kill the daemon while it starts up (format, recovery). */
	if (rnd(rng, 8) == 0) {
		itest_daemon_kill(e);
		itest_daemon_spawn(e);
		itest_msleep((unsigned)rnd(rng, 40)); /* before, during or after recovery */
		itest_daemon_kill(e);
		tot.startup_kills++;
		check_image_file(0, "after a kill during start-up");
		if (!itest_daemon_try_start(e, ITEST_START_TIMEOUT_MS, &status)) {
			itest_dump_log(e, true);
			fail_msg("pmemzerod refused to start after a kill during start-up");
		}
	}

	make_room(e, rng);
	for (unsigned i = 0; i < opt.clients; i++) {
		uint64_t cseed = splitmix(rng);
		pid_t p;

		fflush(NULL);
		p = fork();
		assert_true(p >= 0);
		if (p == 0)
			client_main(e->sock, cseed, (unsigned)tot.cycles, i);
		pids[i] = p;
	}
	/* A client dies first, sometimes. */
	if (rnd(rng, 3) == 0) {
		unsigned victim = (unsigned)rnd(rng, opt.clients);
		itest_msleep((unsigned)rnd(rng, (unsigned)window));
		(void)kill(pids[victim], SIGKILL);
		tot.client_kills++;
	} else {
		itest_msleep((unsigned)window);
	}

	/* How many extents were handed back early to waiting clients. */
	itest_stat(e->sock, REGION, &st);
	tot.handback_fences += st.zero_fences - st.zero_batches;
	kill_ns = now_ns();
	itest_daemon_kill(e);
	kill_children(pids, opt.clients);
	read_log(kill_ns);

	/* 1. The crashed image, as the kill left it. */
	check_image_file(0, "right after the kill");

	/* 2. Recovery, then the oracle through the client library. */
	if (!itest_daemon_try_start(e, ITEST_START_TIMEOUT_MS, &status)) {
		itest_dump_log(e, true);
		VIOLATION("pmemzerod refused to start after the kill");
		fail_msg("cannot go on");
	}
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after recovery");
	if (st.leased)
		VIOLATION("I3: %" PRIu64 " extents LEASED after recovery", st.leased);
	verify_oracle(e);

	/* 3. Re-zeroing, clean stop, the recovered image. */
	itest_wait_zeroed(e->sock, REGION, 60000, &st);
	tot.rezeroed_extents += st.bytes_zeroed / st.extent_size;
	if (st.tags != n_tags)
		VIOLATION("the daemon has %" PRIu64 " tags, the oracle %zu", st.tags, n_tags);
	itest_daemon_stop(e);
	check_image_file(CHECK_RECOVERED, "after recovery and SIGTERM");
	itest_daemon_start(e);

	if (opt.verbose)
		fprintf(stderr,
			"kill9: cycle %" PRIu64 ": window %" PRIu64 " ms, %zu tags, %" PRIu64
			" commits returned so far, %" PRIu64 " violations\n",
			tot.cycles, window, n_tags, tot.commits_returned, tot.violations);
}

static void test_kill9(void **state)
{
	struct itest_env *e = *state;
	uint64_t rng = opt.seed * 0x9e3779b97f4a7c15ull + 7, t0 = itest_now_ms();
	char spec[PATH_MAX + 64];

	itest_path(e, log_path, sizeof(log_path), "commits.log");
	itest_path(e, img_path, sizeof(img_path), "r.img");
	itest_write_file(log_path, "", 0);
	snprintf(spec, sizeof(spec), REGION "=%s,size=%uM,extent=1M", img_path, REGION_MIB);
	/*
	 * The whole region in one batch, zeroed at a pace (64 MiB in 0.25 s)
	 * unless a client waits: waiting clients get extents handed back
	 * from the middle of a batch, so kills fall between an extent's fence
	 * and its ZEROED state.
	 */
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s\n"
			 "size = %uM\n"
			 "extent_size = 1M\n"
			 "batch_extents = 64\n"
			 "zero_rate = 256M\n",
			 img_path, REGION_MIB);
	itest_daemon_arg(e, "--region");
	itest_daemon_arg(e, spec);
	itest_daemon_start(e);

	for (;;) {
		if (opt.long_secs > 0) {
			if ((double)(itest_now_ms() - t0) / 1000.0 >= opt.long_secs)
				break;
		} else if (tot.cycles >= opt.cycles) {
			break;
		}
		one_cycle(e, &rng);
		if (opt.long_secs > 0 && tot.cycles % 50 == 0)
			fprintf(stderr,
				"kill9: %" PRIu64 " cycles, %" PRIu64 " commits verified, %" PRIu64
				" violations, %.0f s\n",
				tot.cycles, tot.commits_verified, tot.violations,
				(double)(itest_now_ms() - t0) / 1000.0);
	}
	itest_daemon_stop(e);

	printf("kill9: seed %" PRIu64 ": %" PRIu64 " kill cycles (%" PRIu64
	       " during start-up, %" PRIu64 " clients killed), %" PRIu64
	       " commits returned, %" PRIu64 " of them verified after a kill (%" PRIu64
	       " tag checks; commits in flight: %" PRIu64 " present, %" PRIu64 " absent), %" PRIu64
	       " frees verified, %" PRIu64 " parent frees, %" PRIu64
	       " extents re-zeroed, %" PRIu64 " hand-back fences, %" PRIu64 " violations, %.1f s\n",
	       opt.seed, tot.cycles, tot.startup_kills, tot.client_kills, tot.commits_returned,
	       tot.commits_verified, tot.tag_checks, tot.inflight_present, tot.inflight_absent,
	       tot.frees_verified, tot.parent_frees, tot.rezeroed_extents, tot.handback_fences,
	       tot.violations,
	       (double)(itest_now_ms() - t0) / 1000.0);
	fflush(stdout);
	free(tags);
	assert_int_equal(tot.violations, 0);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"long", required_argument, NULL, 'L'},
	    {"seed", required_argument, NULL, 's'},
	    {"cycles", required_argument, NULL, 'n'},
	    {"clients", required_argument, NULL, 'k'},
	    {"verbose", no_argument, NULL, 'v'},
	    {NULL, 0, NULL, 0},
	};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_kill9, itest_setup, itest_teardown),
	};
	int c;

	while ((c = getopt_long(argc, argv, "v", lopts, NULL)) != -1) {
		switch (c) {
		case 'L':
			opt.long_secs = strtod(optarg, NULL);
			break;
		case 's':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			opt.cycles = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			opt.clients = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'v':
			opt.verbose++;
			break;
		default:
			fprintf(stderr, "usage: test-kill9 [--long SECONDS] [--cycles N] [--seed S] "
					"[--clients K] [-v]\n");
			return 2;
		}
	}
	if (optind != argc || opt.clients == 0 || opt.clients > MAX_CLIENTS)
		return 2;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
