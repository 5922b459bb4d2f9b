/* SPDX-License-Identifier: MIT */
/*
 * Integration test 4 (I4): a client of another uid (65534, "nobody") cannot
 * open a region it is not allowed (-EACCES) — nor reach it with raw
 * ALLOCATE/LIST/FLUSH/FREE requests that skip OPEN_REGION — cannot see,
 * release or shadow root's tags, and cannot commit or free another
 * connection's lease; on a region that allows it everything works.
 * Needs root (setuid); skipped with 77 otherwise.
 *
 * Documented daemon answers (asserted exactly):
 *   open / any op on a region the uid may not open      -EACCES
 *   FREE of a tag of another uid                        -ENOENT (tags are per uid)
 *   COMMIT / FREE of a lease of another connection      -EPERM  (daemon/server/rpc.c rpc_own_lease;
 *                                                        an unknown lease id is -ENOENT)
 *   LIST all_users by a non-admin                       -EPERM
 */
#include <errno.h>
#include <grp.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB
#define OTHER_UID 65534
#define OTHER_GID 65534

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region private]\n"
			 "path = %s/private.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "allow_users = 0\n"
			 "\n"
			 "[region shared]\n"
			 "path = %s/shared.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "allow_users = root, %d\n",
			 e->dir, e->dir, OTHER_UID);
}

static void drop_privileges(void)
{
	CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	CHILD_CHECK(setgid(OTHER_GID) == 0, "setgid: %s", strerror(errno));
	CHILD_CHECK(setuid(OTHER_UID) == 0, "setuid: %s", strerror(errno));
	CHILD_CHECK(getuid() == OTHER_UID && geteuid() == OTHER_UID, "uid");
}

static int child_raw(const char *sock)
{
	int fd = itest_raw_connect(sock);

	CHILD_CHECK(fd >= 0, "raw connect as uid %d: %s", OTHER_UID, strerror(-fd));
	return fd;
}


static int child_alloc(int fd, const char *region)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;

	a.region = UNCONST(region);
	a.bytes = MIB;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &a;
	return itest_child_call(fd, &req);
}

static int child_list(int fd, const char *region, bool all_users)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ListReq l = PMEMZ__LIST_REQ__INIT;

	l.region = UNCONST(region);
	l.has_all_users = all_users;
	l.all_users = all_users;
	req.op_case = PMEMZ__REQUEST__OP_LIST;
	req.list = &l;
	return itest_child_call(fd, &req);
}

static int child_flush(int fd, const char *region)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FlushReq f = PMEMZ__FLUSH_REQ__INIT;
	Pmemz__ByteRange br = PMEMZ__BYTE_RANGE__INIT;
	Pmemz__ByteRange *brs[1] = {&br};

	br.offset = 0;
	br.length = 4096;
	f.region = UNCONST(region);
	f.n_ranges = 1;
	f.ranges = brs;
	req.op_case = PMEMZ__REQUEST__OP_FLUSH;
	req.flush = &f;
	return itest_child_call(fd, &req);
}

static int child_free_tag(int fd, const char *region, const char *tag)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FreeReq f = PMEMZ__FREE_REQ__INIT;

	f.region = UNCONST(region);
	f.tag = UNCONST(tag);
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &f;
	return itest_child_call(fd, &req);
}

static int child_free_lease(int fd, const char *region, uint64_t lease)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FreeReq f = PMEMZ__FREE_REQ__INIT;

	f.region = UNCONST(region);
	f.has_lease = true;
	f.lease = lease;
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &f;
	return itest_child_call(fd, &req);
}

static int child_commit(int fd, const char *region, uint64_t lease, const char *tag)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__CommitReq c = PMEMZ__COMMIT_REQ__INIT;

	c.region = UNCONST(region);
	c.lease = lease;
	c.tag = UNCONST(tag);
	req.op_case = PMEMZ__REQUEST__OP_COMMIT;
	req.commit = &c;
	return itest_child_call(fd, &req);
}

