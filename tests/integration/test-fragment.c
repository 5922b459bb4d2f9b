/* SPDX-License-Identifier: MIT */
/*
 * An allocation succeeds whenever the free space exists, however
 * fragmented (docs/PERFORMANCE.md): half of a region of 4 KiB extents freed as a
 * checkerboard is one allocation of some 16 k runs, more than one reply
 * frame holds.  The library reads the rest with RUNS, for the lease
 * (ALLOCATE) and for the tag (pmemz_alloc_open); the handle describes
 * exactly the free extents, zeroed; commit and release take it whole, and
 * pmemz_tag_foreach (a paged LIST) finds the tag whole too.  A
 * client that does not announce more_runs_ok still gets -EMSGSIZE, and RUNS
 * refuses other connections' leases and runs past the end.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "frag"
#define EXTENT 4096u
#define REGION_EXTENTS 32768u /* 128 MiB, less its metadata: 2+ frames for half */

static uint64_t kept_lease; /* one the raw client holds */
static uint64_t n_ext;	    /* the region's extent count, from STAT */
static uint64_t ext_shift;  /* data_offset / extent size: the bitmap's index of extent 0 */
#define EXTENTS n_ext
#define FREED ((n_ext + 1) / 2) /* the even extents */

static int setup(void **state)
{
	struct itest_env *e;
	int r = itest_setup(state);

	if (r)
		return r;
	e = *state;
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/frag.img\n"
			 "size = 128M\n"
			 "extent_size = 4K\n",
			 e->dir);
	itest_daemon_start(e);
	return 0;
}

static int runs_call(int fd, uint64_t lease, uint64_t start)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__RunsReq rq = PMEMZ__RUNS_REQ__INIT;

	rq.region = (char *)(uintptr_t)REGION;
	rq.has_lease = true;
	rq.lease = lease;
	rq.start = start;
	req.op_case = PMEMZ__REQUEST__OP_RUNS;
	req.runs = &rq;
	return itest_raw_call(fd, &req, NULL);
}

/* Lease every extent one at a time on raw connection fd, then free the even ones. */
static uint64_t checkerboard(struct itest_env *e, int fd, uint8_t *kept)
{
	uint64_t *lease_of = calloc(REGION_EXTENTS, sizeof(*lease_of));
	struct itest_stat st;
	uint64_t n = 0;

	assert_non_null(lease_of);
	itest_wait_zeroed(e->sock, REGION, 60000, &st);
	n_ext = st.extent_count;
	ext_shift = st.data_offset / EXTENT;
	assert_true(n_ext > REGION_EXTENTS * 9 / 10 && n_ext <= REGION_EXTENTS);
	for (uint64_t i = 0; i < n_ext; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
		Pmemz__Response *resp = NULL;
		uint64_t x;

		al.region = (char *)(uintptr_t)REGION;
		al.bytes = EXTENT;
		req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		req.allocate = &al;
		assert_int_equal(itest_raw_call(fd, &req, &resp), 0);
		assert_int_equal(resp->allocate->n_runs, 1);
		x = resp->allocate->runs[0]->first;
		assert_true(x < n_ext && !kept[x]);
		kept[x] = 1;
		lease_of[x] = resp->allocate->lease;
		itest_resp_free(resp);
	}
	for (uint64_t x = 0; x < n_ext; x += 2) {
		assert_int_equal(itest_raw_free_lease(fd, REGION, lease_of[x]), 0);
		kept[x] = 0;
		n++;
	}
	kept_lease = lease_of[1];
	free(lease_of);
	return n;
}

static void assert_is_free_half(struct pmemz_region *r, struct pmemz_alloc *a, const uint8_t *kept)
{
	uint8_t *bits = itest_alloc_bitmap(r, a);

	assert_int_equal(pmemz_alloc_count(a), FREED);
	assert_int_equal(pmemz_alloc_size(a), (size_t)(FREED * EXTENT));
	for (size_t i = 0; i < EXTENTS; i++)
		if (bits[i + ext_shift] == kept[i])
			fail_msg("extent %zu: in the allocation %d, held by the raw client %d", i,
				 bits[i + ext_shift], kept[i]);
	free(bits);
}

