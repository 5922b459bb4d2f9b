/* SPDX-License-Identifier: MIT */
/*
 * The server side end to end, in one process: the real manager, listener,
 * connections and RPC handlers on a temporary socket, over the in-memory
 * fake storage (fake-region.c), driven by raw protocol frames.  Checks
 * group commit (no reply before the durable state), waiting allocations
 * (pipelining, FIFO, -ENOSPC, dropped on disconnect), lease isolation,
 * access control, protocol errors, output backpressure and shutdown.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "connection.h"
#include "fake-region.h"
#include "frame.h"
#include "listener.h"
#include "log.h"
#include "manager.h"
#include "peer.h"
#include "pmemz-version.h"
#include "sanitizer.h"

#define MiB (1ull << 20)
#define OTHER_UID 65534

enum { R_TEST, R_WAIT, R_SECRET, N_REGIONS };

static char tmpdir[64];
static char sock_path[96];
static struct daemon_conf conf;
static struct region_conf rcs[N_REGIONS];
static uid_t allow_me[1];
static struct manager *mgr;
static pthread_t loop_thread;
static int loop_result = -1;

/* protobuf-c only reads the strings we hand it while packing. */
static char *mut(const char *s)
{
	return (char *)(uintptr_t)s;
}

/* ---- a tiny raw client ---- */

static int cli_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	/* A lost reply fails the test instead of hanging it. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Read exactly len bytes; the fd of SCM_RIGHTS, if any, into *passed. */
static int read_all(int fd, void *buf, size_t len, int *passed)
{
	uint8_t *p = buf;

	while (len) {
		union {
			char b[CMSG_SPACE(sizeof(int))];
			struct cmsghdr a;
		} ctl;
		struct iovec iov = {.iov_base = p, .iov_len = len};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl.b,
				     .msg_controllen = sizeof(ctl.b)};
		ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				int got;

				memcpy(&got, CMSG_DATA(cm), sizeof(int));
				if (passed && *passed < 0)
					*passed = got;
				else
					close(got);
			}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void cli_send(int fd, Pmemz__Request *req)
{
	uint8_t *frame;
	size_t len;

	if (!req->version)
		req->version = PMEMZ_PROTO_VERSION;
	assert_int_equal(pmemz_frame_pack_request(req, &frame, &len), 0);
	assert_int_equal(write_all(fd, frame, len), 0);
	free(frame);
}

/* NULL on EOF / error. */
static Pmemz__Response *cli_recv_fd(int fd, int *passed)
{
	uint8_t hdr[PMEMZ_FRAME_HDR];
	uint8_t *payload;
	size_t len;
	Pmemz__Response *resp = NULL;

	if (passed)
		*passed = -1;
	if (read_all(fd, hdr, sizeof(hdr), passed) < 0)
		return NULL;
	assert_int_equal(pmemz_frame_peek(hdr, sizeof(hdr), &len), 0);
	payload = malloc(len);
	assert_non_null(payload);
	assert_int_equal(read_all(fd, payload, len, passed), 0);
	assert_int_equal(pmemz_frame_unpack_response(payload, len, &resp), 0);
	free(payload);
	return resp;
}

static Pmemz__Response *cli_recv(int fd)
{
	Pmemz__Response *resp = cli_recv_fd(fd, NULL);

	assert_non_null(resp);
	return resp;
}

static Pmemz__Response *cli_call(int fd, Pmemz__Request *req)
{
	Pmemz__Response *resp;

	cli_send(fd, req);
	resp = cli_recv(fd);
	assert_int_equal(resp->id, req->id);
	return resp;
}

static void resp_free(Pmemz__Response *resp)
{
	pmemz__response__free_unpacked(resp, NULL);
}

static bool cli_eof(int fd)
{
	char c;

	return recv(fd, &c, 1, 0) <= 0;
}

/* ---- request builders: each sends and returns the reply ---- */

static uint64_t next_id = 100;

/* HELLO at version v stating the range [min, max] (min > max: none). */
static Pmemz__Response *hello_range(int fd, uint32_t v, uint32_t min, uint32_t max)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__HelloReq h = PMEMZ__HELLO_REQ__INIT;

	h.client_name = (char *)"test-server";
	h.has_min_version = h.has_max_version = min <= max;
	h.min_version = min;
	h.max_version = max;
	req.version = v;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_HELLO;
	req.hello = &h;
	return cli_call(fd, &req);
}

/* HELLO as a client from before the version ranges sends it. */
static Pmemz__Response *do_hello(int fd)
{
	return hello_range(fd, PMEMZ_PROTO_VERSION, 1, 0);
}

static void send_alloc(int fd, uint64_t id, const char *region, uint64_t bytes, bool nowait)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;

	a.region = mut(region);
	a.bytes = bytes;
	a.has_nowait = nowait;
	a.nowait = nowait;
	req.id = id;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &a;
	cli_send(fd, &req);
}

static Pmemz__Response *do_alloc(int fd, const char *region, uint64_t bytes, bool nowait)
{
	Pmemz__Response *resp;
	uint64_t id = next_id++;

	send_alloc(fd, id, region, bytes, nowait);
	resp = cli_recv(fd);
	assert_int_equal(resp->id, id);
	return resp;
}

static Pmemz__Response *do_commit(int fd, const char *region, uint64_t lease, const char *tag)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__CommitReq c = PMEMZ__COMMIT_REQ__INIT;

	c.region = mut(region);
	c.lease = lease;
	c.tag = mut(tag);
	c.has_flush_data = true;
	c.flush_data = true;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_COMMIT;
	req.commit = &c;
	return cli_call(fd, &req);
}

static Pmemz__Response *do_free(int fd, const char *region, bool has_lease, uint64_t lease,
				const char *tag)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FreeReq f = PMEMZ__FREE_REQ__INIT;

	f.region = mut(region);
	f.has_lease = has_lease;
	f.lease = lease;
	f.tag = mut(tag);
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &f;
	return cli_call(fd, &req);
}

static Pmemz__Response *do_list(int fd, const char *region, const char *tag, bool all)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ListReq l = PMEMZ__LIST_REQ__INIT;

	l.region = mut(region);
	l.tag = mut(tag);
	l.has_all_users = all;
	l.all_users = all;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_LIST;
	req.list = &l;
	return cli_call(fd, &req);
}

static Pmemz__Response *do_list_page(int fd, const char *region, const char *prefix, uint64_t start)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ListReq l = PMEMZ__LIST_REQ__INIT;

	l.region = mut(region);
	l.prefix = mut(prefix);
	l.has_start_slot = true;
	l.start_slot = start;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_LIST;
	req.list = &l;
	return cli_call(fd, &req);
}

/* CLAIM's status (the message, when wanted, into msg). */
static int do_claim(int fd, const char *region, const char *name, bool release, char *msg,
		    size_t len)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ClaimReq c = PMEMZ__CLAIM_REQ__INIT;
	Pmemz__Response *resp;
	int status;

	c.region = mut(region);
	c.name = mut(name);
	c.has_release = release;
	c.release = release;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_CLAIM;
	req.claim = &c;
	resp = cli_call(fd, &req);
	status = resp->status;
	if (status == 0)
		assert_int_equal(resp->op_case, PMEMZ__RESPONSE__OP_CLAIM);
	if (msg)
		(void)snprintf(msg, len, "%s", resp->message ? resp->message : "");
	resp_free(resp);
	return status;
}

static Pmemz__Response *do_stat(int fd, const char *region)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq s = PMEMZ__STAT_REQ__INIT;

	s.region = mut(region);
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &s;
	return cli_call(fd, &req);
}

static Pmemz__Response *do_open(int fd, const char *region, int *passed)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__OpenRegionReq o = PMEMZ__OPEN_REGION_REQ__INIT;
	Pmemz__Response *resp;

	o.region = mut(region);
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
	req.open_region = &o;
	cli_send(fd, &req);
	resp = cli_recv_fd(fd, passed);
	assert_non_null(resp);
	assert_int_equal(resp->id, req.id);
	return resp;
}

static Pmemz__Response *do_flush(int fd, const char *region, uint64_t off, uint64_t len)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FlushReq f = PMEMZ__FLUSH_REQ__INIT;
	Pmemz__ByteRange br = PMEMZ__BYTE_RANGE__INIT;
	Pmemz__ByteRange *brs[1] = {&br};

	br.offset = off;
	br.length = len;
	f.region = mut(region);
	f.n_ranges = 1;
	f.ranges = brs;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_FLUSH;
	req.flush = &f;
	return cli_call(fd, &req);
}

