/* SPDX-License-Identifier: MIT */
/*
 * `pmemzctl disks` against the real daemon, on disks whose tags are made
 * here through libpmemzclient the way nbdkit-pmemz-plugin(1) makes them
 * (client/nbdkit/disk-format.h): a superblock tag nbd/D and one tag
 * nbd/D/I per chunk written.
 *  - own disks: virtual size from the superblock, allocated bytes and
 *    chunks from the tags; a disk without a superblock or with a damaged
 *    one is listed as such; tags that only look like a disk's are not;
 *    text and JSON; a region without disks; an unknown region fails.
 *  - uids (root only): an admin sees every uid's disks, a disk being
 *    (uid, name); uid 65534 sees only its own.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#include <json-c/json.h>

#include "disk-format.h"
#include "harness.h"
#include "libpmemzclient.h"

#define REGION "dsk"
#define MIB ITEST_MIB
#define OTHER_UID 65534

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/dsk.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "allow_users = root, %d\n"
			 "\n"
			 "[region empty]\n"
			 "path = %s/empty.img\n"
			 "size = 8M\n"
			 "extent_size = 1M\n",
			 e->dir, OTHER_UID, e->dir);
}

/* One extent committed under tag; the superblock of disk when sb_disk (garbage when bad). */
static int commit_extent(struct pmemz_region *r, const char *tag, const char *sb_disk,
			 uint64_t size, bool bad)
{
	struct pmemz_disk_super sb;
	static const uint8_t uuid[16] = {1, 2, 3, 4};
	struct pmemz_alloc *a;
	size_t len;
	void *p;
	int ret;

	ret = pmemz_alloc_new(r, pmemz_region_extent_size(r), 0, &a);
	if (ret < 0)
		return ret;
	p = pmemz_alloc_range(a, 0, &len);
	if (sb_disk) {
		pmemz_disk_super_init(&sb, sb_disk, size, pmemz_region_extent_size(r), 1700000000,
				      uuid);
		if (bad)
			sb.chunk_size ^= 1; /* the checksum no longer matches */
		memcpy(p, &sb, sizeof(sb));
	} else {
		memset(p, 0xa5, 4096); /* chunk data */
	}
	ret = pmemz_persist(r, p, len);
	if (ret == 0)
		ret = pmemz_alloc_commit(a, tag, 0);
	pmemz_alloc_close(a);
	return ret;
}

/* Disk `name` of size bytes with a superblock (unless !sb) and the chunks listed. */
static int make_disk(struct pmemz_region *r, const char *name, uint64_t size, bool sb,
		     const uint64_t *chunks, size_t n)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	int ret = 0;

	if (sb) {
		(void)pmemz_disk_super_tag(tag, sizeof(tag), name);
		ret = commit_extent(r, tag, name, size, false);
	}
	for (size_t i = 0; ret == 0 && i < n; i++) {
		(void)pmemz_disk_chunk_tag(tag, sizeof(tag), name, chunks[i]);
		ret = commit_extent(r, tag, NULL, 0, false);
	}
	return ret;
}

static int ctl(const char *sock, char **out, char **err, const char *a1, const char *a2,
	       const char *a3)
{
	char *argv[] = {UNCONST(itest_ctl_path()),
			UNCONST("--socket"),
			UNCONST(sock),
			UNCONST(a1),
			UNCONST(a2),
			UNCONST(a3),
			NULL};

	return itest_run(argv, 10000, out, err);
}

static struct json_object *ctl_json(const char *sock, const char *region)
{
	char *out = NULL, *err = NULL;
	struct json_object *j;
	int status = ctl(sock, &out, &err, "--json", "disks", region);

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pmemzctl --json disks %s: status 0x%x\n%s%s", region, status, out, err);
	j = json_tokener_parse(out);
	if (!j)
		fail_msg("pmemzctl --json disks %s: not JSON:\n%s", region, out);
	free(out);
	free(err);
	return j;
}

