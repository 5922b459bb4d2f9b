/* SPDX-License-Identifier: MIT */
/*
 * Per-uid limits (docs/SECURITY.md).  One uid (65534, "nobody") tries to
 * hold every extent, queue waiters for all free space and fill the tag
 * table; with uid_quota, uid_max_tags and uid_max_waiters set it gets
 * -EDQUOT (with the limit and the usage in the message) while root still
 * allocates within its own quota, and the daemon stays up.  Also:
 *   - waiting allocations of two uids are served in alternation (round
 *     robin), not first come first served;
 *   - committed usage survives a restart (rebuilt from the tag table);
 *   - pmemzctl usage (text and JSON) and the USAGE RPC: an admin sees every
 *     uid, uid 65534 its own row only;
 *   - STAT shows a region uid 65534 may not open by name only;
 *   - COMMIT refuses tag names that are not UTF-8 or carry bidi controls;
 *   - client-chosen strings are escaped in the daemon's log.
 * Needs root (setuid); skipped with 77 otherwise.
 */
#include <errno.h>
#include <grp.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "harness.h"

#define MIB ITEST_MIB
#define OTHER_UID 65534
#define OTHER_GID 65534
#define N_WAIT 3

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region shared]\n"
			 "path = %s/shared.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "allow_users = root, %d\n"
			 "uid_quota = 8M\n"
			 "uid_max_tags = 2\n"
			 "uid_max_waiters = 2\n"
			 "\n"
			 "[region fair]\n"
			 "path = %s/fair.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "allow_users = root, %d\n"
			 "uid_max_waiters = %d\n"
			 "\n"
			 "[region private]\n"
			 "path = %s/private.img\n"
			 "size = 16M\n"
			 "extent_size = 1M\n"
			 "allow_users = root\n",
			 e->dir, OTHER_UID, e->dir, OTHER_UID, N_WAIT, e->dir);
	/* uid 65534 reaches the socket in it. */
	assert_int_equal(chmod(e->dir, 0711), 0);
}

/* Start, and wait for the initial zeroing: nowait allocations then fail only on limits. */
static void start(struct itest_env *e)
{
	struct itest_stat st;

	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "shared", 20000, &st);
	itest_wait_zeroed(e->sock, "fair", 20000, &st);
}

static void drop_privileges(void)
{
	CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	CHILD_CHECK(setgid(OTHER_GID) == 0, "setgid: %s", strerror(errno));
	CHILD_CHECK(setuid(OTHER_UID) == 0, "setuid: %s", strerror(errno));
}

/* ---- raw requests that work in a forked child (no cmocka) ---- */

static uint64_t child_next_id = 1000;

static void alloc_req(Pmemz__Request *req, Pmemz__AllocateReq *a, const char *region,
		      uint64_t bytes, bool nowait)
{
	pmemz__request__init(req);
	pmemz__allocate_req__init(a);
	a->region = UNCONST(region);
	a->bytes = bytes;
	a->has_nowait = true;
	a->nowait = nowait;
	req->version = PMEMZ_PROTO_VERSION;
	req->op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req->allocate = a;
}

/* Send without waiting; the id.  Child-safe. */
static uint64_t send_alloc(int fd, const char *region, uint64_t bytes, bool nowait)
{
	Pmemz__Request req;
	Pmemz__AllocateReq a;
	int r;

	alloc_req(&req, &a, region, bytes, nowait);
	req.id = ++child_next_id;
	r = itest_raw_send(fd, &req);
	CHILD_CHECK(r == 0, "send: %s", strerror(-r));
	return req.id;
}

/* The next response, whatever its id.  Child-safe. */
static Pmemz__Response *recv_any(int fd)
{
	Pmemz__Response *resp = NULL;
	int r = itest_raw_recv(fd, ITEST_RPC_TIMEOUT_MS, &resp, NULL);

	CHILD_CHECK(r == 0, "receive: %s", strerror(-r));
	return resp;
}

/* ALLOCATE and wait for its answer: status, *lease, message copied to msg.  Child-safe. */
static int alloc_wait(int fd, const char *region, uint64_t bytes, bool nowait, uint64_t *lease,
		      char *msg, size_t len)
{
	uint64_t id = send_alloc(fd, region, bytes, nowait);
	Pmemz__Response *resp;
	int r;

	while ((resp = recv_any(fd))->id != id)
		itest_resp_free(resp);
	r = resp->status;
	if (r == 0 && lease)
		*lease = resp->allocate->lease;
	if (msg)
		(void)snprintf(msg, len, "%s", resp->message ? resp->message : "");
	itest_resp_free(resp);
	return r;
}

