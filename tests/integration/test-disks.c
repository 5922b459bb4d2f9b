/* SPDX-License-Identifier: MIT */
/*
 * `pmemzctl disks` against the real daemon, on disks whose tags are made
 * here through libpmemzclient the way nbdkit-pmemz-plugin(1) makes them
 * (common/disk/disk-format.h): a superblock tag nbd/D, one tag nbd/D/I
 * per chunk folded, pool tags nbd/D/pool/S and journal records in the
 * superblock's extent mapping fresh chunks into pool extents.
 *  - own disks: virtual size from the superblock, allocated bytes and
 *    chunks from the tags; a disk without a superblock or with a damaged
 *    one is listed as such; tags that only look like a disk's are not;
 *    text and JSON; a region without disks; an unknown region fails.
 *  - uids (root only): an admin sees every uid's disks, a disk being
 *    (uid, name); uid 65534 sees only its own.
 *  - more tags than one LIST reply holds (3000 chunks of 4 KiB): every one
 *    is counted, for the caller and for an admin's every-uid listing, and
 *    --delete frees them all.
 *  - --delete: refused while the disk's claim is held (the holder's pid in
 *    the message), then frees the disk's chunks and superblock and nothing
 *    else (look-alike tags, other disks); unknown disks and bad names fail.
 *  - a region file truncated under the superblock of one disk (as a tenant
 *    may): that disk is reported unreadable, by name, on stderr, the other
 *    is listed, and pmemzctl exits 1 (text and JSON), never of SIGBUS;
 *    --delete of that disk still frees it.
 *  - the journal: a chunk is mapped when the latest valid record for it
 *    names an extent of one of the disk's pool tags; an older record for
 *    that chunk, one naming an extent outside every pool, a torn one, one
 *    below the base, one past the disk's chunks count for nothing: exact
 *    allocated, chunks and ahead (legacy ahead tags and unmapped pool
 *    extents), in JSON and in the metrics; --delete frees the pool tags;
 *    a file truncated inside the journal: that disk is named unreadable.
 *  - a pool tag too fragmented for a LIST reply (a checkerboard of 16 KiB
 *    extents, more runs than a frame holds): read whole, so a record
 *    naming an extent past LIST's first runs is counted mapped.
 *  - disks of later plugins (superblock version 3; version 2 with incompat,
 *    ro_compat or compat features this build does not know) are listed as
 *    unsupported or read-only, never as damaged, and are not deleted
 *    (compat: as usual); a version 1 superblock's journal is read as long
 *    as its extent holds.
 *  - with the real plugin (when built and nbdkit is installed): a disk
 *    nbdkit made and wrote through NBD is listed with its chunks; --delete
 *    is refused while nbdkit serves it and works once it was killed; the disk
 *    nbdkit makes again under that name reads zeros.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#include <json-c/json.h>

#include "disk-format.h"
#include "harness.h"
#include "libpmemzadmin.h" /* pmemz_region_data_offset */
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

/* The daemon on REGION, zeroed, and a connection with REGION open. */
static void start(struct itest_env *e, struct pmemz_client **c, struct pmemz_region **r)
{
	struct itest_stat st;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 60000, &st);
	assert_int_equal(pmemz_client_new(e->sock, c), 0);
	assert_int_equal(pmemz_region_open(*c, REGION, r), 0);
}

/* One extent committed under tag; the superblock of disk when sb_disk (garbage when bad). */
static const uint8_t uuid[16] = {1, 2, 3, 4}; /* every superblock's here */

static int commit_extent(struct pmemz_region *r, const char *tag, const char *sb_disk,
			 uint64_t size, bool bad)
{
	struct pmemz_disk_super sb;
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
				      uuid, pmemz_disk_journal_slots(pmemz_region_extent_size(r)));
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
	int status;

	start(e, &c, &r);

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
	pid_t pid;

	if (geteuid() != 0)
		skip(); /* setuid, and root is the admin */
	/* uid 65534 reaches the socket in the test's directory */
	assert_int_equal(chmod(e->dir, 0711), 0);
	start(e, &c, &r);
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

static uint64_t committed_extents(const char *sock)
{
	struct itest_stat st;

	itest_stat(sock, REGION, &st);
	return st.committed;
}

static bool tag_exists(struct pmemz_region *r, const char *tag)
{
	struct pmemz_alloc *a = NULL;

	if (pmemz_alloc_open(r, tag, &a) < 0)
		return false;
	pmemz_alloc_close(a);
	return true;
}

/* pmemzctl disks REGION --delete=disk: its exit status, its stderr in *err (freed by the caller).
 */
