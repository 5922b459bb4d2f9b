/* SPDX-License-Identifier: MIT */
/*
 * Tenants by cgroup against the real daemon and real cgroups (cgroup v2:
 * /sys/fs/cgroup/unified on a hybrid host, /sys/fs/cgroup on a pure one).
 * The test makes three child cgroups of its own -- a, b and adm -- moves
 * forked root clients into them by writing cgroup.procs, and removes them
 * after.  Every client is uid 0, so everything that tells them apart is
 * the cgroup:
 *
 *  - tenant = cgroup: a and b get a tenant_quota each (4 MiB): b allocates
 *    its 4 MiB while a holds its own; each is refused with -EDQUOT past it;
 *  - admin_cgroups = .../adm: root in a or b is no admin: ZEROER (pause)
 *    and CLIENTS are refused with -EPERM, while root in adm may; b cannot
 *    FREE the tag a committed (same uid, another tenant: -EPERM);
 *  - pmemzctl usage and metrics (run from adm) show a row per cgroup;
 *    pmemzctl clients shows each connection's cgroup;
 *  - reload: allow_cgroups, admin_cgroups and tenant change; a connection
 *    keeps the cgroup it had at connect, even after its process moved;
 *    tenant does not change while a lease is held;
 *  - waiting allocations of two cgroups of one uid are granted in turn.
 *
 * Needs root and a writable cgroup2 hierarchy: skipped with 77 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define CGROUP2_MAGIC 0x63677270
#define CHILD_MS 20000
#define CGP (2 * PATH_MAX)  /* cgroup directories */
#define CGP2 (3 * PATH_MAX) /* and files in them */

static char cg_root[64];    /* the cgroup2 mount */
static char cg_base[CGP];   /* our directory under it */
static char cg_name[128];   /* its path as /proc/PID/cgroup says it: "/pmemz-itest-N" */
static char cg_origin[CGP]; /* where this process was, to go back */

static void cg_path(char *buf, size_t len, const char *child)
{
	(void)snprintf(buf, len, "%s/%s", cg_name, child);
}

/* Move the calling process into cgroup dir (0 or -errno). */
static int cg_enter(const char *dir)
{
	char path[CGP2];
	int fd, r = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "0\n", 2) != 2)
		r = -errno;
	close(fd);
	return r;
}

static void cg_enter_child(const char *child)
{
	char dir[CGP2];

	(void)snprintf(dir, sizeof(dir), "%s/%s", cg_base, child);
	CHILD_CHECK(cg_enter(dir) == 0, "cannot enter %s: %s", dir, strerror(errno));
}

/* The test process itself into cg_base/child ("" for back where it was). */
static void cg_self(const char *child)
{
	char dir[CGP2];
	int r;

	if (!*child)
		(void)snprintf(dir, sizeof(dir), "%s", cg_origin);
	else
		(void)snprintf(dir, sizeof(dir), "%s/%s", cg_base, child);
	r = cg_enter(dir);
	if (r < 0)
		fail_msg("cannot move into %s: %s", dir, strerror(-r));
}

static const char *cg2_mount(void)
{
	static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};

	for (size_t i = 0; i < 2; i++) {
		struct statfs sf;

		if (statfs(roots[i], &sf) == 0 && sf.f_type == CGROUP2_MAGIC)
			return roots[i];
	}
	return NULL;
}

/* Our own cgroup v2 path ("/..."), from /proc/self/cgroup. */
static bool self_cgroup(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX];
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			(void)snprintf(buf, len, "%s", line + 3);
			found = true;
		}
	fclose(f);
	return found;
}

static void cg_remove(void)
{
	static const char *const kids[] = {"a", "b", "adm"};
	char dir[CGP2];

	if (!cg_base[0])
		return;
	for (size_t i = 0; i < 3; i++) {
		(void)snprintf(dir, sizeof(dir), "%s/%s", cg_base, kids[i]);
		/* Children exited and were reaped: the cgroups are empty; retry while they drain.
		 */
		for (int t = 0; t < 100 && rmdir(dir) < 0 && errno == EBUSY; t++)
			itest_msleep(20);
	}
	(void)rmdir(cg_base);
}

