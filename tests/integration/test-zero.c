/* SPDX-License-Identifier: MIT */
/*
 * Integration test 2 (I1): write patterns over the whole region, give the
 * space back in every way a client can (tag release, lease release,
 * pmemz_alloc_close, disconnect, daemon stop and daemon crash right after
 * the free), re-allocate the WHOLE region waiting for zeroing, and check
 * every byte reads zero.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "z"
#define MIB ITEST_MIB

struct ctx {
	struct pmemz_client *c;
	struct pmemz_region *r;
	uint64_t n; /* extents */
};

static void start(struct itest_env *e, struct ctx *x)
{
	struct itest_stat st;
	int rc;

	itest_daemon_start(e);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "start");
	if (x->n)
		assert_int_equal(st.extent_count, x->n);
	x->n = st.extent_count;
	rc = pmemz_client_new(e->sock, &x->c);
	if (rc)
		fail_msg("pmemz_client_new: %s (%s)", strerror(-rc), pmemz_errormsg());
	rc = pmemz_region_open(x->c, REGION, &x->r);
	if (rc)
		fail_msg("pmemz_region_open: %s (%s)", strerror(-rc), pmemz_errormsg());
}

static void disconnect(struct ctx *x)
{
	pmemz_region_close(x->r);
	pmemz_client_free(x->c);
	x->r = NULL;
	x->c = NULL;
}

/* Lease every extent of the region (waiting for zeroing); every byte must be zero. */
static struct pmemz_alloc *alloc_all_zero(struct itest_env *e, struct ctx *x, const char *after)
{
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	uint64_t t0 = itest_now_ms();
	int rc = pmemz_alloc_new(x->r, x->n * MIB, 0, &a);

	if (rc)
		fail_msg("[%s] allocating the whole region (%llu extents): %s (%s)", after,
			 (unsigned long long)x->n, strerror(-rc), pmemz_errormsg());
	assert_int_equal(pmemz_alloc_size(a), x->n * MIB);
	itest_assert_alloc_in_region(x->r, a);
	itest_assert_alloc_zero(x->r, a);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, after);
	assert_int_equal(st.leased, x->n);
	assert_int_equal(st.zeroed, 0);
	print_message("[%s] whole region (%llu MiB) leased and verified zero in %llu ms\n", after,
		      (unsigned long long)x->n, (unsigned long long)(itest_now_ms() - t0));
	return a;
}

static void scribble(struct ctx *x, struct pmemz_alloc *a, uint64_t seed)
{
	itest_fill_alloc(x->r, a, seed);
	itest_persist_alloc(x->r, a);
}

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/z.img\n"
			 "size = 64M\n"
			 "extent_size = 1M\n"
			 "zeroer_threads = 2\n"
			 "batch_extents = 8\n",
			 e->dir);
}

static void test_release_paths_rezero(void **state)
{
	struct itest_env *e = *state;
	struct ctx x = {0};
	struct pmemz_alloc *a;
	struct itest_stat st;
	int rc;

	write_conf(e);
	start(e, &x);

	/* 1: commit everything, release the tag */
	a = alloc_all_zero(e, &x, "fresh region");
	scribble(&x, a, 101);
	rc = pmemz_alloc_commit(a, "everything", PMEMZ_COMMIT_FLUSH);
	if (rc)
		fail_msg("commit: %s (%s)", strerror(-rc), pmemz_errormsg());
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "all committed");
	assert_int_equal(st.committed, x.n);
	assert_int_equal(pmemz_alloc_release(a), 0);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "tag released");
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.leased, 0);

	/* 2: lease released explicitly */
	a = alloc_all_zero(e, &x, "after tag release");
	scribble(&x, a, 102);
	assert_int_equal(pmemz_alloc_release(a), 0);

	/* 3: handle closed (uncommitted lease goes back) */
	a = alloc_all_zero(e, &x, "after lease release");
	scribble(&x, a, 103);
	pmemz_alloc_close(a);

	/* 4: disconnect while holding the lease (handle closed after the region) */
	a = alloc_all_zero(e, &x, "after alloc_close");
	scribble(&x, a, 104);
	pmemz_region_close(x.r);
	pmemz_client_free(x.c);
	pmemz_alloc_close(a); /* LIB-CONTRACT: see wait below */
	x.r = NULL;
	x.c = NULL;
	{
		uint64_t deadline = itest_now_ms() + 10000;

		do {
			itest_stat(e->sock, REGION, &st);
			itest_assert_accounting(&st, "after disconnect");
			if (st.leased == 0)
				break;
			itest_msleep(10);
		} while (itest_now_ms() < deadline);
		assert_int_equal(st.leased, 0);
	}
	rc = pmemz_client_new(e->sock, &x.c);
	assert_int_equal(rc, 0);
	assert_int_equal(pmemz_region_open(x.c, REGION, &x.r), 0);
	a = alloc_all_zero(e, &x, "after disconnect");
	scribble(&x, a, 106);
	assert_int_equal(pmemz_alloc_commit(a, "again", 0), 0);
	assert_int_equal(pmemz_alloc_release(a), 0);
	a = alloc_all_zero(e, &x, "after second tag release");
	assert_int_equal(pmemz_alloc_release(a), 0);
	disconnect(&x);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(st.zeroed, x.n);
	itest_daemon_stop(e);
}

/*
 * Free and immediately stop (SIGTERM) or crash (SIGKILL) the daemon, before
 * zeroing can have finished: after restart the space must still come back
 * zeroed (the DIRTY state was durable before the free was acknowledged).
 */
static void free_then_stop(void **state, bool crash)
{
	struct itest_env *e = *state;
	struct ctx x = {0};
	struct pmemz_alloc *a;
	struct itest_stat st;

	write_conf(e);
	start(e, &x);
	a = alloc_all_zero(e, &x, "fresh region");
	scribble(&x, a, 201);
	assert_int_equal(pmemz_alloc_commit(a, "doomed", 0), 0);
	assert_int_equal(pmemz_alloc_release(a), 0);
	if (crash)
		itest_daemon_kill(e);
	else
		itest_daemon_stop(e);
	disconnect(&x);

	start(e, &x);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "restart after free");
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.leased, 0);
	a = alloc_all_zero(e, &x, crash ? "crash after free" : "stop after free");

	/* and a lease scribbled on then crashed with: LEASED -> DIRTY -> zero */
	scribble(&x, a, 202);
	if (crash)
		itest_daemon_kill(e);
	else
		itest_daemon_stop(e);
	pmemz_alloc_close(a);
	disconnect(&x);
	start(e, &x);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "restart with a lease");
	assert_int_equal(st.leased, 0);
	a = alloc_all_zero(e, &x, crash ? "crash with a lease" : "stop with a lease");
	assert_int_equal(pmemz_alloc_release(a), 0);
	disconnect(&x);
	itest_daemon_stop(e);
}

static void test_free_then_sigterm(void **state)
{
	free_then_stop(state, false);
}

static void test_free_then_sigkill(void **state)
{
	free_then_stop(state, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_release_paths_rezero, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_free_then_sigterm, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_free_then_sigkill, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