static int commit_msg(int fd, const char *region, uint64_t lease, const char *tag, char *msg,
		      size_t len)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__CommitReq c = PMEMZ__COMMIT_REQ__INIT;
	Pmemz__Response *resp;
	int r;

	c.region = UNCONST(region);
	c.lease = lease;
	c.tag = UNCONST(tag);
	req.version = PMEMZ_PROTO_VERSION;
	req.id = ++child_next_id;
	req.op_case = PMEMZ__REQUEST__OP_COMMIT;
	req.commit = &c;
	r = itest_raw_send(fd, &req);
	CHILD_CHECK(r == 0, "send: %s", strerror(-r));
	while ((resp = recv_any(fd))->id != req.id)
		itest_resp_free(resp);
	r = resp->status;
	if (msg)
		(void)snprintf(msg, len, "%s", resp->message ? resp->message : "");
	itest_resp_free(resp);
	return r;
}

/* Allocate 1 MiB (nowait) until refused; the number granted, the refusal in *status/msg. */
static unsigned alloc_until_refused(int fd, const char *region, uint64_t *leases, unsigned max,
				    int *status, char *msg, size_t len)
{
	unsigned n = 0;

	for (;;) {
		uint64_t l = 0;
		int r = alloc_wait(fd, region, MIB, true, &l, msg, len);

		if (r < 0) {
			*status = r;
			return n;
		}
		CHILD_CHECK(n < max, "more than %u allocations granted", max);
		leases[n++] = l;
	}
}

/* ---- a child of uid 65534, in step with the parent over two pipes ---- */

struct other {
	pid_t pid;
	int to_child, from_child;
};

static void other_start(struct other *o, void (*fn)(const char *sock, int in, int out),
			const char *sock)
{
	int down[2], up[2];

	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	o->pid = fork();
	assert_true(o->pid >= 0);
	if (o->pid == 0) {
		(void)close(down[1]);
		(void)close(up[0]);
		drop_privileges();
		fn(sock, down[0], up[1]);
		_exit(0);
	}
	(void)close(down[0]);
	(void)close(up[1]);
	o->to_child = down[1];
	o->from_child = up[0];
}

/* Wait for the child's next report (a 64-bit value). */
static uint64_t other_read(struct other *o)
{
	uint64_t v = 0;

	assert_int_equal(read(o->from_child, &v, sizeof(v)), (ssize_t)sizeof(v));
	return v;
}

static void other_finish(struct other *o, const char *what)
{
	(void)close(o->to_child);
	itest_wait_child_ok(o->pid, 30000, what);
	(void)close(o->from_child);
}

static void child_report(int out, uint64_t v)
{
	CHILD_CHECK(write(out, &v, sizeof(v)) == (ssize_t)sizeof(v), "report");
}

static void child_wait_parent(int in)
{
	char c;

	(void)!read(in, &c, 1); /* EOF: the parent is done */
}

/*
 * The hog: as many extents as it can get, then two tags, then a third;
 * reports how many it got and keeps its leases until the parent is done.
 */
/* Connect and allocate in "shared" until -EDQUOT; the fd, *n leases granted. */
static int fill_quota(const char *sock, uint64_t *leases, unsigned *n, char *msg, size_t len)
{
	int fd = itest_raw_connect(sock);
	int status = 0;

	CHILD_CHECK(fd >= 0, "connect: %s", strerror(-fd));
	*n = alloc_until_refused(fd, "shared", leases, 64, &status, msg, len);
	CHILD_CHECK(status == -EDQUOT, "refused with %d (%s), not -EDQUOT", status, msg);
	return fd;
}