/* 0, or a reason to skip. */
static const char *cg_setup(void)
{
	static const char *const kids[] = {"a", "b", "adm"};
	const char *root = cg2_mount();
	char self[PATH_MAX], dir[CGP2];

	if (!root)
		return "no cgroup2 hierarchy (/sys/fs/cgroup/unified or /sys/fs/cgroup)";
	if (!self_cgroup(self, sizeof(self)))
		return "no cgroup2 line in /proc/self/cgroup";
	(void)snprintf(cg_root, sizeof(cg_root), "%s", root);
	(void)snprintf(cg_origin, sizeof(cg_origin), "%s%s", root,
		       strcmp(self, "/") == 0 ? "" : self);
	(void)snprintf(cg_name, sizeof(cg_name), "/pmemz-itest-%d", (int)getpid());
	(void)snprintf(cg_base, sizeof(cg_base), "%s%s", root, cg_name);
	if (mkdir(cg_base, 0755) < 0) {
		cg_base[0] = '\0';
		return "the cgroup2 hierarchy is not writable";
	}
	for (size_t i = 0; i < 3; i++) {
		(void)snprintf(dir, sizeof(dir), "%s/%s", cg_base, kids[i]);
		if (mkdir(dir, 0755) < 0) {
			cg_remove();
			return "cannot create child cgroups";
		}
	}
	/* Can a process be moved?  (A container may forbid it.) */
	(void)snprintf(dir, sizeof(dir), "%s/adm", cg_base);
	if (cg_enter(dir) < 0 || cg_enter(cg_origin) < 0) {
		cg_remove();
		return "cannot move processes between cgroups (cgroup.procs not writable)";
	}
	return NULL;
}

static void write_conf(struct itest_env *e, const char *admin_cgroups, const char *tenant,
		       const char *allow)
{
	char img[PATH_MAX];

	itest_path(e, img, sizeof(img), "t.img");
	itest_write_conf(e,
			 "[daemon]\n%s%s%s"
			 "[region t]\npath = %s\nsize = 64M\nextent_size = 1M\n"
			 "tenant = %s\ntenant_quota = 4M\n%s\n",
			 admin_cgroups ? "admin_cgroups = " : "",
			 admin_cgroups ? admin_cgroups : "", admin_cgroups ? "\n" : "", img, tenant,
			 allow);
}

static char adm_cg[256], a_cg[256], b_cg[256];

static void start(struct itest_env *e)
{
	cg_path(adm_cg, sizeof(adm_cg), "adm");
	cg_path(a_cg, sizeof(a_cg), "a");
	cg_path(b_cg, sizeof(b_cg), "b");
	write_conf(e, adm_cg, "cgroup", "allow_users = 0");
	itest_daemon_start(e);
}

static int raw_admin_op(int fd, bool clients)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq z = PMEMZ__ZEROER_REQ__INIT;
	Pmemz__ClientsReq c = PMEMZ__CLIENTS_REQ__INIT;

	if (clients) {
		req.op_case = PMEMZ__REQUEST__OP_CLIENTS;
		req.clients = &c;
	} else {
		z.region = UNCONST("t");
		z.has_pause = true;
		z.pause = true;
		req.op_case = PMEMZ__REQUEST__OP_ZEROER;
		req.zeroer = &z;
	}
	return itest_child_call(fd, &req);
}

/* In a child: HELLO says cgroup want, no admin rights (admin_cgroups). */
static int child_connect(const char *sock, const char *want_cg, bool want_admin)
{
	Pmemz__Response *resp = NULL;
	int fd = itest_raw_connect(sock);

	CHILD_CHECK(fd >= 0, "connect: %s", strerror(-fd));
	CHILD_CHECK(itest_raw_hello(fd, &resp) == 0, "hello");
	CHILD_CHECK(resp->hello->cgroup && strcmp(resp->hello->cgroup, want_cg) == 0,
		    "HELLO cgroup '%s', want '%s'", resp->hello->cgroup ? resp->hello->cgroup : "-",
		    want_cg);
	CHILD_CHECK(resp->hello->identity && strcmp(resp->hello->identity, "pid (racy)") != 0,
		    "identity '%s': this kernel has SO_PEERPIDFD", resp->hello->identity);
	CHILD_CHECK(resp->hello->admin == want_admin, "admin %d", resp->hello->admin);
	itest_resp_free(resp);
	return fd;
}

