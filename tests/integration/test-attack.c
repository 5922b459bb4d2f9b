/* SPDX-License-Identifier: MIT */
/*
 * A hostile local client against
 * the real daemon, which must stay up and keep serving everyone else.
 *
 *  - memory: ALLOCATE(4 KiB, nowait) + MAP pairs pipelined by connections
 *    that never read their replies (one connection, then eight against a
 *    small daemon-wide budget); the daemon's anonymous memory may grow by
 *    at most 64 MiB, and every reply still arrives once they read.
 *  - connections: uid 65534 opens 3000 connections against a daemon at a
 *    descriptor limit of 1024; the excess is refused with an error frame,
 *    root and another uid allocate meanwhile (root only: needs setuid).
 *  - idle: connections that send nothing, or half a frame, are closed after
 *    idle_timeout; one that sent a request is kept.  The daemon raised its
 *    soft descriptor limit to the hard one.
 *  - passed fds: OPEN_REGION pipelined without reading: one fd in flight.
 *  - FLUSH storm: the whole region 3000 times is refused (-E2BIG), ranges
 *    that are not the caller's are -EPERM, and while three connections
 *    pipeline FLUSHes of their own 256 MiB, `pmemzctl status` answers
 *    within 2 s (the bound the issue sets; generous on purpose).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"
#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB
#define ANON_GROWTH_MAX_KIB (64u * 1024u)
#define OTHER_UID 65534
#define THIRD_UID 65533

/* ---- raw frames without reading the replies (attack.h) ---- */

static void stream_add(struct attack_stream *s, Pmemz__Request *req, uint64_t id)
{
	assert_int_equal(attack_stream_add(s, req, id), 0);
}

static void stream_add_alloc_map(struct attack_stream *s, const char *region, uint64_t id)
{
	assert_int_equal(attack_stream_add_alloc_map(s, region, id), 0);
}

/* Send without reading until the daemon has taken nothing for idle_ms. */
static size_t push_until_stalled(int fd, const struct attack_stream *s, size_t sent, unsigned idle_ms)
{
	ssize_t r = attack_push_until_stalled(fd, s, sent, idle_ms);

	if (r < 0)
		fail_msg("send: %s", strerror((int)-r));
	return (size_t)r;
}

/*
 * Read every reply (sending the rest of the stream as room appears); counts
 * the replies, and those with status 0.
 */
static void read_all(int fd, const struct attack_stream *s, size_t sent, size_t *n_resp, size_t *n_ok)
{
	size_t in_cap = 2 * (PMEMZ_FRAME_HDR + PMEMZ_FRAME_MAX), in_len = 0, plen;
	uint8_t *in = malloc(in_cap);

	assert_non_null(in);
	*n_resp = *n_ok = 0;
	while (*n_resp < s->n_frames) {
		struct pollfd p = {.fd = fd, .events = POLLIN | (sent < s->len ? POLLOUT : 0)};

		if (poll(&p, 1, ITEST_RPC_TIMEOUT_MS) <= 0)
			fail_msg("no reply for %d ms after %zu of %zu", ITEST_RPC_TIMEOUT_MS,
				 *n_resp, s->n_frames);
		if ((p.revents & POLLOUT) && sent < s->len) {
			ssize_t w = send(fd, s->buf + sent, s->len - sent,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0)
				sent += (size_t)w;
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			ssize_t n = recv(fd, in + in_len, in_cap - in_len, MSG_DONTWAIT);

			if (n == 0)
				fail_msg("daemon closed the connection after %zu replies", *n_resp);
			if (n > 0)
				in_len += (size_t)n;
		}
		while (in_len >= PMEMZ_FRAME_HDR && pmemz_frame_peek(in, in_len, &plen) == 0 &&
		       in_len >= PMEMZ_FRAME_HDR + plen) {
			Pmemz__Response *resp = NULL;

			assert_int_equal(pmemz_frame_unpack_response(in + PMEMZ_FRAME_HDR, plen, &resp),
					 0);
			*n_ok += resp->status == 0;
			(*n_resp)++;
			itest_resp_free(resp);
			memmove(in, in + PMEMZ_FRAME_HDR + plen, in_len - PMEMZ_FRAME_HDR - plen);
			in_len -= PMEMZ_FRAME_HDR + plen;
		}
	}
	free(in);
}

