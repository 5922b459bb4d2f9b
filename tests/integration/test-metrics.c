/* SPDX-License-Identifier: MIT */
/*
 * Integration test: `pmemzctl metrics` against the real daemon.
 *
 * Two regions see allocations, commits, frees and one ALLOCATE that waits
 * for a paused zeroer for a known time.  Once the daemon is quiescent
 * (every free extent ZEROED, nothing in a zeroer batch, no connection but
 * the test's own two), `pmemzctl metrics --output` writes the exposition and
 * `pmemzctl --json regions` / `--json status` describe the same moment;
 * check-metrics.py parses the exposition with the Prometheus reference
 * parser (python3-prometheus-client) and compares every value.  Also: the
 * file replaces an older one atomically (no temporary file left, mode
 * 0644), and a daemon that is not there leaves the old file alone.  An
 * nbd disk's per-disk gauges match `pmemzctl --json disks`.
 *
 * Skipped (77) without python3 and its prometheus_client module.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB
#define WAIT_MS 300 /* how long the waiting ALLOCATE is kept waiting, at least */

static char python[PATH_MAX];

static bool try_python(const char *dir)
{
	char *argv[] = {python, UNCONST("-c"), UNCONST("import prometheus_client"), NULL};

	if ((size_t)snprintf(python, sizeof(python), "%s/python3", dir) >= sizeof(python))
		return false;
	return access(python, X_OK) == 0 && itest_run(argv, 30000, NULL, NULL) == 0;
}

/* A python3 that has prometheus_client: $PMEMZ_PYTHON, then python3 on PATH, then Debian's. */
static bool find_python(void)
{
	const char *env = getenv("PMEMZ_PYTHON");
	const char *path = getenv("PATH");
	bool found = false;

	if (env && *env) {
		char *argv[] = {python, UNCONST("-c"), UNCONST("import prometheus_client"), NULL};

		(void)snprintf(python, sizeof(python), "%s", env);
		return itest_run(argv, 30000, NULL, NULL) == 0;
	}
	if (path) {
		char *copy = strdup(path), *save = NULL;

		for (char *d = strtok_r(copy, ":", &save); d && !found;
		     d = strtok_r(NULL, ":", &save))
			found = *d && try_python(d);
		free(copy);
	}
	return found || try_python("/usr/bin");
}

static void write_conf(struct itest_env *e)
{
	/* Our own group administers, so ZEROER (pause/resume) works without root. */
	itest_write_conf(e,
			 "[daemon]\n"
			 "admin_group = %u\n"
			 "\n"
			 "[region m1]\n"
			 "path = %s/m1.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "\n"
			 "[region m2]\n"
			 "path = %s/m2.img\n"
			 "size = 16M\n"
			 "extent_size = 1M\n",
			 (unsigned)getgid(), e->dir, e->dir);
}

/* STAT over the test's own raw connection fd (no new connection to count). */
static Pmemz__StatResp *stat_on(int fd, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq st = PMEMZ__STAT_REQ__INIT;
	int r;

	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &st;
	r = itest_raw_call(fd, &req, resp);
	if (r)
		fail_msg("STAT: %s", strerror(-r));
	return (*resp)->stat;
}

/* Until the daemon counts only the test's connections (pmemzctl's have been closed). */
static void wait_connections(int fd, uint64_t want)
{
	uint64_t deadline = itest_now_ms() + 10000, n;

	for (;;) {
		Pmemz__Response *resp = NULL;

		n = stat_on(fd, &resp)->connections;
		itest_resp_free(resp);
		if (n == want)
			return;
		if (itest_now_ms() > deadline)
			fail_msg("the daemon still counts %llu connections, want %llu",
				 (unsigned long long)n, (unsigned long long)want);
		itest_msleep(10);
	}
}

static uint64_t stat_waiters(int fd, const char *region)
{
	Pmemz__Response *resp = NULL;
	Pmemz__StatResp *s = stat_on(fd, &resp);
	uint64_t n = UINT64_MAX;

	for (size_t i = 0; i < s->n_regions; i++)
		if (strcmp(s->regions[i]->info->name, region) == 0)
			n = s->regions[i]->waiters;
	itest_resp_free(resp);
	return n;
}

struct waiter_arg {
	struct pmemz_region *r;
	struct pmemz_alloc *a;
	int rc;
};

static void *waiting_alloc(void *p)
{
	struct waiter_arg *w = p;

	w->rc = pmemz_alloc_new(w->r, 2 * MIB, 0, &w->a);
	return NULL;
}

