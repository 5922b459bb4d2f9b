/* SPDX-License-Identifier: MIT */
/*
 * Named claims (CLAIM, pmemz_region_claim): one holder per (region, uid,
 * name), held until released, the region handle closed or the connection
 * gone.
 *
 *  - Two connections of one uid: the second gets -EBUSY naming the
 *    holder's pid; the holder claims again with 0; releasing one not held
 *    is -ENOENT; another region or another name does not conflict.
 *  - Released when the holder's connection closes (raw socket closed),
 *    when the region handle closes, and when the holding process is
 *    killed (SIGKILL).
 *  - Different uids do not conflict (root; uid 65534 in a child).
 *  - At most 64 claims per connection (-EMFILE), invalid names -EINVAL.
 *  - pmemz_client_reconnect: a live client reconnects and keeps its
 *    claims; after a daemon restart it takes them again; one that another
 *    client took meanwhile is -EBUSY, and lost; a handle found stale lost
 *    its claims and gives back nothing when closed.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define OTHER_UID 65534
#define OTHER_GID 65534
#define CLAIMS_MAX 64

static int setup(void **state)
{
	struct itest_env *e;
	int r = itest_setup(state);

	if (r)
		return r;
	e = *state;
	itest_write_conf(e,
			 "[region rc]\n"
			 "path = %s/rc.img\n"
			 "size = 16M\n"
			 "extent_size = 1M\n"
			 "allow_users = root, %d\n"
			 "\n"
			 "[region other]\n"
			 "path = %s/other.img\n"
			 "size = 16M\n"
			 "extent_size = 1M\n",
			 e->dir, OTHER_UID, e->dir);
	itest_daemon_start(e);
	return 0;
}

/* CLAIM over a raw connection (release: give it back). */
static int raw_claim(int fd, const char *region, const char *name, bool release)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ClaimReq cl = PMEMZ__CLAIM_REQ__INIT;

	cl.region = UNCONST(region);
	cl.name = UNCONST(name);
	cl.has_release = release;
	cl.release = release;
	req.op_case = PMEMZ__REQUEST__OP_CLAIM;
	req.claim = &cl;
	return itest_raw_call(fd, &req, NULL);
}

static void open_client(const char *sock, const char *region, struct pmemz_client **c,
			struct pmemz_region **r)
{
	CHECK_RC(pmemz_client_new(sock, c), 0);
	CHECK_RC(pmemz_region_open(*c, region, r), 0);
}

