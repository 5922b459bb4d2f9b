/* SPDX-License-Identifier: MIT */
/*
 * Integration test 3 (I3, I1, I2): a client process killed with SIGKILL
 * while holding a lease it scribbled on — its extents go DIRTY -> ZEROED
 * (STAT accounting holds at every step), re-allocating them yields zeroes,
 * and what it committed before dying stays.  Also the daemon itself
 * crashing (SIGKILL) with leases and commits outstanding.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "k"
#define MIB ITEST_MIB
#define LEASE_EXTENTS 8
#define KEPT_EXTENTS 2

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/k.img\n"
			 "size = 64M\n"
			 "extent_size = 1M\n",
			 e->dir);
}

static void open_client(struct itest_env *e, struct pmemz_client **c, struct pmemz_region **r)
{
	int rc = pmemz_client_new(e->sock, c);

	if (rc)
		fail_msg("pmemz_client_new: %s (%s)", strerror(-rc), pmemz_errormsg());
	rc = pmemz_region_open(*c, REGION, r);
	if (rc)
		fail_msg("pmemz_region_open: %s (%s)", strerror(-rc), pmemz_errormsg());
}

/* Child: lease, scribble, commit a little, report the lease's extent offsets, wait to die. */
static void child_hold_lease(const char *sock, int wfd)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL, *k = NULL;
	const char *base;
	int rc;

	rc = pmemz_client_new(sock, &c);
	CHILD_CHECK(rc == 0, "client_new: %s", pmemz_errormsg());
	rc = pmemz_region_open(c, REGION, &r);
	CHILD_CHECK(rc == 0, "region_open: %s", pmemz_errormsg());
	base = pmemz_region_address(r);

	rc = pmemz_alloc_new(r, KEPT_EXTENTS * MIB, 0, &k);
	CHILD_CHECK(rc == 0, "alloc kept: %s", pmemz_errormsg());
	for (size_t i = 0; i < pmemz_alloc_count(k); i++) {
		size_t len;
		char *p = pmemz_alloc_range(k, i, &len);

		for (size_t o = 0; o < len; o += MIB)
			itest_fill_pattern(p + o, MIB, 77 + (uint64_t)(p + o - base));
	}
	rc = pmemz_alloc_commit(k, "kept", PMEMZ_COMMIT_FLUSH);
	CHILD_CHECK(rc == 0, "commit kept: %s", pmemz_errormsg());

	rc = pmemz_alloc_new(r, LEASE_EXTENTS * MIB, 0, &a);
	CHILD_CHECK(rc == 0, "alloc lease: %s", pmemz_errormsg());
	CHILD_CHECK(pmemz_alloc_size(a) == LEASE_EXTENTS * MIB, "lease size %zu",
		    pmemz_alloc_size(a));
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		char *p = pmemz_alloc_range(a, i, &len);

		memset(p, 0xde, len); /* garbage */
		CHILD_CHECK(pmemz_persist(r, p, len) == 0, "persist");
		for (size_t o = 0; o < len; o += MIB) {
			uint64_t off = (uint64_t)(p + o - base);

			CHILD_CHECK(write(wfd, &off, sizeof(off)) == sizeof(off), "pipe");
		}
	}
	{
		uint64_t end = UINT64_MAX;

		CHILD_CHECK(write(wfd, &end, sizeof(end)) == sizeof(end), "pipe");
	}
	for (;;)
		pause();
}