static void hog(const char *sock, int in, int out)
{
	uint64_t leases[64];
	char msg[256];
	int fd, status;
	unsigned n;

	fd = fill_quota(sock, leases, &n, msg, sizeof(msg));
	CHILD_CHECK(strstr(msg, "uid_quota 8.0 MiB") && strstr(msg, "in use 8.0 MiB"),
		    "message without the quota and the usage: %s", msg);
	CHILD_CHECK(commit_msg(fd, "shared", leases[0], "hog-1", NULL, 0) == 0, "commit 1");
	CHILD_CHECK(commit_msg(fd, "shared", leases[1], "hog-2", NULL, 0) == 0, "commit 2");
	status = commit_msg(fd, "shared", leases[2], "hog-3", msg, sizeof(msg));
	CHILD_CHECK(status == -EDQUOT && strstr(msg, "uid_max_tags 2, 2 tags committed"),
		    "third tag: %d (%s)", status, msg);
	child_report(out, n);
	child_wait_parent(in);
	(void)close(fd);
}

static void usage_of(int fd, const char *region, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__UsageReq u = PMEMZ__USAGE_REQ__INIT;

	u.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_USAGE;
	req.usage = &u;
	assert_int_equal(itest_raw_call(fd, &req, resp), 0);
	assert_int_equal((*resp)->op_case, PMEMZ__RESPONSE__OP_USAGE);
}

static const Pmemz__UidUsage *usage_row(const Pmemz__Response *resp, uint32_t uid)
{
	for (size_t i = 0; i < resp->usage->n_uids; i++)
		if (resp->usage->uids[i]->uid == uid)
			return resp->usage->uids[i];
	return NULL;
}

static int ctl(char **out, char **err, const char *sock, const char *a1, const char *a2,
	       const char *a3)
{
	char *argv[8] = {UNCONST(itest_ctl_path()),
			 UNCONST("--socket"),
			 UNCONST(sock),
			 UNCONST(a1),
			 UNCONST(a2),
			 UNCONST(a3),
			 NULL};

	return itest_run(argv, 10000, out, err);
}

/* Attack 6 against quotas: the hog is held to its quota, root allocates within its own. */
static void test_hog_held_to_quota(void **state)
{
	struct itest_env *e = *state;
	struct other hog_child;
	Pmemz__Response *resp = NULL;
	const Pmemz__UidUsage *row;
	uint64_t leases[64], got;
	char msg[256];
	int fd, status = 0;
	unsigned n;

	write_conf(e);
	start(e);
	other_start(&hog_child, hog, e->sock);
	got = other_read(&hog_child);
	assert_int_equal(got, 8); /* 8 MiB quota, 1 MiB extents */

	/* Root still gets its own 8 MiB while the hog holds its share, then -EDQUOT. */
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	n = alloc_until_refused(fd, "shared", leases, 64, &status, msg, sizeof(msg));
	assert_int_equal(n, 8);
	assert_int_equal(status, -EDQUOT);
	assert_non_null(strstr(msg, "uid 0 over its quota in region 'shared'"));
	assert_non_null(strstr(msg, "uid_quota 8.0 MiB, in use 8.0 MiB (leased 8.0 MiB"));

	/* The admin sees both uids. */
	usage_of(fd, "shared", &resp);
	assert_true(resp->usage->has_uid_quota);
	assert_int_equal(resp->usage->uid_quota, 8 * MIB);
	assert_int_equal(resp->usage->uid_max_tags, 2);
	assert_int_equal(resp->usage->uid_max_waiters, 2);
	row = usage_row(resp, OTHER_UID);
	assert_non_null(row);
	assert_int_equal(row->leased, 6 * MIB);
	assert_int_equal(row->committed, 2 * MIB);
	assert_int_equal(row->tags, 2);
	row = usage_row(resp, 0);
	assert_non_null(row);
	assert_int_equal(row->leased, 8 * MIB);
	itest_resp_free(resp);

	other_finish(&hog_child, "hog");
	/* The hog's leases went back and were zeroed again: charged to it. */
	for (unsigned i = 0; i < 100; i++) {
		usage_of(fd, "shared", &resp);
		row = usage_row(resp, OTHER_UID);
		assert_non_null(row);
		if (row->rezeroed == 6 * MIB)
			break;
		itest_resp_free(resp);
		resp = NULL;
		itest_msleep(50);
	}
	assert_non_null(resp);
	assert_int_equal(row->leased, 0);
	assert_int_equal(row->rezeroed, 6 * MIB);
	itest_resp_free(resp);
	(void)close(fd);
	itest_daemon_stop(e);
}