static void send_noop(int fd, uint64_t id, const void *payload, size_t len)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__NoopReq n = PMEMZ__NOOP_REQ__INIT;

	n.has_payload = payload != NULL;
	n.payload.data = (uint8_t *)(uintptr_t)payload;
	n.payload.len = len;
	req.id = id;
	req.op_case = PMEMZ__REQUEST__OP_NOOP;
	req.noop = &n;
	cli_send(fd, &req);
}

static uint64_t runs_total(Pmemz__Run **runs, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += runs[i]->count;
	return t;
}

static void wait_until(bool (*cond)(void *), void *arg)
{
	for (int i = 0; i < 500 && !cond(arg); i++)
		usleep(10 * 1000);
	assert_true(cond(arg));
}

static bool region_not_urgent(void *arg)
{
	return !fake_region_urgent(arg);
}

/* Disconnects are processed asynchronously: wait for their leases to go. */
static void wait_no_leases(int fd, const char *region)
{
	for (int i = 0; i < 500; i++) {
		Pmemz__Response *resp = do_stat(fd, region);
		uint64_t leased = resp->stat->regions[0]->leased;

		resp_free(resp);
		if (!leased)
			return;
		usleep(10000);
	}
	fail_msg("leases of closed connections were not released");
}

/* ---- the daemon in a thread ---- */

static void *loop_main(void *arg)
{
	loop_result = manager_run(mgr);
	return NULL;
}

static void region_conf_init(struct region_conf *rc, const char *name, uint64_t extents, bool mine)
{
	rc->name = mut(name);
	rc->path = mut(name);
	rc->size = extents * MiB;
	rc->extent_size = MiB;
	rc->zeroer_threads = 1;
	rc->batch_extents = 8;
	if (mine && getuid() != 0) {
		rc->allow_uids = allow_me;
		rc->n_allow_uids = 1;
	}
}

static int setup(void **state)
{
	sigset_t set;

	if (getenv("PMEMZ_TEST_DEBUG"))
		log_set_max_level(LOG_DEBUG);
	else
		log_set_max_level(LOG_WARNING);
	/* systemd might have started us: never talk to it from a test. */
	unsetenv("NOTIFY_SOCKET");
	unsetenv("LISTEN_FDS");
	unsetenv("WATCHDOG_USEC");
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pmemz-test-server-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	chmod(tmpdir, 0755); /* the other-uid test connects too */
	snprintf(sock_path, sizeof(sock_path), "%s/run/sock", tmpdir);

	allow_me[0] = getuid();
	region_conf_init(&rcs[R_TEST], "test", 16, true);
	region_conf_init(&rcs[R_WAIT], "wait", 8, true);
	region_conf_init(&rcs[R_SECRET], "secret", 8, false); /* root only */
	conf.socket_path = sock_path;
	conf.regions = rcs;
	conf.n_regions = N_REGIONS;
	conf.log_level = LOG_WARNING;

	fake_region_reset();
	if (manager_new(&conf, &mgr) < 0 || manager_start(mgr) < 0)
		return -1;
	if (pthread_create(&loop_thread, NULL, loop_main, NULL) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char dir[160];

	snprintf(dir, sizeof(dir), "%s/run", tmpdir);
	(void)rmdir(dir);
	(void)rmdir(tmpdir);
	return 0;
}

/* ---- tests ---- */

static void test_hello(void **state)
{
	int fd = cli_connect();
	Pmemz__Response *resp;

	assert_true(fd >= 0);
	resp = do_hello(fd);
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->op_case, PMEMZ__RESPONSE__OP_HELLO);
	assert_int_equal(resp->hello->version, PMEMZ_PROTO_VERSION);
	assert_string_equal(resp->hello->daemon_version, PMEMZ_VERSION);
	assert_int_equal(resp->hello->uid, getuid());
	assert_int_equal(resp->hello->gid, getgid());
	assert_int_equal(resp->hello->admin, getuid() == 0);
	resp_free(resp);
	close(fd);
}

/*
 * The connection's version is the highest both sides speak, and the daemon
 * states its range; a client from before the ranges gets version 1 and the
 * range it ignores; a client with no version in common is told why, and
 * the connection stays open.
 */
static void test_hello_version_range(void **state)
{
	int fd = cli_connect();
	Pmemz__Response *resp;

	assert_true(fd >= 0);
	resp = hello_range(fd, PMEMZ_PROTO_VERSION, PMEMZ_PROTO_VERSION_MIN,
			   PMEMZ_PROTO_VERSION_MAX + 7);
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->hello->version, PMEMZ_PROTO_VERSION_MAX);
	assert_true(resp->hello->has_min_version && resp->hello->has_max_version);
	assert_int_equal(resp->hello->min_version, PMEMZ_PROTO_VERSION_MIN);
	assert_int_equal(resp->hello->max_version, PMEMZ_PROTO_VERSION_MAX);
	resp_free(resp);

	resp = hello_range(fd, PMEMZ_PROTO_VERSION, 1, 0); /* no range stated */
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->hello->version, PMEMZ_PROTO_VERSION);
	resp_free(resp);

	/* HELLO is answered at any version, with why the ranges do not meet. */
	resp = hello_range(fd, PMEMZ_PROTO_VERSION_MAX + 5, PMEMZ_PROTO_VERSION_MAX + 5,
			   PMEMZ_PROTO_VERSION_MAX + 9);
	assert_int_equal(resp->status, -EPROTO);
	assert_non_null(strstr(resp->message, "no protocol version in common"));
	resp_free(resp);
	resp = hello_range(fd, PMEMZ_PROTO_VERSION_MAX + 5, 1, 0);
	assert_int_equal(resp->status, -EPROTO);
	resp_free(resp);

	resp = do_hello(fd);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	close(fd);
}

/* Our own cgroup v2 path, as the daemon reads it; NULL when there is none. */
static char *self_cgroup(void)
{
	char buf[8192];
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n > 0 ? peer_parse_cgroup(buf, (size_t)n) : NULL;
}

static Pmemz__Response *do_clients(int fd, uint64_t after)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ClientsReq cr = PMEMZ__CLIENTS_REQ__INIT;

	cr.has_after = after != 0;
	cr.after = after;
	req.op_case = PMEMZ__REQUEST__OP_CLIENTS;
	req.clients = &cr;
	return cli_call(fd, &req);
}

/* HELLO and CLIENTS show the identity taken at accept; CLIENTS is an admin's. */
static void test_identity_and_clients(void **state)
{
	_cleanup_free_ char *cg = self_cgroup();
	int fd = cli_connect(), fd2 = cli_connect();
	Pmemz__Response *resp;
	uint64_t lease = 0;
	bool found = false;

	assert_true(fd >= 0 && fd2 >= 0);
	resp = do_hello(fd);
	assert_int_equal(resp->status, 0);
	assert_true(resp->hello->has_pid);
	assert_int_equal(resp->hello->pid, getpid());
	assert_non_null(resp->hello->identity);
	if (cg) {
		assert_non_null(resp->hello->cgroup);
		assert_string_equal(resp->hello->cgroup, cg);
		/* This kernel (6.5+) has SO_PEERPIDFD: never the racy path. */
		assert_true(strncmp(resp->hello->identity, "pidfd", 5) == 0);
	}
	resp_free(resp);
	resp = do_alloc(fd2, "test", MiB, true);
	if (resp->status == 0)
		lease = resp->allocate->lease;
	resp_free(resp);

	resp = do_clients(fd, 0);
	if (getuid() != 0) {
		assert_int_equal(resp->status, -EPERM);
		resp_free(resp);
		close(fd);
		close(fd2);
		return;
	}
	assert_int_equal(resp->status, 0);
	assert_true(resp->clients->n_clients >= 2);
	for (size_t i = 0; i < resp->clients->n_clients; i++) {
		const Pmemz__ClientInfo *ci = resp->clients->clients[i];

		assert_int_equal(ci->pid, getpid());
		assert_true(ci->admin);
		if (cg)
			assert_string_equal(ci->cgroup, cg);
		if (i)
			assert_true(ci->serial > resp->clients->clients[i - 1]->serial);
		if (ci->leases == 1 && ci->leased_bytes == MiB)
			found = true;
	}
	assert_true(found == (lease != 0));
	assert_false(resp->clients->has_next);
	/* Paging: after the last serial, nothing. */
	{
		uint64_t last = resp->clients->clients[resp->clients->n_clients - 1]->serial;
		Pmemz__Response *r2 = do_clients(fd, last);

		assert_int_equal(r2->status, 0);
		assert_int_equal(r2->clients->n_clients, 0);
		resp_free(r2);
	}
	resp_free(resp);
	close(fd2);
	wait_no_leases(fd, "test");
	close(fd);
}

