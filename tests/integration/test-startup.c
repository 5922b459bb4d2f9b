/* SPDX-License-Identifier: MIT */
/*
 * Integration test 8: daemon start-up on regions that are not (or no
 * longer) ours.  A foreign header (random data, another magic), both header
 * copies damaged, a region already in use by another daemon: the daemon
 * exits non-zero with a message naming the region and the file is
 * byte-for-byte unchanged.  A damaged primary with an intact backup is
 * repaired without losing data; a blank header over stale data is formatted
 * and the stale data never reaches a client (I1); -n never touches regions.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB

static void *random_bytes(size_t len, uint64_t seed)
{
	uint64_t *b = malloc(len);

	assert_non_null(b);
	for (size_t i = 0; i < len / 8; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		b[i] = seed;
	}
	return b;
}

/* Start expecting a refusal; checks exit code, message and that path is unchanged. */
static void expect_refusal(struct itest_env *e, const char *region, const char *path,
			   const void *before, size_t len, const char *what)
{
	size_t now_len;
	void *now;
	char *log;
	int status = itest_daemon_expect_exit(e, ITEST_START_TIMEOUT_MS);

	log = itest_read_log(e);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 0) {
		itest_dump_log(e, true);
		fail_msg("[%s] pmemzerod ended with %s %d, want a non-zero exit", what,
			 WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	{
		/* the message names the region (as 'NAME' or "NAME" or region NAME) */
		char q1[128], q2[128], q3[128];

		snprintf(q1, sizeof(q1), "'%s'", region);
		snprintf(q2, sizeof(q2), "\"%s\"", region);
		snprintf(q3, sizeof(q3), "region %s", region);
		if (!strstr(log, q1) && !strstr(log, q2) && !strstr(log, q3))
			fail_msg("[%s] the refusal does not name region '%s':\n%s", what, region,
				 log);
	}
	print_message("[%s] exit %d: %s", what, WEXITSTATUS(status),
		      strstr(log, "\n") ? strstr(log, "\n") + 1 : log);
	free(log);

	now = itest_read_file(path, &now_len);
	assert_int_equal(now_len, len);
	if (memcmp(now, before, len) != 0) {
		size_t i = 0;

		while (((const uint8_t *)now)[i] == ((const uint8_t *)before)[i])
			i++;
		fail_msg("[%s] region file modified at offset %zu", what, i);
	}
	free(now);
}

static void test_foreign_random(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX], spec[PATH_MAX + 64];
	size_t len = 32 * MIB;
	void *data = random_bytes(len, 0x9d2c5680);

	itest_path(e, path, sizeof(path), "random.img");
	itest_write_file(path, data, len);
	snprintf(spec, sizeof(spec), "alien=%s,extent=1M", path);
	itest_daemon_arg(e, "--region");
	itest_daemon_arg(e, spec);
	expect_refusal(e, "alien", path, data, len, "32 MiB of random data");
	free(data);
}

static void test_foreign_random_small(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX];
	size_t len = 1 * MIB;
	void *data = random_bytes(len, 0x1234abcd);

	itest_path(e, path, sizeof(path), "small.img");
	itest_write_file(path, data, len);
	itest_write_conf(e,
			 "[region small]\n"
			 "path = %s\n"
			 "extent_size = 64K\n",
			 path);
	expect_refusal(e, "small", path, data, len, "1 MiB of random data");
	free(data);
}

static void test_foreign_magic(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX];
	size_t len = 32 * MIB;
	uint8_t *data = calloc(1, len);

	assert_non_null(data);
	memcpy(data, "NOTOURS\0", 8);
	itest_path(e, path, sizeof(path), "notours.img");
	itest_write_file(path, data, len);
	itest_write_conf(e,
			 "[region notours]\n"
			 "path = %s\n"
			 "size = 32M\n"
			 "extent_size = 1M\n",
			 path);
	expect_refusal(e, "notours", path, data, len, "NOTOURS magic");
	free(data);
}

/* Format a region, commit a tag with data, stop; returns the extent count. */
static uint64_t make_region_with_tag(struct itest_env *e, const char *path)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;

	itest_write_conf(e,
			 "[region own]\n"
			 "path = %s\n"
			 "size = 32M\n"
			 "extent_size = 1M\n",
			 path);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "own", 10000, &st);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "own", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 3 * MIB, 0, &a), 0);
	itest_fill_alloc(r, a, 808);
	assert_int_equal(pmemz_alloc_commit(a, "precious", PMEMZ_COMMIT_FLUSH), 0);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
	return st.extent_count;
}

static void assert_tag_intact(struct itest_env *e, const char *region)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	int rc;

	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, region, &r), 0);
	rc = pmemz_alloc_open(r, "precious", &a);
	if (rc)
		fail_msg("tag 'precious' lost: %s (%s)", strerror(-rc), pmemz_errormsg());
	assert_int_equal(pmemz_alloc_size(a), 3 * MIB);
	itest_check_alloc(r, a, 808);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void flip(uint8_t *data, size_t off)
{
	data[off] ^= 0x40;
}