/* Another client gets an allocation, a STAT and a region map. */
static void assert_serving(struct itest_env *e, const char *region, const char *when)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	int rc;

	rc = pmemz_client_new(e->sock, &c);
	if (rc)
		fail_msg("[%s] connect: %s (%s)", when, strerror(-rc), pmemz_errormsg());
	rc = pmemz_region_open(c, region, &r);
	if (rc)
		fail_msg("[%s] open: %s (%s)", when, strerror(-rc), pmemz_errormsg());
	rc = pmemz_alloc_new(r, 4096, PMEMZ_ALLOC_NOWAIT, &a);
	if (rc)
		fail_msg("[%s] allocate: %s (%s)", when, strerror(-rc), pmemz_errormsg());
	itest_assert_alloc_zero(r, a);
	assert_int_equal(pmemz_alloc_release(a), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_stat(e->sock, region, &st);
	itest_assert_accounting(&st, when);
}

/* ---- attack 3: memory amplification ---- */

static void memory_attack(struct itest_env *e, int n_conns, unsigned pairs_per_conn)
{
	struct attack_stream *s = calloc((size_t)n_conns, sizeof(*s));
	size_t *sent = calloc((size_t)n_conns, sizeof(*sent));
	int *fds = calloc((size_t)n_conns, sizeof(*fds));
	uint64_t before, after;
	struct itest_stat st;

	assert_non_null(s);
	assert_non_null(sent);
	assert_non_null(fds);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "mem", 60000, &st);
	/* A MAP reply of one byte per extent: about 40 KB. */
	assert_true(st.extent_count > 30000 && st.extent_count < 65536);
	assert_serving(e, "mem", "warm-up");
	before = itest_rss_anon_kib(e->pid);

	for (int k = 0; k < n_conns; k++) {
		fds[k] = itest_raw_connect(e->sock);
		assert_true(fds[k] >= 0);
		for (unsigned i = 0; i < pairs_per_conn; i++)
			stream_add_alloc_map(&s[k], "mem", 1 + 2 * (uint64_t)i);
	}
	/* Every connection pushes until the daemon stops reading it. */
	for (int k = 0; k < n_conns; k++)
		sent[k] = push_until_stalled(fds[k], &s[k], 0, 1500);
	itest_msleep(500);
	after = itest_rss_anon_kib(e->pid);
	for (int k = 0; k < n_conns; k++)
		print_message("connection %d: sent %zu of %zu bytes (%u pairs) before the daemon "
			      "stopped reading\n",
			      k, sent[k], s[k].len, pairs_per_conn);
	print_message("daemon anonymous memory: %llu KiB before, %llu KiB during the attack: "
		      "+%lld KiB (limit +%u KiB)\n",
		      (unsigned long long)before, (unsigned long long)after,
		      (long long)after - (long long)before, ANON_GROWTH_MAX_KIB);
	if (after > before + ANON_GROWTH_MAX_KIB)
		fail_msg("anonymous memory grew by %llu KiB", (unsigned long long)(after - before));

	assert_serving(e, "mem", "during the memory attack");

	/* Once they read, every request is answered: nothing was lost or stuck. */
	for (int k = 0; k < n_conns; k++) {
		size_t n_resp, n_ok;

		read_all(fds[k], &s[k], sent[k], &n_resp, &n_ok);
		assert_int_equal(n_resp, s[k].n_frames);
		assert_true(n_ok >= pairs_per_conn); /* every MAP, and the ALLOCATEs that fit */
		close(fds[k]);
		free(s[k].buf);
	}
	assert_true(itest_rss_anon_kib(e->pid) > 0);
	assert_serving(e, "mem", "after the memory attack");
	free(s);
	free(sent);
	free(fds);
}