/*
 * admin_cgroups: root outside them is no admin (HELLO, ZEROER, CLIENTS),
 * judged at connect: a connection made before keeps its rights.
 */
static void test_admin_cgroups(void **state)
{
	char *adm[] = {mut("/pmemz-no-such-cgroup")};
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq z = PMEMZ__ZEROER_REQ__INIT;
	Pmemz__Response *resp;
	int before, fd;

	if (getuid() != 0)
		skip();
	/* A reply means the loop accepted the connection: under which conf is then sure. */
	before = cli_connect();
	assert_true(before >= 0);
	resp = do_hello(before);
	assert_true(resp->hello->admin);
	resp_free(resp);
	conf.admin_cgroups = adm;
	conf.n_admin_cgroups = 1;
	fd = cli_connect();
	assert_true(fd >= 0);
	resp = do_hello(fd);
	conf.admin_cgroups = NULL;
	conf.n_admin_cgroups = 0;
	assert_false(resp->hello->admin);
	resp_free(resp);
	z.region = mut("test");
	z.has_pause = true;
	z.pause = false;
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &z;
	resp = cli_call(fd, &req);
	assert_int_equal(resp->status, -EPERM);
	resp_free(resp);
	resp = do_clients(fd, 0);
	assert_int_equal(resp->status, -EPERM);
	resp_free(resp);
	/* The test regions name nobody when we are root: root's pass was an admin's. */
	resp = do_open(fd, "secret", NULL);
	assert_int_equal(resp->status, -EACCES);
	resp_free(resp);
	{
		int passed = -1;

		resp = do_open(before, "secret", &passed);
		assert_int_equal(resp->status, 0);
		resp_free(resp);
		if (passed >= 0)
			close(passed);
	}
	close(fd);
	close(before);
}

static void test_socket_mode(void **state)
{
	struct stat st;

	assert_int_equal(stat(sock_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0666);
}

static void test_second_daemon_refused(void **state)
{
	struct listener *l = NULL;
	int level = log_get_max_level();

	log_set_max_level(LOG_CRIT); /* the refusal is logged as an error */
	assert_int_equal(listener_new(mgr, sock_path, &l), -EADDRINUSE);
	log_set_max_level(level);
	assert_null(l);
}

static void test_open_region(void **state)
{
	int fd = cli_connect(), rfd = -1;
	Pmemz__Response *resp;
	struct stat st;

	resp = do_open(fd, "test", &rfd);
	assert_int_equal(resp->status, 0);
	assert_true(resp->open_region->fd_follows);
	assert_string_equal(resp->open_region->info->name, "test");
	assert_int_equal(resp->open_region->info->size, 16 * MiB);
	assert_int_equal(resp->open_region->info->extent_size, MiB);
	assert_int_equal(resp->open_region->info->extent_count, 16);
	assert_int_equal(resp->open_region->info->uuid.len, 16);
	assert_string_equal(resp->open_region->info->granularity, "page");
	assert_true(rfd >= 0);
	assert_int_equal(fstat(rfd, &st), 0);
	assert_int_equal(st.st_size, 16 * MiB);
	close(rfd);
	resp_free(resp);

	/* Twice on one connection: each reply brings its own fd. */
	rfd = -1;
	resp = do_open(fd, "test", &rfd);
	assert_true(rfd >= 0);
	close(rfd);
	resp_free(resp);

	rfd = -1;
	resp = do_open(fd, "nope", &rfd);
	assert_int_equal(resp->status, -ENOENT);
	assert_string_equal(resp->message, "no region 'nope'");
	assert_int_equal(rfd, -1);
	resp_free(resp);
	close(fd);
}

/* ALLOCATE, COMMIT, LIST, FREE, and every reply after its durable state. */
static void test_allocate_commit_free(void **state)
{
	struct region *r = fake_region_get(R_TEST);
	int fd = cli_connect();
	Pmemz__Response *resp;
	uint64_t lease, lease2, syncs;

	resp = do_alloc(fd, "test", MiB, true);
	assert_int_equal(resp->status, -EAGAIN); /* nothing zeroed yet */
	assert_non_null(resp->message);
	resp_free(resp);

	fake_region_zero(r, 8);
	resp = do_alloc(fd, "test", 2 * MiB - 1, false); /* waits for the zeroer */
	assert_int_equal(resp->status, 0);
	assert_int_equal(runs_total(resp->allocate->runs, resp->allocate->n_runs), 2);
	lease = resp->allocate->lease;
	assert_true(lease > 0);
	/* Group commit: LEASED was durable before the reply left. */
	assert_true(fake_region_durable(r, EXT_LEASED) >= 2);
	resp_free(resp);

	resp = do_alloc(fd, "test", 7 * MiB, true);
	assert_int_equal(resp->status, -EAGAIN); /* 6 zeroed */
	resp_free(resp);
	resp = do_alloc(fd, "test", 1, true);
	assert_int_equal(resp->status, 0);
	assert_int_equal(runs_total(resp->allocate->runs, resp->allocate->n_runs), 1);
	lease2 = resp->allocate->lease;
	assert_true(lease2 > lease);
	assert_int_equal(fake_region_durable(r, EXT_LEASED), 3);
	resp_free(resp);

	resp = do_alloc(fd, "test", 0, true);
	assert_int_equal(resp->status, -EINVAL);
	resp_free(resp);
	resp = do_alloc(fd, "test", 17 * MiB, false);
	assert_int_equal(resp->status, -ENOSPC);
	resp_free(resp);
	resp = do_alloc(fd, "nope", MiB, false);
	assert_int_equal(resp->status, -ENOENT);
	resp_free(resp);

	resp = do_commit(fd, "test", lease, "t1");
	assert_int_equal(resp->status, 0);
	assert_int_equal(fake_region_durable(r, EXT_COMMITTED), 2);
	resp_free(resp);
	resp = do_commit(fd, "test", lease, "t1");
	assert_int_equal(resp->status, -ENOENT); /* the lease is gone */
	resp_free(resp);
	resp = do_commit(fd, "test", lease2, "t1");
	assert_int_equal(resp->status, -EEXIST);
	resp_free(resp);
	resp = do_commit(fd, "test", lease2, "");
	assert_int_equal(resp->status, -EINVAL);
	resp_free(resp);

	resp = do_list(fd, "test", NULL, false);
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->list->n_tags, 1);
	assert_string_equal(resp->list->tags[0]->name, "t1");
	assert_int_equal(resp->list->tags[0]->uid, getuid());
	assert_int_equal(resp->list->tags[0]->bytes, 2 * MiB);
	assert_int_equal(runs_total(resp->list->tags[0]->runs, resp->list->tags[0]->n_runs), 2);
	resp_free(resp);
	resp = do_list(fd, "test", "t1", false);
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->list->n_tags, 1);
	resp_free(resp);
	resp = do_list(fd, "test", "nope", false);
	assert_int_equal(resp->status, -ENOENT);
	resp_free(resp);

	resp = do_free(fd, "test", true, lease2, "t1");
	assert_int_equal(resp->status, -EINVAL); /* both */
	resp_free(resp);
	resp = do_free(fd, "test", false, 0, NULL);
	assert_int_equal(resp->status, -EINVAL); /* neither */
	resp_free(resp);
	resp = do_free(fd, "test", false, 0, "nope");
	assert_int_equal(resp->status, -ENOENT);
	resp_free(resp);

	syncs = fake_region_syncs(r);
	resp = do_free(fd, "test", false, 0, "t1");
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->free->extents, 2);
	assert_int_equal(fake_region_durable(r, EXT_COMMITTED), 0);
	assert_true(fake_region_syncs(r) > syncs);
	resp_free(resp);
	resp = do_free(fd, "test", true, lease2, NULL);
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->free->extents, 1);
	resp_free(resp);
	assert_int_equal(fake_region_durable(r, EXT_LEASED), 0);

	resp = do_list(fd, "test", NULL, false);
	assert_int_equal(resp->list->n_tags, 0);
	resp_free(resp);
	close(fd);
}

/* MOVE of n moves (from[k], ext[k], to[k]); the response. */
static Pmemz__Response *do_move(int fd, const char *region, size_t n, const char *const *from,
				const uint64_t *ext, const char *const *to)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__MoveReq mr = PMEMZ__MOVE_REQ__INIT;
	Pmemz__Move *mv = calloc(n ? n : 1, sizeof(*mv));
	Pmemz__Move **pv = calloc(n ? n : 1, sizeof(*pv));
	Pmemz__Response *resp;

	assert_non_null(mv);
	assert_non_null(pv);
	for (size_t k = 0; k < n; k++) {
		pmemz__move__init(&mv[k]);
		mv[k].from_tag = mut(from[k]);
		mv[k].extent = ext[k];
		mv[k].to_tag = mut(to[k]);
		pv[k] = &mv[k];
	}
	mr.region = mut(region);
	mr.n_moves = n;
	mr.moves = pv;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_MOVE;
	req.move = &mr;
	resp = cli_call(fd, &req);
	free(mv);
	free(pv);
	return resp;
}