static int delete_disk(const char *sock, const char *disk, char **err)
{
	char arg[64], *out = NULL;
	int status;

	(void)snprintf(arg, sizeof(arg), "--delete=%s", disk);
	status = ctl(sock, &out, err, "disks", REGION, arg);
	free(out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_delete(void **state)
{
	static const uint64_t d1_chunks[] = {0, 7};
	static const uint64_t d2_chunks[] = {0};
	static const uint64_t nosb_chunks[] = {2, 4};
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL, *holder = NULL;
	struct pmemz_region *r = NULL, *hr = NULL;
	struct json_object *j, *arr;
	char *out = NULL, *err = NULL, pid[32];
	struct itest_stat st;
	uint64_t before;
	int status;

	start(e, &c, &r);
	assert_int_equal(make_disk(r, "d1", 20 * MIB, true, d1_chunks, 2), 0);
	assert_int_equal(commit_extent(r, "nbd/d1/007", NULL, 0, false), 0); /* not a chunk */
	assert_int_equal(make_disk(r, "d2", 20 * MIB, true, d2_chunks, 1), 0);
	assert_int_equal(make_disk(r, "nosb", 0, false, nosb_chunks, 2), 0);

	/* d1 served (its claim held by another connection, as nbdkit holds it): refused */
	assert_int_equal(pmemz_client_new(e->sock, &holder), 0);
	assert_int_equal(pmemz_region_open(holder, REGION, &hr), 0);
	assert_int_equal(pmemz_region_claim(hr, "nbd/d1"), 0);
	before = committed_extents(e->sock);
	status = ctl(e->sock, &out, &err, "disks", REGION, "--delete=d1");
	(void)snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1 || !strstr(err, "in use") ||
	    !strstr(err, pid))
		fail_msg("delete of a claimed disk: status 0x%x, want exit 1 naming pid %s:\n%s%s",
			 status, pid, out, err);
	print_message("refused: %s", err);
	free(out);
	free(err);
	assert_int_equal(committed_extents(e->sock), before);
	assert_true(tag_exists(r, "nbd/d1"));
	assert_true(tag_exists(r, "nbd/d1/7"));

	/* released: deleted, its chunks then its superblock, nothing else */
	assert_int_equal(pmemz_region_unclaim(hr, "nbd/d1"), 0);
	status = ctl(e->sock, &out, &err, "--json", "disks", "--delete=d1");
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2); /* no region: usage */
	free(out);
	free(err);
	{
		char *argv[] = {UNCONST(itest_ctl_path()), UNCONST("--socket"), UNCONST(e->sock),
				UNCONST("--json"),	   UNCONST("disks"),	UNCONST(REGION),
				UNCONST("--delete"),	   UNCONST("d1"),	NULL};

		status = itest_run(argv, 10000, &out, &err);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("delete d1: status 0x%x\n%s%s", status, out, err);
	j = json_tokener_parse(out);
	assert_non_null(j);
	assert_string_equal(jstr(j, "deleted"), "d1");
	assert_int_equal(jnum(j, "chunks"), 2);
	assert_int_equal(jnum(j, "freed"), 3 * MIB);
	json_object_put(j);
	free(out);
	free(err);
	assert_int_equal(committed_extents(e->sock), before - 3);
	assert_false(tag_exists(r, "nbd/d1"));
	assert_false(tag_exists(r, "nbd/d1/0"));
	assert_false(tag_exists(r, "nbd/d1/7"));
	assert_true(tag_exists(r, "nbd/d1/007"));
	assert_true(tag_exists(r, "nbd/d2"));
	assert_true(tag_exists(r, "nbd/d2/0"));
	/* the claim was given back: a plugin may make the disk again */
	assert_int_equal(pmemz_region_claim(hr, "nbd/d1"), 0);
	assert_int_equal(pmemz_region_unclaim(hr, "nbd/d1"), 0);

	/* chunks without a superblock go too */
	if (delete_disk(e->sock, "nosb", &err) != 0)
		fail_msg("delete nosb:\n%s", err);
	free(err);
	j = ctl_json(e->sock, REGION);
	arr = disks_array(j);
	assert_int_equal(json_object_array_length(arr), 1);
	expect_disk(arr, getuid(), "d2", 20 * MIB, 1, "ok");
	json_object_put(j);

	/* no such disk; not a disk name */
	if (delete_disk(e->sock, "nosuch", &err) != 1 || !strstr(err, "no disk 'nosuch'"))
		fail_msg("delete of no disk:\n%s", err);
	free(err);
	if (delete_disk(e->sock, "a/b", &err) != 2)
		fail_msg("delete of a bad name:\n%s", err);
	free(err);
	assert_true(tag_exists(r, "nbd/d1/007"));

	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after deleting disks");
	pmemz_region_close(hr);
	pmemz_client_free(holder);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* LIST pages: a disk of more chunk tags than one reply frame (64 KiB) holds. */
static void test_many(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct json_object *j, *arr;
	char tag[PMEMZ_DISK_TAG_MAX], *out = NULL, *err = NULL;
	struct itest_stat st;
	int status;

	itest_write_conf(e,
			 "[region many]\n"
			 "path = %s/many.img\n"
			 "size = 32M\n"
			 "extent_size = 4K\n",
			 e->dir);
	itest_daemon_start(e);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "many", &r), 0);
	assert_int_equal(make_disk(r, "big", 1ull << 30, true, NULL, 0), 0);
	assert_int_equal(make_disk(r, "small", 1ull << 20, true, NULL, 0), 0);
	/* interleaved with another disk's chunks and another application's tags */
	for (uint64_t i = 0; i < 3000; i++) {
		(void)pmemz_disk_chunk_tag(tag, sizeof(tag), "big", i * 3);
		assert_int_equal(commit_extent(r, tag, NULL, 0, false), 0);
		if (i % 10 == 0) {
			(void)pmemz_disk_chunk_tag(tag, sizeof(tag), "small", i / 10);
			assert_int_equal(commit_extent(r, tag, NULL, 0, false), 0);
			(void)snprintf(tag, sizeof(tag), "other/%llu", (unsigned long long)i);
			assert_int_equal(commit_extent(r, tag, NULL, 0, false), 0);
		}
	}

	j = ctl_json(e->sock, "many");
	arr = disks_array(j);
	assert_int_equal(json_object_array_length(arr), 2);
	assert_int_equal(jnum(find_disk(arr, getuid(), "big"), "chunks"), 3000);
	assert_int_equal(jnum(find_disk(arr, getuid(), "big"), "allocated"), 3000 * 4096);
	assert_int_equal(jnum(find_disk(arr, getuid(), "small"), "chunks"), 300);
	assert_int_equal(jnum(find_disk(arr, getuid(), "big"), "size"), 1ull << 30);
	json_object_put(j);

	status = ctl(e->sock, &out, &err, "disks", "many", "--delete=big");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("delete big: status 0x%x\n%s%s", status, out, err);
	free(out);
	free(err);
	itest_stat(e->sock, "many", &st);
	assert_int_equal(st.committed, 1 + 300 + 300); /* small's superblock and chunks, other/ */
	itest_assert_accounting(&st, "after deleting 3000 chunks");

	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* n extents committed under tag (an ahead tag may hold several). */
static int commit_extents(struct pmemz_region *r, const char *tag, size_t n)
{
	struct pmemz_alloc *a;
	int ret;

	ret = pmemz_alloc_new(r, n * pmemz_region_extent_size(r), 0, &a);
	if (ret < 0)
		return ret;
	ret = pmemz_alloc_commit(a, tag, 0);
	pmemz_alloc_close(a);
	return ret;
}

/* The value of the sample "NAME{LABELS} VALUE" in text; fails when it is not there once. */
static uint64_t prom_value(const char *text, const char *name, const char *labels)
{
	char head[256];
	const char *p, *again;
	size_t len = (size_t)snprintf(head, sizeof(head), "\n%s{%s} ", name, labels);

	p = strstr(text, head);
	if (!p)
		fail_msg("no sample %s{%s} in:\n%s", name, labels, text);
	again = strstr(p + len, head);
	if (again)
		fail_msg("sample %s{%s} twice", name, labels);
	return strtoull(p + len, NULL, 10);
}

/*
 * pmemzctl metrics: a disk's mapped bytes (its chunks) and the bytes it
 * holds ahead (its ahead tags) are two gauges, with the values pmemzctl
 * disks shows in its allocated and ahead columns.
 */
static void test_metrics(void **state)
{
	static const uint64_t d1_chunks[] = {0, 5};
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct json_object *j, *d;
	char tag[PMEMZ_DISK_TAG_MAX], labels[128], *out = NULL, *err = NULL;
	int status;

	start(e, &c, &r);
	assert_int_equal(make_disk(r, "d1", 64 * MIB, true, d1_chunks, 2), 0);
	(void)pmemz_disk_ahead_tag(tag, sizeof(tag), "d1", 1);
	assert_int_equal(commit_extents(r, tag, 1), 0);
	(void)pmemz_disk_ahead_tag(tag, sizeof(tag), "d1", 2);
	assert_int_equal(commit_extents(r, tag, 2), 0);
	/* no ahead tags: an ahead sample of 0 */
	assert_int_equal(make_disk(r, "d2", 8 * MIB, true, d1_chunks, 1), 0);
	/* ahead extents only, not a chunk written yet */
	(void)pmemz_disk_ahead_tag(tag, sizeof(tag), "d3", 7);
	assert_int_equal(commit_extents(r, tag, 4), 0);

	j = ctl_json(e->sock, REGION);
	d = find_disk(disks_array(j), getuid(), "d1");
	assert_int_equal(jnum(d, "allocated"), 2 * MIB);
	assert_int_equal(jnum(d, "ahead"), 3 * MIB);
	json_object_put(j);

	status = ctl(e->sock, &out, &err, "metrics", NULL, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pmemzctl metrics: status 0x%x\n%s%s", status, out, err);
	assert_non_null(strstr(out, "# TYPE pmemzerod_disk_mapped_bytes gauge\n"));
	assert_non_null(strstr(out, "# TYPE pmemzerod_disk_ahead_bytes gauge\n"));
	(void)snprintf(labels, sizeof(labels), "region=\"%s\",disk=\"d1\",uid=\"%u\"", REGION,
		       (unsigned)getuid());
	assert_int_equal(prom_value(out, "pmemzerod_disk_mapped_bytes", labels), 2 * MIB);
	assert_int_equal(prom_value(out, "pmemzerod_disk_ahead_bytes", labels), 3 * MIB);
	(void)snprintf(labels, sizeof(labels), "region=\"%s\",disk=\"d2\",uid=\"%u\"", REGION,
		       (unsigned)getuid());
	assert_int_equal(prom_value(out, "pmemzerod_disk_mapped_bytes", labels), 1 * MIB);
	assert_int_equal(prom_value(out, "pmemzerod_disk_ahead_bytes", labels), 0);
	(void)snprintf(labels, sizeof(labels), "region=\"%s\",disk=\"d3\",uid=\"%u\"", REGION,
		       (unsigned)getuid());
	assert_int_equal(prom_value(out, "pmemzerod_disk_mapped_bytes", labels), 0);
	assert_int_equal(prom_value(out, "pmemzerod_disk_ahead_bytes", labels), 4 * MIB);
	/* the region without disks has none */
	assert_null(strstr(out, "disk_mapped_bytes{region=\"empty\""));
	free(out);
	free(err);

	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* Offset in the region's file of the superblock of disk name. */
static uint64_t sb_file_offset(struct pmemz_region *r, const char *name)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	struct pmemz_alloc *a = NULL;
	uint64_t off;
	size_t len;

	(void)pmemz_disk_super_tag(tag, sizeof(tag), name);
	assert_int_equal(pmemz_alloc_open(r, tag, &a), 0);
	off = (uint64_t)((uint8_t *)pmemz_alloc_range(a, 0, &len) -
			 (uint8_t *)pmemz_region_address(r));
	pmemz_alloc_close(a);
	return off;
}

/* pmemzctl [--json] disks REGION on a truncated file: exit 1, `lost` named, `kept` listed. */
static void expect_truncated(const char *sock, bool json, const char *kept, const char *lost)
{
	char *out = NULL, *err = NULL, quoted[16];
	int status = json ? ctl(sock, &out, &err, "--json", "disks", REGION)
			  : ctl(sock, &out, &err, "disks", REGION, NULL);

	(void)snprintf(quoted, sizeof(quoted), "'%s'", lost);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1 || !strstr(err, quoted) ||
	    !strstr(err, "'" REGION "'") || !strstr(err, "shorter") || !strstr(err, "I/O error") ||
	    !strstr(out, kept) || !strstr(out, "unreadable"))
		fail_msg("pmemzctl%s disks on a truncated region file: status 0x%x (want exit 1, "
			 "disk %s named on stderr, %s listed)\nstdout:\n%sstderr:\n%s",
			 json ? " --json" : "", status, quoted, kept, out, err);
	print_message("%s%s", out, err);
	if (json) {
		struct json_object *j = json_tokener_parse(out);

		if (!j)
			fail_msg("not JSON:\n%s", out);
		expect_disk(disks_array(j), getuid(), kept, 8 * MIB, 0, "ok");
		expect_disk(disks_array(j), getuid(), lost, 0, 0, "unreadable superblock");
		json_object_put(j);
	}
	free(out);
	free(err);
}

static void test_truncated(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	char path[PATH_MAX], del[32], *out = NULL, *err = NULL;
	const char *kept, *lost;
	uint64_t off_a, off_b;
	struct json_object *j;
	int status;

	start(e, &c, &r);
	assert_int_equal(make_disk(r, "alpha", 8 * MIB, true, NULL, 0), 0);
	assert_int_equal(make_disk(r, "beta", 8 * MIB, true, NULL, 0), 0);
	/* where the allocator placed them is the daemon's choice: cut at the later one */
	off_a = sb_file_offset(r, "alpha");
	off_b = sb_file_offset(r, "beta");
	assert_int_not_equal(off_a, off_b);
	kept = off_a < off_b ? "alpha" : "beta";
	lost = off_a < off_b ? "beta" : "alpha";
	pmemz_region_close(r);

	/* a tenant's ftruncate: the daemon still serves the region's metadata */
	itest_path(e, path, sizeof(path), "dsk.img");
	assert_int_equal(truncate(path, (off_t)(off_a < off_b ? off_b : off_a)), 0);
	expect_truncated(e->sock, false, kept, lost);
	expect_truncated(e->sock, true, kept, lost);

	/*
	 * --delete reads no superblock: the unreadable disk can still be freed.
	 * The zeroer paused: zeroing the freed extent past the end of the file
	 * would fail the region (docs/SECURITY.md), which is not tested here.
	 */
	itest_zeroer_pause(e->sock, REGION, true);
	(void)snprintf(del, sizeof(del), "--delete=%s", lost);
	status = ctl(e->sock, &out, &err, "disks", REGION, del);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("delete of the truncated disk: status 0x%x\n%s%s", status, out, err);
	free(out);
	free(err);
	/* nothing unreadable left: exit 0 again */
	j = ctl_json(e->sock, REGION);
	assert_int_equal(json_object_array_length(disks_array(j)), 1);
	expect_disk(disks_array(j), getuid(), kept, 8 * MIB, 0, "ok");
	json_object_put(j);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/* The extents of tag (numbers in the data area), in order, into v[0..n); their number. */
static size_t tag_extents(struct pmemz_region *r, const char *tag, uint64_t *v, size_t n)
{
	const uint8_t *data =
	    (const uint8_t *)pmemz_region_address(r) + pmemz_region_data_offset(r);
	uint64_t es = pmemz_region_extent_size(r);
	struct pmemz_alloc *a = NULL;
	size_t k = 0;

	assert_int_equal(pmemz_alloc_open(r, tag, &a), 0);
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		const uint8_t *p = pmemz_alloc_range(a, i, &len);

		for (size_t off = 0; off < len && k < n; off += es)
			v[k++] = (uint64_t)(p + off - data) / es;
	}
	pmemz_alloc_close(a);
	return k;
}

/*
 * Disk name's journal, through the test's mapping as the plugin writes it:
 * the base, then each record in slot seq % slots (torn: its check wrong).
 */
static void journal_write(struct pmemz_region *r, const char *name, uint64_t base,
			  const struct pmemz_disk_jrec *recs, size_t n, const bool *torn)
{
	size_t slots = pmemz_disk_journal_slots(pmemz_region_extent_size(r)), len;
	char tag[PMEMZ_DISK_TAG_MAX];
	struct pmemz_alloc *a = NULL;
	uint8_t *p;

	assert_true(slots > 0);
	(void)pmemz_disk_super_tag(tag, sizeof(tag), name);
	assert_int_equal(pmemz_alloc_open(r, tag, &a), 0);
	p = pmemz_alloc_range(a, 0, &len);
	memcpy(p + PMEMZ_DISK_JOURNAL_OFFSET, &base, sizeof(base));
	for (size_t i = 0; i < n; i++) {
		struct pmemz_disk_jrec rec;

		pmemz_disk_jrec_make(&rec, uuid, recs[i].seq, recs[i].chunk, recs[i].extent);
		if (torn && torn[i])
			rec.check ^= 1;
		memcpy(p + PMEMZ_DISK_JOURNAL_RECORDS + (recs[i].seq % slots) * sizeof(rec), &rec,
		       sizeof(rec));
	}
	assert_int_equal(pmemz_persist(r, p, len), 0);
	pmemz_alloc_close(a);
}

static void expect_figures(struct json_object *arr, const char *name, uint64_t chunks,
			   uint64_t allocated, uint64_t ahead)
{
	struct json_object *d = find_disk(arr, getuid(), name);

	if (jnum(d, "chunks") != chunks || jnum(d, "allocated") != allocated ||
	    jnum(d, "ahead") != ahead)
		fail_msg("disk %s: want chunks %llu, allocated %llu, ahead %llu: %s", name,
			 (unsigned long long)chunks, (unsigned long long)allocated,
			 (unsigned long long)ahead, json_object_to_json_string(d));
}

/* test_journal's disks jd and jt, their tags and journals (see there). */
static void journal_disks(struct pmemz_region *r)
{
	static const uint64_t jd_chunks[] = {0, 1};
	char tag[PMEMZ_DISK_TAG_MAX];
	uint64_t p[6], other, t[1];

	assert_int_equal(make_disk(r, "jd", 64 * MIB, true, jd_chunks, 2), 0);
	(void)pmemz_disk_ahead_tag(tag, sizeof(tag), "jd", 1);
	assert_int_equal(commit_extents(r, tag, 1), 0);
	(void)pmemz_disk_pool_tag(tag, sizeof(tag), "jd", 1);
	assert_int_equal(commit_extents(r, tag, 4), 0);
	assert_int_equal(tag_extents(r, tag, p, 4), 4);
	(void)pmemz_disk_pool_tag(tag, sizeof(tag), "jd", 2);
	assert_int_equal(commit_extents(r, tag, 2), 0);
	assert_int_equal(tag_extents(r, tag, p + 4, 2), 2);
	assert_int_equal(tag_extents(r, "nbd/jd/0", &other, 1), 1); /* a chunk's: no pool's */
	{
		/* 64 chunks; base 100 */
		const struct pmemz_disk_jrec recs[] = {
		    {.seq = 100, .chunk = 3, .extent = p[0]},  /* older for chunk 3: ignored */
		    {.seq = 105, .chunk = 3, .extent = p[1]},  /* mapped */
		    {.seq = 101, .chunk = 4, .extent = p[4]},  /* mapped (the second pool) */
		    {.seq = 109, .chunk = 10, .extent = p[5]}, /* mapped */
		    {.seq = 102, .chunk = 5, .extent = other}, /* outside every pool */
		    {.seq = 103, .chunk = 6, .extent = p[2]},  /* torn */
		    {.seq = 99, .chunk = 7, .extent = p[3]},   /* below the base */
		    {.seq = 104, .chunk = 64, .extent = p[3]}, /* past the disk's chunks */
		};
		const bool torn[] = {false, false, false, false, false, true, false, false};

		journal_write(r, "jd", 100, recs, sizeof(recs) / sizeof(recs[0]), torn);
	}
	assert_int_equal(make_disk(r, "jt", 8 * MIB, true, NULL, 0), 0);
	(void)pmemz_disk_pool_tag(tag, sizeof(tag), "jt", 0);
	assert_int_equal(commit_extents(r, tag, 1), 0);
	assert_int_equal(tag_extents(r, tag, t, 1), 1);
	{
		const struct pmemz_disk_jrec rec = {.seq = 0, .chunk = 2, .extent = t[0]};

		journal_write(r, "jt", 0, &rec, 1, NULL);
	}
}

/*
 * Disk jd: chunk tags 0 and 1, an ahead tag of 1 extent, pool tags of 4
 * (P[0..3]) and 2 (P[4..5]) extents, and a journal whose latest valid
 * records map 3 pool extents: 5 chunks, 5 MiB mapped, 1 + 6 - 3 = 4 MiB
 * ahead.  Disk jt: a pool of 1 extent, mapped by its one record.
 */
static void test_journal(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct json_object *j, *arr, *d;
	char labels[128], path[PATH_MAX], *out = NULL, *err = NULL;
	uint64_t before;
	struct itest_stat st;
	int status;

	start(e, &c, &r);
	journal_disks(r);

	j = ctl_json(e->sock, REGION);
	arr = disks_array(j);
	assert_int_equal(json_object_array_length(arr), 2);
	expect_figures(arr, "jd", 5, 5 * MIB, 4 * MIB);
	expect_figures(arr, "jt", 1, 1 * MIB, 0);
	assert_string_equal(jstr(find_disk(arr, getuid(), "jd"), "state"), "ok");
	json_object_put(j);

	status = ctl(e->sock, &out, &err, "metrics", NULL, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pmemzctl metrics: status 0x%x\n%s%s", status, out, err);
	(void)snprintf(labels, sizeof(labels), "region=\"%s\",disk=\"jd\",uid=\"%u\"", REGION,
		       (unsigned)getuid());
	assert_int_equal(prom_value(out, "pmemzerod_disk_mapped_bytes", labels), 5 * MIB);
	assert_int_equal(prom_value(out, "pmemzerod_disk_ahead_bytes", labels), 4 * MIB);
	(void)snprintf(labels, sizeof(labels), "region=\"%s\",disk=\"jt\",uid=\"%u\"", REGION,
		       (unsigned)getuid());
	assert_int_equal(prom_value(out, "pmemzerod_disk_mapped_bytes", labels), 1 * MIB);
	assert_int_equal(prom_value(out, "pmemzerod_disk_ahead_bytes", labels), 0);
	free(out);
	free(err);

	/* --delete: the pool tags go too (sb, 2 chunks, 1 ahead, 6 pool) */
	itest_zeroer_pause(e->sock, REGION, true); /* nothing zeroed past the cut below */
	before = committed_extents(e->sock);
	{
		char *argv[] = {UNCONST(itest_ctl_path()), UNCONST("--socket"),
				UNCONST(e->sock),	   UNCONST("--json"),
				UNCONST("disks"),	   UNCONST(REGION),
				UNCONST("--delete=jd"),	   NULL};

		status = itest_run(argv, 10000, &out, &err);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("delete jd: status 0x%x\n%s%s", status, out, err);
	j = json_tokener_parse(out);
	assert_non_null(j);
	assert_int_equal(jnum(j, "chunks"), 2);
	assert_int_equal(jnum(j, "freed"), 10 * MIB);
	json_object_put(j);
	free(out);
	free(err);
	assert_int_equal(committed_extents(e->sock), before - 10);
	assert_false(tag_exists(r, "nbd/jd/pool/1"));
	assert_false(tag_exists(r, "nbd/jd/pool/2"));
	assert_true(tag_exists(r, "nbd/jt/pool/0"));

	/* the file cut right after jt's superblock page: its journal is unreadable */
	itest_path(e, path, sizeof(path), "dsk.img");
	assert_int_equal(
	    truncate(path, (off_t)(sb_file_offset(r, "jt") + PMEMZ_DISK_JOURNAL_OFFSET)), 0);
	status = ctl(e->sock, &out, &err, "--json", "disks", REGION);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1 || !strstr(err, "'jt'") ||
	    !strstr(err, "journal") || !strstr(err, "I/O error"))
		fail_msg("disks with jt's journal cut: status 0x%x (want 1, jt named)\n%s%s",
			 status, out, err);
	j = json_tokener_parse(out);
	assert_non_null(j);
	d = find_disk(disks_array(j), getuid(), "jt");
	assert_string_equal(jstr(d, "state"), "unreadable journal");
	assert_int_equal(jnum(d, "size"), 8 * MIB);	     /* the superblock is sound */
	expect_figures(disks_array(j), "jt", 0, 0, 1 * MIB); /* its tags' figures */
	json_object_put(j);
	free(out);
	free(err);

	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after the journal's disks");
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

/*
 * Disk name's superblock rewritten through the mapping as another plugin
 * would have written it: version 1 (no masks: bytes 104 on zero), or
 * version `version` with the masks ORed in; its checksum made again.
 */
static void sb_rewrite(struct pmemz_region *r, const char *name, uint32_t version, uint64_t compat,
		       uint64_t ro_compat, uint64_t incompat)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	struct pmemz_alloc *a = NULL;
	struct pmemz_disk_super sb;
	size_t len;
	uint8_t *p;

	(void)pmemz_disk_super_tag(tag, sizeof(tag), name);
	assert_int_equal(pmemz_alloc_open(r, tag, &a), 0);
	p = pmemz_alloc_range(a, 0, &len);
	memcpy(&sb, p, sizeof(sb));
	sb.version = version;
	if (version == PMEMZ_DISK_VERSION_1) {
		sb.super_size = PMEMZ_DISK_SUPER_SIZE_1;
		memset((uint8_t *)&sb + offsetof(struct pmemz_disk_super, compat), 0,
		       sizeof(sb) - offsetof(struct pmemz_disk_super, compat));
	}
	sb.compat |= compat;
	sb.ro_compat |= ro_compat;
	sb.incompat |= incompat;
	sb.checksum = pmemz_disk_super_checksum(&sb);
	memcpy(p, &sb, sizeof(sb));
	assert_int_equal(pmemz_persist(r, p, sizeof(sb)), 0);
	pmemz_alloc_close(a);
}

/*
 * Disks of later plugins: superblock version 3; version 2 with an incompat
 * bit this build does not know (unsupported: listed, figures from the tags
 * alone, never deleted), with a ro_compat one (read-only: the journal is
 * read, never deleted), with a compat one (as usual, deleted); and a
 * version 1 superblock (db6afef's) whose journal maps a pool extent (the
 * journal as long as the extent holds, as then).  None is called damaged.
 */
static void test_features(void **state)
{
	static const uint64_t one_chunk[] = {0};
	static const char *const later[] = {"incompat", "rocompat", "v3"};
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	char tag[PMEMZ_DISK_TAG_MAX], *err = NULL;
	struct json_object *j, *arr;
	uint64_t ext[1], before;

	start(e, &c, &r);
	assert_int_equal(make_disk(r, "incompat", 8 * MIB, true, one_chunk, 1), 0);
	assert_int_equal(make_disk(r, "rocompat", 8 * MIB, true, one_chunk, 1), 0);
	assert_int_equal(make_disk(r, "compat", 8 * MIB, true, one_chunk, 1), 0);
	assert_int_equal(make_disk(r, "v3", 8 * MIB, true, NULL, 0), 0);
	assert_int_equal(make_disk(r, "v1", 8 * MIB, true, one_chunk, 1), 0);
	/* a pool extent each, mapped by a journal record to chunk 2 */
	for (size_t i = 0; i < 3; i++) {
		const char *name = i == 0 ? "incompat" : i == 1 ? "rocompat" : "v1";

		(void)pmemz_disk_pool_tag(tag, sizeof(tag), name, 0);
		assert_int_equal(commit_extents(r, tag, 1), 0);
		assert_int_equal(tag_extents(r, tag, ext, 1), 1);
		journal_write(r, name, 0, &(struct pmemz_disk_jrec){.chunk = 2, .extent = ext[0]},
			      1, NULL);
	}
	sb_rewrite(r, "incompat", PMEMZ_DISK_VERSION, 0, 0, UINT64_C(1) << 9);
	sb_rewrite(r, "rocompat", PMEMZ_DISK_VERSION, 0, UINT64_C(1) << 3, 0);
	sb_rewrite(r, "compat", PMEMZ_DISK_VERSION, UINT64_C(1) << 5, 0, 0);
	sb_rewrite(r, "v3", PMEMZ_DISK_VERSION + 1, 0, 0, 0);
	sb_rewrite(r, "v1", PMEMZ_DISK_VERSION_1, 0, 0, 0);

	j = ctl_json(e->sock, REGION);
	arr = disks_array(j);
	expect_disk(arr, getuid(), "incompat", 8 * MIB, 1,
		    "unsupported: incompat features 0x0000000000000200 (bit 9) of a later plugin");
	expect_figures(arr, "incompat", 1, 1 * MIB, 1 * MIB); /* the journal unread */
	expect_disk(arr, getuid(), "rocompat", 8 * MIB, 2,
		    "read-only: ro_compat features 0x0000000000000008 (bit 3) of a later plugin");
	expect_figures(arr, "rocompat", 2, 2 * MIB, 0);
	expect_disk(arr, getuid(), "compat", 8 * MIB, 1, "ok");
	expect_disk(arr, getuid(), "v3", 0, 0,
		    "unsupported: superblock version 3 of a later plugin");
	expect_disk(arr, getuid(), "v1", 8 * MIB, 2, "ok");
	expect_figures(arr, "v1", 2, 2 * MIB, 0);
	json_object_put(j);

	/* a later plugin's disks are that plugin's to delete: refused, every tag kept */
	before = committed_extents(e->sock);
	for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
		int status = delete_disk(e->sock, later[i], &err);

		if (status != 1 || !strstr(err, "later version") || !strstr(err, "not deleted"))
			fail_msg("--delete=%s: exit %d, want 1 naming a later version:\n%s",
				 later[i], status, err);
		print_message("refused: %s", err);
		free(err);
		(void)pmemz_disk_super_tag(tag, sizeof(tag), later[i]);
		assert_true(tag_exists(r, tag));
	}
	assert_int_equal(committed_extents(e->sock), before);
	assert_true(tag_exists(r, "nbd/incompat/0"));
	assert_true(tag_exists(r, "nbd/rocompat/pool/0"));
	/* unknown compat features: deleted as any other disk */
	assert_int_equal(delete_disk(e->sock, "compat", &err), 0);
	free(err);
	assert_false(tag_exists(r, "nbd/compat"));
	assert_false(tag_exists(r, "nbd/compat/0"));

	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

static int addr_cmp(const void *a, const void *b)
{
	size_t len;
	const uint8_t *x = pmemz_alloc_range(*(struct pmemz_alloc *const *)a, 0, &len);
	const uint8_t *y = pmemz_alloc_range(*(struct pmemz_alloc *const *)b, 0, &len);

	return x < y ? -1 : x > y;
}

/* The caller's pool tag of more runs than one LIST reply holds: its runs past the first count. */
static void test_fragmented_pool(void **state)
{
	const uint64_t es = 16384; /* the smallest extents with a journal of 256 slots */
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc **one, *pool = NULL;
	struct json_object *j;
	struct itest_stat st;
	uint64_t ext[2];
	size_t n = 0, runs, len;
	const uint8_t *data;
	int ret;

	itest_write_conf(e,
			 "[region frag]\n"
			 "path = %s/frag.img\n"
			 "size = 352M\n"
			 "extent_size = 16K\n",
			 e->dir);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "frag", 60000, &st);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "frag", &r), 0);
	assert_int_equal(pmemz_region_extent_size(r), es);
	assert_int_equal(make_disk(r, "fr", 1ull << 30, true, NULL, 0), 0);
	/* every other extent free: a checkerboard */
	one = calloc(st.zeroed, sizeof(*one));
	assert_non_null(one);
	while (n < st.zeroed && (ret = pmemz_alloc_new(r, es, PMEMZ_ALLOC_NOWAIT, &one[n])) == 0)
		n++;
	assert_true(n > 20000);
	qsort(one, n, sizeof(*one), addr_cmp);
	for (size_t i = 0; i < n; i += 2)
		assert_int_equal(pmemz_alloc_release(one[i]), 0);
	assert_int_equal(pmemz_alloc_new(r, (n + 1) / 2 * es, 0, &pool), 0);
	runs = pmemz_alloc_count(pool);
	assert_true(runs > 10000); /* more than a frame's 64 KiB holds */
	data = (const uint8_t *)pmemz_region_address(r) + pmemz_region_data_offset(r);
	ext[0] = (uint64_t)((const uint8_t *)pmemz_alloc_range(pool, 0, &len) - data) / es;
	ext[1] = (uint64_t)((const uint8_t *)pmemz_alloc_range(pool, runs - 1, &len) - data) / es;
	assert_int_equal(pmemz_alloc_commit(pool, "nbd/fr/pool/1", 0), 0);
	pmemz_alloc_close(pool);
	{
		const struct pmemz_disk_jrec recs[] = {
		    {.seq = 1, .chunk = 0, .extent = ext[0]},
		    {.seq = 2, .chunk = 1, .extent = ext[1]}, /* past LIST's first runs */
		};

		journal_write(r, "fr", 1, recs, 2, NULL);
	}

	j = ctl_json(e->sock, "frag");
	expect_figures(disks_array(j), "fr", 2, 2 * es, ((n + 1) / 2 - 2) * es);
	json_object_put(j);

	for (size_t i = 1; i < n; i += 2)
		pmemz_alloc_close(one[i]);
	free(one);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

