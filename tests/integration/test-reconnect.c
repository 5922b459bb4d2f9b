/* SPDX-License-Identifier: MIT */
/*
 * Integration test: pmemz_client_reconnect() after the daemon is killed
 * (SIGKILL) and started again.
 *
 *  - While the daemon is down: a call waiting for its answer and the first
 *    call after fail with -ECONNRESET, later ones with -ENOTCONN, each with
 *    a message; reconnecting fails (the daemon is not there) and may be
 *    tried again.
 *  - After the restart, reconnect: the region handle and its mapping stay
 *    (same address), the committed tag's data is intact through the old
 *    handle and through pmemz_alloc_open, the lease that was not committed
 *    is gone (commit -ESTALE, release drops it), new allocations work
 *    through the same region handle and mapping, the reserve forgot its
 *    dead leases and refilled, and nothing leaks (no LEASED extent once
 *    every handle is gone).
 *  - Reconnecting a live client while another thread waits: that call
 *    fails with -ECONNRESET, the old connection's lease and wait go away.
 *  - A region re-formatted while the daemon was down (new uuid): reconnect
 *    says -ESTALE, that handle's calls fail with -ESTALE while its old
 *    mapping stays readable, the other region works, and opening the region
 *    anew works.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB

static void write_conf(struct itest_env *e)
{
	/* Our own group administers: ZEROER (pause) without root. */
	itest_write_conf(e,
			 "[daemon]\n"
			 "admin_group = %u\n"
			 "\n"
			 "[region rc]\n"
			 "path = %s/rc.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "\n"
			 "[region other]\n"
			 "path = %s/other.img\n"
			 "size = 16M\n"
			 "extent_size = 1M\n",
			 (unsigned)getgid(), e->dir, e->dir);
}

struct waiter {
	struct pmemz_region *r;
	struct pmemz_alloc *a;
	int rc;
	char msg[512];
};

static void *waiting_alloc(void *p)
{
	struct waiter *w = p;

	w->rc = pmemz_alloc_new(w->r, 4 * MIB, 0, &w->a);
	(void)snprintf(w->msg, sizeof(w->msg), "%s", pmemz_errormsg());
	return NULL;
}

static void assert_no_leases(const char *sock, const char *region)
{
	struct itest_stat st;

	itest_stat(sock, region, &st);
	itest_assert_accounting(&st, "after the handles are gone");
	if (st.leased)
		fail_msg("region %s: %llu extents still LEASED", region,
			 (unsigned long long)st.leased);
}

