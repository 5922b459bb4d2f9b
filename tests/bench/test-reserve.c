/* SPDX-License-Identifier: MIT */
/*
 * libpmemzclient's allocation reserve (pmemz_region_set_reserve, 1.1)
 * against the real daemon: reserved allocations are zeroed, distinct and
 * commit like any other; the reserve holds what it says in leased space and
 * gives it back on set_reserve(0), pmemz_region_close() and
 * pmemz_client_free(); it follows the allocation size; threads share it;
 * it grows when an allocation had to wait for the daemon (stopped with
 * SIGSTOP), up to its cap and no further, and gives all back on 0.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "r1"
#define MIB ITEST_MIB
/*
 * The depth's cap for these 1 MiB leases when 4 are asked for: an eighth of
 * the region's extents (63 of 64 MiB: the rest is metadata), below the
 * caller's 4 x 8 (the test checks the extent count in STAT).
 */
#define DEPTH_CAP 7

static int setup(void **state)
{
	struct itest_env *e;
	int r = itest_setup(state);

	if (r)
		return r;
	e = *state;
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/r1.img\n"
			 "size = 64M\n"
			 "extent_size = 1M\n",
			 e->dir);
	itest_daemon_start(e);
	return 0;
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

/* Poll STAT until lo <= leased <= hi; returns the last count. */
static uint64_t wait_leased(struct itest_env *e, uint64_t lo, uint64_t hi)
{
	uint64_t t0 = itest_now_ms();
	struct itest_stat st;

	for (;;) {
		itest_stat(e->sock, REGION, &st);
		itest_assert_accounting(&st, "reserve");
		if (st.leased >= lo && st.leased <= hi)
			return st.leased;
		if (itest_now_ms() - t0 > 10000)
			fail_msg("leased extents: %llu, want %llu..%llu",
				 (unsigned long long)st.leased, (unsigned long long)lo,
				 (unsigned long long)hi);
		itest_msleep(5);
	}
}

static struct pmemz_alloc *alloc_ok(struct pmemz_region *r, size_t bytes, unsigned flags)
{
	struct pmemz_alloc *a = NULL;
	int rc = pmemz_alloc_new(r, bytes, flags, &a);

	if (rc)
		fail_msg("pmemz_alloc_new(%zu): %s (%s)", bytes, strerror(-rc), pmemz_errormsg());
	assert_int_equal(pmemz_alloc_size(a), (bytes + MIB - 1) / MIB * MIB);
	itest_assert_alloc_in_region(r, a);
	itest_assert_alloc_zero(r, a);
	return a;
}