/* Tenant a: its 4 MiB quota, refused past it, a tag committed and kept. */
static void child_a(const char *sock)
{
	uint64_t lease;
	int fd, r;

	cg_enter_child("a");
	fd = child_connect(sock, a_cg, false);
	CHILD_CHECK(itest_raw_open(fd, "t") == 0, "open");
	CHILD_CHECK(itest_raw_alloc(fd, "t", 4 * ITEST_MIB, false, &lease) == 0, "alloc 4M");
	r = itest_raw_alloc(fd, "t", ITEST_MIB, true, NULL);
	CHILD_CHECK(r == -EDQUOT, "alloc past the quota: %d", r);
	CHILD_CHECK(itest_raw_commit(fd, "t", lease, "a-tag", false) == 0, "commit");
	r = raw_admin_op(fd, false);
	CHILD_CHECK(r == -EPERM, "ZEROER pause from a non-admin cgroup: %d", r);
	_exit(0);
}

/* Tenant b, same uid: a quota of its own, a's tag out of reach, no admin rights. */
static void child_b(const char *sock)
{
	uint64_t lease;
	int fd, r;

	cg_enter_child("b");
	fd = child_connect(sock, b_cg, false);
	CHILD_CHECK(itest_raw_open(fd, "t") == 0, "open");
	r = itest_raw_alloc(fd, "t", 4 * ITEST_MIB, false, &lease);
	CHILD_CHECK(r == 0, "b's own 4M while a holds 4M: %d", r);
	r = itest_raw_alloc(fd, "t", ITEST_MIB, true, NULL);
	CHILD_CHECK(r == -EDQUOT, "b past its quota: %d", r);
	r = itest_raw_free_tag(fd, "t", "a-tag");
	CHILD_CHECK(r == -EPERM, "FREE of a's tag by b: %d", r);
	r = raw_admin_op(fd, false);
	CHILD_CHECK(r == -EPERM, "ZEROER pause: %d", r);
	r = raw_admin_op(fd, true);
	CHILD_CHECK(r == -EPERM, "CLIENTS: %d", r);
	CHILD_CHECK(itest_raw_commit(fd, "t", lease, "b-tag", false) == 0, "commit");
	_exit(0);
}

static void run_child(void (*fn)(const char *), const char *sock, const char *what)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		fn(sock);
	itest_wait_child_ok(pid, CHILD_MS, what);
}

static char *ctl(struct itest_env *e, const char *a1, const char *a2, const char *a3)
{
	char *argv[] = {UNCONST(itest_ctl_path()),
			UNCONST("--socket"),
			e->sock,
			UNCONST(a1),
			UNCONST(a2),
			UNCONST(a3),
			NULL};
	char *out = NULL, *err = NULL;
	int st = itest_run(argv, 10000, &out, &err);

	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("pmemzctl %s %s: status %d: %s", a1, a2 ? a2 : "", st, err ? err : "");
	free(err);
	return out;
}

static bool has(const char *hay, const char *needle)
{
	if (strstr(hay, needle))
		return true;
	fprintf(stderr, "missing: %s\n---\n%s---\n", needle, hay);
	return false;
}

/* "KEY": "VALUE" as pmemzctl --json prints it (a static buffer). */
static const char *kv(const char *key, const char *value)
{
	static char buf[512];

	(void)snprintf(buf, sizeof(buf), "\"%s\": \"%s\"", key, value);
	return buf;
}