static void test_restart(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL, *o = NULL;
	struct pmemz_alloc *kept = NULL, *lost = NULL, *fill = NULL, *again = NULL, *fresh = NULL;
	struct pmemz_alloc *oa = NULL;
	struct pmemz_client *c2 = NULL; /* idle when the daemon dies */
	struct pmemz_region *o2 = NULL;
	struct waiter w = {0};
	struct itest_stat st;
	pthread_t th;
	void *base;
	size_t len, len2;
	void *p, *p2;
	int rc;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "rc", 30000, &st);
	itest_wait_zeroed(e->sock, "other", 30000, &st);

	CHECK_RC(pmemz_client_new(e->sock, &c), 0);
	CHECK_RC(pmemz_region_open(c, "rc", &r), 0);
	CHECK_RC(pmemz_region_open(c, "other", &o), 0);
	base = pmemz_region_address(r);
	CHECK_RC(pmemz_client_new(e->sock, &c2), 0);
	CHECK_RC(pmemz_region_open(c2, "other", &o2), 0);
	/* Two leases of one extent kept ahead by the reserve. */
	CHECK_RC(pmemz_region_set_reserve(r, 2 * MIB), 0);

	CHECK_RC(pmemz_alloc_new(r, 3 * MIB, 0, &kept), 0);
	itest_fill_alloc(r, kept, 7);
	CHECK_RC(pmemz_alloc_commit(kept, "kept", PMEMZ_COMMIT_FLUSH), 0);
	CHECK_RC(pmemz_alloc_new(r, 2 * MIB, 0, &lost), 0);
	itest_fill_alloc(r, lost, 8);
	itest_persist_alloc(r, lost);

	/*
	 * An ALLOCATE that waits (zeroer paused, nothing ZEROED, 4 extents
	 * DIRTY) when the daemon dies.  First the reserve's two leases must
	 * have been granted, so that nothing else takes ZEROED extents.
	 */
	itest_zeroer_pause(e->sock, "rc", true);
	{
		uint64_t deadline = itest_now_ms() + 10000;

		for (itest_stat(e->sock, "rc", &st); st.leased != 2 + 2;
		     itest_stat(e->sock, "rc", &st)) {
			if (itest_now_ms() > deadline)
				fail_msg("%llu extents leased, want 4",
					 (unsigned long long)st.leased);
			itest_msleep(5);
		}
	}
	CHECK_RC(pmemz_alloc_new(r, (st.zeroed - 4) * MIB, PMEMZ_ALLOC_NOWAIT, &fill), 0);
	CHECK_RC(pmemz_alloc_new(r, 4 * MIB, PMEMZ_ALLOC_NOWAIT, &again), 0);
	CHECK_RC(pmemz_alloc_release(again), 0);
	again = NULL;
	w.r = r;
	assert_int_equal(pthread_create(&th, NULL, waiting_alloc, &w), 0);
	{
		uint64_t deadline = itest_now_ms() + 10000;

		do {
			itest_msleep(5);
			itest_stat(e->sock, "rc", &st);
			if (itest_now_ms() > deadline)
				fail_msg("the ALLOCATE did not start waiting");
		} while (st.waiters != 1);
	}

	itest_daemon_kill(e);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (w.rc != -ECONNRESET || !*w.msg)
		fail_msg("waiting ALLOCATE: %d (%s), want -ECONNRESET", w.rc, w.msg);

	/* An idle client learns it from its next send: a reset, then not connected. */
	CHECK_RC(pmemz_alloc_new(o2, MIB, 0, &oa), -ECONNRESET);
	assert_non_null(strstr(pmemz_errormsg(), "closed by the daemon"));
	CHECK_RC(pmemz_alloc_new(o2, MIB, 0, &oa), -ENOTCONN);
	assert_non_null(strstr(pmemz_errormsg(), "pmemz_client_reconnect"));

	/* Down: calls fail with a message; reconnecting fails and may be repeated. */
	rc = pmemz_alloc_new(r, 3 * MIB, 0, &again);
	if (rc != -ECONNRESET && rc != -ENOTCONN)
		fail_msg("ALLOCATE after the kill: %d (%s)", rc, pmemz_errormsg());
	assert_true(*pmemz_errormsg());
	CHECK_RC(pmemz_alloc_open(r, "kept", &again), -ENOTCONN);
	assert_non_null(strstr(pmemz_errormsg(), "pmemz_client_reconnect"));
	CHECK_RC(pmemz_alloc_commit(lost, "late", 0), -ENOTCONN);
	rc = pmemz_client_reconnect(c);
	if (rc != -ECONNREFUSED && rc != -ENOENT)
		fail_msg("reconnect without a daemon: %d (%s)", rc, pmemz_errormsg());
	CHECK_RC(pmemz_alloc_open(r, "kept", &again), -ENOTCONN);

	itest_daemon_start(e);
	CHECK_RC(pmemz_client_reconnect(c), 0);

	CHECK_RC(pmemz_client_reconnect(c2), 0);
	CHECK_RC(pmemz_alloc_new(o2, MIB, 0, &oa), 0);
	itest_assert_alloc_zero(o2, oa);
	pmemz_alloc_close(oa);
	pmemz_region_close(o2);
	pmemz_client_free(c2);

	/* The same handle and mapping; the committed data is there, through both handles. */
	assert_ptr_equal(pmemz_region_address(r), base);
	itest_check_alloc(r, kept, 7);
	CHECK_RC(pmemz_alloc_open(r, "kept", &again), 0);
	assert_int_equal(pmemz_alloc_count(again), pmemz_alloc_count(kept));
	for (size_t i = 0; i < pmemz_alloc_count(kept); i++) {
		p = pmemz_alloc_range(kept, i, &len);
		p2 = pmemz_alloc_range(again, i, &len2);
		assert_ptr_equal(p, p2);
		assert_int_equal(len, len2);
	}
	itest_check_alloc(r, again, 7);

	/* The leases died with the old connection. */
	CHECK_RC(pmemz_alloc_commit(lost, "late", 0), -ESTALE);
	CHECK_RC(pmemz_alloc_release(lost), 0);
	pmemz_alloc_close(fill);

	/* New allocations through the same handle and mapping (zeroing runs again). */
	CHECK_RC(pmemz_alloc_new(r, 5 * MIB, 0, &fresh), 0);
	itest_assert_alloc_in_region(r, fresh);
	itest_assert_alloc_zero(r, fresh);
	itest_fill_alloc(r, fresh, 9);
	CHECK_RC(pmemz_alloc_commit(fresh, "fresh", PMEMZ_COMMIT_FLUSH), 0);
	CHECK_RC(pmemz_alloc_new(r, 1 * MIB, 0, &oa), 0); /* the reserve's size */
	itest_assert_alloc_zero(r, oa);
	pmemz_alloc_close(oa);
	CHECK_RC(pmemz_alloc_new(o, 2 * MIB, 0, &oa), 0);
	itest_assert_alloc_zero(o, oa);
	pmemz_alloc_close(oa);

	/* A committed handle from before frees its tag on the new connection. */
	CHECK_RC(pmemz_alloc_release(kept), 0);
	CHECK_RC(pmemz_alloc_open(r, "kept", &kept), -ENOENT);
	pmemz_alloc_close(again);
	CHECK_RC(pmemz_alloc_release(fresh), 0);

	pmemz_region_close(o);
	pmemz_region_close(r); /* gives the reserve's leases back */
	assert_no_leases(e->sock, "rc");
	assert_no_leases(e->sock, "other");
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/*
 * Regression: the reserve holds ALLOCATE answers that arrived before the
 * daemon died.  Their leases died with it (recovery makes them DIRTY, the
 * zeroer re-zeroes them, someone else may get them), so pmemz_alloc_new
 * must not hand one out for the caller to write into: it fails with
 * -ECONNRESET instead (before the fix it returned the dead lease).
 */