static struct json_object *disks_array(struct json_object *j)
{
	struct json_object *arr;

	if (!json_object_object_get_ex(j, "disks", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		fail_msg("no 'disks' array: %s", json_object_to_json_string(j));
	return arr;
}

static uint64_t jnum(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		fail_msg("no integer '%s' in %s", key, json_object_to_json_string(o));
	return json_object_get_uint64(v);
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		fail_msg("no string '%s' in %s", key, json_object_to_json_string(o));
	return json_object_get_string(v);
}

/* The disk (uid, name) of the listing; fails when it is not there. */
static struct json_object *find_disk(struct json_object *arr, uint64_t uid, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *d = json_object_array_get_idx(arr, i);

		if (jnum(d, "uid") == uid && strcmp(jstr(d, "name"), name) == 0)
			return d;
	}
	fail_msg("disk %s of uid %llu not listed: %s", name, (unsigned long long)uid,
		 json_object_to_json_string(arr));
	return NULL;
}

static void expect_disk(struct json_object *arr, uint64_t uid, const char *name, uint64_t size,
			uint64_t chunks, const char *state)
{
	struct json_object *d = find_disk(arr, uid, name);

	if (size)
		assert_int_equal(jnum(d, "size"), size);
	else /* no sound superblock */
		assert_string_equal(jstr(d, "size"), "unknown");
	assert_int_equal(jnum(d, "chunks"), chunks);
	assert_int_equal(jnum(d, "allocated"), chunks * MIB);
	if (state)
		assert_string_equal(jstr(d, "state"), state);
	else if (strcmp(jstr(d, "state"), "ok") == 0)
		fail_msg("disk %s: a damaged superblock is listed as ok", name);
}

static void test_own_disks(void **state)
{
	static const uint64_t d1_chunks[] = {0, 7, 99};
	static const uint64_t nosb_chunks[] = {3};
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct json_object *j, *arr;
	char *out = NULL, *err = NULL;
	struct itest_stat st;
	int status;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);

	/* 100 MiB virtual on a 32 MiB region: thin */
	assert_int_equal(make_disk(r, "d1", 100 * MIB, true, d1_chunks, 3), 0);
	assert_int_equal(make_disk(r, "nosb", 0, false, nosb_chunks, 1), 0);
	assert_int_equal(commit_extent(r, "nbd/bad", "bad", 8 * MIB, true), 0);
	assert_int_equal(make_disk(r, "empty.disk", 5 * MIB, true, NULL, 0), 0);
	/* not a disk's: another application's tag, non-canonical or nested names */
	assert_int_equal(commit_extent(r, "other-app", NULL, 0, false), 0);
	assert_int_equal(commit_extent(r, "nbd/x/007", NULL, 0, false), 0);
	assert_int_equal(commit_extent(r, "nbd/y/z/1", NULL, 0, false), 0);

	j = ctl_json(e->sock, REGION);
	assert_string_equal(jstr(j, "region"), REGION);
	assert_int_equal(jnum(j, "chunk_size"), MIB);
	arr = disks_array(j);
	assert_int_equal(json_object_array_length(arr), 4);
	expect_disk(arr, getuid(), "d1", 100 * MIB, 3, "ok");
	expect_disk(arr, getuid(), "nosb", 0, 1, "no superblock");
	expect_disk(arr, getuid(), "bad", 0, 0, NULL);
	expect_disk(arr, getuid(), "empty.disk", 5 * MIB, 0, "ok");
	json_object_put(j);

	/* text: a row per disk */
	status = ctl(e->sock, &out, &err, "disks", REGION, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !strstr(out, "d1") ||
	    !strstr(out, "no superblock") || !strstr(out, "empty.disk") || strstr(out, "other-app"))
		fail_msg("pmemzctl disks: status 0x%x\n%s%s", status, out, err);
	print_message("%s", out);
	free(out);
	free(err);