static void test_two_cgroups_one_uid(void **state)
{
	struct itest_env *e = *state;
	char *out;

	start(e);
	run_child(child_a, e->sock, "tenant a");
	run_child(child_b, e->sock, "tenant b");

	/* The test process as root in adm: an admin, and a positive control for the -EPERMs. */
	cg_self("adm");
	itest_zeroer_pause(e->sock, "t", true);
	itest_zeroer_pause(e->sock, "t", false);
	out = ctl(e, "--json", "usage", "t");
	assert_true(has(out, "\"tenant_key\": \"cgroup\""));
	assert_true(has(out, kv("tenant", a_cg)));
	assert_true(has(out, kv("tenant", b_cg)));
	free(out);
	out = ctl(e, "metrics", NULL, NULL);
	{
		char line[512];

		(void)snprintf(
		    line, sizeof(line),
		    "pmemzerod_tenant_committed_bytes{region=\"t\",tenant=\"%s\",uid=\"0\"} "
		    "4194304\n",
		    a_cg);
		assert_true(has(out, line));
		(void)snprintf(
		    line, sizeof(line),
		    "pmemzerod_tenant_committed_bytes{region=\"t\",tenant=\"%s\",uid=\"0\"} "
		    "4194304\n",
		    b_cg);
		assert_true(has(out, line));
		/* The uid family sums the uid's cgroups. */
		assert_true(
		    has(out, "pmemzerod_uid_committed_bytes{region=\"t\",uid=\"0\"} 8388608\n"));
	}
	free(out);
	out = ctl(e, "--json", "clients", NULL);
	assert_true(has(out, kv("cgroup", adm_cg)));
	assert_true(has(out, "\"admin\": true"));
	free(out);
	cg_self("");
	itest_daemon_stop(e);
}

/* Reload steps of a child: it reads a byte per step from in, answers on out. */
static void child_reload(int in, int out, const char *sock)
{
	Pmemz__Response *resp = NULL;
	char step;
	int fd, r;

	cg_enter_child("b");
	fd = child_connect(sock, b_cg, false);
	CHILD_CHECK(write(out, "1", 1) == 1, "pipe");
	/* Moved to a, then the daemon reloads: still b's connection (identity at connect). */
	cg_enter_child("a");
	CHILD_CHECK(read(in, &step, 1) == 1, "pipe");
	CHILD_CHECK(itest_raw_hello(fd, &resp) == 0, "hello");
	CHILD_CHECK(resp->hello->cgroup && strcmp(resp->hello->cgroup, b_cg) == 0,
		    "after reload: cgroup '%s', want '%s'", resp->hello->cgroup, b_cg);
	/* admin_cgroups now names b: this connection is an admin, judged on b. */
	CHILD_CHECK(resp->hello->admin, "not admin after admin_cgroups = b");
	itest_resp_free(resp);
	r = itest_raw_open(fd, "t");
	CHILD_CHECK(r == 0, "allow_cgroups = b: OPEN_REGION %d", r);
	/* A new connection from a (root, no admin, not in allow_cgroups): refused. */
	{
		int fd2 = child_connect(sock, a_cg, false);

		r = itest_raw_open(fd2, "t");
		CHILD_CHECK(r == -EACCES, "root in a, not allowed: OPEN_REGION %d", r);
	}
	_exit(0);
}

static int log_count(const struct itest_env *e, const char *what)
{
	char *log = itest_read_log(e);
	int n = 0;

	for (const char *p = log; (p = strstr(p, what)); p++)
		n++;
	free(log);
	return n;
}

static void reload(struct itest_env *e)
{
	int before = log_count(e, "Configuration reloaded");

	assert_int_equal(kill(e->pid, SIGHUP), 0);
	for (int i = 0; i < 500 && log_count(e, "Configuration reloaded") == before; i++)
		itest_msleep(20);
	assert_true(log_count(e, "Configuration reloaded") > before);
}