static void test_reserve_dead_daemon(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	uint64_t deadline;
	int rc;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "rc", 30000, &st);
	CHECK_RC(pmemz_client_new(e->sock, &c), 0);
	CHECK_RC(pmemz_region_open(c, "rc", &r), 0);
	CHECK_RC(pmemz_region_set_reserve(r, 2 * MIB), 0);
	deadline = itest_now_ms() + 10000;
	for (itest_stat(e->sock, "rc", &st); st.leased < 2; itest_stat(e->sock, "rc", &st)) {
		if (itest_now_ms() > deadline)
			fail_msg("the reserve holds %llu leases, want 2", (unsigned long long)st.leased);
		itest_msleep(5);
	}
	itest_daemon_kill(e);
	rc = pmemz_alloc_new(r, MIB, 0, &a);
	if (rc != -ECONNRESET && rc != -ENOTCONN)
		fail_msg("ALLOCATE from the reserve of a dead daemon: %d (%s)", rc,
			 rc == 0 ? "a dead lease was handed out" : pmemz_errormsg());
	assert_null(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "rc", 30000, &st);
	itest_assert_accounting(&st, "after the restart");
	itest_daemon_stop(e);
}

static void test_reformatted(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL, *o = NULL, *r2 = NULL;
	struct pmemz_alloc *kept = NULL, *a = NULL;
	char img[PATH_MAX];
	struct itest_stat st;

	write_conf(e);
	itest_daemon_start(e);
	CHECK_RC(pmemz_client_new(e->sock, &c), 0);
	CHECK_RC(pmemz_region_open(c, "rc", &r), 0);
	CHECK_RC(pmemz_region_open(c, "other", &o), 0);
	CHECK_RC(pmemz_alloc_new(r, 2 * MIB, 0, &kept), 0);
	itest_fill_alloc(r, kept, 21);
	CHECK_RC(pmemz_alloc_commit(kept, "kept", PMEMZ_COMMIT_FLUSH), 0);

	/* A new file: the daemon makes a region with another uuid under the same name. */
	itest_daemon_kill(e);
	itest_path(e, img, sizeof(img), "rc.img");
	assert_int_equal(unlink(img), 0);
	itest_daemon_start(e);

	CHECK_RC(pmemz_client_reconnect(c), -ESTALE);
	assert_non_null(strstr(pmemz_errormsg(), "'rc'"));
	CHECK_RC(pmemz_alloc_new(r, MIB, 0, &a), -ESTALE);
	CHECK_RC(pmemz_alloc_open(r, "kept", &a), -ESTALE);
	CHECK_RC(pmemz_flush(r, pmemz_region_address(r), 64, 0), -ESTALE);
	CHECK_RC(pmemz_region_set_reserve(r, MIB), -ESTALE);
	/* The old mapping stays readable until the handle goes. */
	itest_check_alloc(r, kept, 21);
	/* Not a FREE of the new region's tag of that name. */
	CHECK_RC(pmemz_alloc_release(kept), -ESTALE);

	/* The other region serves through the same client. */
	CHECK_RC(pmemz_alloc_new(o, MIB, 0, &a), 0);
	pmemz_alloc_close(a);
	/* Reconnecting again keeps the stale handle stale and the rest working. */
	CHECK_RC(pmemz_client_reconnect(c), -ESTALE);
	CHECK_RC(pmemz_alloc_new(o, MIB, 0, &a), 0);
	pmemz_alloc_close(a);

	/* Opened anew, the region is the new one. */
	pmemz_region_close(r);
	CHECK_RC(pmemz_region_open(c, "rc", &r2), 0);
	CHECK_RC(pmemz_alloc_open(r2, "kept", &a), -ENOENT);
	CHECK_RC(pmemz_alloc_new(r2, MIB, 0, &a), 0);
	itest_assert_alloc_zero(r2, a);
	pmemz_alloc_close(a);
	pmemz_region_close(r2);
	pmemz_region_close(o);
	pmemz_client_free(c);
	itest_stat(e->sock, "rc", &st);
	itest_assert_accounting(&st, "after the re-format");
	itest_daemon_stop(e);
}

