/* SPDX-License-Identifier: MIT */
/*
 * Integration test 1 (I1, I2): allocate, the space reads zero, write a
 * pattern, persist, commit (with and without PMEMZ_COMMIT_FLUSH), stop the
 * daemon with SIGTERM, restart it on the same region: pmemz_alloc_open finds
 * the tags with the data intact; frees are durable across restarts too.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "r1"
#define MIB ITEST_MIB

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/r1.img\n"
			 "size = 64M\n"
			 "extent_size = 1M\n",
			 e->dir);
}

static void check_granularity(const struct itest_stat *st)
{
	const char *force = getenv("PMEM2_FORCE_GRANULARITY");

	if (strcmp(st->granularity, "byte") && strcmp(st->granularity, "cache_line") &&
	    strcmp(st->granularity, "page"))
		fail_msg("STAT granularity '%s' is not byte/cache_line/page", st->granularity);
	if (force && strcmp(force, "CACHE_LINE") == 0 && strcmp(st->granularity, "cache_line"))
		fail_msg("PMEM2_FORCE_GRANULARITY=CACHE_LINE but the daemon maps with '%s'",
			 st->granularity);
	/* tmpfs has no MAP_SYNC: without forcing, the mapping must be PAGE (msync) */
	if (!force && strcmp(st->granularity, "page"))
		fail_msg("default granularity of a /dev/shm file is '%s', want 'page'",
			 st->granularity);
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

static struct pmemz_alloc *alloc_zero(struct pmemz_region *r, size_t bytes, size_t expect)
{
	struct pmemz_alloc *a = NULL;
	int rc = pmemz_alloc_new(r, bytes, 0, &a);

	if (rc)
		fail_msg("pmemz_alloc_new(%zu): %s (%s)", bytes, strerror(-rc), pmemz_errormsg());
	assert_non_null(a);
	assert_int_equal(pmemz_alloc_size(a), expect);
	itest_assert_alloc_in_region(r, a);
	itest_assert_alloc_zero(r, a);
	return a;
}

static void assert_same_extents(const struct pmemz_region *r, const uint8_t *want,
				const struct pmemz_alloc *a)
{
	uint8_t *got = itest_alloc_bitmap(r, a);
	size_t n = pmemz_region_size(r) / pmemz_region_extent_size(r) + 1;

	for (size_t i = 0; i < n; i++)
		if (want[i] != got[i])
			fail_msg("reopened tag: extent %zu %s", i,
				 want[i] ? "missing" : "unexpectedly present");
	free(got);
}

static void test_commit_survives_restart(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL, *b = NULL, *l = NULL, *x = NULL;
	struct itest_stat st;
	uint8_t *bits_a, *bits_b;
	uint64_t n;
	int rc;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	check_granularity(&st);
	n = st.extent_count;
	assert_int_equal(st.extent_size, MIB);
	assert_true(n >= 32 && n <= 64);
	assert_int_equal(st.zeroed, n);
	assert_true(st.data_offset % MIB == 0);
	assert_true(st.data_offset + n * MIB <= st.size);

	open_client(e, &c, &r);
	assert_int_equal(pmemz_region_extent_size(r), MIB);
	assert_int_equal(pmemz_region_size(r), st.size);

	/* a: 3 MiB + 1 byte rounds up to 4 extents; persisted by the client */
	a = alloc_zero(r, 3 * MIB + 1, 4 * MIB);
	itest_fill_alloc(r, a, 1);
	itest_persist_alloc(r, a);
	rc = pmemz_alloc_commit(a, "with-persist", 0);
	if (rc)
		fail_msg("commit with-persist: %s (%s)", strerror(-rc), pmemz_errormsg());

	/* b: 5 MiB, not persisted locally: the daemon flushes (PMEMZ_COMMIT_FLUSH) */
	b = alloc_zero(r, 5 * MIB, 5 * MIB);
	itest_fill_alloc(r, b, 2);
	rc = pmemz_alloc_commit(b, "with-flush", PMEMZ_COMMIT_FLUSH);
	if (rc)
		fail_msg("commit with-flush: %s (%s)", strerror(-rc), pmemz_errormsg());

	/* l: a lease that is never committed; x: 1 byte -> one extent */
	l = alloc_zero(r, 2 * MIB, 2 * MIB);
	itest_fill_alloc(r, l, 3);
	itest_persist_alloc(r, l);
	x = alloc_zero(r, 1, MIB);

	bits_a = itest_alloc_bitmap(r, a);
	bits_b = itest_alloc_bitmap(r, b);

	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after commits");
	assert_int_equal(st.committed, 9);
	assert_int_equal(st.leased, 3);
	assert_true(st.tags >= 2);

	/* SIGTERM with the client still connected and a lease outstanding */
	itest_daemon_stop(e);
	pmemz_alloc_close(a);
	pmemz_alloc_close(b);
	pmemz_alloc_close(l);
	pmemz_alloc_close(x);
	pmemz_region_close(r);
	pmemz_client_free(c);

	itest_daemon_start(e);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after restart");
	assert_int_equal(st.extent_count, n);
	assert_int_equal(st.committed, 9);
	assert_int_equal(st.leased, 0); /* recovery: LEASED -> DIRTY */
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(st.zeroed, n - 9);

	open_client(e, &c, &r);
	rc = pmemz_alloc_open(r, "with-persist", &a);
	if (rc)
		fail_msg("alloc_open with-persist after restart: %s (%s)", strerror(-rc),
			 pmemz_errormsg());
	assert_int_equal(pmemz_alloc_size(a), 4 * MIB);
	itest_assert_alloc_in_region(r, a);
	assert_same_extents(r, bits_a, a);
	itest_check_alloc(r, a, 1);

	rc = pmemz_alloc_open(r, "with-flush", &b);
	if (rc)
		fail_msg("alloc_open with-flush after restart: %s (%s)", strerror(-rc),
			 pmemz_errormsg());
	assert_int_equal(pmemz_alloc_size(b), 5 * MIB);
	assert_same_extents(r, bits_b, b);
	itest_check_alloc(r, b, 2);

	x = NULL;
	assert_int_equal(pmemz_alloc_open(r, "never-committed", &x), -ENOENT);
	assert_null(x);

	/* everything still free is zero and disjoint from the committed tags */
	x = alloc_zero(r, (n - 9) * MIB, (n - 9) * MIB);
	{
		uint8_t *bx = itest_alloc_bitmap(r, x);

		for (size_t i = 0; i <= n; i++)
			if (bx[i] && (bits_a[i] || bits_b[i]))
				fail_msg("extent %zu handed out while committed", i);
		free(bx);
	}
	assert_int_equal(pmemz_alloc_release(x), 0);

	/* release one tag: gone now and after another restart */
	assert_int_equal(pmemz_alloc_release(a), 0);
	a = NULL;
	assert_int_equal(pmemz_alloc_open(r, "with-persist", &a), -ENOENT);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after release");
	assert_int_equal(st.committed, 5);

	pmemz_alloc_close(b);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);

	itest_daemon_start(e);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.committed, 5);
	open_client(e, &c, &r);
	a = NULL;
	assert_int_equal(pmemz_alloc_open(r, "with-persist", &a), -ENOENT);
	assert_int_equal(pmemz_alloc_open(r, "with-flush", &b), 0);
	assert_same_extents(r, bits_b, b);
	itest_check_alloc(r, b, 2);
	pmemz_alloc_close(b);
	pmemz_region_close(r);
	pmemz_client_free(c);
	free(bits_a);
	free(bits_b);
	itest_daemon_stop(e);
}

