/* SPDX-License-Identifier: MIT */
/*
 * Reload (SIGHUP, the unit's ExecReload) of the real daemon, whose
 * configuration file the test rewrites.  A NOTIFY_SOCKET of our own tells
 * when a reload is done (RELOADING=1, then READY=1 with the STATUS):
 *   - a new region comes up, an unused removed one goes down, a used one
 *     stays ("removing": no new OPEN_REGION/ALLOCATE, its lease commits)
 *     and goes once its client leaves;
 *   - allow lists and uid_quota: uid 65534 gains OPEN_REGION, is held to a
 *     quota that a reload raises, loses access (no new open or allocation)
 *     and still commits and frees the leases it holds (needs root);
 *   - zero_rate and zeroer_threads in STAT and in the daemon's threads; a
 *     rate set with ZEROER survives a reload that leaves zero_rate alone;
 *     log_level; extent_size cannot change (kept, with a warning);
 *   - an invalid file changes nothing: FILE:LINE in the log and in STATUS;
 *   - a client with leases across several reloads keeps them and commits;
 *   - a waiting ALLOCATE survives reloads that move and remove its region.
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB
#define OTHER_UID 65534
#define OTHER_GID 65534

struct reload_env {
	struct itest_env *e;
	int nfd; /* our NOTIFY_SOCKET */
	char status[4096];
};

static void notify_setup(struct reload_env *x, struct itest_env *e)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char env[PATH_MAX + 32];

	x->e = e;
	itest_path(e, sa.sun_path, sizeof(sa.sun_path), "notify.sock");
	x->nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(x->nfd >= 0);
	if (bind(x->nfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		fail_msg("bind %s: %s", sa.sun_path, strerror(errno));
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", sa.sun_path);
	itest_daemon_env(e, env);
}

/* Does the datagram carry this line (whole, or as a prefix with prefix)? */
static const char *msg_line(const char *msg, const char *line, bool prefix)
{
	size_t l = strlen(line);

	for (const char *p = msg; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, line, l) == 0 && (prefix || p[l] == '\n' || p[l] == 0))
			return p;
	return NULL;
}

