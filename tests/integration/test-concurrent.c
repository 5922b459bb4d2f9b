/* SPDX-License-Identifier: MIT */
/*
 * Concurrency: several client processes, and several threads sharing one
 * client handle, allocate, stamp, verify, commit and free at the same time.
 * Every allocation must read zero (I1), no extent may be handed to two
 * holders at once or zeroed while it is leased or committed (a stamp written
 * into it must survive until its holder frees it), and at the end the
 * accounting is exact with nothing leaked (I3).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "cc"
#define MIB ITEST_MIB
#define WORKERS 4
#define ITERS 40

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/cc.img\n"
			 "size = 64M\n"
			 "extent_size = 1M\n"
			 "zeroer_threads = 2\n"
			 "batch_extents = 4\n",
			 e->dir);
}

/* Stamp: every 4 KiB of the extent starts with (owner, iteration, offset). */
static void stamp(struct pmemz_alloc *a, uint64_t owner, uint64_t iter)
{
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		char *p = pmemz_alloc_range(a, i, &len);

		for (size_t o = 0; o < len; o += 4096) {
			uint64_t w[3] = {owner, iter, o};

			memcpy(p + o, w, sizeof(w));
		}
	}
}

static int stamp_ok(const struct pmemz_alloc *a, uint64_t owner, uint64_t iter, char *why,
		    size_t why_len)
{
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		const char *p = pmemz_alloc_range(a, i, &len);

		for (size_t o = 0; o < len; o += 4096) {
			uint64_t w[3];

			memcpy(w, p + o, sizeof(w));
			if (w[0] != owner || w[1] != iter || w[2] != o) {
				snprintf(
				    why, why_len,
				    "range %zu +%zu: stamp (%llu,%llu,%llu) != ours (%llu,%llu,"
				    "%zu)",
				    i, o, (unsigned long long)w[0], (unsigned long long)w[1],
				    (unsigned long long)w[2], (unsigned long long)owner,
				    (unsigned long long)iter, o);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * One worker's loop; returns 0 or -1 with why filled.  Keeps up to two
 * allocations (a lease and a committed tag) alive across iterations.
 */
static int worker_loop(struct pmemz_region *r, uint64_t owner, char *why, size_t why_len)
{
	struct pmemz_alloc *keep = NULL;
	uint64_t keep_iter = 0;
	int rc;

	for (uint64_t it = 1; it <= ITERS; it++) {
		struct pmemz_alloc *a = NULL;
		size_t n = 1 + (owner + it) % 3;
		char tag[64];

		rc = pmemz_alloc_new(r, n * MIB, 0, &a);
		if (rc) {
			snprintf(why, why_len, "alloc %zu MiB: %s (%s)", n, strerror(-rc),
				 pmemz_errormsg());
			return -1;
		}
		for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
			size_t len;
			const char *p = pmemz_alloc_range(a, i, &len);
			size_t off = itest_first_nonzero(p, len);

			if (off != (size_t)-1) {
				snprintf(why, why_len,
					 "I1: fresh allocation has byte 0x%02x at range %zu +%zu",
					 (unsigned char)p[off], i, off);
				return -1;
			}
		}
		stamp(a, owner, it);
		if (keep && stamp_ok(keep, owner, keep_iter, why, why_len) < 0)
			return -1;
		usleep(200);
		if (stamp_ok(a, owner, it, why, why_len) < 0)
			return -1;

		switch (it % 4) {
		case 0: /* commit, keep it for a while, release later */
			snprintf(tag, sizeof(tag), "w%llu-%llu", (unsigned long long)owner,
				 (unsigned long long)it);
			rc = pmemz_alloc_commit(a, tag, (it % 8) ? 0 : PMEMZ_COMMIT_FLUSH);
			if (rc) {
				snprintf(why, why_len, "commit %s: %s (%s)", tag, strerror(-rc),
					 pmemz_errormsg());
				return -1;
			}
			if (keep && (rc = pmemz_alloc_release(keep))) {
				snprintf(why, why_len, "release kept: %s", strerror(-rc));
				return -1;
			}
			keep = a;
			keep_iter = it;
			break;
		case 1:
			rc = pmemz_alloc_release(a);
			if (rc) {
				snprintf(why, why_len, "release lease: %s (%s)", strerror(-rc),
					 pmemz_errormsg());
				return -1;
			}
			break;
		case 2:
			pmemz_alloc_close(a);
			break;
		default: /* keep the lease across an iteration */
			if (keep && (rc = pmemz_alloc_release(keep))) {
				snprintf(why, why_len, "release kept: %s", strerror(-rc));
				return -1;
			}
			keep = a;
			keep_iter = it;
			break;
		}
	}
	if (keep) {
		if (stamp_ok(keep, owner, keep_iter, why, why_len) < 0)
			return -1;
		rc = pmemz_alloc_release(keep);
		if (rc) {
			snprintf(why, why_len, "final release: %s", strerror(-rc));
			return -1;
		}
	}
	return 0;
}

static void check_idle(struct itest_env *e)
{
	struct itest_stat st;
	uint64_t deadline = itest_now_ms() + 10000;

	for (;;) {
		itest_stat(e->sock, REGION, &st);
		itest_assert_accounting(&st, "after the workers");
		if (st.leased == 0 && st.dirty == 0 && st.zeroing == 0)
			break;
		if (itest_now_ms() > deadline)
			fail_msg("not idle 10 s after the workers: leased %llu dirty %llu",
				 (unsigned long long)st.leased, (unsigned long long)st.dirty);
		itest_msleep(10);
	}
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.zeroed, st.extent_count);
}

static void test_processes(void **state)
{
	struct itest_env *e = *state;
	pid_t pids[WORKERS];

	write_conf(e);
	itest_daemon_start(e);
	fflush(NULL);
	for (int w = 0; w < WORKERS; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			struct pmemz_client *c = NULL;
			struct pmemz_region *r = NULL;
			char why[256] = "";
			int rc = pmemz_client_new(e->sock, &c);

			CHILD_CHECK(rc == 0, "connect: %s", pmemz_errormsg());
			rc = pmemz_region_open(c, REGION, &r);
			CHILD_CHECK(rc == 0, "open: %s", pmemz_errormsg());
			rc = worker_loop(r, 100 + (uint64_t)w, why, sizeof(why));
			CHILD_CHECK(rc == 0, "worker %d: %s", w, why);
			pmemz_region_close(r);
			pmemz_client_free(c);
			_exit(0);
		}
	}
	for (int w = 0; w < WORKERS; w++)
		itest_wait_child_ok(pids[w], 60000, "worker process");
	check_idle(e);
	itest_daemon_stop(e);
}

struct thr {
	pthread_t t;
	struct pmemz_region *r;
	uint64_t owner;
	int rc;
	char why[256];
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;

	t->rc = worker_loop(t->r, t->owner, t->why, sizeof(t->why));
	return NULL;
}

/* Threads sharing one client and one region handle (the library is thread-safe per client). */
static void test_threads_one_client(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct thr t[WORKERS];

	write_conf(e);
	itest_daemon_start(e);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
	for (int w = 0; w < WORKERS; w++) {
		t[w].r = r;
		t[w].owner = 200 + (uint64_t)w;
		t[w].rc = 0;
		t[w].why[0] = 0;
		assert_int_equal(pthread_create(&t[w].t, NULL, thr_main, &t[w]), 0);
	}
	for (int w = 0; w < WORKERS; w++)
		assert_int_equal(pthread_join(t[w].t, NULL), 0);
	for (int w = 0; w < WORKERS; w++)
		if (t[w].rc)
			fail_msg("thread %d: %s", w, t[w].why);
	pmemz_region_close(r);
	pmemz_client_free(c);
	check_idle(e);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_processes, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_threads_one_client, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