static void test_client_sigkill_with_lease(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st0, st;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	uint64_t offs[LEASE_EXTENTS + 1], n, deadline;
	size_t n_offs = 0;
	bool saw_dirty = false;
	int pfd[2];
	pid_t pid;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 10000, &st0);
	n = st0.extent_count;

	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		child_hold_lease(e->sock, pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	for (;;) {
		uint64_t off;
		ssize_t got = read(pfd[0], &off, sizeof(off));

		if (got != sizeof(off)) {
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			fail_msg("client child died before reporting its lease");
		}
		if (off == UINT64_MAX)
			break;
		assert_true(n_offs < LEASE_EXTENTS);
		offs[n_offs++] = off;
	}
	close(pfd[0]);
	assert_int_equal(n_offs, LEASE_EXTENTS);

	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "child holds its lease");
	assert_int_equal(st.leased, LEASE_EXTENTS);
	assert_int_equal(st.committed, KEPT_EXTENTS);
	assert_int_equal(st.zeroed, n - LEASE_EXTENTS - KEPT_EXTENTS);
	assert_int_equal(st.dirty, 0);
	st0 = st;

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);

	/* The lease comes back: LEASED -> DIRTY -> ZEROED, accounting exact all along. */
	deadline = itest_now_ms() + 10000;
	for (;;) {
		itest_stat(e->sock, REGION, &st);
		itest_assert_accounting(&st, "after client SIGKILL");
		assert_int_equal(st.committed, KEPT_EXTENTS);
		if (st.dirty)
			saw_dirty = true;
		if (st.leased == 0 && st.dirty == 0 && st.zeroing == 0)
			break;
		if (itest_now_ms() > deadline)
			fail_msg("lease of the killed client not back after 10 s: leased %llu "
				 "dirty %llu zeroing %llu",
				 (unsigned long long)st.leased, (unsigned long long)st.dirty,
				 (unsigned long long)st.zeroing);
		itest_msleep(2);
	}
	assert_int_equal(st.zeroed, n - KEPT_EXTENTS);
	/* the extents went through the zeroer: bytes_zeroed grew by the lease */
	if (st.bytes_zeroed - st0.bytes_zeroed < (uint64_t)LEASE_EXTENTS * MIB)
		fail_msg("bytes_zeroed grew by %llu after the kill, expected >= %llu",
			 (unsigned long long)(st.bytes_zeroed - st0.bytes_zeroed),
			 (unsigned long long)LEASE_EXTENTS * MIB);
	print_message("killed client's %d extents back ZEROED (DIRTY %s observed)\n", LEASE_EXTENTS,
		      saw_dirty ? "was" : "not");

	/* Re-allocate everything free: the child's garbage must be gone. */
	open_client(e, &c, &r);
	assert_int_equal(pmemz_alloc_new(r, (n - KEPT_EXTENTS) * MIB, 0, &a), 0);
	itest_assert_alloc_zero(r, a);
	{
		uint8_t *bits = itest_alloc_bitmap(r, a);

		for (size_t i = 0; i < n_offs; i++)
			if (!bits[offs[i] / MIB])
				fail_msg("killed client's extent at %llu not handed out again",
					 (unsigned long long)offs[i]);
		free(bits);
	}
	pmemz_alloc_close(a);

	/* what the child committed before it died is there, same uid */
	assert_int_equal(pmemz_alloc_open(r, "kept", &a), 0);
	assert_int_equal(pmemz_alloc_size(a), KEPT_EXTENTS * MIB);
	{
		const char *base = pmemz_region_address(r);

		for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
			size_t len;
			const char *p = pmemz_alloc_range(a, i, &len);

			for (size_t o = 0; o < len; o += MIB)
				assert_int_equal(
				    itest_check_pattern(p + o, MIB, 77 + (uint64_t)(p + o - base)),
				    (size_t)-1);
		}
	}
	assert_int_equal(pmemz_alloc_release(a), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(st.zeroed, n);
	itest_daemon_stop(e);
}

/* Daemon SIGKILLed with a commit, a lease and a freed tag outstanding. */
static void test_daemon_sigkill(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *keep = NULL, *lease = NULL, *gone = NULL, *a = NULL;
	struct itest_stat st;
	uint8_t *bits_keep;
	uint64_t n;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	n = st.extent_count;
	open_client(e, &c, &r);

	assert_int_equal(pmemz_alloc_new(r, 3 * MIB, 0, &keep), 0);
	itest_fill_alloc(r, keep, 31);
	assert_int_equal(pmemz_alloc_commit(keep, "keep", PMEMZ_COMMIT_FLUSH), 0);
	bits_keep = itest_alloc_bitmap(r, keep);

	assert_int_equal(pmemz_alloc_new(r, 4 * MIB, 0, &gone), 0);
	itest_fill_alloc(r, gone, 32);
	itest_persist_alloc(r, gone);
	assert_int_equal(pmemz_alloc_commit(gone, "gone", 0), 0);
	assert_int_equal(pmemz_alloc_release(gone), 0);

	assert_int_equal(pmemz_alloc_new(r, 5 * MIB, 0, &lease), 0);
	itest_fill_alloc(r, lease, 33);
	itest_persist_alloc(r, lease);

	itest_daemon_kill(e);
	pmemz_alloc_close(keep);
	pmemz_alloc_close(lease);
	pmemz_region_close(r);
	pmemz_client_free(c);

	itest_daemon_start(e);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after daemon crash");
	assert_int_equal(st.committed, 3);
	assert_int_equal(st.leased, 0);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(st.zeroed, n - 3);

	open_client(e, &c, &r);
	assert_int_equal(pmemz_alloc_open(r, "gone", &a), -ENOENT);
	assert_int_equal(pmemz_alloc_open(r, "keep", &keep), 0);
	{
		uint8_t *b = itest_alloc_bitmap(r, keep);

		assert_memory_equal(b, bits_keep, pmemz_region_size(r) / MIB + 1);
		free(b);
	}
	itest_check_alloc(r, keep, 31);
	assert_int_equal(pmemz_alloc_new(r, (n - 3) * MIB, 0, &a), 0);
	itest_assert_alloc_zero(r, a);
	assert_int_equal(pmemz_alloc_release(a), 0);
	assert_int_equal(pmemz_alloc_release(keep), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
	free(bits_keep);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_client_sigkill_with_lease, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_daemon_sigkill, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