static void test_reload(void **state)
{
	struct itest_env *e = *state;
	int to_child[2], from_child[2];
	char step;
	pid_t pid;
	char *out;

	start(e);
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(from_child), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_reload(to_child[0], from_child[1], e->sock);
	assert_int_equal(read(from_child[0], &step, 1), 1);
	{
		char allow[512];

		/* root only through allow_cgroups now; admins only in b; tenant by uid. */
		(void)snprintf(allow, sizeof(allow), "allow_users = 65534\nallow_cgroups = %s",
			       b_cg);
		write_conf(e, b_cg, "uid", allow);
	}
	reload(e);
	assert_int_equal(write(to_child[1], "2", 1), 1);
	itest_wait_child_ok(pid, CHILD_MS, "reload child");
	close(to_child[0]);
	close(to_child[1]);
	close(from_child[0]);
	close(from_child[1]);

	/* No leases, no waiters: tenant changed to uid (logged as changed, not kept). */
	out = itest_read_log(e);
	assert_true(has(out, "tenant changed"));
	free(out);
	cg_self("b");
	out = ctl(e, "--json", "usage", "t");
	assert_true(has(out, "\"tenant_key\": \"uid\""));
	free(out);

	/*
	 * With a lease held, tenant cannot change: the running key stays.
	 * From b (an admin now), a lease held across the reload.
	 */
	{
		char allow[512];
		uint64_t lease = 0;
		int fd = itest_raw_connect(e->sock);

		assert_true(fd >= 0);
		assert_int_equal(itest_raw_alloc(fd, "t", ITEST_MIB, false, &lease), 0);
		(void)snprintf(allow, sizeof(allow), "allow_users = 65534\nallow_cgroups = %s",
			       b_cg);
		write_conf(e, b_cg, "cgroup", allow);
		reload(e);
		out = itest_read_log(e);
		assert_true(has(out, "tenant cannot change while it has leases"));
		free(out);
		out = ctl(e, "--json", "usage", "t");
		assert_true(has(out, "\"tenant_key\": \"uid\""));
		free(out);
		/* Once the lease is gone, the same file applies. */
		assert_int_equal(itest_raw_free_lease(fd, "t", lease), 0);
		close(fd);
		reload(e);
		out = ctl(e, "--json", "usage", "t");
		assert_true(has(out, "\"tenant_key\": \"cgroup\""));
		free(out);
	}
	cg_self("");
	itest_daemon_stop(e);
}

/* ---- the waiters' round robin is per tenant ---- */

#define N_WAIT 3

static uint64_t send_alloc(int fd, uint64_t id)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;

	a.region = UNCONST("t");
	a.bytes = ITEST_MIB;
	req.version = PMEMZ_PROTO_VERSION;
	req.id = id;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &a;
	assert_int_equal(itest_raw_send(fd, &req), 0);
	return id;
}

/* A connection whose identity is cgroup child (the daemon took it: HELLO says so). */
static int connect_from(struct itest_env *e, const char *child, const char *want)
{
	Pmemz__Response *resp = NULL;
	int fd;

	cg_self(child);
	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	assert_int_equal(itest_raw_hello(fd, &resp), 0);
	assert_non_null(resp->hello->cgroup);
	assert_string_equal(resp->hello->cgroup, want);
	itest_resp_free(resp);
	return fd;
}

/*
 * Two cgroups of one uid queue N_WAIT allocations each, a first, while
 * zeroing is paused; granted, they alternate (a, b, a, b, ...): the turns
 * are per tenant.  Keyed by uid, the same requests would be one FIFO.
 */
