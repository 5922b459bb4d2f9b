/* SPDX-License-Identifier: MIT */
/*
 * Batches (libpmemzclient 1.4) against the real daemon:
 *  - commits: many leases in one batch, each answered on its own (a
 *    duplicate tag fails its entry alone); submit returns before the
 *    answers, poll reports -EINPROGRESS then the result;
 *  - moves: extents of a committed pool move to new tags with their bytes,
 *    the pool keeps the rest, and goes away with its last extent; the new
 *    tags survive a restart of the daemon;
 *  - all or nothing: a batch with one bad move moves nothing;
 *  - bad calls: an address that does not start one of the pool's extents,
 *    a lease as the source, more than PMEMZ_BATCH_MOVES_MAX moves, a
 *    second submit, an empty batch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "batch"
#define EXTENT 4096u

static int setup(void **state)
{
	struct itest_env *e;
	int r = itest_setup(state);

	if (r)
		return r;
	e = *state;
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/batch.img\n"
			 "size = 8M\n"
			 "extent_size = 4K\n",
			 e->dir);
	itest_daemon_start(e);
	return 0;
}

static void connect_region(struct itest_env *e, struct pmemz_client **c, struct pmemz_region **r)
{
	CHECK_RC(pmemz_client_new(e->sock, c), 0);
	CHECK_RC(pmemz_region_open(*c, REGION, r), 0);
}

static bool tag_exists(struct pmemz_region *r, const char *tag)
{
	struct pmemz_alloc *a = NULL;
	int rc = pmemz_alloc_open(r, tag, &a);

	assert_true(rc == 0 || rc == -ENOENT);
	pmemz_alloc_close(a);
	return rc == 0;
}

static void test_commits(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;
	struct pmemz_alloc *a[8], *dup;
	struct pmemz_batch *b;
	char name[32];
	int rc;

	connect_region(e, &c, &r);
	CHECK_RC(pmemz_alloc_new(r, EXTENT, 0, &dup), 0);
	CHECK_RC(pmemz_alloc_commit(dup, "c/3", 0), 0);
	CHECK_RC(pmemz_batch_new(r, &b), 0);
	for (int i = 0; i < 8; i++) {
		CHECK_RC(pmemz_alloc_new(r, 2 * EXTENT, 0, &a[i]), 0);
		itest_fill_alloc(r, a[i], (uint64_t)i + 1);
		(void)snprintf(name, sizeof(name), "c/%d", i);
		CHECK_RC(pmemz_batch_commit(b, a[i], name, PMEMZ_COMMIT_FLUSH), 0);
	}
	assert_int_equal(pmemz_batch_count(b), 8);
	CHECK_RC(pmemz_batch_submit(b), 0);
	CHECK_RC(pmemz_batch_submit(b), -EALREADY);
	CHECK_RC(pmemz_batch_commit(b, a[0], "late", 0), -EALREADY);
	/* answered while we look: -EINPROGRESS, then the result (bounded) */
	for (int i = 0; (rc = pmemz_batch_poll(b)) == -EINPROGRESS && i < 5000; i++) {
		struct timespec ts = {0, 1000000};

		nanosleep(&ts, NULL);
	}
	assert_int_equal(rc, -EEXIST); /* c/3 exists: that entry alone */
	for (int i = 0; i < 8; i++) {
		assert_int_equal(pmemz_batch_status(b, (size_t)i), i == 3 ? -EEXIST : 0);
		(void)snprintf(name, sizeof(name), "c/%d", i);
		if (i == 3) {
			assert_null(pmemz_alloc_tag(a[i])); /* still a lease */
			continue;
		}
		assert_string_equal(pmemz_alloc_tag(a[i]), name);
		assert_true(tag_exists(r, name));
	}
	assert_int_equal(pmemz_batch_status(b, 8), -EINVAL);
	pmemz_batch_free(b);
	for (int i = 0; i < 8; i++)
		CHECK_RC(pmemz_alloc_release(a[i]), 0);
	CHECK_RC(pmemz_alloc_release(dup), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static char *extent_addr(struct pmemz_alloc *a, size_t k)
{
	size_t len = 0, seen = 0;

	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		char *p = pmemz_alloc_range(a, i, &len);

		if (k < seen + len / EXTENT)
			return p + (k - seen) * EXTENT;
		seen += len / EXTENT;
	}
	fail_msg("no extent %zu", k);
	return NULL;
}