/* pmemz_tag_foreach callback: keep the one tag (a second one fails). */
static int take_one(struct pmemz_alloc *a, const char *tag, void *arg)
{
	struct pmemz_alloc **out = arg;

	if (*out) {
		pmemz_alloc_close(a);
		return -EEXIST;
	}
	*out = a;
	return 0;
}

static void test_checkerboard_half(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	uint8_t *kept = calloc(REGION_EXTENTS, 1);
	struct itest_stat st;
	uint64_t lease, t0, freed;
	int raw, old, rc;

	assert_non_null(kept);
	raw = itest_raw_connect(e->sock);
	assert_true(raw >= 0);
	freed = checkerboard(e, raw, kept);
	assert_int_equal(freed, FREED);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.zeroed + st.dirty, FREED);

	/* A client without more_runs_ok: refused, nothing leased. */
	old = itest_raw_connect(e->sock);
	assert_true(old >= 0);
	assert_int_equal(itest_raw_alloc(old, REGION, FREED * EXTENT, false, &lease), -EMSGSIZE);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.leased, EXTENTS - FREED);

	rc = pmemz_client_new(e->sock, &c);
	assert_int_equal(rc, 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
	t0 = itest_now_ms();
	/* Waits for the zeroer: granted from the wait queue, without the request. */
	rc = pmemz_alloc_new(r, (size_t)(FREED * EXTENT), 0, &a);
	if (rc)
		fail_msg("pmemz_alloc_new: %s (%s)", strerror(-rc), pmemz_errormsg());
	print_message("checkerboard half: %zu runs in %llu ms\n", pmemz_alloc_count(a),
		      (unsigned long long)(itest_now_ms() - t0));
	assert_is_free_half(r, a, kept);
	itest_assert_alloc_zero(r, a);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.leased, EXTENTS);
	assert_int_equal(st.zeroed, 0);

	/* RUNS: past the end, and another connection's lease. */
	lease = 0;
	{
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__RunsReq rq = PMEMZ__RUNS_REQ__INIT;

		rq.region = (char *)(uintptr_t)REGION;
		rq.tag = (char *)(uintptr_t) "no-such-tag";
		req.op_case = PMEMZ__REQUEST__OP_RUNS;
		req.runs = &rq;
		assert_int_equal(itest_raw_call(old, &req, NULL), -ENOENT);
	}
	assert_int_equal(runs_call(old, kept_lease, 0), -EPERM);

	itest_fill_alloc(r, a, 12);
	itest_persist_alloc(r, a);
	assert_int_equal(pmemz_alloc_commit(a, "board", 0), 0);
	pmemz_alloc_close(a);
	a = NULL;

	/* The tag comes back whole through LIST's first slice and RUNS. */
	assert_int_equal(pmemz_alloc_open(r, "board", &a), 0);
	assert_is_free_half(r, a, kept);
	itest_check_alloc(r, a, 12);
	pmemz_alloc_close(a);
	/* And through a paged LIST (pmemz_tag_foreach): alone on its page, the rest by RUNS. */
	a = NULL;
	assert_int_equal(pmemz_tag_foreach(r, "bo", take_one, &a), 0);
	assert_non_null(a);
	assert_string_equal(pmemz_alloc_tag(a), "board");
	assert_is_free_half(r, a, kept);
	itest_check_alloc(r, a, 12);
	assert_int_equal(pmemz_alloc_release(a), 0);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after the release");
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.leased, EXTENTS - FREED);

	pmemz_region_close(r);
	pmemz_client_free(c);
	close(old);
	close(raw);
	free(kept);
}

static void test_runs_range(void **state)
{
	struct itest_env *e = *state;
	uint64_t lease;
	int fd = itest_raw_connect(e->sock);

	assert_true(fd >= 0);
	assert_int_equal(itest_raw_alloc(fd, REGION, 3 * EXTENT, false, &lease), 0);
	assert_int_equal(runs_call(fd, lease, 0), 0);
	assert_int_equal(runs_call(fd, lease, 1000), -ERANGE);
	assert_int_equal(runs_call(fd, lease + 1000, 0), -ENOENT);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_checkerboard_half, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_runs_range, setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