static void test_args(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;

	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_set_reserve(NULL, MIB), -EINVAL);
	assert_int_equal(pmemz_region_set_reserve(r, 1024 * MIB), -EINVAL);
	assert_int_equal(pmemz_region_set_reserve(r, 0), 0); /* off while off */
	wait_leased(e, 0, 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void test_serve_and_release(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_alloc *a[10];
	struct pmemz_client *c;
	struct pmemz_region *r;
	uint8_t *seen;
	size_t nbits;

	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_set_reserve(r, 4 * MIB), 0);
	wait_leased(e, 4, 4); /* four 1 MiB leases, asked for at once */

	nbits = pmemz_region_size(r) / MIB + 1;
	seen = calloc(nbits, 1);
	assert_non_null(seen);
	for (int i = 0; i < 10; i++) {
		uint8_t *bits;

		a[i] = alloc_ok(r, MIB, 0);
		bits = itest_alloc_bitmap(r, a[i]);
		for (size_t k = 0; k < nbits; k++) {
			if (bits[k] && seen[k])
				fail_msg("extent %zu handed out twice", k);
			seen[k] |= bits[k];
		}
		free(bits);
	}
	free(seen);
	/* Refilled in batches: at least a lease outstanding, and at most the
	 * depth's cap (it may grow from 4 when the daemon answers late). */
	wait_leased(e, 10 + 1, 10 + DEPTH_CAP);

	/* A reserved lease commits and reopens like any other. */
	itest_fill_alloc(r, a[0], 42);
	itest_persist_alloc(r, a[0]);
	assert_int_equal(pmemz_alloc_commit(a[0], "reserved", 0), 0);
	pmemz_alloc_close(a[0]);
	assert_int_equal(pmemz_alloc_open(r, "reserved", &a[0]), 0);
	itest_check_alloc(r, a[0], 42);
	assert_int_equal(pmemz_alloc_release(a[0]), 0);
	for (int i = 1; i < 10; i++)
		assert_int_equal(pmemz_alloc_release(a[i]), 0);
	wait_leased(e, 1, DEPTH_CAP);

	/* NOWAIT is served from the reserve too. */
	a[0] = alloc_ok(r, MIB, PMEMZ_ALLOC_NOWAIT);
	pmemz_alloc_close(a[0]);

	assert_int_equal(pmemz_region_set_reserve(r, 0), 0);
	wait_leased(e, 0, 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void test_close_releases(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;

	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_set_reserve(r, 8 * MIB), 0);
	wait_leased(e, 8, 8);
	pmemz_region_close(r); /* gives the reserve back before it returns */
	wait_leased(e, 0, 0);
	pmemz_client_free(c);

	/* The connection going away releases it too (the daemon does). */
	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_set_reserve(r, 8 * MIB), 0);
	wait_leased(e, 8, 8);
	pmemz_client_free(c);
	wait_leased(e, 0, 0);
	pmemz_region_close(r); /* after the connection: no daemon, no hang */
}

/* Close n allocations, then the region (its reserve goes back), then the client. */
static void close_all(struct itest_env *e, struct pmemz_client *c, struct pmemz_region *r,
		      struct pmemz_alloc **a, int n)
{
	for (int i = 0; i < n; i++)
		pmemz_alloc_close(a[i]);
	pmemz_region_close(r);
	wait_leased(e, 0, 0);
	pmemz_client_free(c);
}

static void test_follows_size(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_alloc *a[3];
	struct pmemz_client *c;
	struct pmemz_region *r;

	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_set_reserve(r, 4 * MIB), 0);
	wait_leased(e, 4, 4);
	/* One 3 MiB allocation: not the reserve's size, the reserve stays. */
	a[0] = alloc_ok(r, 3 * MIB, 0);
	wait_leased(e, 3 + 4, 3 + 4);
	/* A second one in a row: the reserve moves to 3 MiB leases (2 of them). */
	a[1] = alloc_ok(r, 3 * MIB, 0);
	wait_leased(e, 6 + 6, 6 + 6);
	a[2] = alloc_ok(r, 3 * MIB, 0); /* from the reserve */
	wait_leased(e, 9 + 3, 9 + 6);
	close_all(e, c, r, a, 3);
}

/*
 * PMEMZ_ALLOC_DIRECT (1.6): allocations of another size in a row, made
 * with it, leave the reserve's size and leases alone (without it, the
 * second moves the reserve to their size: test_follows_size).  The disk
 * plugin's refills are such allocations next to its reserve.
 */
static void test_direct_keeps_size(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_alloc *a[3];
	struct pmemz_client *c;
	struct pmemz_region *r;

	open_client(e, &c, &r);
	assert_int_equal(pmemz_alloc_new(r, MIB, 1u << 7, &a[0]), -EINVAL); /* unknown flag */
	assert_int_equal(pmemz_region_set_reserve(r, 4 * MIB), 0);
	wait_leased(e, 4, 4);
	a[0] = alloc_ok(r, 3 * MIB, PMEMZ_ALLOC_DIRECT);
	a[1] = alloc_ok(r, 3 * MIB, PMEMZ_ALLOC_DIRECT);
	/* the reserve still holds its four 1 MiB leases (moved: 6 + 6), and later too */
	wait_leased(e, 6 + 4, 6 + 4);
	itest_msleep(100);
	wait_leased(e, 6 + 4, 6 + 4);
	/* a 1 MiB allocation is served by it (moved to 3 MiB, it would be 6 + 6 + 1) */
	a[2] = alloc_ok(r, MIB, 0);
	wait_leased(e, 7 + 3, 7 + 4);
	close_all(e, c, r, a, 3);
}