static void write_mem_conf(struct itest_env *e, const char *daemon_extra)
{
	itest_write_conf(e,
			 "[daemon]\n"
			 "%s\n"
			 "[region mem]\n"
			 "path = %s/mem.img\n"
			 "size = 160M\n"
			 "extent_size = 4K\n",
			 daemon_extra, e->dir);
}

static void test_memory_one_connection(void **state)
{
	struct itest_env *e = *state;

	write_mem_conf(e, "");
	memory_attack(e, 1, 6000);
}

static void test_memory_daemon_budget(void **state)
{
	struct itest_env *e = *state;

	/* Eight connections over a daemon-wide budget of 2 MiB: they take turns. */
	write_mem_conf(e, "max_total_connection_memory = 2M");
	memory_attack(e, 8, 1000);
}

/* ---- part f: one passed fd in flight per connection ---- */

static void test_open_region_pipelined(void **state)
{
	struct itest_env *e = *state;
	struct attack_stream s = {0};
	struct itest_stat st;
	int fd, open_before, open_during;
	char path[64];
	size_t sent;

	write_mem_conf(e, "");
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "mem", 60000, &st);
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	for (unsigned i = 0; i < 2000; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__OpenRegionReq o = PMEMZ__OPEN_REGION_REQ__INIT;

		o.region = UNCONST("mem");
		req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
		req.open_region = &o;
		stream_add(&s, &req, 1 + i);
	}
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)e->pid);
	open_before = 0;
	{
		char *argv[] = {UNCONST("/bin/sh"), UNCONST("-c"), NULL, NULL};
		char cmd[128], *out = NULL;

		snprintf(cmd, sizeof(cmd), "ls %s | wc -l", path);
		argv[2] = cmd;
		assert_int_equal(itest_run(argv, 5000, &out, NULL), 0);
		open_before = atoi(out);
		free(out);
		sent = push_until_stalled(fd, &s, 0, 1000);
		assert_int_equal(itest_run(argv, 5000, &out, NULL), 0);
		open_during = atoi(out);
		free(out);
	}
	print_message("OPEN_REGION x2000 pipelined, %zu of %zu bytes taken: daemon fds %d before, "
		      "%d during\n",
		      sent, s.len, open_before, open_during);
	/* The connection's socket, and at most one region fd in flight. */
	assert_true(open_during <= open_before + 2);
	{
		size_t n_resp, n_ok;

		read_all(fd, &s, sent, &n_resp, &n_ok);
		assert_int_equal(n_ok, 2000);
	}
	close(fd);
	free(s.buf);
	assert_serving(e, "mem", "after pipelined OPEN_REGION");
}

/* ---- attack 4: connection exhaustion ---- */

struct conn_counts {
	unsigned accepted, refused, refused_with_frame, connect_failed;
};

/* In a child running as uid 65534: open n connections, report, hold until told. */
static void hold_connections(const char *sock, unsigned n, unsigned expect_held, int report_fd,
			     int release_fd)
{
	struct conn_counts cc = {0};
	int *fds = calloc(n, sizeof(int));
	char c;

	CHILD_CHECK(fds != NULL, "calloc");
	for (unsigned i = 0; i < n; i++) {
		uint64_t deadline = itest_now_ms() + 5000;

		do
			fds[i] = itest_raw_connect(sock);
		while (fds[i] == -EAGAIN && itest_now_ms() < deadline && (itest_msleep(1), 1));
		if (fds[i] < 0)
			cc.connect_failed++;
	}
	/*
	 * Refused connections get one error frame, then EOF.  The daemon works
	 * through its backlog at its own pace: look until no more than
	 * expect_held are silent, or for 30 s.
	 */
	for (uint64_t deadline = itest_now_ms() + 30000;;) {
		unsigned silent = 0;

		for (unsigned i = 0; i < n; i++) {
			struct pollfd p = {.fd = fds[i], .events = POLLIN};
			Pmemz__Response *resp = NULL;
			int r;

			if (fds[i] < 0)
				continue;
			if (poll(&p, 1, 0) == 0) {
				silent++; /* nothing to read: kept, or not accepted yet */
				continue;
			}
			r = itest_raw_recv(fds[i], 1000, &resp, NULL);
			cc.refused++;
			if (r == 0 && resp->status == -EUSERS)
				cc.refused_with_frame++;
			itest_resp_free(resp);
			close(fds[i]);
			fds[i] = -1;
		}
		cc.accepted = silent;
		if (silent <= expect_held || itest_now_ms() > deadline)
			break;
		itest_msleep(100);
	}
	CHILD_CHECK(write(report_fd, &cc, sizeof(cc)) == sizeof(cc), "report");
	CHILD_CHECK(read(release_fd, &c, 1) >= 0, "wait for release");
	_exit(0);
}

