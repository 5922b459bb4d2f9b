/* SPDX-License-Identifier: MIT */
/*
 * Integration test 7: pmemzctl against the real daemon.  `status` exits 0
 * and names the region; `--json status|regions|tags` parse with json-c and
 * agree with STAT; an unreachable socket gives a non-zero exit and a
 * one-line error on stderr.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "ctlr"
#define MIB ITEST_MIB

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/ctl.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "\n"
			 "[region second]\n"
			 "path = %s/second.img\n"
			 "size = 16M\n"
			 "extent_size = 1M\n",
			 e->dir, e->dir);
}

/* Run pmemzctl with args; returns the wait status. */
static int ctl(char **out, char **err, const char *a1, const char *a2, const char *a3,
	       const char *a4, const char *a5)
{
	char *argv[8] = {UNCONST(itest_ctl_path()),
			 UNCONST(a1),
			 UNCONST(a2),
			 UNCONST(a3),
			 UNCONST(a4),
			 UNCONST(a5),
			 NULL};

	return itest_run(argv, 10000, out, err);
}

static void expect_ok(int status, const char *what, const char *out, const char *err)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pmemzctl %s failed (status 0x%x)\nstdout:\n%s\nstderr:\n%s", what, status,
			 out, err);
}

static struct json_object *parse_json(const char *s, const char *what)
{
	enum json_tokener_error jerr = json_tokener_success;
	struct json_object *j = json_tokener_parse_verbose(s, &jerr);

	if (!j)
		fail_msg("pmemzctl %s: output is not JSON (%s):\n%s", what,
			 json_tokener_error_desc(jerr), s);
	return j;
}

static uint64_t jget_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("JSON object lacks '%s': %s", key, json_object_to_json_string(o));
	if (!json_object_is_type(v, json_type_int))
		fail_msg("JSON '%s' is not an integer: %s", key, json_object_to_json_string(v));
	return json_object_get_uint64(v);
}

static struct json_object *find_named(struct json_object *top, const char *list, const char *name)
{
	struct json_object *arr, *it, *n;

	if (!json_object_object_get_ex(top, list, &arr) ||
	    !json_object_is_type(arr, json_type_array))
		fail_msg("JSON lacks the array '%s': %s", list, json_object_to_json_string(top));
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		it = json_object_array_get_idx(arr, i);
		if (json_object_object_get_ex(it, "name", &n) &&
		    strcmp(json_object_get_string(n), name) == 0)
			return it;
	}
	fail_msg("'%s' not found in '%s': %s", name, list, json_object_to_json_string(top));
	return NULL;
}

static void check_counts(struct json_object *rj, const struct itest_stat *st)
{
	uint64_t ext = jget_u64(rj, "extents");

	assert_int_equal(ext, st->extent_count);
	assert_int_equal(jget_u64(rj, "zeroed"), st->zeroed);
	assert_int_equal(jget_u64(rj, "dirty"), st->dirty);
	assert_int_equal(jget_u64(rj, "leased"), st->leased);
	assert_int_equal(jget_u64(rj, "committed"), st->committed);
	assert_int_equal(jget_u64(rj, "bad"), st->bad);
	assert_int_equal(jget_u64(rj, "zeroed") + jget_u64(rj, "dirty") + jget_u64(rj, "leased") +
			     jget_u64(rj, "committed") + jget_u64(rj, "bad"),
			 ext);
}