static void test_waiters_round_robin(void **state)
{
	struct itest_env *e = *state;
	uint64_t held[128], a_ids[N_WAIT], b_ids[N_WAIT], all[2 * N_WAIT];
	struct itest_stat st;
	char img[PATH_MAX];
	unsigned n = 0;
	int adm, fa, fb, r;

	itest_path(e, img, sizeof(img), "t.img");
	cg_path(adm_cg, sizeof(adm_cg), "adm");
	cg_path(a_cg, sizeof(a_cg), "a");
	cg_path(b_cg, sizeof(b_cg), "b");
	itest_write_conf(e,
			 "[daemon]\nadmin_cgroups = %s\n[region t]\npath = %s\nsize = 32M\n"
			 "extent_size = 1M\ntenant = cgroup\nallow_users = 0\n",
			 adm_cg, img);
	itest_daemon_start(e);
	adm = connect_from(e, "adm", adm_cg);
	itest_wait_zeroed(e->sock, "t", 10000, &st);
	itest_zeroer_pause(e->sock, "t", true);
	/* Every zeroed extent taken, 2 * N_WAIT given back: DIRTY while paused. */
	while (n < 128 && (r = itest_raw_alloc(adm, "t", ITEST_MIB, true, &held[n])) == 0)
		n++;
	assert_true(r == -EAGAIN || r == -ENOSPC);
	assert_true(n >= 2 * N_WAIT);
	for (unsigned i = 0; i < 2 * N_WAIT; i++)
		assert_int_equal(itest_raw_free_lease(adm, "t", held[i]), 0);

	fa = connect_from(e, "a", a_cg);
	fb = connect_from(e, "b", b_cg);
	cg_self("");
	for (unsigned i = 0; i < N_WAIT; i++)
		a_ids[i] = send_alloc(fa, 1000 + i);
	for (unsigned i = 0; i < 200; i++) {
		itest_stat(e->sock, "t", &st);
		if (st.waiters == N_WAIT)
			break;
		itest_msleep(10);
	}
	for (unsigned i = 0; i < N_WAIT; i++)
		b_ids[i] = send_alloc(fb, 2000 + i);
	for (unsigned i = 0; i < 200; i++) {
		itest_stat(e->sock, "t", &st);
		if (st.waiters == 2 * N_WAIT)
			break;
		itest_msleep(10);
	}
	assert_int_equal(st.waiters, 2 * N_WAIT);
	cg_self("adm");
	itest_zeroer_pause(e->sock, "t", false);
	cg_self("");

	for (unsigned i = 0; i < N_WAIT; i++) {
		Pmemz__Response *resp = NULL;

		assert_int_equal(itest_raw_recv(fa, ITEST_RPC_TIMEOUT_MS, &resp, NULL), 0);
		assert_int_equal(resp->status, 0);
		assert_int_equal(resp->id, a_ids[i]);
		a_ids[i] = resp->allocate->lease;
		itest_resp_free(resp);
		assert_int_equal(itest_raw_recv(fb, ITEST_RPC_TIMEOUT_MS, &resp, NULL), 0);
		assert_int_equal(resp->status, 0);
		assert_int_equal(resp->id, b_ids[i]);
		b_ids[i] = resp->allocate->lease;
		itest_resp_free(resp);
	}
	/* Lease ids follow the order of the grants. */
	memcpy(all, a_ids, sizeof(a_ids));
	memcpy(all + N_WAIT, b_ids, sizeof(b_ids));
	for (unsigned i = 0; i < 2 * N_WAIT; i++)
		for (unsigned j = i + 1; j < 2 * N_WAIT; j++)
			if (all[j] < all[i]) {
				uint64_t t = all[i];

				all[i] = all[j];
				all[j] = t;
			}
	for (unsigned i = 0; i < 2 * N_WAIT; i++) {
		const uint64_t *side = i % 2 == 0 ? a_ids : b_ids;
		bool found = false;

		for (unsigned k = 0; k < N_WAIT; k++)
			found |= side[k] == all[i];
		if (!found)
			fail_msg("grant %u (lease %llu) went to %s: not in alternation", i,
				 (unsigned long long)all[i], i % 2 == 0 ? "b" : "a");
	}
	close(fa);
	close(fb);
	close(adm);
	itest_daemon_stop(e);
}

static int teardown(void **state)
{
	/* Back where we were, whatever failed, so that the cgroups can go. */
	(void)cg_enter(cg_origin);
	return itest_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_two_cgroups_one_uid, itest_setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reload, itest_setup, teardown),
	    cmocka_unit_test_setup_teardown(test_waiters_round_robin, itest_setup, teardown),
	};
	const char *why;
	int r;

	if (geteuid() != 0)
		return itest_skip("needs root to make cgroups and move processes into them");
	why = cg_setup();
	if (why)
		return itest_skip(why);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	(void)cg_enter(cg_origin);
	cg_remove();
	return r;
}