#ifdef PMEMZ_NBDKIT_PLUGIN
/* A program of Debian's in the usual directories (itest_run does not search PATH). */
static const char *find_program(const char *name, char *buf, size_t len)
{
	static const char *const dirs[] = {"/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin"};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		(void)snprintf(buf, len, "%s/%s", dirs[i], name);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

/* nbdkit -f serving disk `name` of REGION on nbd_sock; returns once it accepts connections. */
static pid_t nbdkit_start(struct itest_env *e, const char *nbdkit, const char *nbd_sock,
			  const char *name)
{
	char region[64], disk[64], socket[PATH_MAX + 8];
	pid_t pid;
	int fd = -1;

	(void)snprintf(region, sizeof(region), "region=%s", REGION);
	(void)snprintf(disk, sizeof(disk), "disk=%s", name);
	(void)snprintf(socket, sizeof(socket), "socket=%s", e->sock);
	(void)unlink(nbd_sock);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = {UNCONST(nbdkit),
				UNCONST("-f"),
				UNCONST("-U"),
				UNCONST(nbd_sock),
				UNCONST(PMEMZ_NBDKIT_PLUGIN),
				region,
				disk,
				UNCONST("size=64M"),
				socket,
				NULL};

		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* a sanitizer build's plugin needs ASan's runtime in the uninstrumented nbdkit */
		if (*PMEMZ_NBDKIT_PRELOAD)
			(void)setenv("LD_PRELOAD", PMEMZ_NBDKIT_PRELOAD, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	/* (the probe's connection makes nbdkit log a broken handshake: harmless) */
	for (uint64_t t0 = itest_now_ms(); itest_now_ms() - t0 < 20000; itest_msleep(20)) {
		int st;

		fd = itest_raw_connect(nbd_sock);
		if (fd >= 0)
			break;
		if (waitpid(pid, &st, WNOHANG) == pid)
			fail_msg("nbdkit exited (status 0x%x) before serving", st);
	}
	if (fd < 0)
		fail_msg("nbdkit does not serve %s after 20 s", nbd_sock);
	close(fd);
	return pid;
}

/*
 * kill -9: the disk's claim goes with nbdkit's connection however nbdkit
 * ends (and an uninstrumented nbdkit with ASan's runtime preloaded can
 * deadlock in its exit handlers, in glibc's freelocale under p11-kit).
 */
static void nbdkit_stop(pid_t pid)
{
	int st;

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
}

/* nbdsh's Python code against nbd_sock; python is Debian's, where python3-libnbd installs. */
static void nbdsh(const char *python, const char *nbd_sock, const char *code)
{
	char uri[PATH_MAX + 32], *out = NULL, *err = NULL;
	char *argv[] = {UNCONST(python), UNCONST("-m"), UNCONST("nbd"),
			UNCONST("-u"),	 uri,		UNCONST("-c"),
			UNCONST(code),	 NULL};
	int status;

	(void)snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", nbd_sock);
	status = itest_run(argv, 30000, &out, &err);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("nbdsh -c '%s': status 0x%x\n%s%s", code, status, out, err);
	free(out);
	free(err);
}

static bool has_python_nbd(const char *python)
{
	char *argv[] = {UNCONST(python), UNCONST("-c"), UNCONST("import nbd"), NULL};
	char *out = NULL, *err = NULL;
	int status = itest_run(argv, 30000, &out, &err);

	free(out);
	free(err);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_real_plugin(void **state)
{
	struct itest_env *e = *state;
	char nbdkit_buf[64], python_buf[64], nbd_sock[PATH_MAX], pid[32];
	const char *nbdkit = find_program("nbdkit", nbdkit_buf, sizeof(nbdkit_buf));
	const char *python = find_program("python3", python_buf, sizeof(python_buf));
	char *out = NULL, *err = NULL;
	struct json_object *j;
	struct itest_stat st;
	int status;
	pid_t k;

	if (!nbdkit || !python || !has_python_nbd(python)) {
		print_message("SKIP: nbdkit or python3-libnbd is not installed (apt-get install "
			      "nbdkit python3-libnbd): disks of the real plugin are NOT tested\n");
		skip();
	}
	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 60000, &st);
	itest_path(e, nbd_sock, sizeof(nbd_sock), "nbd.sock");

	/* two chunks written (0 and 5), flushed */
	k = nbdkit_start(e, nbdkit, nbd_sock, "real");
	nbdsh(python, nbd_sock,
	      "h.pwrite(b'\\x5a' * 4096, 0); h.pwrite(b'\\x5a' * 8192, 5 * 1048576 + 4096); "
	      "h.flush()");
	j = ctl_json(e->sock, REGION);
	expect_disk(disks_array(j), getuid(), "real", 64 * MIB, 2, "ok");
	json_object_put(j);

	/* nbdkit holds the disk's claim */
	status = ctl(e->sock, &out, &err, "disks", REGION, "--delete=real");
	(void)snprintf(pid, sizeof(pid), "%d", (int)k);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1 || !strstr(err, pid))
		fail_msg("delete of a served disk: status 0x%x, want exit 1 naming nbdkit's pid "
			 "%s:\n%s%s",
			 status, pid, out, err);
	free(out);
	free(err);

	nbdkit_stop(k);
	status = ctl(e->sock, &out, &err, "disks", REGION, "--delete=real");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("delete after nbdkit stopped: status 0x%x\n%s%s", status, out, err);
	free(out);
	free(err);
	j = ctl_json(e->sock, REGION);
	assert_int_equal(json_object_array_length(disks_array(j)), 0);
	json_object_put(j);

	/* made again under that name: zeros, no chunk */
	k = nbdkit_start(e, nbdkit, nbd_sock, "real");
	nbdsh(python, nbd_sock,
	      "assert h.pread(8192, 5 * 1048576) == bytes(8192); "
	      "assert h.pread(4096, 0) == bytes(4096)");
	nbdkit_stop(k);
	j = ctl_json(e->sock, REGION);
	expect_disk(disks_array(j), getuid(), "real", 64 * MIB, 0, "ok");
	json_object_put(j);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after the plugin's disk was deleted");
	itest_daemon_stop(e);
}
#else
static void test_real_plugin(void **state)
{
	(void)state;
	print_message("SKIP: nbdkit-pmemz-plugin is not built (nbdkit-plugin-dev), or nbdkit "
		      "cannot load this sanitizer build's: disks of the real plugin are NOT "
		      "tested\n");
	skip();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_own_disks, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_uids, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_delete, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_many, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_truncated, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_journal, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_features, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_fragmented_pool, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_real_plugin, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