struct worker {
	struct pmemz_region *r;
	struct pmemz_alloc *a[8];
	int rc;
};

static void *alloc_thread(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 8 && w->rc == 0; i++)
		w->rc = pmemz_alloc_new(w->r, MIB, 0, &w->a[i]);
	return NULL;
}

static void test_threads(void **state)
{
	struct itest_env *e = *state;
	struct worker w[4];
	pthread_t th[4];
	struct pmemz_client *c;
	struct pmemz_region *r;
	uint8_t *seen;
	size_t nbits;

	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_set_reserve(r, 6 * MIB), 0);
	memset(w, 0, sizeof(w));
	for (int t = 0; t < 4; t++) {
		w[t].r = r;
		assert_int_equal(pthread_create(&th[t], NULL, alloc_thread, &w[t]), 0);
	}
	for (int t = 0; t < 4; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	nbits = pmemz_region_size(r) / MIB + 1;
	seen = calloc(nbits, 1);
	assert_non_null(seen);
	for (int t = 0; t < 4; t++) {
		if (w[t].rc)
			fail_msg("thread %d: %s", t, strerror(-w[t].rc));
		for (int i = 0; i < 8; i++) {
			uint8_t *bits = itest_alloc_bitmap(r, w[t].a[i]);

			itest_assert_alloc_zero(r, w[t].a[i]);
			for (size_t k = 0; k < nbits; k++) {
				if (bits[k] && seen[k])
					fail_msg("extent %zu handed out twice", k);
				seen[k] |= bits[k];
			}
			free(bits);
			pmemz_alloc_close(w[t].a[i]);
		}
	}
	free(seen);
	pmemz_region_close(r);
	wait_leased(e, 0, 0);
	pmemz_client_free(c);
}

struct taker {
	struct pmemz_region *r;
	struct pmemz_alloc *a[16];
	int n_want;
	int n_done; /* atomic */
	pid_t tid;  /* atomic */
	int rc;
};