/* One tag's extents (LIST), n of them at most; how many. */
static size_t tag_extents(int fd, const char *tag, uint64_t *ext, size_t n)
{
	Pmemz__Response *resp = do_list(fd, "test", tag, false);
	size_t k = 0;

	if (resp->status != 0) {
		resp_free(resp);
		return 0;
	}
	assert_int_equal(resp->list->n_tags, 1);
	for (size_t i = 0; i < resp->list->tags[0]->n_runs; i++) {
		const Pmemz__Run *ru = resp->list->tags[0]->runs[i];

		for (uint64_t e = ru->first; e < ru->first + ru->count; e++, k++)
			if (k < n)
				ext[k] = e;
	}
	resp_free(resp);
	return k;
}

static uint64_t stat_moves(int fd)
{
	Pmemz__Response *resp = do_stat(fd, "test");
	uint64_t n;

	assert_int_equal(resp->status, 0);
	assert_true(resp->stat->regions[0]->has_moves);
	n = resp->stat->regions[0]->moves;
	resp_free(resp);
	return n;
}

/* The caller's USAGE row: committed bytes and tags. */
static void my_usage(int fd, uint64_t *committed, uint64_t *tags)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__UsageReq u = PMEMZ__USAGE_REQ__INIT;
	Pmemz__Response *resp;

	u.region = mut("test");
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_USAGE;
	req.usage = &u;
	resp = cli_call(fd, &req);
	assert_int_equal(resp->status, 0);
	*committed = *tags = 0;
	for (size_t i = 0; i < resp->usage->n_uids; i++)
		if (resp->usage->uids[i]->uid == getuid()) {
			*committed = resp->usage->uids[i]->committed;
			*tags = resp->usage->uids[i]->tags;
		}
	resp_free(resp);
}

static void expect_move(int fd, size_t n, const char *const *from, const uint64_t *ext,
			const char *const *to, int status)
{
	Pmemz__Response *resp = do_move(fd, "test", n, from, ext, to);

	if (resp->status != status)
		fprintf(stderr, "MOVE: %d (%s), expected %d\n", resp->status,
			resp->message ? resp->message : "", status);
	assert_int_equal(resp->status, status);
	if (status)
		assert_non_null(resp->message);
	else
		assert_int_equal(resp->move->moved, n);
	resp_free(resp);
}

/* MOVE: the new tags, the emptied pool gone, every refusal changing nothing. */
static void test_move(void **state)
{
	struct region *r = fake_region_get(R_TEST);
	int fd = cli_connect();
	Pmemz__Response *resp;
	uint64_t ext[4], committed, tags, moves0, x[LAYOUT_MOVE_MAX + 1];
	static const char *from[LAYOUT_MOVE_MAX + 1], *to[LAYOUT_MOVE_MAX + 1];
	static char names[LAYOUT_MOVE_MAX + 1][8];

	(void)state;
	fake_region_zero(r, 8);
	/* Commit the two leases as "pool" (3 extents) and "keep" (1). */
	{
		Pmemz__Response *a = do_alloc(fd, "test", 3 * MiB, false), *b;

		assert_int_equal(a->status, 0);
		b = do_commit(fd, "test", a->allocate->lease, "pool");
		assert_int_equal(b->status, 0);
		resp_free(a);
		resp_free(b);
		a = do_alloc(fd, "test", MiB, false);
		b = do_commit(fd, "test", a->allocate->lease, "keep");
		assert_int_equal(b->status, 0);
		resp_free(a);
		resp_free(b);
	}
	assert_int_equal(tag_extents(fd, "pool", ext, 3), 3);
	assert_int_equal(tag_extents(fd, "keep", ext + 3, 1), 1);
	moves0 = stat_moves(fd);
	my_usage(fd, &committed, &tags);

	for (size_t k = 0; k <= LAYOUT_MOVE_MAX; k++) {
		snprintf(names[k], sizeof(names[k]), "c/%zu", k);
		from[k] = "pool";
		to[k] = names[k];
		x[k] = ext[k % 3];
	}
	/* Refused, each with nothing changed. */
	expect_move(fd, 0, from, x, to, -EINVAL);
	expect_move(fd, LAYOUT_MOVE_MAX + 1, from, x, to, -EINVAL);
	to[1] = names[0];
	expect_move(fd, 2, from, x, to, -EINVAL); /* a repeated name */
	to[1] = names[1];
	x[1] = x[0];
	expect_move(fd, 2, from, x, to, -EINVAL); /* an extent twice */
	x[1] = ext[3];
	expect_move(fd, 2, from, x, to, -EINVAL); /* keep's extent */
	x[1] = 1u << 20;
	expect_move(fd, 2, from, x, to, -EINVAL); /* out of range */
	x[1] = ext[1];
	to[1] = "keep";
	expect_move(fd, 2, from, x, to, -EEXIST);
	to[1] = "bad\x7fname";
	expect_move(fd, 2, from, x, to, -EINVAL);
	to[1] = names[1];
	from[1] = "nope";
	expect_move(fd, 2, from, x, to, -ENOENT);
	from[1] = "pool";
	assert_int_equal(tag_extents(fd, "pool", x, 3), 3);
	assert_int_equal(stat_moves(fd), moves0);

	/* One move: c/0 gets the pool's third extent. */
	x[0] = ext[2];
	expect_move(fd, 1, from, x, to, 0);
	assert_int_equal(tag_extents(fd, "pool", ext, 3), 2);
	assert_int_equal(tag_extents(fd, "c/0", x, 1), 1);
	assert_int_equal(stat_moves(fd), moves0 + 1);
	assert_int_equal(fake_region_durable(r, EXT_COMMITTED), 4);

	/* The last two: the pool is removed in the same request. */
	x[1] = ext[0];
	x[2] = ext[1];
	expect_move(fd, 2, from + 1, x + 1, to + 1, 0);
	resp = do_list(fd, "test", "pool", false);
	assert_int_equal(resp->status, -ENOENT);
	resp_free(resp);
	assert_int_equal(stat_moves(fd), moves0 + 2);
	{
		uint64_t c2, t2;

		my_usage(fd, &c2, &t2);
		assert_int_equal(c2, committed); /* the same extents, still committed */
		assert_int_equal(t2, tags + 2);	 /* pool gone, c/0..c/2 new */
	}
	for (int k = 0; k < 3; k++) {
		resp = do_free(fd, "test", false, 0, names[k]);
		assert_int_equal(resp->status, 0);
		resp_free(resp);
	}
	resp = do_free(fd, "test", false, 0, "keep");
	resp_free(resp);
	close(fd);
}

/* A waiting ALLOCATE does not hold up the requests behind it. */
static void test_pipelining(void **state)
{
	struct region *r = fake_region_get(R_WAIT);
	int fd = cli_connect();
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__HelloReq h = PMEMZ__HELLO_REQ__INIT;
	Pmemz__Response *resp;
	bool seen2 = false, seen3 = false;

	send_alloc(fd, 1, "wait", 3 * MiB, false);
	send_noop(fd, 2, "ping", 4);
	req.id = 3;
	req.op_case = PMEMZ__REQUEST__OP_HELLO;
	req.hello = &h;
	cli_send(fd, &req);
	for (int i = 0; i < 2; i++) {
		resp = cli_recv(fd);
		assert_int_equal(resp->status, 0);
		if (resp->id == 2) {
			assert_int_equal(resp->noop->payload.len, 4);
			assert_memory_equal(resp->noop->payload.data, "ping", 4);
			seen2 = true;
		} else {
			assert_int_equal(resp->id, 3);
			seen3 = true;
		}
		resp_free(resp);
	}
	assert_true(seen2 && seen3);
	assert_true(fake_region_urgent(r)); /* the zeroer was told */

	fake_region_zero(r, 3);
	resp = cli_recv(fd);
	assert_int_equal(resp->id, 1);
	assert_int_equal(resp->status, 0);
	assert_int_equal(runs_total(resp->allocate->runs, resp->allocate->n_runs), 3);
	resp_free(resp);
	assert_false(fake_region_urgent(r));
	close(fd); /* the lease goes back: 8 DIRTY again */
}