/* Drop what systemd would have read already (READY=1, STATUS= updates). */
static void notify_drain(struct reload_env *x)
{
	char buf[4096];

	while (recv(x->nfd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/*
 * SIGHUP and wait for the reload to end: RELOADING=1, then READY=1.  The
 * STATUS sent with READY=1 lands in x->status.
 */
static void reload(struct reload_env *x)
{
	bool reloading = false;
	uint64_t deadline = itest_now_ms() + 10000;
	char msg[4096];

	notify_drain(x);
	assert_int_equal(kill(x->e->pid, SIGHUP), 0);
	while (itest_now_ms() < deadline) {
		struct pollfd p = {.fd = x->nfd, .events = POLLIN};
		const char *st;
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(x->nfd, msg, sizeof(msg) - 1, 0);
		assert_true(n >= 0);
		msg[n] = 0;
		if (msg_line(msg, "RELOADING=1", false)) {
			assert_non_null(msg_line(msg, "MONOTONIC_USEC=", true));
			reloading = true;
		}
		if (!reloading || !msg_line(msg, "READY=1", false))
			continue;
		st = msg_line(msg, "STATUS=", true);
		assert_non_null(st);
		snprintf(x->status, sizeof(x->status), "%.*s", (int)strcspn(st + 7, "\n"), st + 7);
		return;
	}
	itest_dump_log(x->e, true);
	fail_msg("no RELOADING=1 then READY=1 within 10 s of SIGHUP");
}

static void region_conf(FILE *f, const struct itest_env *e, const char *name, const char *extra)
{
	fprintf(f, "[region %s]\npath = %s/%s.img\nsize = 32M\nextent_size = 1M\n%s\n", name,
		e->dir, name, extra ? extra : "");
}

/* The file: [daemon] text, then NULL-terminated name, extra pairs. */
static void write_conf(struct itest_env *e, const char *daemon, ...)
{
	FILE *f = fopen(e->conf, "w");
	va_list ap;
	const char *name;

	assert_non_null(f);
	if (daemon)
		fprintf(f, "[daemon]\n%s\n", daemon);
	va_start(ap, daemon);
	while ((name = va_arg(ap, const char *))) {
		const char *extra = va_arg(ap, const char *);

		region_conf(f, e, name, extra);
	}
	va_end(ap);
	assert_int_equal(fclose(f), 0);
	e->has_conf = true;
}

/* STAT of a region: 0, -ENOENT when there is none; state copied out. */
static int stat_state(const char *sock, const char *region, char *state, size_t len)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq s = PMEMZ__STAT_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int fd = itest_raw_connect(sock), r;

	assert_true(fd >= 0);
	s.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &s;
	r = itest_raw_call(fd, &req, &resp);
	if (r == 0) {
		assert_int_equal(resp->stat->n_regions, 1);
		snprintf(state, len, "%s",
			 resp->stat->regions[0]->state ? resp->stat->regions[0]->state : "online");
	}
	itest_resp_free(resp);
	close(fd);
	return r;
}

static void assert_state(const char *sock, const char *region, const char *want)
{
	char state[32] = "";
	int r = stat_state(sock, region, state, sizeof(state));

	if (!want) {
		if (r != -ENOENT)
			fail_msg("region '%s' is still there (%s, %d)", region, state, r);
		return;
	}
	assert_int_equal(r, 0);
	if (strcmp(state, want) != 0)
		fail_msg("region '%s' is %s, not %s", region, state, want);
}

static bool log_has(const struct itest_env *e, const char *s)
{
	char *log = itest_read_log(e);
	bool found = strstr(log, s) != NULL;

	free(log);
	return found;
}

/*
 * Tags PREFIX (n == 1) or PREFIX0..PREFIX{n-1} hold the pattern of seed,
 * seed + 1, ... (itest_fill_alloc).
 */
static void check_tags(const char *sock, const char *region, const char *prefix, int n,
		       uint64_t seed)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	char tag[64];

	assert_int_equal(pmemz_client_new(sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, region, &r), 0);
	for (int i = 0; i < n; i++) {
		if (n == 1)
			snprintf(tag, sizeof(tag), "%s", prefix);
		else
			snprintf(tag, sizeof(tag), "%s%d", prefix, i);
		assert_int_equal(pmemz_alloc_open(r, tag, &a), 0);
		itest_check_alloc(r, a, seed + (uint64_t)i);
		pmemz_alloc_close(a);
	}
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void start(struct reload_env *x, struct itest_env *e)
{
	notify_setup(x, e);
	itest_daemon_start(e);
}

/* Add one, remove an unused one, keep a used one until its client leaves. */
static void test_regions(void **state)
{
	struct reload_env x;
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL, *b = NULL;
	uint64_t lease, deadline;
	struct itest_stat st;
	int fd;

	write_conf(e, NULL, "keep", NULL, "used", NULL, "idle", NULL, NULL);
	start(&x, e);
	itest_wait_zeroed(e->sock, "used", 20000, &st);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "used", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &a), 0);
	assert_int_equal(pmemz_alloc_new(r, MIB, 0, &b), 0);
	itest_fill_alloc(r, a, 11);

	write_conf(e, NULL, "keep", NULL, "new", NULL, NULL);
	reload(&x);
	assert_state(e->sock, "new", "online");
	assert_state(e->sock, "keep", "online");
	assert_state(e->sock, "idle", NULL);
	assert_state(e->sock, "used", "removing");
	assert_true(log_has(e, "Region 'used' was removed from the configuration but is in use"));
	if (!strstr(x.status, "region 'used' removed, kept while in use"))
		fail_msg("STATUS does not name the region kept in use: %s", x.status);

	/* Nothing new on it; what its client holds goes on. */
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	assert_int_equal(itest_raw_open(fd, "used"), -ENOENT);
	assert_int_equal(itest_raw_alloc(fd, "used", MIB, true, &lease), -ENOENT);
	close(fd);
	itest_persist_alloc(r, a);
	assert_int_equal(pmemz_alloc_commit(a, "kept", 0), 0);
	assert_int_equal(pmemz_alloc_release(b), 0);
	itest_stat(e->sock, "used", &st);
	assert_int_equal(st.committed, 2);
	assert_int_equal(st.leased, 0);
	itest_assert_accounting(&st, "removing");

	/* A reload does not take it down while the client is connected. */
	reload(&x);
	assert_state(e->sock, "used", "removing");

	/* The client leaves: the region goes (at the next status tick, 1 s). */
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	deadline = itest_now_ms() + 5000;
	while (stat_state(e->sock, "used", (char[32]){0}, 32) == 0 && itest_now_ms() < deadline)
		itest_msleep(50);
	assert_state(e->sock, "used", NULL);
	assert_true(log_has(e, "Region 'used' is no longer in use"));
	reload(&x);
	if (strstr(x.status, "removed"))
		fail_msg("STATUS still names a removed region: %s", x.status);

	/* It comes back with its committed data. */
	write_conf(e, NULL, "keep", NULL, "new", NULL, "used", NULL, NULL);
	reload(&x);
	check_tags(e->sock, "used", "kept", 1, 11);
	itest_daemon_stop(e);
	close(x.nfd);
}