/* Runs as uid 65534. */
static void child_other_uid(const char *sock, uint64_t root_lease)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	int fd, rc;

	drop_privileges();

	rc = pmemz_client_new(sock, &c);
	CHILD_CHECK(rc == 0, "uid %d cannot connect to the daemon socket: %s (%s)", OTHER_UID,
		    strerror(-rc), pmemz_errormsg());

	/* not allowed: -EACCES, and no handle */
	rc = pmemz_region_open(c, "private", &r);
	CHILD_CHECK(rc == -EACCES, "open private as uid %d: got %d (%s), want -EACCES", OTHER_UID,
		    rc, pmemz_errormsg());
	CHILD_CHECK(r == NULL, "handle set on failure");

	/* raw: skipping OPEN_REGION does not help */
	fd = child_raw(sock);
	{
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__OpenRegionReq o = PMEMZ__OPEN_REGION_REQ__INIT;

		o.region = "private";
		req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
		req.open_region = &o;
		rc = itest_child_call(fd, &req);
		CHILD_CHECK(rc == -EACCES, "raw OPEN_REGION private: %d", rc);
	}
	rc = child_alloc(fd, "private");
	CHILD_CHECK(rc == -EACCES, "raw ALLOCATE on private without open: %d, want -EACCES", rc);
	rc = child_list(fd, "private", false);
	CHILD_CHECK(rc == -EACCES, "raw LIST on private: %d, want -EACCES", rc);
	rc = child_flush(fd, "private");
	CHILD_CHECK(rc == -EACCES, "raw FLUSH on private: %d, want -EACCES", rc);
	rc = child_free_tag(fd, "private", "rootdata");
	CHILD_CHECK(rc == -EACCES, "raw FREE tag on private: %d, want -EACCES", rc);
	rc = child_commit(fd, "private", root_lease, "x");
	CHILD_CHECK(rc == -EACCES, "raw COMMIT on private: %d, want -EACCES", rc);

	/* HELLO: the daemon sees uid 65534, not admin */
	{
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__HelloReq h = PMEMZ__HELLO_REQ__INIT;
		Pmemz__Response *resp = NULL;

		req.version = PMEMZ_PROTO_VERSION;
		req.id = 4242;
		req.op_case = PMEMZ__REQUEST__OP_HELLO;
		req.hello = &h;
		CHILD_CHECK(itest_raw_send(fd, &req) == 0, "send hello");
		CHILD_CHECK(itest_raw_recv(fd, ITEST_RPC_TIMEOUT_MS, &resp, NULL) == 0, "recv");
		CHILD_CHECK(resp->status == 0 && resp->op_case == PMEMZ__RESPONSE__OP_HELLO,
			    "hello status %d", resp->status);
		CHILD_CHECK(resp->hello->uid == OTHER_UID, "hello uid %u", resp->hello->uid);
		CHILD_CHECK(resp->hello->gid == OTHER_GID, "hello gid %u", resp->hello->gid);
		CHILD_CHECK(!resp->hello->admin, "uid %d reported as admin", OTHER_UID);
		itest_resp_free(resp);
	}

	/* allowed region: works */
	rc = pmemz_region_open(c, "shared", &r);
	CHILD_CHECK(rc == 0, "open shared as uid %d: %d (%s)", OTHER_UID, rc, pmemz_errormsg());
	rc = pmemz_alloc_new(r, 2 * MIB, 0, &a);
	CHILD_CHECK(rc == 0, "alloc on shared: %d (%s)", rc, pmemz_errormsg());
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		char *p = pmemz_alloc_range(a, i, &len);

		CHILD_CHECK(itest_first_nonzero(p, len) == (size_t)-1, "I1: non-zero lease");
		memset(p, 0x65, len);
		CHILD_CHECK(pmemz_persist(r, p, len) == 0, "persist");
	}
	rc = pmemz_alloc_commit(a, "nobodydata", 0);
	CHILD_CHECK(rc == 0, "commit nobodydata: %d (%s)", rc, pmemz_errormsg());
	pmemz_alloc_close(a);

	/* root's tag: invisible, cannot be released */
	a = NULL;
	rc = pmemz_alloc_open(r, "rootdata", &a);
	CHILD_CHECK(rc == -ENOENT, "alloc_open of root's tag: %d, want -ENOENT", rc);
	rc = child_free_tag(fd, "shared", "rootdata");
	CHILD_CHECK(rc == -ENOENT, "FREE of root's tag by uid %d: %d, want -ENOENT", OTHER_UID, rc);
	rc = child_list(fd, "shared", true);
	CHILD_CHECK(rc == -EPERM, "LIST all_users by non-admin: %d, want -EPERM", rc);
	{
		/* LIST of our own tags does not show root's */
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__ListReq l = PMEMZ__LIST_REQ__INIT;
		Pmemz__Response *resp = NULL;
		bool mine = false;

		l.region = "shared";
		req.version = PMEMZ_PROTO_VERSION;
		req.id = 4343;
		req.op_case = PMEMZ__REQUEST__OP_LIST;
		req.list = &l;
		CHILD_CHECK(itest_raw_send(fd, &req) == 0, "send list");
		CHILD_CHECK(itest_raw_recv(fd, ITEST_RPC_TIMEOUT_MS, &resp, NULL) == 0, "recv");
		CHILD_CHECK(resp->status == 0, "LIST own tags: %d", resp->status);
		for (size_t i = 0; i < resp->list->n_tags; i++) {
			CHILD_CHECK(resp->list->tags[i]->uid == OTHER_UID,
				    "LIST shows tag '%s' of uid %u", resp->list->tags[i]->name,
				    resp->list->tags[i]->uid);
			if (strcmp(resp->list->tags[i]->name, "nobodydata") == 0)
				mine = true;
		}
		CHILD_CHECK(mine, "LIST misses our own tag");
		itest_resp_free(resp);
	}
	/* same name as root's tag: a separate tag in our own namespace */
	rc = pmemz_alloc_new(r, MIB, 0, &a);
	CHILD_CHECK(rc == 0, "alloc: %d", rc);
	rc = pmemz_alloc_commit(a, "rootdata", 0);
	CHILD_CHECK(rc == 0, "commit own 'rootdata': %d (%s)", rc, pmemz_errormsg());
	rc = pmemz_alloc_release(a);
	CHILD_CHECK(rc == 0, "release own 'rootdata': %d (%s)", rc, pmemz_errormsg());

	/* root's live lease on another connection: no commit, no free */
	rc = child_commit(fd, "shared", root_lease, "stolen");
	CHILD_CHECK(rc == -EPERM, "COMMIT of another connection's lease: %d, want -EPERM", rc);
	rc = child_free_lease(fd, "shared", root_lease);
	CHILD_CHECK(rc == -EPERM, "FREE of another connection's lease: %d, want -EPERM", rc);

	close(fd);
	pmemz_region_close(r);
	pmemz_client_free(c);
	_exit(0);
}