/* Committed usage is rebuilt from the tags at the next start. */
static void restarted(const char *sock, int in, int out)
{
	uint64_t leases[64];
	char msg[256];
	int fd, status;
	unsigned n;

	fd = fill_quota(sock, leases, &n, msg, sizeof(msg));
	CHILD_CHECK(strstr(msg, "committed 2.0 MiB"), "message: %s", msg);
	status = commit_msg(fd, "shared", leases[0], "hog-3", msg, sizeof(msg));
	CHILD_CHECK(status == -EDQUOT, "third tag after restart: %d (%s)", status, msg);
	child_report(out, n);
	child_wait_parent(in);
}

static void test_quota_survives_restart(void **state)
{
	struct itest_env *e = *state;
	struct other child;
	Pmemz__Response *resp = NULL;
	const Pmemz__UidUsage *row;
	int fd;

	write_conf(e);
	start(e);
	other_start(&child, hog, e->sock);
	assert_int_equal(other_read(&child), 8);
	other_finish(&child, "hog");
	itest_daemon_stop(e);

	start(e);
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	usage_of(fd, "shared", &resp);
	row = usage_row(resp, OTHER_UID);
	assert_non_null(row);
	assert_int_equal(row->committed, 2 * MIB);
	assert_int_equal(row->tags, 2);
	assert_int_equal(row->leased, 0);
	itest_resp_free(resp);
	other_start(&child, restarted, e->sock);
	assert_int_equal(other_read(&child), 6);
	other_finish(&child, "after restart");
	(void)close(fd);
	itest_daemon_stop(e);
}

/* ---- fairness ---- */

static int zeroer_pause(int fd, const char *region, bool pause)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq z = PMEMZ__ZEROER_REQ__INIT;

	z.region = UNCONST(region);
	z.has_pause = true;
	z.pause = pause;
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &z;
	return itest_raw_call(fd, &req, NULL);
}