static void close_client(struct pmemz_client *c, struct pmemz_region *r)
{
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void test_exclusive(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c1, *c2;
	struct pmemz_region *r1, *r2, *o2;
	char want[64];

	open_client(e->sock, "rc", &c1, &r1);
	open_client(e->sock, "rc", &c2, &r2);
	CHECK_RC(pmemz_region_open(c2, "other", &o2), 0);

	CHECK_RC(pmemz_region_claim(r1, "nbd/disk"), 0);
	CHECK_RC(pmemz_region_claim(r1, "nbd/disk"), 0); /* the holder again */
	CHECK_RC(pmemz_region_claim(r2, "nbd/disk"), -EBUSY);
	(void)snprintf(want, sizeof(want), "pid %d", (int)getpid());
	if (!strstr(pmemz_errormsg(), want))
		fail_msg("-EBUSY message '%s' does not name the holder (%s)", pmemz_errormsg(),
			 want);
	/* another name, another region: no conflict */
	CHECK_RC(pmemz_region_claim(r2, "nbd/disk2"), 0);
	CHECK_RC(pmemz_region_claim(o2, "nbd/disk"), 0);

	CHECK_RC(pmemz_region_unclaim(r2, "nbd/disk"), -ENOENT); /* not r2's */
	CHECK_RC(pmemz_region_unclaim(r2, "never"), -ENOENT);
	CHECK_RC(pmemz_region_unclaim(r1, "nbd/disk"), 0);
	CHECK_RC(pmemz_region_unclaim(r1, "nbd/disk"), -ENOENT);
	CHECK_RC(pmemz_region_claim(r2, "nbd/disk"), 0);
	CHECK_RC(pmemz_region_claim(r1, "nbd/disk"), -EBUSY);

	/* Closing the region handle gives its claims back. */
	pmemz_region_close(r2);
	CHECK_RC(pmemz_region_claim(r1, "nbd/disk"), 0);
	CHECK_RC(pmemz_region_claim(r1, "nbd/disk2"), 0);

	/* Names: the library's checks, and the daemon's (a raw client). */
	{
		char long_name[CLAIMS_MAX + 1];
		int fd = itest_raw_connect(e->sock);

		memset(long_name, 'x', 64);
		long_name[64] = '\0';
		CHECK_RC(pmemz_region_claim(r1, ""), -EINVAL);
		CHECK_RC(pmemz_region_claim(r1, NULL), -EINVAL);
		CHECK_RC(pmemz_region_claim(r1, long_name), -EINVAL);
		CHECK_RC(pmemz_region_claim(r1, long_name + 1), 0); /* 63 bytes */
		assert_true(fd >= 0);
		assert_int_equal(raw_claim(fd, "rc", long_name, false), -EINVAL);
		assert_int_equal(raw_claim(fd, "rc", "", false), -EINVAL);
		assert_int_equal(raw_claim(fd, "rc", "bad\x01name", false), -EINVAL);
		assert_int_equal(raw_claim(fd, "nosuch", "x", false), -ENOENT);
		assert_int_equal(raw_claim(fd, "rc", long_name + 1, false), -EBUSY);
		close(fd);
	}
	pmemz_region_close(o2);
	pmemz_client_free(c2);
	close_client(c1, r1);
}

static void test_connection_close(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;
	int fd = itest_raw_connect(e->sock);

	assert_true(fd >= 0);
	assert_int_equal(raw_claim(fd, "rc", "held", false), 0);
	assert_int_equal(raw_claim(fd, "rc", "held", false), 0);
	open_client(e->sock, "rc", &c, &r);
	CHECK_RC(pmemz_region_claim(r, "held"), -EBUSY);
	close(fd); /* the claim goes with the connection */
	CHECK_RC(pmemz_region_claim(r, "held"), 0);

	/* A client freed with its region still open: the connection closes all the same. */
	{
		struct pmemz_client *c2;
		struct pmemz_region *r2;

		open_client(e->sock, "rc", &c2, &r2);
		CHECK_RC(pmemz_region_claim(r2, "second"), 0);
		CHECK_RC(pmemz_region_claim(r, "second"), -EBUSY);
		pmemz_client_free(c2);
		CHECK_RC(pmemz_region_claim(r, "second"), 0);
		pmemz_region_close(r2);
	}
	close_client(c, r);
}

static void test_kill(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;
	int pfd[2];
	char want[64], ok;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct pmemz_client *cc;
		struct pmemz_region *cr;
		int rc;

		close(pfd[0]);
		rc = pmemz_client_new(e->sock, &cc);
		CHILD_CHECK(rc == 0, "connect: %s", pmemz_errormsg());
		rc = pmemz_region_open(cc, "rc", &cr);
		CHILD_CHECK(rc == 0, "open: %s", pmemz_errormsg());
		rc = pmemz_region_claim(cr, "nbd/killed");
		CHILD_CHECK(rc == 0, "claim: %s", pmemz_errormsg());
		CHILD_CHECK(write(pfd[1], "y", 1) == 1, "write");
		for (;;)
			pause();
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &ok, 1), 1);
	close(pfd[0]);

	open_client(e->sock, "rc", &c, &r);
	CHECK_RC(pmemz_region_claim(r, "nbd/killed"), -EBUSY);
	(void)snprintf(want, sizeof(want), "pid %d", (int)pid);
	if (!strstr(pmemz_errormsg(), want))
		fail_msg("-EBUSY message '%s' does not name the holder (%s)", pmemz_errormsg(),
			 want);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	/* The kernel closed the holder's socket with the process: free at once. */
	CHECK_RC(pmemz_region_claim(r, "nbd/killed"), 0);
	close_client(c, r);
}

static void test_other_uid(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;
	pid_t pid;

	if (getuid() != 0)
		skip(); /* setuid needs root */
	assert_int_equal(chmod(e->dir, 0711), 0);
	assert_int_equal(chmod(e->sock, 0666), 0);
	open_client(e->sock, "rc", &c, &r);
	CHECK_RC(pmemz_region_claim(r, "shared-name"), 0);

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct pmemz_client *c1, *c2;
		struct pmemz_region *r1, *r2;
		int rc;

		CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
		CHILD_CHECK(setgid(OTHER_GID) == 0, "setgid: %s", strerror(errno));
		CHILD_CHECK(setuid(OTHER_UID) == 0, "setuid: %s", strerror(errno));
		rc = pmemz_client_new(e->sock, &c1);
		CHILD_CHECK(rc == 0, "connect: %s", pmemz_errormsg());
		rc = pmemz_region_open(c1, "rc", &r1);
		CHILD_CHECK(rc == 0, "open: %s", pmemz_errormsg());
		/* root holds "shared-name": another uid's name space */
		rc = pmemz_region_claim(r1, "shared-name");
		CHILD_CHECK(rc == 0, "claim as uid %d: %d %s", OTHER_UID, rc, pmemz_errormsg());
		rc = pmemz_client_new(e->sock, &c2);
		CHILD_CHECK(rc == 0, "connect: %s", pmemz_errormsg());
		rc = pmemz_region_open(c2, "rc", &r2);
		CHILD_CHECK(rc == 0, "open: %s", pmemz_errormsg());
		rc = pmemz_region_claim(r2, "shared-name");
		CHILD_CHECK(rc == -EBUSY, "second claim as uid %d: %d, want -EBUSY", OTHER_UID, rc);
		/* "other" does not allow the uid: no claim there */
		pmemz_region_close(r2);
		rc = pmemz_region_open(c2, "other", &r2);
		CHILD_CHECK(rc == -EACCES, "open other as uid %d: %d", OTHER_UID, rc);
		pmemz_client_free(c2);
		pmemz_region_close(r1);
		pmemz_client_free(c1);
		_exit(0);
	}
	itest_wait_child_ok(pid, 30000, "uid 65534 client");
	/* root's claim is still root's */
	{
		struct pmemz_client *c2;
		struct pmemz_region *r2;

		open_client(e->sock, "rc", &c2, &r2);
		CHECK_RC(pmemz_region_claim(r2, "shared-name"), -EBUSY);
		close_client(c2, r2);
	}
	close_client(c, r);
}