static void test_status_and_json(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL, *l = NULL;
	struct itest_stat st;
	struct json_object *j, *rj;
	char *out = NULL, *err = NULL;
	int status;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	itest_wait_zeroed(e->sock, "second", 10000, &st);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 3 * MIB, 0, &a), 0);
	assert_int_equal(pmemz_alloc_commit(a, "ctl-tag", 0), 0);
	assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &l), 0); /* stays leased */
	itest_stat(e->sock, REGION, &st);

	/* human status */
	status = ctl(&out, &err, "--socket", e->sock, "status", NULL, NULL);
	expect_ok(status, "status", out, err);
	if (!strstr(out, REGION) || !strstr(out, "second"))
		fail_msg("pmemzctl status does not name the regions:\n%s", out);
	free(out);
	free(err);

	/* --json status: numbers agree with STAT */
	status = ctl(&out, &err, "--socket", e->sock, "--json", "status", NULL);
	expect_ok(status, "--json status", out, err);
	j = parse_json(out, "--json status");
	assert_true(json_object_is_type(j, json_type_object));
	rj = find_named(j, "regions", REGION);
	check_counts(rj, &st);
	assert_int_equal(jget_u64(rj, "leased"), 2);
	assert_int_equal(jget_u64(rj, "committed"), 3);
	(void)find_named(j, "regions", "second");
	json_object_put(j);
	free(out);
	free(err);

	/* --json regions */
	status = ctl(&out, &err, "--socket", e->sock, "--json", "regions", NULL);
	expect_ok(status, "--json regions", out, err);
	j = parse_json(out, "--json regions");
	rj = find_named(j, "regions", REGION);
	check_counts(rj, &st);
	assert_int_equal(jget_u64(rj, "extent_size"), MIB);
	json_object_put(j);
	free(out);
	free(err);

	/* --json tags REGION shows the tag with its size */
	status = ctl(&out, &err, "--socket", e->sock, "--json", "tags", REGION);
	expect_ok(status, "--json tags", out, err);
	j = parse_json(out, "--json tags");
	rj = find_named(j, "tags", "ctl-tag");
	assert_int_equal(jget_u64(rj, "bytes"), 3 * MIB);
	assert_int_equal(jget_u64(rj, "extents"), 3);
	assert_int_equal(jget_u64(rj, "uid"), getuid());
	json_object_put(j);
	free(out);
	free(err);

	/* human tags */
	status = ctl(&out, &err, "--socket", e->sock, "tags", REGION, NULL);
	expect_ok(status, "tags", out, err);
	assert_non_null(strstr(out, "ctl-tag"));
	free(out);
	free(err);

	/* tags of an unknown region: non-zero exit, one line on stderr */
	status = ctl(&out, &err, "--socket", e->sock, "tags", "no-such-region", NULL);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
	assert_true(strlen(err) > 0);
	free(out);
	free(err);

	pmemz_alloc_close(l);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

static void expect_one_line_error(const char *what, int status, const char *out, const char *err)
{
	const char *nl = strchr(err, '\n');

	if (!WIFEXITED(status) || WEXITSTATUS(status) == 0)
		fail_msg("pmemzctl %s: exit status 0x%x, want a non-zero exit", what, status);
	if (!*err || !nl || nl[1] != 0 || nl == err)
		fail_msg("pmemzctl %s: want exactly one non-empty error line on stderr, got:\n"
			 "%s",
			 what, err);
	if (*out)
		fail_msg("pmemzctl %s: unexpected stdout:\n%s", what, out);
	print_message("pmemzctl %s: exit %d, stderr: %s", what, WEXITSTATUS(status), err);
}

static void test_unreachable(void **state)
{
	struct itest_env *e = *state;
	char *out = NULL, *err = NULL;
	char missing[PATH_MAX], notsock[PATH_MAX];
	int status;

	/* no daemon behind the path */
	itest_path(e, missing, sizeof(missing), "nobody-home.sock");
	status = ctl(&out, &err, "--socket", missing, "status", NULL, NULL);
	expect_one_line_error("status (no socket)", status, out, err);
	free(out);
	free(err);
	status = ctl(&out, &err, "--socket", missing, "--json", "status", NULL);
	expect_one_line_error("--json status (no socket)", status, out, err);
	free(out);
	free(err);

	/* a path that is not a socket */
	itest_path(e, notsock, sizeof(notsock), "plain-file");
	itest_write_file(notsock, "x", 1);
	status = ctl(&out, &err, "--socket", notsock, "status", NULL, NULL);
	expect_one_line_error("status (not a socket)", status, out, err);
	free(out);
	free(err);

	/* a daemon that went away: socket file left behind or removed */
	write_conf(e);
	itest_daemon_start(e);
	itest_daemon_stop(e);
	status = ctl(&out, &err, "--socket", e->sock, "status", NULL, NULL);
	expect_one_line_error("status (daemon stopped)", status, out, err);
	free(out);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_status_and_json, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_unreachable, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