/* N_WAIT waiting allocations, one refused beyond uid_max_waiters, then the leases granted. */
static void waiter(const char *sock, int in, int out)
{
	int fd = itest_raw_connect(sock);
	uint64_t ids[N_WAIT + 1];
	unsigned granted = 0;
	Pmemz__Response *resp;

	CHILD_CHECK(fd >= 0, "connect: %s", strerror(-fd));
	for (unsigned i = 0; i <= N_WAIT; i++)
		ids[i] = send_alloc(fd, "fair", MIB, false);
	resp = recv_any(fd);
	CHILD_CHECK(resp->id == ids[N_WAIT] && resp->status == -EDQUOT,
		    "the waiter beyond uid_max_waiters: id %llu status %d (%s)",
		    (unsigned long long)resp->id, resp->status, resp->message ? resp->message : "");
	CHILD_CHECK(strstr(resp->message, "uid_max_waiters 3, 3 allocations waiting"),
		    "message: %s", resp->message);
	itest_resp_free(resp);
	child_report(out, 0); /* queued */
	while (granted < N_WAIT) {
		resp = recv_any(fd);
		CHILD_CHECK(resp->status == 0 && resp->op_case == PMEMZ__RESPONSE__OP_ALLOCATE,
			    "waiter: %d (%s)", resp->status, resp->message ? resp->message : "");
		child_report(out, resp->allocate->lease);
		itest_resp_free(resp);
		granted++;
	}
	child_wait_parent(in);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_waiters_fair(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	struct other child;
	uint64_t held[64], mine[N_WAIT], theirs[N_WAIT], all[2 * N_WAIT];
	int fd, fd2, status = 0;
	unsigned n;

	write_conf(e);
	start(e);
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	assert_int_equal(zeroer_pause(fd, "fair", true), 0);
	/* Take every zeroed extent, give 2 * N_WAIT back: they stay DIRTY while paused. */
	n = alloc_until_refused(fd, "fair", held, 64, &status, NULL, 0);
	assert_int_equal(status, -ENOSPC);
	assert_true(n >= 2 * N_WAIT);
	for (unsigned i = 0; i < 2 * N_WAIT; i++)
		assert_int_equal(itest_raw_free_lease(fd, "fair", held[i]), 0);

	/* uid 65534 queues first, then root. */
	other_start(&child, waiter, e->sock);
	assert_int_equal(other_read(&child), 0);
	fd2 = itest_raw_connect(e->sock);
	assert_true(fd2 >= 0);
	for (unsigned i = 0; i < N_WAIT; i++)
		(void)send_alloc(fd2, "fair", MIB, false);
	for (unsigned i = 0; i < 200; i++) {
		itest_stat(e->sock, "fair", &st);
		if (st.waiters == 2 * N_WAIT)
			break;
		itest_msleep(20);
	}
	assert_int_equal(st.waiters, 2 * N_WAIT);
	assert_int_equal(zeroer_pause(fd, "fair", false), 0);

	for (unsigned i = 0; i < N_WAIT; i++) {
		Pmemz__Response *resp = NULL;

		assert_int_equal(itest_raw_recv(fd2, ITEST_RPC_TIMEOUT_MS, &resp, NULL), 0);
		assert_int_equal(resp->status, 0);
		mine[i] = resp->allocate->lease;
		itest_resp_free(resp);
		theirs[i] = other_read(&child);
	}
	other_finish(&child, "waiter");
	/* Lease ids follow the order of the grants: the uids alternate, 65534 first. */
	memcpy(all, theirs, sizeof(theirs));
	memcpy(all + N_WAIT, mine, sizeof(mine));
	qsort(all, 2 * N_WAIT, sizeof(all[0]), cmp_u64);
	for (unsigned i = 0; i < 2 * N_WAIT; i++) {
		const uint64_t *side = i % 2 == 0 ? theirs : mine;
		bool found = false;

		for (unsigned k = 0; k < N_WAIT; k++)
			found |= side[k] == all[i];
		if (!found)
			fail_msg("grant %u (lease %llu) went to %s: not in alternation", i,
				 (unsigned long long)all[i], i % 2 == 0 ? "root" : "uid 65534");
	}
	(void)close(fd2);
	(void)close(fd);
	itest_daemon_stop(e);
}

/* ---- pmemzctl usage, visibility, STAT, tag names, log ---- */

static void usage_own_row(const char *sock, int in, int out)
{
	int fd = itest_raw_connect(sock);
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__UsageReq u = PMEMZ__USAGE_REQ__INIT;
	Pmemz__StatReq s = PMEMZ__STAT_REQ__INIT;
	Pmemz__Response *resp;
	uint64_t lease = 0;
	char msg[256];
	int r;

	CHILD_CHECK(fd >= 0, "connect: %s", strerror(-fd));
	CHILD_CHECK(alloc_wait(fd, "shared", MIB, true, &lease, NULL, 0) == 0, "allocate");
	/* Tag names: UTF-8 is fine, a right-to-left override or bad UTF-8 is not. */
	r = commit_msg(fd, "shared", lease, "evil\xe2\x80\xaegpj.exe", msg, sizeof(msg));
	CHILD_CHECK(r == -EINVAL && strstr(msg, "bidirectional"), "bidi tag: %d (%s)", r, msg);
	r = commit_msg(fd, "shared", lease, "caf\xe9", msg, sizeof(msg));
	CHILD_CHECK(r == -EINVAL, "Latin-1 tag: %d (%s)", r, msg);
	r = commit_msg(fd, "shared", lease, "caf\xc3\xa9", msg, sizeof(msg));
	CHILD_CHECK(r == 0, "UTF-8 tag: %d (%s)", r, msg);

	u.region = UNCONST("shared");
	req.version = PMEMZ_PROTO_VERSION;
	req.id = ++child_next_id;
	req.op_case = PMEMZ__REQUEST__OP_USAGE;
	req.usage = &u;
	CHILD_CHECK(itest_raw_send(fd, &req) == 0, "send");
	resp = recv_any(fd);
	CHILD_CHECK(resp->status == 0 && resp->usage->n_uids == 1 &&
			resp->usage->uids[0]->uid == OTHER_UID &&
			resp->usage->uids[0]->committed == MIB,
		    "own usage row only: status %d, %zu rows", resp->status,
		    resp->status ? 0 : resp->usage->n_uids);
	itest_resp_free(resp);
	u.region = UNCONST("private");
	req.id = ++child_next_id;
	CHILD_CHECK(itest_raw_send(fd, &req) == 0, "send");
	resp = recv_any(fd);
	CHILD_CHECK(resp->status == -EACCES, "usage of a region not allowed: %d", resp->status);
	itest_resp_free(resp);

	/* STAT: "private" by name only, "shared" in full. */
	req.id = ++child_next_id;
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &s;
	CHILD_CHECK(itest_raw_send(fd, &req) == 0, "send");
	resp = recv_any(fd);
	CHILD_CHECK(resp->status == 0 && resp->stat->n_regions == 3, "stat");
	for (size_t i = 0; i < resp->stat->n_regions; i++) {
		const Pmemz__RegionStat *rs = resp->stat->regions[i];
		bool priv = strcmp(rs->info->name, "private") == 0;

		CHILD_CHECK(rs->has_name_only == priv && rs->name_only == priv,
			    "region %s: name_only %d", rs->info->name, rs->name_only);
		CHILD_CHECK(priv ? (!*rs->info->path && rs->info->uuid.len == 0 &&
				    rs->info->extent_count == 0 && rs->zeroed == 0)
				 : (strstr(rs->info->path, ".img") && rs->info->uuid.len == 16),
			    "region %s: path '%s', uuid %zu bytes", rs->info->name, rs->info->path,
			    rs->info->uuid.len);
	}
	itest_resp_free(resp);
	child_report(out, 0);
	child_wait_parent(in);
}

static void test_usage_and_leaks(void **state)
{
	struct itest_env *e = *state;
	struct other child;
	char *out = NULL, *err = NULL, *log;
	json_object *doc, *uids, *region;
	uint64_t lease = 0;
	bool seen_other = false;
	int fd, st;

	write_conf(e);
	itest_daemon_arg(e, "-v");
	start(e);
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	assert_int_equal(itest_raw_alloc(fd, "shared", 2 * MIB, true, &lease), 0);
	other_start(&child, usage_own_row, e->sock);
	assert_int_equal(other_read(&child), 0);

	/* Text: a row per uid, sizes and the limits. */
	st = ctl(&out, &err, e->sock, "usage", "shared", NULL);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("pmemzctl usage: status %d: %s", st, err);
	assert_non_null(strstr(out, "uid_quota"));
	assert_non_null(strstr(out, "8.0 MiB"));
	assert_non_null(strstr(out, "RE-ZEROED"));
	assert_non_null(strstr(out, "65534"));
	free(out);
	free(err);

	/* JSON: raw numbers. */
	st = ctl(&out, &err, e->sock, "--json", "usage", "shared");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("pmemzctl --json usage: status %d: %s", st, err);
	doc = json_tokener_parse(out);
	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "region", &region));
	assert_string_equal(json_object_get_string(region), "shared");
	assert_true(json_object_object_get_ex(doc, "uids", &uids));
	for (size_t i = 0; i < json_object_array_length(uids); i++) {
		json_object *row = json_object_array_get_idx(uids, i), *v;

		assert_true(json_object_object_get_ex(row, "uid", &v));
		if (json_object_get_int64(v) == 0) {
			assert_true(json_object_object_get_ex(row, "leased", &v));
			assert_int_equal(json_object_get_int64(v), 2 * MIB);
		} else if (json_object_get_int64(v) == OTHER_UID) {
			seen_other = true;
			assert_true(json_object_object_get_ex(row, "committed", &v));
			assert_int_equal(json_object_get_int64(v), MIB);
			assert_true(json_object_object_get_ex(row, "tags", &v));
			assert_int_equal(json_object_get_int64(v), 1);
		}
	}
	assert_true(seen_other);
	json_object_put(doc);
	free(out);
	free(err);
	other_finish(&child, "usage and leaks");

	/* A client-chosen name cannot forge a log line. */
	{
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;

		a.region = UNCONST("nope\nFORGED: pmemzerod lost all data");
		a.bytes = MIB;
		req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		req.allocate = &a;
		assert_int_equal(itest_raw_call(fd, &req, NULL), -ENOENT);
	}
	(void)close(fd);
	itest_daemon_stop(e);
	log = itest_read_log(e);
	assert_non_null(strstr(log, "nope\\x0aFORGED"));
	for (const char *p = log; (p = strchr(p, '\n')); p++)
		if (strncmp(p + 1, "FORGED", 6) == 0)
			fail_msg("a forged line in the log:\n%s", log);
	free(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hog_held_to_quota, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_quota_survives_restart, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_waiters_fair, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_usage_and_leaks, itest_setup, itest_teardown),
	};

	if (geteuid() != 0)
		return itest_skip("needs root to run clients as uid 65534");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