	/* a region without disks */
	j = ctl_json(e->sock, "empty");
	assert_int_equal(json_object_array_length(disks_array(j)), 0);
	json_object_put(j);
	status = ctl(e->sock, &out, &err, "disks", "empty", NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !strstr(out, "no disks"))
		fail_msg("pmemzctl disks empty: status 0x%x\n%s%s", status, out, err);
	free(out);
	free(err);

	/* an unknown region: exit 1 and one line */
	status = ctl(e->sock, &out, &err, "disks", "no-such-region", NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1 || !strchr(err, '\n') ||
	    strchr(err, '\n')[1] || *err == '\n')
		fail_msg("disks no-such-region: status 0x%x, stderr:\n%s", status, err);
	free(out);
	free(err);
	/* no region: a usage error */
	status = ctl(e->sock, &out, &err, "disks", NULL, NULL);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
	free(out);
	free(err);

	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* In a child: become uid 65534, make disk d1 and list the disks as that uid. */
static void child_other_uid(const char *sock)
{
	static const uint64_t chunks[] = {1};
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	char *out = NULL, *err = NULL;
	struct json_object *j, *arr, *d, *v;
	int status;

	CHILD_CHECK(setgroups(0, NULL) == 0 && setgid(OTHER_UID) == 0 && setuid(OTHER_UID) == 0,
		    "setuid %d: %s", OTHER_UID, strerror(errno));
	CHILD_CHECK(pmemz_client_new(sock, &c) == 0, "connect: %s", pmemz_errormsg());
	CHILD_CHECK(pmemz_region_open(c, REGION, &r) == 0, "open: %s", pmemz_errormsg());
	CHILD_CHECK(make_disk(r, "d1", 64 * MIB, true, chunks, 1) == 0, "disk: %s",
		    pmemz_errormsg());
	pmemz_region_close(r);
	pmemz_client_free(c);

	status = ctl(sock, &out, &err, "--json", "disks", REGION);
	CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pmemzctl: 0x%x %s", status,
		    err);
	j = json_tokener_parse(out);
	CHILD_CHECK(j && json_object_object_get_ex(j, "disks", &arr), "not JSON: %s", out);
	/* only its own d1, not root's */
	CHILD_CHECK(json_object_array_length(arr) == 1, "uid %d sees %s", OTHER_UID, out);
	d = json_object_array_get_idx(arr, 0);
	CHILD_CHECK(json_object_object_get_ex(d, "uid", &v) &&
			json_object_get_uint64(v) == OTHER_UID,
		    "%s", out);
	CHILD_CHECK(json_object_object_get_ex(d, "size", &v) &&
			json_object_get_uint64(v) == 64 * MIB,
		    "%s", out);
	json_object_put(j);
	free(out);
	free(err);
	_exit(0);
}

static void test_uids(void **state)
{
	static const uint64_t chunks[] = {0, 1};
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct json_object *j, *arr;
	struct itest_stat st;
	pid_t pid;

	if (geteuid() != 0)
		skip(); /* setuid, and root is the admin */
	write_conf(e);
	/* uid 65534 reaches the socket in the test's directory */
	assert_int_equal(chmod(e->dir, 0711), 0);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
	assert_int_equal(make_disk(r, "d1", 10 * MIB, true, chunks, 2), 0);

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_other_uid(e->sock);
	itest_wait_child_ok(pid, 30000, "uid 65534 lists its disks");

	/* root, an admin: both disks named d1, one per uid */
	j = ctl_json(e->sock, REGION);
	arr = disks_array(j);
	assert_int_equal(json_object_array_length(arr), 2);
	expect_disk(arr, 0, "d1", 10 * MIB, 2, "ok");
	expect_disk(arr, OTHER_UID, "d1", 64 * MIB, 1, "ok");
	json_object_put(j);

	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_own_disks, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_uids, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