/*
 * Reconnecting a live client while another thread waits for an ALLOCATE
 * (and so reads the socket): that call fails with -ECONNRESET, the daemon
 * cancels its wait with the old connection, and the client goes on.
 */
static void test_live(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *fill = NULL, *a = NULL;
	struct waiter w = {0};
	struct itest_stat st;
	pthread_t th;
	void *base;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "rc", 30000, &st);
	CHECK_RC(pmemz_client_new(e->sock, &c), 0);
	CHECK_RC(pmemz_region_open(c, "rc", &r), 0);
	base = pmemz_region_address(r);

	itest_zeroer_pause(e->sock, "rc", true);
	CHECK_RC(pmemz_alloc_new(r, (st.zeroed - 4) * MIB, PMEMZ_ALLOC_NOWAIT, &fill), 0);
	CHECK_RC(pmemz_alloc_new(r, 4 * MIB, PMEMZ_ALLOC_NOWAIT, &a), 0);
	CHECK_RC(pmemz_alloc_release(a), 0);
	w.r = r;
	assert_int_equal(pthread_create(&th, NULL, waiting_alloc, &w), 0);
	{
		uint64_t deadline = itest_now_ms() + 10000;

		do {
			itest_msleep(5);
			itest_stat(e->sock, "rc", &st);
			if (itest_now_ms() > deadline)
				fail_msg("the ALLOCATE did not start waiting");
		} while (st.waiters != 1);
	}

	CHECK_RC(pmemz_client_reconnect(c), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (w.rc != -ECONNRESET || !*w.msg)
		fail_msg("waiting ALLOCATE: %d (%s), want -ECONNRESET", w.rc, w.msg);
	assert_ptr_equal(pmemz_region_address(r), base);
	CHECK_RC(pmemz_alloc_commit(fill, "late", 0), -ESTALE);
	pmemz_alloc_close(fill);

	/* The old connection's lease and wait are gone; the new one allocates. */
	itest_zeroer_pause(e->sock, "rc", false);
	itest_wait_zeroed(e->sock, "rc", 30000, &st);
	assert_int_equal(st.leased, 0);
	assert_int_equal(st.waiters, 0);
	CHECK_RC(pmemz_alloc_new(r, 4 * MIB, 0, &a), 0);
	itest_assert_alloc_zero(r, a);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	assert_no_leases(e->sock, "rc");
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_restart, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_live, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_reformatted, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_reserve_dead_daemon, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