/* Waiters are served in order; one that can no longer fit gets -ENOSPC. */
static void test_waiters_fifo_enospc(void **state)
{
	struct region *r = fake_region_get(R_WAIT);
	int a = cli_connect(), b = cli_connect(), c;
	Pmemz__Response *resp;

	/* All 8 extents DIRTY (zeroed ones from the last test were leased). */
	wait_no_leases(a, "wait");
	resp = do_stat(a, "wait");
	assert_int_equal(resp->stat->regions[0]->zeroed, 0);
	assert_int_equal(resp->stat->regions[0]->dirty, 8);
	resp_free(resp);

	send_alloc(a, 10, "wait", 6 * MiB, false);
	send_alloc(b, 20, "wait", 4 * MiB, false);
	resp = do_alloc(b, "wait", MiB, true);
	assert_int_equal(resp->status, -EAGAIN);
	resp_free(resp);
	resp = do_alloc(b, "wait", 9 * MiB, false);
	assert_int_equal(resp->status, -ENOSPC);
	resp_free(resp);
	resp = do_stat(b, "wait");
	assert_int_equal(resp->stat->regions[0]->waiters, 2);
	resp_free(resp);

	fake_region_zero(r, 8);
	resp = cli_recv(a);
	assert_int_equal(resp->id, 10);
	assert_int_equal(resp->status, 0);
	assert_int_equal(runs_total(resp->allocate->runs, resp->allocate->n_runs), 6);
	resp_free(resp);
	resp = cli_recv(b);
	assert_int_equal(resp->id, 20);
	assert_int_equal(resp->status, -ENOSPC);
	resp_free(resp);
	close(a); /* 6 DIRTY + 2 ZEROED */
	wait_no_leases(b, "wait");

	/* A waiter that disconnects is dropped and takes nothing. */
	c = cli_connect();
	send_alloc(c, 30, "wait", 8 * MiB, false);
	resp = do_hello(c); /* the ALLOCATE was processed */
	resp_free(resp);
	assert_true(fake_region_urgent(r));
	close(c);
	wait_until(region_not_urgent, r);
	resp = do_alloc(b, "wait", 2 * MiB, true);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	resp = do_stat(b, "wait");
	assert_int_equal(resp->stat->regions[0]->waiters, 0);
	assert_int_equal(resp->stat->regions[0]->leased, 2);
	resp_free(resp);
	close(b);
}

static Pmemz__Response *do_zeroer(int fd, const char *region, bool pause)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq z = PMEMZ__ZEROER_REQ__INIT;

	z.region = mut(region);
	z.has_pause = true;
	z.pause = pause;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &z;
	return cli_call(fd, &req);
}

static bool stat_paused(int fd, const char *region)
{
	Pmemz__Response *resp = do_stat(fd, region);
	bool paused;

	assert_int_equal(resp->status, 0);
	assert_true(resp->stat->regions[0]->has_paused);
	paused = resp->stat->regions[0]->paused;
	resp_free(resp);
	return paused;
}

/*
 * The link wraps calloc (server.cmake): the next reply frame that
 * connection_queue allocates can be made to fail, as out of memory does.
 */
static atomic_bool fail_next_frame;
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	if (n == 1 && size == sizeof(struct out_frame) &&
	    atomic_exchange(&fail_next_frame, false)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

/*
 * A waiter served by the commit pass whose reply cannot be queued: its
 * connection closes (which cancels its waiters) while the waiter is being
 * served.  The lease goes back and the daemon carries on.
 */
static void test_waiter_reply_fails(void **state)
{
	struct region *r = fake_region_get(R_WAIT);
	int c = cli_connect(), d = cli_connect();
	Pmemz__Response *resp;

	send_alloc(c, 40, "wait", 8 * MiB, false);
	resp = do_hello(c); /* the ALLOCATE was processed */
	resp_free(resp);
	resp = do_stat(d, "wait");
	assert_int_equal(resp->stat->regions[0]->waiters, 1);
	resp_free(resp);

	atomic_store(&fail_next_frame, true);
	fake_region_zero(r, 8);
	assert_true(cli_eof(c)); /* closed, no reply */
	assert_false(atomic_load(&fail_next_frame));
	wait_no_leases(d, "wait");
	resp = do_stat(d, "wait");
	assert_int_equal(resp->stat->regions[0]->waiters, 0);
	resp_free(resp);
	assert_false(fake_region_urgent(r));

	fake_region_zero(r, 8);
	resp = do_alloc(d, "wait", 8 * MiB, false);
	assert_int_equal(resp->status, 0);
	assert_int_equal(runs_total(resp->allocate->runs, resp->allocate->n_runs), 8);
	resp_free(resp);
	close(c);
	close(d);
	d = cli_connect();
	wait_no_leases(d, "wait");
	close(d);
}

/* ZEROER pause: STAT reports what the region says, per region. */
static void test_zeroer_pause_in_stat(void **state)
{
	Pmemz__Response *resp;
	int fd;

	if (getuid() != 0) {
		print_message("ZEROER is admin only: run as root to test it\n");
		skip();
	}
	fd = cli_connect();
	assert_false(stat_paused(fd, "test"));
	resp = do_zeroer(fd, "test", true);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	assert_true(stat_paused(fd, "test"));
	assert_false(stat_paused(fd, "wait"));
	resp = do_zeroer(fd, "test", false);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	assert_false(stat_paused(fd, "test"));
	close(fd);
}

/* Leases belong to their connection. */
static void test_lease_isolation(void **state)
{
	int a = cli_connect(), b = cli_connect();
	Pmemz__Response *resp;
	uint64_t lease;

	resp = do_alloc(a, "test", MiB, false);
	assert_int_equal(resp->status, 0);
	lease = resp->allocate->lease;
	resp_free(resp);

	resp = do_commit(b, "test", lease, "stolen");
	assert_int_equal(resp->status, -EPERM);
	resp_free(resp);
	resp = do_free(b, "test", true, lease, NULL);
	assert_int_equal(resp->status, -EPERM);
	resp_free(resp);
	resp = do_commit(b, "test", 999999, "x");
	assert_int_equal(resp->status, -ENOENT);
	resp_free(resp);
	resp = do_commit(a, "wait", lease, "x");
	assert_int_equal(resp->status, -EINVAL); /* wrong region */
	resp_free(resp);
	/* Tag names: the media rule, refused with a message before anything changes. */
	resp = do_commit(a, "test", lease,
			 "report\xe2\x80\xae"
			 "fdp.exe"); /* U+202E */
	assert_int_equal(resp->status, -EINVAL);
	assert_non_null(strstr(resp->message, "bidirectional"));
	resp_free(resp);
	resp = do_commit(a, "test", lease, "\xff\xfe");
	assert_int_equal(resp->status, -EINVAL);
	resp_free(resp);
	/* USAGE: the lease is this uid's. */
	{
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__UsageReq u = PMEMZ__USAGE_REQ__INIT;

		u.region = mut("test");
		req.op_case = PMEMZ__REQUEST__OP_USAGE;
		req.usage = &u;
		resp = cli_call(a, &req);
		assert_int_equal(resp->status, 0);
		assert_int_equal(resp->usage->n_uids, 1);
		assert_int_equal(resp->usage->uids[0]->uid, getuid());
		assert_int_equal(resp->usage->uids[0]->leased, MiB);
		assert_false(resp->usage->has_uid_quota);
		resp_free(resp);
	}

	/* A disconnect releases the lease. */
	resp = do_stat(b, "test");
	assert_int_equal(resp->stat->regions[0]->leased, 1);
	resp_free(resp);
	close(a);
	wait_no_leases(b, "test");
	close(b);
}

static Pmemz__Response *do_flush_n(int fd, const char *region, const uint64_t *offlen, size_t n)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FlushReq f = PMEMZ__FLUSH_REQ__INIT;
	Pmemz__ByteRange *br = calloc(n, sizeof(*br));
	Pmemz__ByteRange **brs = calloc(n, sizeof(*brs));
	Pmemz__Response *resp;

	assert_non_null(br);
	assert_non_null(brs);
	for (size_t i = 0; i < n; i++) {
		pmemz__byte_range__init(&br[i]);
		br[i].offset = offlen[2 * i];
		br[i].length = offlen[2 * i + 1];
		brs[i] = &br[i];
	}
	f.region = mut(region);
	f.n_ranges = n;
	f.ranges = brs;
	req.id = next_id++;
	req.op_case = PMEMZ__REQUEST__OP_FLUSH;
	req.flush = &f;
	resp = cli_call(fd, &req);
	free(br);
	free(brs);
	return resp;
}