/* The same tag may be committed again after it was released; a live tag may not. */
static void test_tag_reuse(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL, *b = NULL;
	struct itest_stat st;

	write_conf(e);
	itest_daemon_start(e);
	open_client(e, &c, &r);

	a = alloc_zero(r, MIB, MIB);
	itest_fill_alloc(r, a, 11);
	assert_int_equal(pmemz_alloc_commit(a, "t", PMEMZ_COMMIT_FLUSH), 0);
	b = alloc_zero(r, 2 * MIB, 2 * MIB);
	assert_int_equal(pmemz_alloc_commit(b, "t", PMEMZ_COMMIT_FLUSH), -EEXIST);
	/* the failed commit left b a usable lease */
	assert_int_equal(pmemz_alloc_commit(b, "t2", 0), 0);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after tag reuse");
	assert_int_equal(st.committed, 3);
	assert_int_equal(st.leased, 0);

	assert_int_equal(pmemz_alloc_release(a), 0);
	a = alloc_zero(r, MIB, MIB);
	assert_int_equal(pmemz_alloc_commit(a, "t", 0), 0);
	pmemz_alloc_close(a);
	pmemz_alloc_close(b);
	assert_int_equal(pmemz_alloc_open(r, "t", &a), 0);
	assert_int_equal(pmemz_alloc_size(a), MIB);
	itest_assert_alloc_zero(r, a);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* A region size that is no multiple of the extent size: nothing past the end is handed out. */
static void test_odd_geometry(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;

	itest_write_conf(e,
			 "[region odd]\n"
			 "path = %s/odd.img\n"
			 "size = 36708352\n" /* 35 MiB + 8 KiB */
			 "extent_size = 2M\n",
			 e->dir);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "odd", 10000, &st);
	assert_int_equal(st.extent_size, 2 * MIB);
	assert_true(st.data_offset % (2 * MIB) == 0);
	assert_true(st.data_offset + st.extent_count * 2 * MIB <= st.size);
	assert_true(st.data_offset + (st.extent_count + 1) * 2 * MIB > st.size);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "odd", &r), 0);
	assert_int_equal(pmemz_region_size(r), 36708352);
	assert_int_equal(pmemz_alloc_new(r, st.extent_count * 2 * MIB, 0, &a), 0);
	itest_assert_alloc_in_region(r, a);
	itest_assert_alloc_zero(r, a);
	itest_fill_alloc(r, a, 5); /* would fault past the mapping */
	itest_persist_alloc(r, a);
	assert_int_equal(pmemz_alloc_commit(a, "odd", PMEMZ_COMMIT_FLUSH), 0);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
	itest_daemon_start(e);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "odd", &r), 0);
	assert_int_equal(pmemz_alloc_open(r, "odd", &a), 0);
	itest_check_alloc(r, a, 5);
	assert_int_equal(pmemz_alloc_release(a), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_commit_survives_restart, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_tag_reuse, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_odd_geometry, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
