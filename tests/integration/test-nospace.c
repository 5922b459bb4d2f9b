/* SPDX-License-Identifier: MIT */
/*
 * Integration test 5: -EAGAIN with PMEMZ_ALLOC_NOWAIT when the zeroed pool
 * is empty (a region whose background zeroing is throttled to a crawl), a
 * waiting allocation that gets served anyway (urgent zeroing) without
 * blocking other requests, and -ENOSPC when the region is full or the
 * request is larger than the region.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB
#define SLOW_RATE 65536 /* bytes/s: one 1 MiB extent every 16 s */

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region slow]\n"
			 "path = %s/slow.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "zero_rate = 64K\n"
			 "batch_extents = 1\n"
			 "zeroer_threads = 1\n"
			 "\n"
			 "[region fast]\n"
			 "path = %s/fast.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n",
			 e->dir, e->dir);
}

static void open_region(struct itest_env *e, const char *name, struct pmemz_client **c,
			struct pmemz_region **r)
{
	int rc = pmemz_client_new(e->sock, c);

	if (rc)
		fail_msg("pmemz_client_new: %s (%s)", strerror(-rc), pmemz_errormsg());
	rc = pmemz_region_open(*c, name, r);
	if (rc)
		fail_msg("pmemz_region_open %s: %s (%s)", name, strerror(-rc), pmemz_errormsg());
}