/* FLUSH: only the caller's own extents, a capped number of ranges (docs/SECURITY.md). */
static void test_flush_ownership(void **state)
{
	struct region *r = fake_region_get(R_TEST);
	int fd = cli_connect(), other = cli_connect();
	Pmemz__Response *resp;
	uint64_t lease, first, off, ranges[2 * 300];

	fake_region_zero(r, 16);
	resp = do_alloc(fd, "test", 2 * MiB, true);
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->allocate->n_runs, 1);
	lease = resp->allocate->lease;
	first = resp->allocate->runs[0]->first;
	resp_free(resp);
	off = first * MiB; /* the fake region's data area starts at 0 */

	/* Its own lease, whole and in parts, overlapping: fine. */
	resp = do_flush(fd, "test", off, 2 * MiB);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	for (size_t i = 0; i < 256; i++) {
		ranges[2 * i] = off + (i % 7) * 4096;
		ranges[2 * i + 1] = MiB + 4096;
	}
	resp = do_flush_n(fd, "test", ranges, 256);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	/* One byte past it, or a range of another connection's lease: -EPERM. */
	resp = do_flush(fd, "test", off, 2 * MiB + 1);
	assert_int_equal(resp->status, -EPERM);
	resp_free(resp);
	resp = do_flush(other, "test", off, 4096);
	assert_int_equal(resp->status, -EPERM);
	assert_non_null(strstr(resp->message, "not in your leases or tags"));
	resp_free(resp);
	/* Over the cap of ranges: -E2BIG, whatever they name. */
	for (size_t i = 0; i < 300; i++) {
		ranges[2 * i] = off;
		ranges[2 * i + 1] = 4096;
	}
	resp = do_flush_n(fd, "test", ranges, 300);
	assert_int_equal(resp->status, -E2BIG);
	resp_free(resp);

	/* Committed under its uid's tag: any connection of that uid may flush it. */
	resp = do_commit(fd, "test", lease, "flush-tag");
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	resp = do_flush(other, "test", off + 4096, MiB);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	resp = do_free(fd, "test", false, 0, "flush-tag");
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	resp = do_flush(fd, "test", off, 4096);
	assert_int_equal(resp->status, -EPERM);
	resp_free(resp);
	close(fd);
	close(other);
}

static void test_flush_and_misc(void **state)
{
	int fd = cli_connect();
	Pmemz__Response *resp;

	resp = do_flush(fd, "test", 0, 0); /* nothing: no extent named */
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	resp = do_flush(fd, "test", 0, 16 * MiB);
	assert_int_equal(resp->status, -EPERM);
	resp_free(resp);
	resp = do_flush(fd, "test", 16 * MiB, 1);
	assert_int_equal(resp->status, -ERANGE);
	resp_free(resp);
	resp = do_flush(fd, "test", UINT64_MAX, 2);
	assert_int_equal(resp->status, -ERANGE);
	resp_free(resp);

	resp = do_stat(fd, NULL);
	assert_int_equal(resp->status, 0);
	assert_string_equal(resp->stat->daemon_version, PMEMZ_VERSION);
	assert_int_equal(resp->stat->n_regions, N_REGIONS);
	assert_true(resp->stat->connections >= 1);
	assert_true(resp->stat->has_group_commits && resp->stat->group_commits > 0);
	/*
	 * The daemon's heap is for admins (root here, unless run as another
	 * user); glibc's, so empty under ASan.
	 */
	assert_int_equal(resp->stat->has_heap_in_use, getuid() == 0);
	if (getuid() == 0 && !PMEMZ_TEST_ASAN)
		assert_true(resp->stat->heap_in_use > 0);
	for (size_t i = 0; i < resp->stat->n_regions; i++) {
		const Pmemz__RegionStat *rs = resp->stat->regions[i];

		/* I3 as the daemon reports it. */
		assert_int_equal(rs->zeroed + rs->dirty + rs->leased + rs->committed + rs->bad,
				 rs->info->extent_count);
	}
	assert_true(resp->stat->regions[R_TEST]->allocations >= 2);
	resp_free(resp);
	resp = do_stat(fd, "nope");
	assert_int_equal(resp->status, -ENOENT);
	resp_free(resp);

	if (getuid() == 0) {
		resp = do_list(fd, "test", NULL, true);
		assert_int_equal(resp->status, 0);
		resp_free(resp);
	}
	close(fd);
}

/* Another uid: no access to regions it is not allowed, no admin calls. */
static int other_user_checks(void)
{
	int fd = cli_connect(), rfd = -1, bad = 0;
	Pmemz__Response *resp;

	if (fd < 0)
		return 1;
	resp = do_hello(fd);
	bad |= resp->hello->uid != getuid() || resp->hello->admin;
	resp_free(resp);
	resp = do_open(fd, "secret", &rfd);
	bad |= (resp->status != -EACCES || rfd >= 0) << 1;
	resp_free(resp);
	resp = do_alloc(fd, "secret", MiB, true);
	bad |= (resp->status != -EACCES) << 2;
	resp_free(resp);
	resp = do_stat(fd, NULL); /* open to everyone, regions not allowed by name only */
	bad |= (resp->status != 0 || resp->stat->has_heap_in_use || resp->stat->has_heap_free)
	       << 3;
	for (size_t i = 0; !resp->status && i < resp->stat->n_regions; i++) {
		const Pmemz__RegionStat *rs = resp->stat->regions[i];

		if (strcmp(rs->info->name, "secret") == 0)
			bad |= (!rs->name_only || *rs->info->path || rs->info->uuid.len ||
				rs->info->extent_count || rs->dirty + rs->zeroed)
			       << 4;
	}
	resp_free(resp);
	close(fd);
	return bad;
}