static void child_allocates(const char *sock, uid_t uid)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	int rc;

	CHILD_CHECK(setgid(uid) == 0 && setuid(uid) == 0, "setuid %u", (unsigned)uid);
	rc = pmemz_client_new(sock, &c);
	CHILD_CHECK(rc == 0, "connect: %s", pmemz_errormsg());
	rc = pmemz_region_open(c, "conn", &r);
	CHILD_CHECK(rc == 0, "open: %s", pmemz_errormsg());
	rc = pmemz_alloc_new(r, MIB, 0, &a);
	CHILD_CHECK(rc == 0, "allocate: %s", pmemz_errormsg());
	CHILD_CHECK(pmemz_alloc_release(a) == 0, "release: %s", pmemz_errormsg());
	pmemz_region_close(r);
	pmemz_client_free(c);
	_exit(0);
}

static void test_connection_exhaustion(void **state)
{
	struct itest_env *e = *state;
	enum { N = 3000, PER_UID = 200 };
	int report[2], release[2];
	struct conn_counts cc;
	struct itest_stat st;
	pid_t holder, other;

	if (getuid() != 0) {
		print_message("SKIP: needs root to run a client as uid %d\n", OTHER_UID);
		skip();
	}
	itest_write_conf(e,
			 "[daemon]\n"
			 "idle_timeout = 10m\n"
			 "max_connections_per_uid = %d\n"
			 "[region conn]\n"
			 "path = %s/conn.img\n"
			 "size = 64M\n"
			 "extent_size = 1M\n"
			 "allow_users = %d %d\n",
			 PER_UID, e->dir, OTHER_UID, THIRD_UID);
	/* The worst case: a hard limit of 1024 too, nothing to raise it to. */
	e->nofile_soft = 1024;
	e->nofile_hard = 1024;
	assert_int_equal(chmod(e->dir, 0711), 0); /* the socket, for the other uids */
	itest_daemon_start(e);
	assert_int_equal(itest_nofile_soft(e->pid), 1024);
	itest_wait_zeroed(e->sock, "conn", 60000, &st);

	assert_int_equal(pipe(report), 0);
	assert_int_equal(pipe(release), 0);
	fflush(NULL);
	holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		close(report[0]);
		close(release[1]);
		CHILD_CHECK(setgid(OTHER_UID) == 0 && setuid(OTHER_UID) == 0, "setuid");
		hold_connections(e->sock, N, PER_UID, report[1], release[0]);
	}
	close(report[1]);
	close(release[0]);
	assert_int_equal(read(report[0], &cc, sizeof(cc)), (ssize_t)sizeof(cc));
	print_message("uid %d opened %d connections: %u accepted and held, %u refused (%u with "
		      "an -EUSERS frame), %u connect failures\n",
		      OTHER_UID, N, cc.accepted, cc.refused, cc.refused_with_frame,
		      cc.connect_failed);
	assert_int_equal(cc.accepted, PER_UID);
	assert_int_equal(cc.refused, N - cc.accepted);
	assert_int_equal(cc.refused_with_frame, cc.refused);

	/* Meanwhile root and another uid are served. */
	assert_serving(e, "conn", "uid 65534 holding its connections");
	fflush(NULL);
	other = fork();
	assert_true(other >= 0);
	if (other == 0)
		child_allocates(e->sock, THIRD_UID);
	itest_wait_child_ok(other, 20000, "uid 65533 allocating");

	assert_int_equal(write(release[1], "x", 1), 1);
	itest_wait_child_ok(holder, 20000, "the connection holder");
	close(report[0]);
	close(release[1]);
	assert_serving(e, "conn", "after the connections went");
}