/* /proc/PID/status Threads: */
static int daemon_threads(pid_t pid)
{
	char path[64], line[256];
	FILE *f;
	int n = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Threads:", 8) == 0)
			n = atoi(line + 8);
	fclose(f);
	assert_true(n > 0);
	return n;
}

static void zeroer_rate(const char *sock, const char *region, uint64_t rate)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq z = PMEMZ__ZEROER_REQ__INIT;
	int fd = itest_raw_connect(sock);

	assert_true(fd >= 0);
	z.region = UNCONST(region);
	z.has_rate = true;
	z.rate = rate;
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &z;
	assert_int_equal(itest_raw_call(fd, &req, NULL), 0);
	close(fd);
}

/* zero_rate, zeroer_threads, log_level; extent_size is kept. */
static void test_zeroer_and_log(void **state)
{
	struct reload_env x;
	struct itest_env *e = *state;
	struct itest_stat st;
	int threads;
	char *log;

	write_conf(e, "log_level = info", "z", NULL, NULL);
	start(&x, e);
	itest_stat(e->sock, "z", &st);
	assert_int_equal(st.zeroer_threads, 1);
	assert_true(st.zero_rate_limit == 0);
	threads = daemon_threads(e->pid);

	write_conf(e, "log_level = debug", "z", "zeroer_threads = 4\nzero_rate = 64M", NULL);
	reload(&x);
	itest_stat(e->sock, "z", &st);
	assert_int_equal(st.zeroer_threads, 4);
	assert_true(st.zero_rate_limit == 64 * MIB);
	assert_int_equal(daemon_threads(e->pid), threads + 3);
	/* log_level = debug: a connection is logged now (STAT above). */
	log = itest_read_log(e);
	assert_non_null(strstr(log, "debug: connection"));
	free(log);

	/* A rate set at runtime stays while the file's zero_rate does not change. */
	zeroer_rate(e->sock, "z", 8 * MIB);
	write_conf(e, "log_level = debug", "z", "zeroer_threads = 2\nzero_rate = 64M", NULL);
	reload(&x);
	itest_stat(e->sock, "z", &st);
	assert_true(st.zero_rate_limit == 8 * MIB);
	assert_int_equal(st.zeroer_threads, 2);
	assert_int_equal(daemon_threads(e->pid), threads + 1);
	write_conf(e, "log_level = debug", "z", "zeroer_threads = 2\nzero_rate = 32M", NULL);
	reload(&x);
	itest_stat(e->sock, "z", &st);
	assert_true(st.zero_rate_limit == 32 * MIB);

	/* extent_size cannot change under clients: kept, with a warning. */
	/* region_conf writes extent_size = 1M first: a second one is an error. */
	write_conf(e, "log_level = info", "z", "extent_size = 2M\nzeroer_threads = 2", NULL);
	reload(&x);
	if (!strstr(x.status, "RELOAD FAILED"))
		fail_msg("a duplicate key was accepted: %s", x.status);
	{
		FILE *f = fopen(e->conf, "w");

		assert_non_null(f);
		fprintf(f, "[daemon]\nlog_level = info\n[region z]\npath = %s/z.img\nsize = 32M\n"
			   "extent_size = 2M\nzeroer_threads = 2\nzero_rate = 32M\n",
			e->dir);
		assert_int_equal(fclose(f), 0);
	}
	reload(&x);
	assert_null(strstr(x.status, "RELOAD FAILED"));
	itest_stat(e->sock, "z", &st);
	assert_true(st.extent_size == MIB);
	assert_true(log_has(e, "region 'z': extent_size cannot change while the region is open"));
	/* log_level = info again: connections are not logged any more (unless -v). */
	if (!getenv("PMEMZ_ITEST_VERBOSE")) {
		char *before = itest_read_log(e);
		size_t n = strlen(before);

		itest_stat(e->sock, "z", &st);
		log = itest_read_log(e);
		assert_null(strstr(log + n, "debug:"));
		free(log);
		free(before);
	}
	itest_wait_zeroed(e->sock, "z", 20000, &st);
	itest_daemon_stop(e);
	close(x.nfd);
}