static void test_other_user(void **state)
{
	pid_t pid;
	int status;

	if (getuid() != 0) {
		/* We are the other user: "secret" is root's only. */
		assert_int_equal(other_user_checks(), 0);
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(OTHER_UID) < 0 || setuid(OTHER_UID) < 0)
			_exit(100);
		_exit(other_user_checks());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* CLAIM: one holder per (region, uid, name), released with its connection. */
static void test_claims(void **state)
{
	int a = cli_connect(), b = cli_connect();
	char msg[256], want[64], name[16];

	assert_int_equal(do_claim(a, "test", "disk", false, NULL, 0), 0);
	assert_int_equal(do_claim(a, "test", "disk", false, NULL, 0), 0);
	assert_int_equal(do_claim(b, "test", "disk", false, msg, sizeof(msg)), -EBUSY);
	(void)snprintf(want, sizeof(want), "pid %d", (int)getpid());
	assert_non_null(strstr(msg, want));
	assert_int_equal(do_claim(b, "wait", "disk", false, NULL, 0), 0); /* another region */
	assert_int_equal(do_claim(b, "test", "disk", true, NULL, 0), -ENOENT);
	assert_int_equal(do_claim(b, "nope", "disk", true, NULL, 0), -ENOENT);
	assert_int_equal(do_claim(a, "test", "disk", true, NULL, 0), 0);
	assert_int_equal(do_claim(a, "test", "disk", true, NULL, 0), -ENOENT);
	assert_int_equal(do_claim(b, "test", "disk", false, NULL, 0), 0);

	/* What may not be claimed. */
	assert_int_equal(do_claim(a, "nope", "x", false, NULL, 0), -ENOENT);
	assert_int_equal(do_claim(a, "", "x", false, NULL, 0), -EINVAL);
	assert_int_equal(do_claim(a, "", "x", true, NULL, 0), -EINVAL);
	assert_int_equal(do_claim(a, "test", "", false, NULL, 0), -EINVAL);
	assert_int_equal(do_claim(a, "test", "a\tb", false, NULL, 0), -EINVAL);
	assert_int_equal(do_claim(a, "test", "\xe2\x80\xae", false, NULL, 0), -EINVAL); /* RLO */
	assert_int_equal(
	    do_claim(a, "test", "0123456789012345678901234567890123456789012345678901234567890123",
		     false, NULL, 0),
	    -EINVAL); /* 64 bytes */
	assert_int_equal(do_claim(a, "test",
				  "012345678901234567890123456789012345678901234567890123456789012",
				  false, NULL, 0),
			 0);
	if (getuid() != 0)
		assert_int_equal(do_claim(a, "secret", "x", false, NULL, 0), -EACCES);

	/* The cap per connection, counted over regions. */
	for (int i = 1; i < 64; i++) {
		(void)snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(do_claim(a, i % 2 ? "test" : "wait", name, false, NULL, 0), 0);
	}
	assert_int_equal(do_claim(a, "test", "more", false, NULL, 0), -EMFILE);
	assert_int_equal(do_claim(a, "test", "n1", false, NULL, 0), 0); /* held */
	assert_int_equal(do_claim(a, "test", "n1", true, NULL, 0), 0);
	assert_int_equal(do_claim(a, "test", "more", false, NULL, 0), 0);
	assert_int_equal(do_claim(a, "test", "n1", false, NULL, 0), -EMFILE);

	/* A closed holder's claims are free for the next request. */
	close(b);
	assert_int_equal(do_claim(a, "test", "disk", true, NULL, 0), -ENOENT);
	b = cli_connect();
	assert_int_equal(do_claim(b, "test", "disk", false, NULL, 0), 0);
	assert_int_equal(do_claim(b, "test", "more", false, NULL, 0), -EBUSY);
	close(a);
	assert_int_equal(do_claim(b, "test", "more", false, NULL, 0), 0);
	close(b);
}

/* LIST with a prefix and pages. */
static void test_list_pages(void **state)
{
	static const char *const names[] = {"nbd/d/0", "nbd/d/1", "x/0", "nbd/d/2"};
	struct region *r = fake_region_get(R_TEST);
	int fd = cli_connect();
	Pmemz__Response *resp;
	uint64_t second;

	fake_region_zero(r, 4);
	for (size_t i = 0; i < 4; i++) {
		resp = do_alloc(fd, "test", MiB, false);
		assert_int_equal(resp->status, 0);
		{
			uint64_t lease = resp->allocate->lease;

			resp_free(resp);
			resp = do_commit(fd, "test", lease, names[i]);
		}
		assert_int_equal(resp->status, 0);
		resp_free(resp);
	}
	resp = do_list_page(fd, "test", "nbd/d/", 0);
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->list->n_tags, 3);
	assert_false(resp->list->has_next_slot);
	assert_string_equal(resp->list->tags[0]->name, "nbd/d/0");
	assert_string_equal(resp->list->tags[2]->name, "nbd/d/2");
	resp_free(resp);
	resp = do_list_page(fd, "test", NULL, 0);
	assert_int_equal(resp->list->n_tags, 4);
	resp_free(resp);
	/* From the second tag's slot on (slots are ids from 1, in commit order here). */
	resp = do_list_page(fd, "test", "", 1);
	assert_int_equal(resp->list->n_tags, 4);
	resp_free(resp);
	second = 2;
	resp = do_list_page(fd, "test", "", second);
	assert_int_equal(resp->list->n_tags, 3);
	assert_string_equal(resp->list->tags[0]->name, "nbd/d/1");
	resp_free(resp);
	resp = do_list_page(fd, "test", "", UINT32_MAX);
	assert_int_equal(resp->list->n_tags, 0);
	resp_free(resp);
	resp = do_list_page(fd, "test", "", (uint64_t)UINT32_MAX + 1);
	assert_int_equal(resp->status, 0);
	assert_int_equal(resp->list->n_tags, 0);
	assert_false(resp->list->has_next_slot);
	resp_free(resp);
	resp = do_list_page(fd, "test", "", UINT64_MAX);
	assert_int_equal(resp->list->n_tags, 0);
	resp_free(resp);
	/* Unpaged: the prefix too; a named tag outside the prefix is not listed. */
	{
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__ListReq l = PMEMZ__LIST_REQ__INIT;

		l.region = mut("test");
		l.prefix = mut("x/");
		req.id = next_id++;
		req.op_case = PMEMZ__REQUEST__OP_LIST;
		req.list = &l;
		resp = cli_call(fd, &req);
		assert_int_equal(resp->status, 0);
		assert_int_equal(resp->list->n_tags, 1);
		assert_false(resp->list->has_next_slot);
		resp_free(resp);
		l.tag = mut("nbd/d/0");
		req.id = next_id++;
		resp = cli_call(fd, &req);
		assert_int_equal(resp->status, -ENOENT);
		resp_free(resp);
	}
	for (size_t i = 0; i < 4; i++) {
		resp = do_free(fd, "test", false, 0, names[i]);
		assert_int_equal(resp->status, 0);
		resp_free(resp);
	}
	close(fd);
}

/*
 * A LIST that takes several steps (slow tag reads: about 3 tags per 1 ms
 * step) sees every tag once: a step that ends resumes with the next tag.
 */
static void test_list_sliced(void **state)
{
	enum { N = 10 };
	struct region *r = fake_region_get(R_TEST);
	int fd = cli_connect();
	Pmemz__Response *resp;
	char name[16];
	bool seen[N] = {false};

	fake_region_zero(r, N);
	for (int i = 0; i < N; i++) {
		uint64_t lease;

		resp = do_alloc(fd, "test", MiB, false);
		assert_int_equal(resp->status, 0);
		lease = resp->allocate->lease;
		resp_free(resp);
		(void)snprintf(name, sizeof(name), "s%d", i);
		resp = do_commit(fd, "test", lease, name);
		assert_int_equal(resp->status, 0);
		resp_free(resp);
	}
	fake_region_set_tag_delay(300 * 1000);
	for (int paged = 0; paged < 2; paged++) {
		resp = paged ? do_list_page(fd, "test", "s", 0) : do_list(fd, "test", NULL, false);
		assert_int_equal(resp->status, 0);
		assert_int_equal(resp->list->n_tags, N);
		assert_false(resp->list->has_next_slot);
		memset(seen, 0, sizeof(seen));
		for (size_t i = 0; i < resp->list->n_tags; i++) {
			int k = atoi(resp->list->tags[i]->name + 1);

			assert_true(k >= 0 && k < N && !seen[k]);
			seen[k] = true;
		}
		resp_free(resp);
	}
	fake_region_set_tag_delay(0);
	for (int i = 0; i < N; i++) {
		(void)snprintf(name, sizeof(name), "s%d", i);
		resp = do_free(fd, "test", false, 0, name);
		assert_int_equal(resp->status, 0);
		resp_free(resp);
	}
	close(fd);
}

/* A failed region takes no claims; releasing needs no region. */
static void test_claim_failed_region(void **state)
{
	int fd = cli_connect();

	assert_int_equal(do_claim(fd, "wait", "disk", false, NULL, 0), -EIO);
	assert_int_equal(do_claim(fd, "wait", "disk", true, NULL, 0), -ENOENT);
	assert_int_equal(do_claim(fd, "test", "disk", false, NULL, 0), 0);
	assert_int_equal(do_claim(fd, "test", "disk", true, NULL, 0), 0);
	close(fd);
}

static void expect_protocol_error(const void *bytes, size_t len, uint64_t id, int status)
{
	int fd = cli_connect();
	Pmemz__Response *resp;

	assert_int_equal(write_all(fd, bytes, len), 0);
	resp = cli_recv(fd);
	assert_int_equal(resp->id, id);
	assert_int_equal(resp->status, status);
	assert_non_null(resp->message);
	resp_free(resp);
	assert_true(cli_eof(fd)); /* and the connection is closed */
	close(fd);
}

static void test_protocol_errors(void **state)
{
	static const uint8_t oversize[] = {0x01, 0x00, 0x01, 0x00}; /* 64 KiB + 1 */
	static const uint8_t empty[] = {0, 0, 0, 0};
	static const uint8_t garbage[] = {5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff};
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__Response *resp;
	uint8_t *frame;
	size_t len;
	int fd;

	expect_protocol_error(oversize, sizeof(oversize), 0, -EMSGSIZE);
	expect_protocol_error(empty, sizeof(empty), 0, -EBADMSG);
	expect_protocol_error(garbage, sizeof(garbage), 0, -EBADMSG);

	req.version = PMEMZ_PROTO_VERSION + 1;
	req.id = 77;
	req.op_case = PMEMZ__REQUEST__OP_NOOP;
	req.noop = &(Pmemz__NoopReq)PMEMZ__NOOP_REQ__INIT;
	assert_int_equal(pmemz_frame_pack_request(&req, &frame, &len), 0);
	expect_protocol_error(frame, len, 77, -EPROTO);
	free(frame);

	/* A request without an operation (a newer client's): error, stay open. */
	fd = cli_connect();
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 78;
	req.op_case = PMEMZ__REQUEST__OP__NOT_SET;
	resp = cli_call(fd, &req);
	assert_int_equal(resp->status, -EOPNOTSUPP);
	resp_free(resp);
	resp = do_hello(fd);
	assert_int_equal(resp->status, 0);
	resp_free(resp);

	/* A frame split over many writes is still one request. */
	req.id = 79;
	req.op_case = PMEMZ__REQUEST__OP_HELLO;
	req.hello = &(Pmemz__HelloReq)PMEMZ__HELLO_REQ__INIT;
	assert_int_equal(pmemz_frame_pack_request(&req, &frame, &len), 0);
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(write_all(fd, frame + i, 1), 0);
		usleep(1000);
	}
	free(frame);
	resp = cli_recv(fd);
	assert_int_equal(resp->id, 79);
	resp_free(resp);
	close(fd);
}