static void test_moves(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;
	struct pmemz_alloc *pool, *out[8] = {0}, *again;
	struct pmemz_batch *b;
	char *addr[8], name[32];

	connect_region(e, &c, &r);
	CHECK_RC(pmemz_alloc_new(r, 8 * EXTENT, 0, &pool), 0);
	CHECK_RC(pmemz_alloc_commit(pool, "pool", 0), 0);
	for (size_t k = 0; k < 8; k++) {
		addr[k] = extent_addr(pool, k);
		memset(addr[k], 'a' + (int)k, EXTENT);
		CHECK_RC(pmemz_persist(r, addr[k], EXTENT), 0);
	}

	/* three of them to their own tags */
	CHECK_RC(pmemz_batch_new(r, &b), 0);
	for (size_t k = 0; k < 3; k++) {
		(void)snprintf(name, sizeof(name), "m/%zu", k);
		CHECK_RC(pmemz_batch_move(b, pool, addr[k], name, &out[k]), 0);
	}
	CHECK_RC(pmemz_batch_wait(b), 0);
	pmemz_batch_free(b);
	assert_int_equal(pmemz_alloc_size(pool), 5 * EXTENT);
	for (size_t k = 0; k < 3; k++) {
		size_t len = 0;

		(void)snprintf(name, sizeof(name), "m/%zu", k);
		assert_string_equal(pmemz_alloc_tag(out[k]), name);
		assert_int_equal(pmemz_alloc_count(out[k]), 1);
		assert_ptr_equal(pmemz_alloc_range(out[k], 0, &len), addr[k]);
		assert_int_equal(len, EXTENT);
		assert_int_equal(addr[k][EXTENT - 1], 'a' + (int)k);
		/* moved: no longer the pool's */
		CHECK_RC(pmemz_batch_new(r, &b), 0);
		CHECK_RC(pmemz_batch_move(b, pool, addr[k], "x", NULL), -EINVAL);
		pmemz_batch_free(b);
	}
	CHECK_RC(pmemz_alloc_open(r, "pool", &again), 0);
	assert_int_equal(pmemz_alloc_size(again), 5 * EXTENT);
	pmemz_alloc_close(again);

	/* all or nothing: one move to an existing tag, none of them happens */
	CHECK_RC(pmemz_batch_new(r, &b), 0);
	CHECK_RC(pmemz_batch_move(b, pool, addr[3], "n/3", NULL), 0);
	CHECK_RC(pmemz_batch_move(b, pool, addr[4], "m/0", NULL), 0);
	CHECK_RC(pmemz_batch_wait(b), -EEXIST);
	assert_int_equal(pmemz_batch_status(b, 0), -EEXIST);
	pmemz_batch_free(b);
	assert_false(tag_exists(r, "n/3"));
	assert_int_equal(pmemz_alloc_size(pool), 5 * EXTENT);

	/* the rest: the pool goes with its last extent */
	CHECK_RC(pmemz_batch_new(r, &b), 0);
	for (size_t k = 3; k < 8; k++) {
		(void)snprintf(name, sizeof(name), "m/%zu", k);
		CHECK_RC(pmemz_batch_move(b, pool, addr[k], name, &out[k]), 0);
	}
	CHECK_RC(pmemz_batch_wait(b), 0);
	pmemz_batch_free(b);
	assert_int_equal(pmemz_alloc_size(pool), 0);
	assert_false(tag_exists(r, "pool"));
	CHECK_RC(pmemz_alloc_release(pool), 0); /* nothing left to free */
	for (size_t k = 0; k < 8; k++)
		pmemz_alloc_close(out[k]);
	pmemz_region_close(r);
	pmemz_client_free(c);

	/* durable: every new tag after a restart, with its bytes */
	itest_daemon_stop(e);
	itest_daemon_start(e);
	connect_region(e, &c, &r);
	for (size_t k = 0; k < 8; k++) {
		size_t len = 0;
		char *p;

		(void)snprintf(name, sizeof(name), "m/%zu", k);
		CHECK_RC(pmemz_alloc_open(r, name, &again), 0);
		p = pmemz_alloc_range(again, 0, &len);
		assert_int_equal(len, EXTENT);
		assert_int_equal(p[0], 'a' + (int)k);
		assert_int_equal(p[EXTENT - 1], 'a' + (int)k);
		CHECK_RC(pmemz_alloc_release(again), 0);
	}
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void test_bad_calls(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;
	struct pmemz_alloc *pool, *lease;
	struct pmemz_batch *b;
	char *p, name[32];
	size_t len = 0;

	connect_region(e, &c, &r);
	CHECK_RC(pmemz_alloc_new(r, EXTENT, 0, &lease), 0);
	CHECK_RC(pmemz_alloc_new(r, 2 * EXTENT, 0, &pool), 0);
	CHECK_RC(pmemz_alloc_commit(pool, "bad/pool", 0), 0);
	p = pmemz_alloc_range(pool, 0, &len);
	CHECK_RC(pmemz_batch_new(r, &b), 0);
	CHECK_RC(pmemz_batch_submit(b), -EINVAL); /* empty */
	CHECK_RC(pmemz_batch_poll(b), -EINVAL);	  /* not submitted */
	CHECK_RC(pmemz_batch_move(b, pool, p + 1, "x", NULL), -EINVAL);
	CHECK_RC(pmemz_batch_move(b, pool, p - EXTENT, "x", NULL), -EINVAL);
	CHECK_RC(pmemz_batch_move(b, lease, pmemz_alloc_range(lease, 0, &len), "x", NULL), -EINVAL);
	CHECK_RC(pmemz_batch_move(b, pool, p, "", NULL), -EINVAL);
	CHECK_RC(pmemz_batch_move(NULL, pool, p, "x", NULL), -EINVAL);
	CHECK_RC(pmemz_batch_commit(b, pool, "x", 0), -EINVAL); /* committed already */
	CHECK_RC(pmemz_batch_commit(b, lease, "x", 0x80), -EINVAL);
	for (int i = 0; i < PMEMZ_BATCH_MOVES_MAX; i++) {
		(void)snprintf(name, sizeof(name), "bad/%d", i);
		CHECK_RC(pmemz_batch_move(b, pool, p, name, NULL), 0);
	}
	CHECK_RC(pmemz_batch_move(b, pool, p, "one-more", NULL), -E2BIG);
	/* the daemon refuses an extent named twice: nothing moves */
	CHECK_RC(pmemz_batch_wait(b), -EINVAL);
	pmemz_batch_free(b);
	assert_int_equal(pmemz_alloc_size(pool), 2 * EXTENT);
	assert_false(tag_exists(r, "bad/0"));
	pmemz_batch_free(NULL);
	CHECK_RC(pmemz_alloc_release(pool), 0);
	CHECK_RC(pmemz_alloc_release(lease), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_commits, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_moves, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_bad_calls, setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