/* An invalid file changes nothing: FILE:LINE logged and in STATUS. */
static void test_invalid(void **state)
{
	struct reload_env x;
	struct itest_env *e = *state;
	struct itest_stat st;
	char want[PATH_MAX + 64];
	FILE *f;

	write_conf(e, NULL, "a", "zero_rate = 16M", NULL);
	start(&x, e);
	f = fopen(e->conf, "w");
	assert_non_null(f);
	/* Line 3: an unknown key; and a new region that must not come up. */
	fprintf(f, "[region a]\npath = %s/a.img\nbogus = 1\nzero_rate = 1M\n"
		   "[region b]\npath = %s/b.img\nsize = 32M\n",
		e->dir, e->dir);
	assert_int_equal(fclose(f), 0);
	reload(&x);
	snprintf(want, sizeof(want), "%s:3: unknown key 'bogus' in [region a]", e->conf);
	if (!strstr(x.status, "RELOAD FAILED") || !strstr(x.status, want))
		fail_msg("STATUS does not show the error '%s': %s", want, x.status);
	snprintf(want, sizeof(want), "Configuration not reloaded: %s:3: unknown key 'bogus'",
		 e->conf);
	assert_true(log_has(e, want));
	assert_state(e->sock, "b", NULL);
	itest_stat(e->sock, "a", &st);
	assert_true(st.zero_rate_limit == 16 * MIB);

	/* A missing file is an error too. */
	assert_int_equal(unlink(e->conf), 0);
	reload(&x);
	assert_non_null(strstr(x.status, "RELOAD FAILED"));
	assert_non_null(strstr(x.status, "cannot read configuration file"));

	/* Fixed: applied, and STATUS is clean again. */
	write_conf(e, NULL, "a", "zero_rate = 1M", "b", NULL, NULL);
	reload(&x);
	if (strstr(x.status, "RELOAD FAILED"))
		fail_msg("STATUS keeps an old reload error: %s", x.status);
	assert_state(e->sock, "b", "online");
	itest_stat(e->sock, "a", &st);
	assert_true(st.zero_rate_limit == MIB);
	itest_daemon_stop(e);
	close(x.nfd);
}

/* A client with leases across several reloads keeps them and commits afterwards. */
static void test_leases_survive(void **state)
{
	struct reload_env x;
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a[3];
	struct itest_stat st;
	char tag[16];

	write_conf(e, NULL, "l", NULL, NULL);
	start(&x, e);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "l", &r), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &a[i]), 0);
		itest_assert_alloc_zero(r, a[i]);
		itest_fill_alloc(r, a[i], 100 + (uint64_t)i);
	}
	/* New regions before and after it (indices move), then one goes again. */
	write_conf(e, NULL, "first", NULL, "l", "zeroer_threads = 2", NULL);
	reload(&x);
	write_conf(e, NULL, "first", NULL, "l", "zero_rate = 128M", "last", NULL, NULL);
	reload(&x);
	write_conf(e, NULL, "l", "uid_quota = 16M", "last", NULL, NULL);
	reload(&x);
	assert_state(e->sock, "first", NULL);
	itest_stat(e->sock, "l", &st);
	assert_int_equal(st.leased, 6);
	for (int i = 0; i < 3; i++) {
		snprintf(tag, sizeof(tag), "t%d", i);
		itest_persist_alloc(r, a[i]);
		assert_int_equal(pmemz_alloc_commit(a[i], tag, 0), 0);
		pmemz_alloc_close(a[i]);
	}
	itest_stat(e->sock, "l", &st);
	assert_int_equal(st.committed, 6);
	assert_int_equal(st.leased, 0);
	itest_assert_accounting(&st, "after the reloads");
	pmemz_region_close(r);
	pmemz_client_free(c);

	/* Durable across a restart too. */
	itest_daemon_stop(e);
	itest_daemon_start(e);
	check_tags(e->sock, "l", "t", 3, 100);
	itest_daemon_stop(e);
	close(x.nfd);
}