/*
 * A client that writes and does not read: the daemon stops reading it
 * (bounded backlog) and resumes once the client drains its replies.
 */
static void test_backpressure(void **state)
{
	enum { N = 400, PAYLOAD = 60000 };
	uint8_t *payload = calloc(1, PAYLOAD);
	uint8_t *stream = NULL, *frame;
	size_t stream_len = 0, sent = 0, stalled_at = 0, len;
	uint8_t *inbuf = malloc(4 * PAYLOAD);
	size_t in_len = 0;
	uint64_t got = 0;
	int fd = cli_connect();

	assert_non_null(payload);
	assert_non_null(inbuf);
	for (int i = 0; i < N; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__NoopReq n = PMEMZ__NOOP_REQ__INIT;

		n.has_payload = true;
		n.payload.data = payload;
		n.payload.len = PAYLOAD;
		req.version = PMEMZ_PROTO_VERSION;
		req.id = (uint64_t)i + 1;
		req.op_case = PMEMZ__REQUEST__OP_NOOP;
		req.noop = &n;
		assert_int_equal(pmemz_frame_pack_request(&req, &frame, &len), 0);
		stream = realloc(stream, stream_len + len);
		assert_non_null(stream);
		memcpy(stream + stream_len, frame, len);
		stream_len += len;
		free(frame);
	}
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);

	/* Write without reading until the daemon stops taking more. */
	for (int idle = 0; idle < 20 && sent < stream_len;) {
		ssize_t w = send(fd, stream + sent, stream_len - sent, MSG_NOSIGNAL);

		if (w > 0) {
			sent += (size_t)w;
			idle = 0;
		} else {
			assert_true(errno == EAGAIN);
			idle++;
			usleep(10000);
		}
	}
	stalled_at = sent;
	assert_true(stalled_at < stream_len / 2);

	/* Now read every reply (in order), writing the rest as room appears. */
	while (got < N) {
		struct pollfd p = {.fd = fd, .events = POLLIN | (sent < stream_len ? POLLOUT : 0)};
		size_t plen;

		assert_true(poll(&p, 1, 5000) > 0);
		if ((p.revents & POLLOUT) && sent < stream_len) {
			ssize_t w = send(fd, stream + sent, stream_len - sent, MSG_NOSIGNAL);

			if (w > 0)
				sent += (size_t)w;
		}
		if (p.revents & POLLIN) {
			ssize_t n = recv(fd, inbuf + in_len, 4 * PAYLOAD - in_len, 0);

			assert_true(n > 0 || errno == EAGAIN);
			if (n > 0)
				in_len += (size_t)n;
		}
		while (in_len >= PMEMZ_FRAME_HDR && pmemz_frame_peek(inbuf, in_len, &plen) == 0 &&
		       plen && in_len >= PMEMZ_FRAME_HDR + plen) {
			Pmemz__Response *resp = NULL;

			assert_int_equal(
			    pmemz_frame_unpack_response(inbuf + PMEMZ_FRAME_HDR, plen, &resp), 0);
			assert_int_equal(resp->status, 0);
			assert_int_equal(resp->id, got + 1);
			assert_int_equal(resp->noop->payload.len, PAYLOAD);
			resp_free(resp);
			got++;
			memmove(inbuf, inbuf + PMEMZ_FRAME_HDR + plen,
				in_len - PMEMZ_FRAME_HDR - plen);
			in_len -= PMEMZ_FRAME_HDR + plen;
		}
	}
	assert_int_equal(sent, stream_len);
	free(stream);
	free(payload);
	free(inbuf);
	close(fd);
}

/* SIGTERM: connections closed (their leases released), loop ends in time. */
static void test_shutdown(void **state)
{
	int fd = cli_connect();
	Pmemz__Response *resp;
	struct timespec t0, t1;
	struct stat st;
	double secs;

	resp = do_alloc(fd, "test", MiB, false);
	assert_int_equal(resp->status, 0);
	resp_free(resp);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(kill(getpid(), SIGTERM), 0);
	assert_int_equal(pthread_join(loop_thread, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_int_equal(loop_result, 0);
	assert_true(secs < 1.0);
	assert_true(cli_eof(fd));
	close(fd);
	assert_int_equal(lstat(sock_path, &st), -1); /* the socket is gone */
	manager_free(mgr);
	mgr = NULL;
}

/*
 * A region that faults goes offline alone: -EIO with the reason for its
 * requests, "failed" in STAT, the others serve.  The fd OPEN_REGION hands
 * out is a description of its own.
 */
static void test_region_failure(void **state)
{
	struct region *w = fake_region_get(R_WAIT), *t = fake_region_get(R_TEST);
	int fd = cli_connect(), rfd = -1;
	Pmemz__Response *resp;

	resp = do_open(fd, "test", &rfd);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	assert_true(rfd >= 0 && rfd != region_get_fd(t));
	assert_int_equal(fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_APPEND), 0);
	assert_false(fcntl(region_get_fd(t), F_GETFL) & O_APPEND);
	close(rfd);

	fake_region_fail(w);
	fake_region_zero(w, 1); /* the loop looks at the region when its zeroer reports */
	for (int i = 0; i < 500; i++) {
		bool failed;

		resp = do_stat(fd, "wait");
		failed = resp->stat->regions[0]->state &&
			 strcmp(resp->stat->regions[0]->state, "failed") == 0;
		if (failed)
			assert_string_equal(resp->stat->regions[0]->failure, "fake fault");
		resp_free(resp);
		if (failed)
			break;
		assert_true(i < 499);
		usleep(10000);
	}
	resp = do_alloc(fd, "wait", MiB, true);
	assert_int_equal(resp->status, -EIO);
	assert_string_equal(resp->message, "region 'wait' has failed: fake fault");
	resp_free(resp);
	resp = do_open(fd, "wait", &rfd);
	assert_int_equal(resp->status, -EIO);
	assert_int_equal(rfd, -1);
	resp_free(resp);

	resp = do_stat(fd, "test");
	assert_string_equal(resp->stat->regions[0]->state, "online");
	assert_null(resp->stat->regions[0]->failure);
	resp_free(resp);
	fake_region_zero(t, 16);
	resp = do_alloc(fd, "test", MiB, false);
	assert_int_equal(resp->status, 0);
	resp_free(resp);
	close(fd);

	/* Another user sees that "secret" failed, not why (the reason names paths). */
	if (getuid() == 0) {
		pid_t pid;
		int status;

		fake_region_fail(fake_region_get(R_SECRET));
		fake_region_zero(fake_region_get(R_SECRET), 1);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			bool seen = false;

			if (setgroups(0, NULL) < 0 || setgid(OTHER_UID) < 0 ||
			    setuid(OTHER_UID) < 0)
				_exit(100);
			fd = cli_connect();
			for (int i = 0; i < 500 && !seen; i++) {
				Pmemz__RegionStat *rs;

				resp = do_stat(fd, "secret");
				rs = resp->stat->regions[0];
				if (rs->state && strcmp(rs->state, "failed") == 0) {
					if (strstr(rs->failure, "fake fault"))
						_exit(1);
					seen = true;
				}
				resp_free(resp);
				usleep(10000);
			}
			_exit(seen ? 0 : 2);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hello),
	    cmocka_unit_test(test_hello_version_range),
	    cmocka_unit_test(test_identity_and_clients),
	    cmocka_unit_test(test_admin_cgroups),
	    cmocka_unit_test(test_socket_mode),
	    cmocka_unit_test(test_second_daemon_refused),
	    cmocka_unit_test(test_open_region),
	    cmocka_unit_test(test_allocate_commit_free),
	    cmocka_unit_test(test_move),
	    cmocka_unit_test(test_pipelining),
	    cmocka_unit_test(test_waiters_fifo_enospc),
	    cmocka_unit_test(test_waiter_reply_fails),
	    cmocka_unit_test(test_zeroer_pause_in_stat),
	    cmocka_unit_test(test_lease_isolation),
	    cmocka_unit_test(test_flush_and_misc),
	    cmocka_unit_test(test_flush_ownership),
	    cmocka_unit_test(test_other_user),
	    cmocka_unit_test(test_protocol_errors),
	    cmocka_unit_test(test_backpressure),
	    cmocka_unit_test(test_claims),
	    cmocka_unit_test(test_list_pages),
	    cmocka_unit_test(test_list_sliced),
	    cmocka_unit_test(test_region_failure),
	    cmocka_unit_test(test_claim_failed_region),
	    cmocka_unit_test(test_shutdown),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