static void test_nowait_eagain(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL, *held[64];
	struct itest_stat st;
	size_t n_held = 0;
	uint64_t t0, n;
	int rc;

	write_conf(e);
	itest_daemon_start(e);
	open_region(e, "slow", &c, &r);
	itest_stat(e->sock, "slow", &st);
	itest_assert_accounting(&st, "slow region at start");
	assert_int_equal(st.zero_rate_limit, SLOW_RATE);
	n = st.extent_count;
	if (st.zeroed >= n / 2)
		fail_msg("zero_rate = 64K not honoured: %llu of %llu extents ZEROED right after "
			 "start",
			 (unsigned long long)st.zeroed, (unsigned long long)n);

	/* the whole region cannot be zeroed yet: fail fast, -EAGAIN (not -ENOSPC) */
	t0 = itest_now_ms();
	rc = pmemz_alloc_new(r, n * MIB, PMEMZ_ALLOC_NOWAIT, &a);
	assert_int_equal(rc, -EAGAIN);
	assert_null(a);
	assert_true(itest_now_ms() - t0 < 2000);

	/* drain the zeroed pool one extent at a time, then it must be -EAGAIN */
	for (;;) {
		rc = pmemz_alloc_new(r, MIB, PMEMZ_ALLOC_NOWAIT, &a);
		if (rc == -EAGAIN)
			break;
		if (rc)
			fail_msg("NOWAIT alloc while draining the pool: %s (%s)", strerror(-rc),
				 pmemz_errormsg());
		itest_assert_alloc_zero(r, a);
		assert_true(n_held < 64);
		held[n_held++] = a;
		if (n_held >= n / 2)
			fail_msg("drained %zu extents with NOWAIT from a throttled region", n_held);
	}
	itest_stat(e->sock, "slow", &st);
	itest_assert_accounting(&st, "empty zeroed pool");
	assert_int_equal(st.leased, n_held);
	assert_true(st.dirty > 0);
	assert_int_equal(pmemz_alloc_new(r, 1, PMEMZ_ALLOC_NOWAIT, &a), -EAGAIN);
	print_message("zeroed pool empty after %zu NOWAIT allocations; %llu DIRTY\n", n_held,
		      (unsigned long long)st.dirty);

	/* a waiting allocation is served well before the rate limit would allow */
	t0 = itest_now_ms();
	rc = pmemz_alloc_new(r, 4 * MIB, 0, &a);
	if (rc)
		fail_msg("waiting alloc on the slow region: %s (%s)", strerror(-rc),
			 pmemz_errormsg());
	print_message("waiting 4 MiB allocation served in %llu ms (rate limit alone: %d s)\n",
		      (unsigned long long)(itest_now_ms() - t0), 4 * (int)(MIB / SLOW_RATE));
	assert_true(itest_now_ms() - t0 < 10000);
	itest_assert_alloc_zero(r, a);
	assert_int_equal(pmemz_alloc_size(a), 4 * MIB);
	itest_stat(e->sock, "slow", &st);
	itest_assert_accounting(&st, "after the waiting allocation");
	assert_int_equal(st.leased, n_held + 4);
	assert_int_equal(st.waiters, 0);
	pmemz_alloc_close(a);
	for (size_t i = 0; i < n_held; i++)
		pmemz_alloc_close(held[i]);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* While an allocation waits for zeroing, the same connection is still served. */
static void test_waiting_alloc_does_not_block(void **state)
{
	struct itest_env *e = *state;
	Pmemz__Request areq = PMEMZ__REQUEST__INIT, nreq = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__NoopReq no = PMEMZ__NOOP_REQ__INIT;
	Pmemz__Response *resp[2] = {NULL, NULL};
	struct itest_stat st;
	int fd;
	uint64_t want;

	write_conf(e);
	itest_daemon_start(e);
	itest_stat(e->sock, "slow", &st);
	want = st.extent_count; /* the whole region: certainly not all ZEROED yet */
	assert_true(st.zeroed < want);

	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	assert_int_equal(itest_raw_open(fd, "slow"), 0);
	al.region = "slow";
	al.bytes = want * MIB;
	areq.version = nreq.version = PMEMZ_PROTO_VERSION;
	areq.id = 1;
	areq.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	areq.allocate = &al;
	nreq.id = 2;
	nreq.op_case = PMEMZ__REQUEST__OP_NOOP;
	nreq.noop = &no;
	assert_int_equal(itest_raw_send(fd, &areq), 0);
	assert_int_equal(itest_raw_send(fd, &nreq), 0);
	for (int i = 0; i < 2; i++) {
		int rc = itest_raw_recv(fd, ITEST_RPC_TIMEOUT_MS, &resp[i], NULL);

		if (rc)
			fail_msg("pipelined response %d: %s", i, strerror(-rc));
	}
	print_message("pipelined replies arrived as ids %llu, %llu\n",
		      (unsigned long long)resp[0]->id, (unsigned long long)resp[1]->id);
	/* the NOOP must not wait behind an allocation that waits for zeroing */
	assert_int_equal(resp[0]->id, 2);
	assert_int_equal(resp[0]->status, 0);
	assert_int_equal(resp[1]->id, 1);
	assert_int_equal(resp[1]->status, 0);
	assert_int_equal(resp[1]->op_case, PMEMZ__RESPONSE__OP_ALLOCATE);
	itest_resp_free(resp[0]);
	itest_resp_free(resp[1]);
	itest_stat(e->sock, "slow", &st);
	itest_assert_accounting(&st, "whole region leased");
	assert_int_equal(st.leased, want);
	close(fd);
	itest_daemon_stop(e);
}

/*
 * Clients that ask for a waiting allocation and hang up at once: whether the
 * daemon answered first or not, nothing stays leased and no waiter remains.
 */
static void test_waiter_disconnect(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	uint64_t n, deadline;

	write_conf(e);
	itest_daemon_start(e);
	itest_stat(e->sock, "slow", &st);
	n = st.extent_count;
	for (int i = 0; i < 20; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
		int fd = itest_raw_connect(e->sock);

		assert_true(fd >= 0);
		al.region = "slow";
		al.bytes = (i % 2 ? n : (uint64_t)(i + 1)) * MIB;
		req.version = PMEMZ_PROTO_VERSION;
		req.id = 1;
		req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		req.allocate = &al;
		assert_int_equal(itest_raw_send(fd, &req), 0);
		if (i % 3 == 0)
			itest_msleep(5); /* sometimes after the answer, sometimes before */
		close(fd);
	}
	deadline = itest_now_ms() + 10000;
	for (;;) {
		itest_stat(e->sock, "slow", &st);
		itest_assert_accounting(&st, "after disconnecting waiters");
		if (st.leased == 0 && st.waiters == 0)
			break;
		if (itest_now_ms() > deadline)
			fail_msg("after 20 waiters hung up: leased %llu waiters %llu",
				 (unsigned long long)st.leased, (unsigned long long)st.waiters);
		itest_msleep(10);
	}
	/* and the region is still fully usable */
	{
		struct pmemz_client *c = NULL;
		struct pmemz_region *r = NULL;
		struct pmemz_alloc *a = NULL;

		open_region(e, "slow", &c, &r);
		assert_int_equal(pmemz_alloc_new(r, n * MIB, 0, &a), 0);
		itest_assert_alloc_zero(r, a);
		pmemz_alloc_close(a);
		pmemz_region_close(r);
		pmemz_client_free(c);
	}
	itest_daemon_stop(e);
}

static void test_enospc(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL, *all = NULL, *b = NULL;
	struct itest_stat st;
	uint64_t n;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "fast", 10000, &st);
	n = st.extent_count;
	open_region(e, "fast", &c, &r);

	/* more than the region holds at all */
	assert_int_equal(pmemz_alloc_new(r, (n + 1) * MIB, 0, &a), -ENOSPC);
	assert_int_equal(pmemz_alloc_new(r, n * MIB + 1, 0, &a), -ENOSPC);
	assert_int_equal(pmemz_alloc_new(r, (n + 1) * MIB, PMEMZ_ALLOC_NOWAIT, &a), -ENOSPC);
	assert_int_equal(pmemz_alloc_new(r, pmemz_region_size(r) * 4, 0, &a), -ENOSPC);
	assert_int_equal(pmemz_alloc_new(r, SIZE_MAX, 0, &a), -ENOSPC);
	assert_int_equal(pmemz_alloc_new(r, SIZE_MAX - MIB + 2, 0, &a), -ENOSPC);
	assert_null(a);
	itest_stat(e->sock, "fast", &st);
	itest_assert_accounting(&st, "after oversized requests");
	assert_int_equal(st.leased, 0);
	assert_int_equal(st.waiters, 0);

	/* partial fill: n-2 leased, 3 more do not fit, 2 do */
	assert_int_equal(pmemz_alloc_new(r, (n - 2) * MIB, 0, &all), 0);
	assert_int_equal(pmemz_alloc_new(r, 3 * MIB, 0, &a), -ENOSPC);
	assert_int_equal(pmemz_alloc_new(r, 3 * MIB, PMEMZ_ALLOC_NOWAIT, &a), -ENOSPC);
	assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &b), 0);
	itest_assert_alloc_zero(r, b);

	/* full: anything more is -ENOSPC, waiting or not */
	assert_int_equal(pmemz_alloc_new(r, 1, 0, &a), -ENOSPC);
	assert_int_equal(pmemz_alloc_new(r, 1, PMEMZ_ALLOC_NOWAIT, &a), -ENOSPC);
	itest_stat(e->sock, "fast", &st);
	itest_assert_accounting(&st, "region full");
	assert_int_equal(st.leased, n);
	assert_int_equal(st.zeroed, 0);
	assert_int_equal(st.waiters, 0);

	/* committed space counts as used too */
	assert_int_equal(pmemz_alloc_commit(b, "b", 0), 0);
	assert_int_equal(pmemz_alloc_new(r, 1, 0, &a), -ENOSPC);

	/* give some back: allocations succeed again (waiting for the zeroer) */
	assert_int_equal(pmemz_alloc_release(b), 0);
	assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &b), 0);
	itest_assert_alloc_zero(r, b);
	assert_int_equal(pmemz_alloc_new(r, 1, 0, &a), -ENOSPC);
	pmemz_alloc_close(b);
	pmemz_alloc_close(all);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_wait_zeroed(e->sock, "fast", 10000, &st);
	assert_int_equal(st.zeroed, n);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_nowait_eagain, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_waiting_alloc_does_not_block, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_waiter_disconnect, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_enospc, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