static void test_cap(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r, *o;
	char name[32];

	open_client(e->sock, "rc", &c, &r);
	CHECK_RC(pmemz_region_open(c, "other", &o), 0);
	for (int i = 0; i < CLAIMS_MAX / 2; i++) {
		(void)snprintf(name, sizeof(name), "c%d", i);
		CHECK_RC(pmemz_region_claim(r, name), 0);
		CHECK_RC(pmemz_region_claim(o, name), 0); /* the cap is per connection */
	}
	CHECK_RC(pmemz_region_claim(r, "one-more"), -EMFILE);
	CHECK_RC(pmemz_region_claim(r, "c3"), 0); /* held already: no new claim */
	CHECK_RC(pmemz_region_unclaim(o, "c3"), 0);
	CHECK_RC(pmemz_region_claim(r, "one-more"), 0);
	CHECK_RC(pmemz_region_claim(r, "two-more"), -EMFILE);
	/* Another connection of the same uid has its own cap. */
	{
		struct pmemz_client *c2;
		struct pmemz_region *r2;

		open_client(e->sock, "rc", &c2, &r2);
		CHECK_RC(pmemz_region_claim(r2, "two-more"), 0);
		close_client(c2, r2);
	}
	pmemz_region_close(o);
	close_client(c, r);
}

static void test_reconnect(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c, *c2;
	struct pmemz_region *r, *r2;

	open_client(e->sock, "rc", &c, &r);
	CHECK_RC(pmemz_region_claim(r, "a"), 0);
	CHECK_RC(pmemz_region_claim(r, "b"), 0);

	/* A live client reconnects: its old connection must not be in its way. */
	CHECK_RC(pmemz_client_reconnect(c), 0);
	open_client(e->sock, "rc", &c2, &r2);
	CHECK_RC(pmemz_region_claim(r2, "a"), -EBUSY);
	CHECK_RC(pmemz_region_claim(r2, "b"), -EBUSY);
	close_client(c2, r2);

	/* The daemon restarts: no claims survive it; reconnect takes them again. */
	CHECK_RC(pmemz_region_claim(r, "z"), 0);
	itest_daemon_kill(e);
	itest_daemon_start(e);
	open_client(e->sock, "rc", &c2, &r2);
	CHECK_RC(pmemz_region_claim(r2, "z"), 0); /* before c is back */
	CHECK_RC(pmemz_client_reconnect(c), -EBUSY);
	if (!strstr(pmemz_errormsg(), "'z'"))
		fail_msg("reconnect's -EBUSY message '%s' does not name the claim",
			 pmemz_errormsg());
	CHECK_RC(pmemz_region_claim(r2, "a"), -EBUSY);
	CHECK_RC(pmemz_region_claim(r2, "b"), -EBUSY);
	/* "z" is not c's any more: it was lost */
	CHECK_RC(pmemz_region_unclaim(r, "z"), -ENOENT);
	CHECK_RC(pmemz_region_unclaim(r, "a"), 0);
	CHECK_RC(pmemz_region_claim(r2, "a"), 0);
	close_client(c2, r2);
	close_client(c, r);
}

/*
 * A handle that reconnect found stale (its region re-formatted) lost its
 * claims: closing it must not give back the same name that a new handle
 * of the region took on the new connection.
 */
static void test_stale_handle(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c, *c2;
	struct pmemz_region *r, *fresh, *r2;
	char img[PATH_MAX];

	open_client(e->sock, "rc", &c, &r);
	CHECK_RC(pmemz_region_claim(r, "s"), 0);
	itest_daemon_kill(e);
	itest_path(e, img, sizeof(img), "rc.img");
	assert_int_equal(unlink(img), 0); /* a new region, another uuid, under the name */
	itest_daemon_start(e);
	CHECK_RC(pmemz_client_reconnect(c), -ESTALE);
	CHECK_RC(pmemz_region_open(c, "rc", &fresh), 0);
	CHECK_RC(pmemz_region_claim(fresh, "s"), 0);
	pmemz_region_close(r); /* stale: gives nothing back */
	open_client(e->sock, "rc", &c2, &r2);
	CHECK_RC(pmemz_region_claim(r2, "s"), -EBUSY);
	pmemz_region_close(fresh);
	CHECK_RC(pmemz_region_claim(r2, "s"), 0);
	close_client(c2, r2);
	pmemz_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_exclusive, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_connection_close, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_kill, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_other_uid, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_cap, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_reconnect, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_stale_handle, setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