static void *take_thread(void *arg)
{
	struct taker *t = arg;

	__atomic_store_n(&t->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	for (int i = 0; i < t->n_want && t->rc == 0; i++) {
		t->rc = pmemz_alloc_new(t->r, MIB, 0, &t->a[i]);
		if (t->rc == 0)
			__atomic_add_fetch(&t->n_done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The thread's scheduler state ('S': asleep, here: waiting for the daemon). */
static char thread_state(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	(void)snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	(void)fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/*
 * With the daemon stopped, take `n` allocations, more than the reserve
 * holds: the reserved ones were answered before, then the taker must wait
 * for a refill's answer.  The daemon goes on once the taker sleeps for it.
 */
static void take_with_daemon_stopped(struct itest_env *e, struct taker *t, int n)
{
	pthread_t th;
	uint64_t t0;

	memset(t->a, 0, sizeof(t->a));
	t->n_want = n;
	t->n_done = 0;
	t->tid = 0;
	t->rc = 0;
	assert_int_equal(kill(e->pid, SIGSTOP), 0);
	assert_int_equal(pthread_create(&th, NULL, take_thread, t), 0);
	t0 = itest_now_ms();
	/* It cannot finish: at most n - 1 answers are there. */
	while (!__atomic_load_n(&t->tid, __ATOMIC_ACQUIRE) ||
	       thread_state(__atomic_load_n(&t->tid, __ATOMIC_ACQUIRE)) != 'S') {
		if (itest_now_ms() - t0 > 10000) {
			(void)kill(e->pid, SIGCONT);
			fail_msg("the taker did not get to wait for the daemon (%d allocations)",
				 __atomic_load_n(&t->n_done, __ATOMIC_ACQUIRE));
		}
		itest_msleep(1);
	}
	assert_int_equal(kill(e->pid, SIGCONT), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (t->rc)
		fail_msg("pmemz_alloc_new: %s (%s)", strerror(-t->rc), pmemz_errormsg());
}

static void test_grows_when_dry(void **state)
{
	struct itest_env *e = *state;
	struct taker t[2] = {{0}};
	struct itest_stat st;
	struct pmemz_client *c;
	struct pmemz_region *r;

	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.extent_count / 8, DEPTH_CAP);
	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_set_reserve(r, 4 * MIB), 0);
	wait_leased(e, 4, 4);

	/* Four answered, the fifth waits for the stopped daemon: the depth
	 * doubles (to 8, capped to 7).  Refilled when half is used, a depth of
	 * 7 keeps 4-7 out, so more than 4 out means it grew. */
	t[0].r = r;
	take_with_daemon_stopped(e, &t[0], 5);
	wait_leased(e, 5 + 5, 5 + DEPTH_CAP);

	/* Running dry again (at most 7 are out: the eighth waits) keeps it
	 * deep, and does not take it past the cap. */
	t[1].r = r;
	take_with_daemon_stopped(e, &t[1], DEPTH_CAP + 1);
	wait_leased(e, 5 + DEPTH_CAP + 1 + 5, 5 + DEPTH_CAP + 1 + DEPTH_CAP);

	/* 0 gives every reserved lease back, grown ones included. */
	assert_int_equal(pmemz_region_set_reserve(r, 0), 0);
	wait_leased(e, 5 + DEPTH_CAP + 1, 5 + DEPTH_CAP + 1);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < t[k].n_want; i++) {
			itest_assert_alloc_zero(r, t[k].a[i]);
			pmemz_alloc_close(t[k].a[i]);
		}
	wait_leased(e, 0, 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static int setup_quota(void **state)
{
	struct itest_env *e;
	int r = itest_setup(state);

	if (r)
		return r;
	e = *state;
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/r1.img\n"
			 "size = 64M\n"
			 "extent_size = 1M\n"
			 "uid_quota = 10M\n",
			 e->dir);
	itest_daemon_start(e);
	return 0;
}

/*
 * A grown reserve meets the uid's quota: the refused refills cut it, the
 * caller gets every lease the quota allows and then -EDQUOT (no hang, no
 * refill loop), never more than the quota is leased, and after frees the
 * reserve serves again.
 */
static void test_quota_cuts(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_alloc *a[16] = {0};
	struct taker t = {0};
	struct pmemz_client *c;
	struct pmemz_region *r;
	int n = 0, rc;

	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_set_reserve(r, 4 * MIB), 0);
	wait_leased(e, 4, 4);
	/* Grows to 7 deep while the caller holds 5: 12 would exceed 10. */
	t.r = r;
	take_with_daemon_stopped(e, &t, 5);
	wait_leased(e, 10, 10);
	while (n < 16) {
		rc = pmemz_alloc_new(r, MIB, 0, &a[n]);
		if (rc == -EDQUOT)
			break;
		if (rc)
			fail_msg("pmemz_alloc_new: %s (%s)", strerror(-rc), pmemz_errormsg());
		n++;
		wait_leased(e, 5 + (uint64_t)n, 10);
	}
	/* Everything the quota allows went to the caller. */
	assert_int_equal(5 + n, 10);
	wait_leased(e, 10, 10);
	for (int i = 0; i < n; i++)
		assert_int_equal(pmemz_alloc_release(a[i]), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(pmemz_alloc_release(t.a[i]), 0);
	a[0] = alloc_ok(r, MIB, 0);
	/* Refilled after the caller's own ALLOCATE, within the floor's 4. */
	wait_leased(e, 1 + 1, 1 + 4);
	pmemz_alloc_close(a[0]);
	assert_int_equal(pmemz_region_set_reserve(r, 0), 0);
	wait_leased(e, 0, 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_args, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_serve_and_release, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_close_releases, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_follows_size, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_direct_keeps_size, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_threads, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_grows_when_dry, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_quota_cuts, setup_quota, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