static void test_other_uid(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	struct stat sst;
	uint64_t lease = 0;
	int raw, raw2;
	pid_t pid;

	write_conf(e);
	assert_int_equal(chmod(e->dir, 0711), 0);
	itest_daemon_start(e);
	assert_int_equal(stat(e->sock, &sst), 0);
	print_message("socket mode %o owner %u\n", sst.st_mode & 07777, sst.st_uid);

	/* root: a committed tag on shared, and a live lease on a raw connection */
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "shared", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 3 * MIB, 0, &a), 0);
	itest_fill_alloc(r, a, 4);
	assert_int_equal(pmemz_alloc_commit(a, "rootdata", PMEMZ_COMMIT_FLUSH), 0);
	pmemz_alloc_close(a);

	raw = itest_raw_connect(e->sock);
	assert_true(raw >= 0);
	assert_int_equal(itest_raw_open(raw, "shared"), 0);
	assert_int_equal(itest_raw_alloc(raw, "shared", 2 * MIB, false, &lease), 0);

	/* another connection of the same uid cannot take the lease either */
	raw2 = itest_raw_connect(e->sock);
	assert_true(raw2 >= 0);
	assert_int_equal(itest_raw_commit(raw2, "shared", lease, "stolen", false), -EPERM);
	assert_int_equal(itest_raw_free_lease(raw2, "shared", lease), -EPERM);
	/* the lease named with another region than its own */
	assert_int_equal(itest_raw_open(raw, "private"), 0);
	assert_int_equal(itest_raw_commit(raw, "private", lease, "wrong-region", false), -EINVAL);
	close(raw2);

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(raw);
		child_other_uid(e->sock, lease);
	}
	itest_wait_child_ok(pid, 30000, "uid 65534 client");

	/* root's things are untouched */
	itest_stat(e->sock, "shared", &st);
	itest_assert_accounting(&st, "after the other uid");
	assert_int_equal(st.leased, 2);
	assert_int_equal(st.committed, 3 + 2); /* rootdata + nobodydata */
	assert_int_equal(pmemz_alloc_open(r, "rootdata", &a), 0);
	assert_int_equal(pmemz_alloc_size(a), 3 * MIB);
	itest_check_alloc(r, a, 4);
	pmemz_alloc_close(a);
	/* root does not see nobody's tag through the per-uid API either */
	assert_int_equal(pmemz_alloc_open(r, "nobodydata", &a), -ENOENT);
	/* the lease is still its owner's */
	assert_int_equal(itest_raw_commit(raw, "shared", lease, "rootlease", true), 0);
	close(raw);
	itest_stat(e->sock, "shared", &st);
	assert_int_equal(st.leased, 0);
	assert_int_equal(st.committed, 7);

	/* root may open the root-only region */
	pmemz_region_close(r);
	assert_int_equal(pmemz_region_open(c, "private", &r), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* A --region on the command line is open to the daemon's uid (root here) only. */
static void child_cli_region(const char *sock)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	int rc;

	drop_privileges();
	rc = pmemz_client_new(sock, &c);
	CHILD_CHECK(rc == 0, "connect: %d (%s)", rc, pmemz_errormsg());
	rc = pmemz_region_open(c, "cli", &r);
	CHILD_CHECK(rc == -EACCES, "open of a --region by uid %d: %d, want -EACCES", OTHER_UID, rc);
	pmemz_client_free(c);
	_exit(0);
}

static void test_cli_region_private(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	pid_t pid;

	itest_cli_region(e, "cli", "32M");
	assert_int_equal(chmod(e->dir, 0711), 0);
	itest_daemon_start(e);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_cli_region(e->sock);
	itest_wait_child_ok(pid, 30000, "uid 65534 client on a --region");
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "cli", &r), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_other_uid, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_cli_region_private, itest_setup, itest_teardown),
	};

	if (geteuid() != 0)
		return itest_skip("I4 isolation needs root to run a client as uid 65534");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