/* Primary header damaged, backup intact: repaired, nothing lost. */
static void test_primary_header_damaged(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX];
	uint8_t *data;
	size_t len;
	char *log;

	itest_path(e, path, sizeof(path), "own.img");
	make_region_with_tag(e, path);
	data = itest_read_file(path, &len);
	flip(data, 40); /* extent_size in the primary header: checksum mismatch */
	itest_write_file(path, data, len);
	free(data);

	itest_daemon_start(e);
	log = itest_read_log(e);
	print_message("start with a damaged primary header logged:\n%s", log);
	free(log);
	assert_tag_intact(e, "own");
	itest_daemon_stop(e);

	/* repaired: the primary equals the backup again */
	data = itest_read_file(path, &len);
	assert_memory_equal(data, data + 4096, 256);
	free(data);
}

/* Both header copies damaged: refused, untouched. */
static void test_both_headers_damaged(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX];
	uint8_t *data;
	size_t len;

	itest_path(e, path, sizeof(path), "own.img");
	make_region_with_tag(e, path);
	data = itest_read_file(path, &len);
	flip(data, 40);
	flip(data, 4096 + 40);
	itest_write_file(path, data, len);
	expect_refusal(e, "own", path, data, len, "both headers corrupt");

	/* and with the magic of both copies gone it is foreign: also refused */
	flip(data, 40);
	flip(data, 4096 + 40);
	memcpy(data, "NOTOURS!", 8);
	memcpy(data + 4096, "NOTOURS!", 8);
	itest_write_file(path, data, len);
	expect_refusal(e, "own", path, data, len, "both magics replaced");
	free(data);
}

/* Configured extent size differs from the media: refused or media wins, never reformatted. */
static void test_extent_size_changed(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX];
	struct itest_stat st;
	uint8_t *data;
	size_t len;
	int status = 0;

	itest_path(e, path, sizeof(path), "own.img");
	make_region_with_tag(e, path);
	data = itest_read_file(path, &len);
	itest_write_conf(e,
			 "[region own]\n"
			 "path = %s\n"
			 "size = 32M\n"
			 "extent_size = 2M\n",
			 path);
	if (itest_daemon_try_start(e, ITEST_START_TIMEOUT_MS, &status)) {
		print_message("extent_size changed in the config: daemon runs on the media's\n");
		itest_stat(e->sock, "own", &st);
		assert_int_equal(st.extent_size, MIB);
		assert_tag_intact(e, "own");
		itest_daemon_stop(e);
	} else {
		/* refused: as expect_refusal, but the daemon already ran */
		char *log = itest_read_log(e);

		print_message("extent_size changed in the config: refused: %s", log);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
		assert_non_null(strstr(log, "own"));
		free(log);
		{
			size_t nl;
			void *now = itest_read_file(path, &nl);

			assert_int_equal(nl, len);
			if (memcmp(now, data, len))
				fail_msg("refused region file was modified");
			free(now);
		}
	}
	free(data);
}

/*
 * No extent size configured: the daemon takes the media's (1 MiB here) instead
 * of refusing the region for differing from the 2 MiB default.
 */
static void test_extent_size_unset_follows_media(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX];
	struct itest_stat st;

	itest_path(e, path, sizeof(path), "own.img");
	make_region_with_tag(e, path);
	itest_write_conf(e,
			 "[region own]\n"
			 "path = %s\n",
			 path);
	itest_daemon_start(e);
	itest_stat(e->sock, "own", &st);
	assert_int_equal(st.extent_size, MIB);
	assert_tag_intact(e, "own");
	itest_daemon_stop(e);
}

/* A second daemon on a region that is in use must not start. */
static void test_region_in_use(void **state)
{
	struct itest_env *e = *state;
	struct itest_env e2;
	char path[PATH_MAX], spec[PATH_MAX + 64];
	struct itest_stat st;
	int status;

	itest_path(e, path, sizeof(path), "shared.img");
	snprintf(spec, sizeof(spec), "busy=%s,size=32M,extent=1M", path);
	itest_daemon_arg(e, "--region");
	itest_daemon_arg(e, spec);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "busy", 10000, &st);
	/*
	 * Some traffic first: region fds passed to clients, commits, frees.  (A
	 * POSIX record lock is dropped when the process closes any fd of the file.)
	 */
	for (int i = 0; i < 5; i++) {
		struct pmemz_client *c = NULL;
		struct pmemz_region *r = NULL;
		struct pmemz_alloc *a = NULL;

		assert_int_equal(pmemz_client_new(e->sock, &c), 0);
		assert_int_equal(pmemz_region_open(c, "busy", &r), 0);
		assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &a), 0);
		assert_int_equal(pmemz_alloc_commit(a, "t", PMEMZ_COMMIT_FLUSH), 0);
		assert_int_equal(pmemz_alloc_release(a), 0);
		pmemz_region_close(r);
		pmemz_client_free(c);
	}
	itest_wait_zeroed(e->sock, "busy", 10000, &st);

	itest_env_init(&e2, "itest-startup-second");
	itest_daemon_arg(&e2, "--region");
	itest_daemon_arg(&e2, spec);
	status = itest_daemon_expect_exit(&e2, 5000);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 0) {
		itest_dump_log(&e2, true);
		itest_env_cleanup(&e2);
		fail_msg("a second pmemzerod started on a region the first one owns");
	}
	{
		char *log = itest_read_log(&e2);

		print_message("second daemon refused: %s", log);
		free(log);
	}
	itest_env_cleanup(&e2);
	/* the first daemon is unaffected */
	itest_stat(e->sock, "busy", &st);
	itest_assert_accounting(&st, "after the second daemon");
	assert_int_equal(st.zeroed, st.extent_count);
	itest_daemon_stop(e);
}