/*
 * A waiting ALLOCATE across reloads that move its region in the table and
 * remove it: the region stays while the waiter (then its lease) uses it, the
 * grant comes, the lease commits, and the region goes when the client does.
 */
static void test_waiter_across_reload(void **state)
{
	struct reload_env x;
	struct itest_env *e = *state;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__Response *resp = NULL;
	struct itest_stat st;
	uint64_t lease, deadline;
	int fd;

	write_conf(e, NULL, "a", NULL, "w", "zero_rate = 1M", NULL);
	start(&x, e);
	itest_zeroer_pause(e->sock, "w", true);
	itest_stat(e->sock, "w", &st);
	assert_true(st.zeroed < st.extent_count);

	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	al.region = UNCONST("w");
	al.bytes = st.extent_count * MIB; /* all of it: waits for the paused zeroer */
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 77;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &al;
	assert_int_equal(itest_raw_send(fd, &req), 0);
	deadline = itest_now_ms() + 5000;
	do {
		itest_msleep(20);
		itest_stat(e->sock, "w", &st);
	} while (st.waiters != 1 && itest_now_ms() < deadline);
	assert_int_equal(st.waiters, 1);

	/* "a" goes ("w" moves up), three come (the table grows), then "w" goes too. */
	write_conf(e, NULL, "b", NULL, "c", NULL, "w", "zero_rate = 1M", "d", NULL, NULL);
	reload(&x);
	assert_state(e->sock, "a", NULL);
	write_conf(e, NULL, "b", NULL, "c", NULL, "d", NULL, NULL);
	reload(&x);
	assert_state(e->sock, "w", "removing");
	assert_true(log_has(e, "Region 'w' was removed from the configuration but is in use "
			       "(0 lease(s), 1 waiting allocation(s)"));

	itest_zeroer_pause(e->sock, "w", false);
	assert_int_equal(itest_raw_recv(fd, ITEST_RPC_TIMEOUT_MS, &resp, NULL), 0);
	assert_int_equal(resp->id, 77);
	assert_int_equal(resp->status, 0);
	lease = resp->allocate->lease;
	itest_resp_free(resp);
	reload(&x);
	assert_state(e->sock, "w", "removing"); /* the lease keeps it */
	assert_int_equal(itest_raw_commit(fd, "w", lease, "all", false), 0);
	close(fd);
	deadline = itest_now_ms() + 5000;
	while (stat_state(e->sock, "w", (char[32]){0}, 32) == 0 && itest_now_ms() < deadline)
		itest_msleep(50);
	assert_state(e->sock, "w", NULL);

	write_conf(e, NULL, "b", NULL, "w", NULL, NULL);
	reload(&x);
	itest_stat(e->sock, "w", &st);
	assert_true(st.committed == st.extent_count);
	itest_assert_accounting(&st, "back in the configuration");
	assert_state(e->sock, "c", NULL);
	itest_daemon_stop(e);
	close(x.nfd);
}

/* ---- allow lists and quotas: uid 65534 in a child, steps driven over pipes ---- */

static void child_step(int in, int out)
{
	char ch = 'R';

	CHILD_CHECK(write(out, &ch, 1) == 1, "write: %s", strerror(errno));
	CHILD_CHECK(read(in, &ch, 1) == 1 && ch == 'G', "the parent went away");
}