/* ---- idle connections ---- */

static void test_idle_timeout(void **state)
{
	struct itest_env *e = *state;
	int silent, partial, talked, n_resp = 0, first = 0;
	struct itest_stat st;
	struct rlimit rl;
	uint64_t soft;

	itest_write_conf(e,
			 "[daemon]\n"
			 "idle_timeout = 2\n"
			 "[region idle]\n"
			 "path = %s/idle.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n",
			 e->dir);
	/* systemd's default soft limit; the daemon raises it to the hard one. */
	e->nofile_soft = 1024;
	itest_daemon_start(e);
	soft = itest_nofile_soft(e->pid);
	print_message("daemon started at soft RLIMIT_NOFILE 1024 runs with %llu\n",
		      (unsigned long long)soft);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(soft, rl.rlim_max);

	itest_wait_zeroed(e->sock, "idle", 60000, &st);
	silent = itest_raw_connect(e->sock);
	partial = itest_raw_connect(e->sock);
	talked = itest_raw_connect(e->sock);
	assert_true(silent >= 0 && partial >= 0 && talked >= 0);
	assert_int_equal(itest_raw_write(partial, "\x10\x00", 2), 0);
	assert_int_equal(itest_raw_hello(talked, NULL), 0);

	assert_true(itest_raw_wait_closed(silent, 6000, &n_resp, &first));
	assert_int_equal(n_resp, 0);
	assert_true(itest_raw_wait_closed(partial, 6000, &n_resp, &first));
	/* A connection that made a request and then waits is not idle. */
	assert_int_equal(itest_raw_hello(talked, NULL), 0);
	close(silent);
	close(partial);
	close(talked);
	assert_serving(e, "idle", "after idle connections were closed");
}

/* ---- attack 5: FLUSH storm ---- */

static int flush_call(int fd, const char *region, const uint64_t *offlen, size_t n)
{
	struct attack_flush q;
	int r;

	assert_int_equal(attack_flush_init(&q, region, offlen, n), 0);
	r = itest_raw_call(fd, &q.req, NULL);
	attack_flush_done(&q);
	return r;
}

static void add_flush(struct attack_stream *s, const char *region, const uint64_t *offlen, size_t n,
		      uint64_t id)
{
	assert_int_equal(attack_stream_add_flush(s, region, offlen, n, id), 0);
}