/* A second daemon on a socket path a live daemon listens on must not steal it. */
static void test_socket_in_use(void **state)
{
	struct itest_env *e = *state;
	struct itest_env e2;
	struct itest_stat st;
	int status;

	itest_cli_region(e, "first", "32M");
	itest_daemon_start(e);

	itest_env_init(&e2, "itest-startup-sock");
	snprintf(e2.sock, sizeof(e2.sock), "%s", e->sock); /* same socket */
	itest_cli_region(&e2, "second", "32M");
	status = itest_daemon_expect_exit(&e2, 5000);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 0) {
		itest_dump_log(&e2, true);
		itest_env_cleanup(&e2);
		fail_msg("a second pmemzerod started on a socket path in use");
	}
	{
		char *log = itest_read_log(&e2);

		print_message("second daemon on the same socket: %s", log);
		free(log);
	}
	itest_env_cleanup(&e2);
	/* the socket still leads to the first daemon */
	itest_stat(e->sock, "first", &st);
	itest_assert_accounting(&st, "first daemon after the second one failed");
	itest_daemon_stop(e);
}

/* A blank (all-zero) header over stale data: formatted; the stale data never leaks. */
static void test_blank_header_over_stale_data(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	char path[PATH_MAX];
	size_t len = 32 * MIB;
	uint8_t *data = random_bytes(len, 0xfeedface);
	int rc;

	memset(data, 0, 2 * 4096);
	itest_path(e, path, sizeof(path), "stale.img");
	itest_write_file(path, data, len);
	free(data);
	itest_write_conf(e,
			 "[region stale]\n"
			 "path = %s\n"
			 "size = 32M\n"
			 "extent_size = 1M\n",
			 path);
	itest_daemon_start(e);
	itest_stat(e->sock, "stale", &st);
	itest_assert_accounting(&st, "formatted over stale data");
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.leased, 0);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "stale", &r), 0);
	rc = pmemz_alloc_new(r, st.extent_count * MIB, 0, &a);
	if (rc)
		fail_msg("alloc all: %s (%s)", strerror(-rc), pmemz_errormsg());
	itest_assert_alloc_zero(r, a);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* -n checks the configuration and exits without creating or touching regions. */
static void test_check_config(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX], *out = NULL, *err = NULL;
	struct stat sst;
	int status;

	itest_path(e, path, sizeof(path), "never.img");
	itest_write_conf(e,
			 "[region never]\n"
			 "path = %s\n"
			 "size = 32M\n"
			 "extent_size = 1M\n",
			 path);
	{
		char *argv[] = {UNCONST(itest_daemon_path()), "-n", "-c", e->conf, NULL};

		status = itest_run(argv, 10000, &out, &err);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pmemzerod -n on a good config: status 0x%x\n%s%s", status, out, err);
	if (!strstr(out, "configuration OK") && !strstr(err, "configuration OK"))
		fail_msg("pmemzerod -n did not print 'configuration OK':\n%s%s", out, err);
	assert_int_equal(stat(path, &sst), -1);
	assert_int_equal(errno, ENOENT);
	free(out);
	free(err);

	itest_write_conf(e,
			 "[region never]\n"
			 "path = %s\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "no_such_key = 1\n",
			 path);
	{
		char *argv[] = {UNCONST(itest_daemon_path()), "-n", "-c", e->conf, NULL};

		status = itest_run(argv, 10000, &out, &err);
	}
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	{
		char where[PATH_MAX + 16];

		snprintf(where, sizeof(where), "%s:5", e->conf);
		if (!strstr(out, where) && !strstr(err, where))
			fail_msg("pmemzerod -n: error not reported as %s:\n%s%s", where, out, err);
	}
	assert_int_equal(stat(path, &sst), -1);
	free(out);
	free(err);
}

/* No config and no --region: the embedded default region in $STATE_DIRECTORY. */
static void test_default_region(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;

	itest_daemon_start(e);
	itest_stat(e->sock, "default", &st);
	itest_assert_accounting(&st, "default region");
	/* the embedded default: 256 MiB (a modest file for trying things out) */
	assert_int_equal(st.size, 256 * MIB);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_foreign_random, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_random_small, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_magic, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_primary_header_damaged, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_both_headers_damaged, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_size_changed, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_extent_size_unset_follows_media, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_region_in_use, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_socket_in_use, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_blank_header_over_stale_data, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_check_config, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_default_region, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