static void child_main(const char *sock, int in, int out)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL, *r2 = NULL;
	struct pmemz_alloc *a = NULL, *b = NULL, *d = NULL;
	int q;

	CHILD_CHECK(setgroups(0, NULL) == 0 && setgid(OTHER_GID) == 0 && setuid(OTHER_UID) == 0,
		    "drop privileges: %s", strerror(errno));
	CHILD_CHECK(pmemz_client_new(sock, &c) == 0, "connect: %s", pmemz_errormsg());
	q = pmemz_region_open(c, "t", &r);
	CHILD_CHECK(q == -EACCES, "open before the allow list has us: %d", q);
	child_step(in, out); /* reload: allowed, uid_quota = 2M */
	q = pmemz_region_open(c, "t", &r);
	CHILD_CHECK(q == 0, "open once allowed: %d %s", q, pmemz_errormsg());
	q = pmemz_alloc_new(r, 2 * MIB, 0, &a);
	CHILD_CHECK(q == 0, "2 MiB within the quota: %d %s", q, pmemz_errormsg());
	q = pmemz_alloc_new(r, MIB, PMEMZ_ALLOC_NOWAIT, &b);
	CHILD_CHECK(q == -EDQUOT, "1 MiB over the quota: %d %s", q, pmemz_errormsg());
	child_step(in, out); /* reload: uid_quota = 4M */
	q = pmemz_alloc_new(r, MIB, PMEMZ_ALLOC_NOWAIT, &b);
	CHILD_CHECK(q == 0, "1 MiB within the raised quota: %d %s", q, pmemz_errormsg());
	child_step(in, out); /* reload: not allowed any more */
	q = pmemz_region_open(c, "t", &r2);
	CHILD_CHECK(q == -EACCES, "open after losing access: %d", q);
	q = pmemz_alloc_new(r, MIB, PMEMZ_ALLOC_NOWAIT, &d);
	CHILD_CHECK(q == -EACCES, "allocate after losing access: %d", q);
	q = pmemz_alloc_commit(a, "mine", 0);
	CHILD_CHECK(q == 0, "commit of a lease held: %d %s", q, pmemz_errormsg());
	q = pmemz_alloc_release(b);
	CHILD_CHECK(q == 0, "free of a lease held: %d %s", q, pmemz_errormsg());
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	_exit(0);
}

static void parent_step(int in, int out, pid_t pid)
{
	char ch;

	if (read(in, &ch, 1) != 1) {
		itest_wait_child_ok(pid, 5000, "uid 65534 client");
		fail_msg("the child ended early");
	}
}

static void test_access_and_quota(void **state)
{
	struct reload_env x;
	struct itest_env *e = *state;
	int to_child[2], to_parent[2];
	struct itest_stat st;
	const char go = 'G';
	char allow[64];
	pid_t pid;

	if (geteuid() != 0) {
		print_message("skipped: needs root to run a client as uid %d\n", OTHER_UID);
		return;
	}
	assert_int_equal(chmod(e->dir, 0711), 0); /* uid 65534 reaches the socket in it */
	write_conf(e, NULL, "t", "allow_users = root", NULL);
	start(&x, e);
	itest_wait_zeroed(e->sock, "t", 20000, &st);
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(to_parent), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		child_main(e->sock, to_child[0], to_parent[1]);
	}
	close(to_child[0]);
	close(to_parent[1]);

	snprintf(allow, sizeof(allow), "allow_users = root, %d\nuid_quota = 2M", OTHER_UID);
	parent_step(to_parent[0], to_child[1], pid);
	write_conf(e, NULL, "t", allow, NULL);
	reload(&x);
	assert_int_equal(write(to_child[1], &go, 1), 1);

	parent_step(to_parent[0], to_child[1], pid);
	snprintf(allow, sizeof(allow), "allow_users = root, %d\nuid_quota = 4M", OTHER_UID);
	write_conf(e, NULL, "t", allow, NULL);
	reload(&x);
	assert_int_equal(write(to_child[1], &go, 1), 1);

	parent_step(to_parent[0], to_child[1], pid);
	write_conf(e, NULL, "t", "allow_users = root\nuid_quota = 4M", NULL);
	reload(&x);
	assert_int_equal(write(to_child[1], &go, 1), 1);
	itest_wait_child_ok(pid, 30000, "uid 65534 client");
	close(to_child[1]);
	close(to_parent[0]);

	itest_stat(e->sock, "t", &st);
	assert_int_equal(st.committed, 2);
	assert_int_equal(st.leased, 0);
	itest_assert_accounting(&st, "after uid 65534 left");
	itest_daemon_stop(e);
	close(x.nfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_regions, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_zeroer_and_log, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_invalid, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_leases_survive, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_waiter_across_reload, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_access_and_quota, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