static void test_flush_storm(void **state)
{
	struct itest_env *e = *state;
	enum { STORMERS = 3, FRAMES = 100, RANGES = 256 };
	static uint64_t ranges[2 * 3000];
	struct attack_stream s[STORMERS] = {{0}};
	int fds[STORMERS];
	uint64_t lease_off[STORMERS], worst = 0;
	struct itest_stat st;
	int probe;

	itest_write_conf(e,
			 "[region storm]\n"
			 "path = %s/storm.img\n"
			 "size = 800M\n"
			 "extent_size = 2M\n",
			 e->dir);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "storm", 60000, &st);

	/* The old attack: the whole data area, 3000 times, from a stranger. */
	probe = itest_raw_connect(e->sock);
	assert_true(probe >= 0);
	for (size_t i = 0; i < 3000; i++) {
		ranges[2 * i] = st.data_offset;
		ranges[2 * i + 1] = st.extent_count * st.extent_size;
	}
	assert_int_equal(flush_call(probe, "storm", ranges, 3000), -E2BIG);
	assert_int_equal(flush_call(probe, "storm", ranges, RANGES), -EPERM);

	/* Each stormer leases 256 MiB and flushes it, 256 overlapping ranges a frame. */
	for (int k = 0; k < STORMERS; k++) {
		fds[k] = itest_raw_connect(e->sock);
		assert_true(fds[k] >= 0);
		lease_off[k] = itest_raw_lease_one_run(fds[k], "storm", 256 * MIB, &st, NULL);
		/* Not its own: another stormer's lease. */
		if (k > 0) {
			ranges[0] = lease_off[k - 1];
			ranges[1] = 4096;
			assert_int_equal(flush_call(fds[k], "storm", ranges, 1), -EPERM);
		}
		for (size_t i = 0; i < RANGES; i++) {
			ranges[2 * i] = lease_off[k] + (i % 16) * 4096;
			ranges[2 * i + 1] = 256 * MIB - (i % 16) * 4096;
		}
		for (unsigned f = 0; f < FRAMES; f++)
			add_flush(&s[k], "storm", ranges, RANGES, 1 + f);
	}
	for (int k = 0; k < STORMERS; k++)
		(void)push_until_stalled(fds[k], &s[k], 0, 200);

	/* pmemzctl status from another client, while the storm runs. */
	for (int i = 0; i < 5; i++) {
		char *argv[] = {UNCONST(itest_ctl_path()), UNCONST("--socket"), e->sock,
				UNCONST("status"), NULL};
		char *out = NULL, *err = NULL;
		uint64_t t0 = itest_now_ms(), dt;
		int status = itest_run(argv, 30000, &out, &err);

		dt = itest_now_ms() - t0;
		worst = dt > worst ? dt : worst;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("pmemzctl status failed during the storm: %s", err);
		free(out);
		free(err);
		itest_msleep(100);
	}
	print_message("pmemzctl status during the FLUSH storm: slowest of 5 took %llu ms "
		      "(bound 2000 ms)\n",
		      (unsigned long long)worst);
	assert_true(worst < 2000);

	/* Some FLUSHes completed, each a success. */
	for (int k = 0; k < STORMERS; k++) {
		Pmemz__Response *resp = NULL;

		assert_int_equal(itest_raw_recv(fds[k], ITEST_RPC_TIMEOUT_MS, &resp, NULL), 0);
		assert_int_equal(resp->status, 0);
		itest_resp_free(resp);
		close(fds[k]); /* the daemon drops the rest of its work */
		free(s[k].buf);
	}
	close(probe);
	assert_serving(e, "storm", "after the FLUSH storm");
}

/*
 * FLUSHes pipelined past the connection's budget while earlier ones run as
 * sliced jobs: the daemon stops reading, then goes on with the buffered
 * requests as replies are read; every one is answered.
 */
static void test_flush_pipelined_over_budget(void **state)
{
	struct itest_env *e = *state;
	enum { FRAMES = 400, RANGES = 256 };
	static uint64_t ranges[2 * RANGES];
	struct attack_stream s = {0};
	struct itest_stat st;
	size_t sent, n_resp, n_ok;
	uint64_t off;
	int fd;

	itest_write_conf(e,
			 "[daemon]\n"
			 "max_connection_memory = 256K\n"
			 "[region pf]\n"
			 "path = %s/pf.img\n"
			 "size = 128M\n"
			 "extent_size = 2M\n",
			 e->dir);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "pf", 60000, &st);
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	off = itest_raw_lease_one_run(fd, "pf", 64 * MIB, &st, NULL);
	for (size_t i = 0; i < RANGES; i++) {
		ranges[2 * i] = off + (i % 32) * 4096;
		ranges[2 * i + 1] = 32 * MIB;
	}
	for (unsigned f = 0; f < FRAMES; f++)
		add_flush(&s, "pf", ranges, RANGES, 1 + f);
	sent = push_until_stalled(fd, &s, 0, 1000);
	print_message("%u FLUSH frames (%zu bytes): %zu taken before the daemon stopped "
		      "reading\n",
		      FRAMES, s.len, sent);
	read_all(fd, &s, sent, &n_resp, &n_ok);
	assert_int_equal(n_resp, FRAMES);
	assert_int_equal(n_ok, FRAMES);
	close(fd);
	free(s.buf);
	assert_serving(e, "pf", "after pipelined FLUSHes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_memory_one_connection, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_memory_daemon_budget, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_open_region_pipelined, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_connection_exhaustion, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_idle_timeout, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_flush_storm, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_flush_pipelined_over_budget, itest_setup,
					    itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