/* pmemzctl ARGS... with stdout into DIR/out (NULL: discarded); the exit status. */
static int ctl(struct itest_env *e, const char *out, const char *a1, const char *a2, const char *a3)
{
	char *argv[] = {UNCONST(itest_ctl_path()),
			UNCONST("--socket"),
			e->sock,
			UNCONST(a1),
			UNCONST(a2),
			UNCONST(a3),
			NULL};
	char *so = NULL, *se = NULL;
	int st;

	st = itest_run(argv, 30000, &so, &se);
	if (se && *se)
		fprintf(stderr, "pmemzctl %s: %s", a1, se);
	if (out) {
		char path[PATH_MAX];

		itest_path(e, path, sizeof(path), out);
		itest_write_file(path, so ? so : "", so ? strlen(so) : 0);
	}
	free(so);
	free(se);
	return st;
}

/* Files in DIR whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

static void test_metrics(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r1 = NULL, *r2 = NULL;
	struct pmemz_alloc *all = NULL, *a2 = NULL, *b1 = NULL, *b2 = NULL, *d = NULL;
	struct waiter_arg w = {0};
	struct itest_stat st;
	char prom[PATH_MAX], regions[PATH_MAX], status[PATH_MAX], min_sum[64];
	char usage1[PATH_MAX], usage2[PATH_MAX], usage1_arg[PATH_MAX + 16], usage2_arg[PATH_MAX + 16];
	char disks1[PATH_MAX], disks2[PATH_MAX], disks1_arg[PATH_MAX + 16], disks2_arg[PATH_MAX + 16];
	struct stat sb;
	pthread_t th;
	int own, rc;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "m1", 30000, &st);
	itest_wait_zeroed(e->sock, "m2", 30000, &st);

	own = itest_raw_connect(e->sock);
	assert_true(own >= 0);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "m1", &r1), 0);
	assert_int_equal(pmemz_region_open(c, "m2", &r2), 0);

	/*
	 * m1: with its zeroer paused, take every ZEROED extent, give 4 back
	 * (DIRTY, and they stay so), then ask for 2: that ALLOCATE waits until
	 * the zeroer resumes, WAIT_MS later at least.
	 */
	itest_zeroer_pause(e->sock, "m1", true);
	itest_stat(e->sock, "m1", &st);
	assert_int_equal(pmemz_alloc_new(r1, (st.zeroed - 4) * MIB, PMEMZ_ALLOC_NOWAIT, &all), 0);
	assert_int_equal(pmemz_alloc_new(r1, 4 * MIB, PMEMZ_ALLOC_NOWAIT, &a2), 0);
	assert_int_equal(pmemz_alloc_release(a2), 0);
	w.r = r1;
	assert_int_equal(pthread_create(&th, NULL, waiting_alloc, &w), 0);
	{
		uint64_t deadline = itest_now_ms() + 10000;

		while (stat_waiters(own, "m1") != 1) {
			if (itest_now_ms() > deadline)
				fail_msg("the ALLOCATE did not start waiting");
			itest_msleep(5);
		}
	}
	itest_msleep(WAIT_MS);
	itest_zeroer_pause(e->sock, "m1", false);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (w.rc)
		fail_msg("waiting ALLOCATE: %s (%s)", strerror(-w.rc), pmemz_errormsg());
	assert_int_equal(pmemz_alloc_commit(w.a, "kept", 0), 0);

	/* m2: no waits; one commit, one free, one lease held. */
	assert_int_equal(pmemz_alloc_new(r2, 3 * MIB, 0, &b1), 0);
	assert_int_equal(pmemz_alloc_commit(b1, "b", PMEMZ_COMMIT_FLUSH), 0);
	assert_int_equal(pmemz_alloc_new(r2, 1 * MIB, 0, &b2), 0);
	assert_int_equal(pmemz_alloc_release(b2), 0);
	assert_int_equal(pmemz_alloc_new(r2, 2 * MIB, 0, &b2), 0);

	/* m2: an nbd disk with one chunk mapped and two extents held ahead. */
	assert_int_equal(pmemz_alloc_new(r2, 1 * MIB, 0, &d), 0);
	assert_int_equal(pmemz_alloc_commit(d, "nbd/disk/0", 0), 0);
	pmemz_alloc_close(d);
	assert_int_equal(pmemz_alloc_new(r2, 2 * MIB, 0, &d), 0);
	assert_int_equal(pmemz_alloc_commit(d, "nbd/disk/ahead/1", 0), 0);
	pmemz_alloc_close(d);

	/* Quiescent: nothing left to zero; only our two connections and pmemzctl's. */
	itest_wait_zeroed(e->sock, "m1", 30000, &st);
	itest_wait_zeroed(e->sock, "m2", 30000, &st);

	itest_path(e, prom, sizeof(prom), "pmemzerod.prom");
	itest_path(e, regions, sizeof(regions), "regions.json");
	itest_path(e, status, sizeof(status), "status.json");
	itest_write_file(prom, "old\n", 4);
	wait_connections(own, 2);
	assert_int_equal(ctl(e, NULL, "metrics", "--output", prom), 0);
	wait_connections(own, 2);
	assert_int_equal(ctl(e, "regions.json", "--json", "regions", NULL), 0);
	wait_connections(own, 2);
	assert_int_equal(ctl(e, "status.json", "--json", "status", NULL), 0);
	wait_connections(own, 2);
	assert_int_equal(ctl(e, "usage-m1.json", "--json", "usage", "m1"), 0);
	wait_connections(own, 2);
	assert_int_equal(ctl(e, "usage-m2.json", "--json", "usage", "m2"), 0);
	wait_connections(own, 2);
	assert_int_equal(ctl(e, "disks-m1.json", "--json", "disks", "m1"), 0);
	wait_connections(own, 2);
	assert_int_equal(ctl(e, "disks-m2.json", "--json", "disks", "m2"), 0);

	/* Replaced whole, readable by a collector of another uid, no temporary left. */
	assert_int_equal(stat(prom, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	assert_int_equal(count_files(e->dir, ".pmemzctl-metrics."), 0);

	(void)snprintf(min_sum, sizeof(min_sum), "m1=%g", WAIT_MS / 1000.0);
	itest_path(e, usage1, sizeof(usage1), "usage-m1.json");
	itest_path(e, usage2, sizeof(usage2), "usage-m2.json");
	(void)snprintf(usage1_arg, sizeof(usage1_arg), "--usage=m1=%s", usage1);
	(void)snprintf(usage2_arg, sizeof(usage2_arg), "--usage=m2=%s", usage2);
	itest_path(e, disks1, sizeof(disks1), "disks-m1.json");
	itest_path(e, disks2, sizeof(disks2), "disks-m2.json");
	(void)snprintf(disks1_arg, sizeof(disks1_arg), "--disks=m1=%s", disks1);
	(void)snprintf(disks2_arg, sizeof(disks2_arg), "--disks=m2=%s", disks2);
	{
		char *argv[] = {python,
				UNCONST(PMEMZ_TEST_SRC_DIR "/integration/check-metrics.py"),
				prom,
				regions,
				status,
				UNCONST("--connections=3"),
				UNCONST("--waits=m1=1"),
				UNCONST("--waits=m2=0"),
				UNCONST("--min-wait-sum"),
				min_sum,
				usage1_arg,
				usage2_arg,
				disks1_arg,
				disks2_arg,
				NULL};
		char *so = NULL, *se = NULL;

		rc = itest_run(argv, 60000, &so, &se);
		fprintf(stderr, "%s%s", so ? so : "", se ? se : "");
		free(so);
		free(se);
		if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
			size_t len;
			char *text = itest_read_file(prom, &len);

			fprintf(stderr, "--- %s\n%s", prom, text);
			free(text);
			fail_msg("check-metrics.py failed (status 0x%x)", rc);
		}
	}

	pmemz_alloc_close(b2);
	pmemz_alloc_close(b1);
	pmemz_alloc_close(w.a);
	pmemz_alloc_close(all);
	pmemz_region_close(r2);
	pmemz_region_close(r1);
	pmemz_client_free(c);
	close(own);

	/* No daemon: an error, and the last good file stays for the collector to report stale. */
	itest_daemon_stop(e);
	assert_int_not_equal(ctl(e, NULL, "metrics", "--output", prom), 0);
	assert_int_equal(stat(prom, &sb), 0);
	assert_true(sb.st_size > 4);
	assert_int_equal(count_files(e->dir, ".pmemzctl-metrics."), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_metrics, itest_setup, itest_teardown),
	};

	if (!find_python())
		return itest_skip("no python3 with the prometheus_client module "
				  "(Debian: python3-prometheus-client)");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
