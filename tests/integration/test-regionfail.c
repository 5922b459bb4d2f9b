/* SPDX-License-Identifier: MIT */
/*
 * Integration test: what a tenant does to its region's file stays in that
 * region (docs/SECURITY.md).
 *
 *  - The fd OPEN_REGION hands out is a new open file description: flags a
 *    client sets on it do not show on the daemon's.
 *  - Attack 1: the client truncates the file through that fd.  Before: the
 *    daemon died of SIGBUS and then refused to start.  Now: that region is
 *    `failed` (with the reason, in status, --json and the log, once), its
 *    RPCs get -EIO, the other region keeps allocating, leases on the failed
 *    region can be dropped, and a restart starts degraded.
 *  - Attack 2: an OFD write lock on the handed fd does not stop a restart.
 *  - Attack 7: damaged headers in one of two regions: degraded start, the
 *    other serves; the daemon exits non-zero only when no region is usable.
 *  - Tenant-written metadata: random bytes and bit flips written into one region's metadata
 *    through a client's own mapping, then a restart, several rounds: neither
 *    the daemon nor `pmemzctl check` dies by a signal, the other region
 *    keeps serving.
 *  - metadata = PATH: the tenant maps the data file only; writing all of it
 *    leaves the allocation state intact; `pmemzctl check --metadata` checks
 *    the pair.
 *  - A newer pmemzerod's feature bits (docs/on-media-format.md, "Features"):
 *    unknown incompat and ro_compat refuse that region, naming the bits,
 *    with its file left byte for byte as it was (a lease to recover in it),
 *    while the other serves; `pmemzctl check` says unsupported (exit 3).
 *    Unknown compat serves, and a header repair keeps them.  Layout
 *    version 1 (every earlier build's) opens and stays version 1.  Masks a
 *    tenant flips in its region's header, resealed or not, never crash the
 *    daemon nor make it write to the region it refuses.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "harness.h"
#include "libpmemzclient.h"
#include "media.h"

#define MIB ITEST_MIB

static void two_regions(struct itest_env *e)
{
	itest_cli_region(e, "a", "32M");
	itest_cli_region(e, "b", "32M");
}

static void region_img(const struct itest_env *e, const char *name, char *buf, size_t len)
{
	char f[64];

	snprintf(f, sizeof(f), "%s.img", name);
	itest_path(e, buf, len, f);
}

/* OPEN_REGION over a raw connection; returns the fd it hands out. */
static int open_region_fd(int sock, const char *region)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__OpenRegionReq o = PMEMZ__OPEN_REGION_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int fd = -1;

	o.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
	req.open_region = &o;
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 4242;
	assert_int_equal(itest_raw_send(sock, &req), 0);
	assert_int_equal(itest_raw_recv(sock, ITEST_RPC_TIMEOUT_MS, &resp, &fd), 0);
	assert_int_equal(resp->id, 4242);
	assert_int_equal(resp->status, 0);
	itest_resp_free(resp);
	assert_true(fd >= 0);
	return fd;
}

/* Run pmemzctl; returns the wait status, output in *out (malloc'ed). */
static int ctl(char **out, const char *a1, const char *a2, const char *a3, const char *a4,
	       const char *a5)
{
	char *argv[8] = {UNCONST(itest_ctl_path()),
			 UNCONST(a1),
			 UNCONST(a2),
			 UNCONST(a3),
			 UNCONST(a4),
			 UNCONST(a5),
			 NULL};
	char *err = NULL;
	int status = itest_run(argv, 20000, out, &err);

	if (WIFSIGNALED(status))
		fail_msg("pmemzctl %s %s died of signal %d:\n%s", a1, a3 ? a3 : "",
			 WTERMSIG(status), err);
	free(err);
	return status;
}

/* The region's object in `pmemzctl --json CMD` (status or regions); caller puts top. */
static struct json_object *ctl_region_json(const struct itest_env *e, const char *cmd,
					   const char *region, struct json_object **top)
{
	struct json_object *arr, *it, *n;
	char *out = NULL;
	int status = ctl(&out, "--socket", e->sock, "--json", cmd, NULL);

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pmemzctl --json %s failed: %s", cmd, out);
	*top = json_tokener_parse(out);
	if (!*top)
		fail_msg("pmemzctl --json %s: not JSON:\n%s", cmd, out);
	free(out);
	if (!json_object_object_get_ex(*top, "regions", &arr))
		fail_msg("no regions in %s", json_object_to_json_string(*top));
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		it = json_object_array_get_idx(arr, i);
		if (json_object_object_get_ex(it, "name", &n) &&
		    strcmp(json_object_get_string(n), region) == 0)
			return it;
	}
	fail_msg("region '%s' not in %s", region, json_object_to_json_string(*top));
	return NULL;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/*
 * The region's state in `status --json` and `regions --json`; when failed,
 * the reason contains want_reason (if given).  Returns whether it is failed.
 */
static bool region_failed(const struct itest_env *e, const char *region, const char *want_reason)
{
	static const char *const cmds[] = {"status", "regions"};
	bool failed = false, first = false;

	for (size_t i = 0; i < 2; i++) {
		struct json_object *top = NULL;
		struct json_object *rj = ctl_region_json(e, cmds[i], region, &top);
		const char *state = jstr(rj, "state");
		const char *why = jstr(rj, "failure");

		assert_non_null(state);
		if (strcmp(state, "failed") == 0) {
			if (!why || (want_reason && !strstr(why, want_reason)))
				fail_msg("%s: region '%s' failed with reason '%s', want '%s'",
					 cmds[i], region, why ? why : "(none)", want_reason);
			failed = true;
		} else {
			assert_string_equal(state, "online");
			assert_null(why);
		}
		/* Both commands tell the same. */
		if (i == 0)
			first = failed;
		else
			assert_int_equal(failed, first);
		json_object_put(top);
	}
	return failed;
}

/*
 * A full ALLOCATE / COMMIT / FREE round in region through libpmemzclient;
 * with check_zero the allocation must read zero (not after a tenant wrote
 * into the region's free extents: its co-tenants' data is a region's own
 * trust domain).
 */
static void region_round(const struct itest_env *e, const char *region, const char *tag,
			 bool check_zero)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;

	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, region, &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &a), 0);
	if (check_zero)
		itest_assert_alloc_zero(r, a);
	itest_fill_alloc(r, a, 7);
	assert_int_equal(pmemz_alloc_commit(a, tag, PMEMZ_COMMIT_FLUSH), 0);
	assert_int_equal(pmemz_alloc_release(a), 0); /* frees the tag */
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void region_serves(const struct itest_env *e, const char *region, const char *tag)
{
	region_round(e, region, tag, true);
}

static size_t count_substr(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/*
 * O_APPEND of the daemon's descriptors open on path: a description shared
 * with a client would show a flag the client set.  *count: how many there are.
 */
static bool daemon_fds_append(pid_t pid, const char *path, int *count)
{
	char dir[64], link[PATH_MAX], target[PATH_MAX], info[PATH_MAX];
	struct dirent *d;
	bool append = false;
	int seen = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	dp = opendir(dir);
	assert_non_null(dp);
	while ((d = readdir(dp))) {
		ssize_t n;
		FILE *f;
		unsigned long flags = 0;
		char line[128];

		if (d->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, d->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, path) != 0)
			continue;
		seen++;
		snprintf(info, sizeof(info), "/proc/%d/fdinfo/%s", (int)pid, d->d_name);
		f = fopen(info, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "flags: %lo", &flags) == 1)
				break;
		fclose(f);
		append |= (flags & O_APPEND) != 0;
	}
	closedir(dp);
	assert_true(seen > 0);
	*count = seen;
	return append;
}

/*
 * The daemon's descriptors of path once the one it sent is closed (it
 * closes its copy right after sendmsg, which may be after we received it).
 */
static bool daemon_fd_has_append(pid_t pid, const char *path, int want_n)
{
	bool append = false;
	int n = 0;

	for (int i = 0; i < 500; i++) {
		append = daemon_fds_append(pid, path, &n);
		if (n == want_n)
			return append;
		itest_msleep(10);
	}
	fail_msg("the daemon keeps %d descriptors of %s open, want %d", n, path, want_n);
	return append;
}

/* ---- the handed fd, attack 1 ---- */

static void test_truncate_through_handed_fd(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *held = NULL;
	char path[PATH_MAX], *log, *out = NULL;
	uint64_t lease;
	int sock, fd, status, rc, n_fds;

	two_regions(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "a", 10000, &st);
	itest_wait_zeroed(e->sock, "b", 10000, &st);
	region_img(e, "a", path, sizeof(path));

	/* A lease on a, held across the failure by another client. */
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "a", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &held), 0);

	assert_false(daemon_fds_append(e->pid, path, &n_fds));
	sock = itest_raw_connect(e->sock);
	assert_true(sock >= 0);
	fd = open_region_fd(sock, "a");
	/* Not the daemon's open file description: our flags stay ours. */
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND), 0);
	assert_false(daemon_fd_has_append(e->pid, path, n_fds));

	/* The attack: was SIGBUS (exit 135) at the next store. */
	assert_int_equal(ftruncate(fd, 4096), 0);
	rc = itest_raw_alloc(sock, "a", MIB, true, &lease);
	print_message("ALLOCATE on the truncated region: %d (%s)\n", rc, strerror(-rc));
	assert_int_equal(rc, -EIO);
	assert_int_equal(itest_raw_alloc(sock, "a", MIB, true, &lease), -EIO);
	assert_int_equal(kill(e->pid, 0), 0);

	/* Reported failed, with the reason, in text and JSON. */
	assert_true(region_failed(e, "a", "SIGBUS"));
	assert_false(region_failed(e, "b", NULL));
	status = ctl(&out, "--socket", e->sock, "status", NULL, NULL);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_non_null(strstr(out, "failed"));
	free(out);

	/* The other region, its leases and connections carry on. */
	region_serves(e, "b", "b-during");
	assert_int_equal(itest_raw_alloc(sock, "b", MIB, true, &lease), 0);
	assert_int_equal(itest_raw_free_lease(sock, "b", lease), 0);

	/* The lease on the failed region: COMMIT and FREE get -EIO, closing is safe. */
	rc = pmemz_alloc_commit(held, "late", 0);
	assert_int_equal(rc, -EIO);
	(void)pmemz_alloc_release(held);
	pmemz_region_close(r);
	pmemz_client_free(c);
	close(fd);
	close(sock);
	region_serves(e, "b", "b-after");

	log = itest_read_log(e);
	assert_int_equal(count_substr(log, "Region 'a' failed"), 1);
	free(log);
	itest_daemon_stop(e);

	/* A restart starts degraded: a refused (truncated), b serves. */
	itest_daemon_start(e);
	assert_true(region_failed(e, "a", "refusing to resize"));
	assert_false(region_failed(e, "b", NULL));
	region_serves(e, "b", "b-restart");
	sock = itest_raw_connect(e->sock);
	assert_int_equal(itest_raw_alloc(sock, "a", MIB, true, &lease), -EIO);
	close(sock);
	itest_daemon_stop(e);
}

/* ---- attack 2 ---- */

static void test_ofd_lock_does_not_block_restart(void **state)
{
	struct itest_env *e = *state;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	struct itest_stat st;
	int sock, fd;

	itest_cli_region(e, "a", "32M");
	itest_daemon_start(e);
	sock = itest_raw_connect(e->sock);
	assert_true(sock >= 0);
	fd = open_region_fd(sock, "a");
	close(sock);
	/* Was: the daemon's own lock on the file failed at its next start. */
	itest_daemon_stop(e);
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "a", 10000, &st);
	region_serves(e, "a", "locked");
	itest_daemon_stop(e);
	close(fd);
}

/* ---- attack 7 ---- */

static void damage_headers(const char *path, uint64_t seed)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	uint8_t block[2 * LAYOUT_BLOCK];

	assert_true(fd >= 0);
	itest_fill_pattern(block, sizeof(block), seed);
	assert_int_equal(pwrite(fd, block, sizeof(block), 0), (ssize_t)sizeof(block));
	close(fd);
}

static void test_damaged_header_degraded_start(void **state)
{
	struct itest_env *e = *state;
	char a[PATH_MAX], b[PATH_MAX], *log;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *al = NULL;
	void *before, *after;
	size_t len_before, len_after;
	uint64_t lease;
	int sock, status;

	two_regions(e);
	itest_daemon_start(e);
	/* A committed tag in b, to find again after the degraded start. */
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "b", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &al), 0);
	itest_fill_alloc(r, al, 99);
	assert_int_equal(pmemz_alloc_commit(al, "keep", PMEMZ_COMMIT_FLUSH), 0);
	pmemz_alloc_close(al); /* the tag stays */
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);

	region_img(e, "a", a, sizeof(a));
	region_img(e, "b", b, sizeof(b));
	damage_headers(a, 1);
	before = itest_read_file(a, &len_before);

	/* Was: the daemon refused a and exited, so b did not serve either. */
	itest_daemon_start(e);
	assert_true(region_failed(e, "a", "header"));
	assert_false(region_failed(e, "b", NULL));
	sock = itest_raw_connect(e->sock);
	assert_int_equal(itest_raw_alloc(sock, "a", MIB, true, &lease), -EIO);
	close(sock);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "b", &r), 0);
	assert_int_equal(pmemz_alloc_open(r, "keep", &al), 0);
	itest_check_alloc(r, al, 99);
	pmemz_alloc_close(al);
	pmemz_region_close(r);
	pmemz_client_free(c);
	region_serves(e, "b", "degraded");
	itest_daemon_stop(e);
	/* The failed region was left as it was. */
	after = itest_read_file(a, &len_after);
	assert_int_equal(len_after, len_before);
	assert_memory_equal(after, before, len_before);
	free(after);
	free(before);

	/* No region usable: then, and only then, the daemon exits non-zero. */
	damage_headers(b, 2);
	status = itest_daemon_expect_exit(e, ITEST_START_TIMEOUT_MS);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 0);
	log = itest_read_log(e);
	assert_non_null(strstr(log, "No region could be opened"));
	free(log);
}

/* ---- tenant-written metadata, end to end ---- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * What a tenant can do to the metadata through its mapping: random bytes,
 * bit flips, and headers that are well-formed (resealed) but lie.
 */
static void scribble_metadata(uint8_t *base, uint64_t meta_len, uint64_t *seed, unsigned round)
{
	struct layout_header h;

	switch (round % 4) {
	case 0: /* bit flips all over the metadata */
		for (int i = 0; i < 64; i++) {
			uint64_t bit = rnd(seed) % (meta_len * 8);

			base[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		break;
	case 1: /* random bytes in the tables, headers intact */
		for (int i = 0; i < 32; i++) {
			uint64_t off =
			    2 * LAYOUT_BLOCK + rnd(seed) % (meta_len - 2 * LAYOUT_BLOCK - 8);
			uint64_t v = rnd(seed);

			memcpy(base + off, &v, sizeof(v));
		}
		break;
	case 2: /* a resealed header with a different, consistent geometry */
		memcpy(&h, base, sizeof(h));
		h.extent_size = (rnd(seed) % 2) ? 4096 : h.extent_size * 2;
		h.extent_count = rnd(seed);
		h.tag_count = rnd(seed) % 100000;
		h.tag_table_off = rnd(seed);
		layout_header_seal(&h);
		memcpy(base, &h, sizeof(h));
		memcpy(base + LAYOUT_BACKUP_OFF, &h, sizeof(h));
		break;
	case 3: /* random bytes in both headers and the tables */
		for (uint64_t off = 0; off + 8 <= meta_len; off += 8 + rnd(seed) % 512) {
			uint64_t v = rnd(seed);

			memcpy(base + off, &v, sizeof(v));
		}
		break;
	}
}

static void test_tenant_written_metadata(void **state)
{
	struct itest_env *e = *state;
	char a[PATH_MAX];
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned rounds = 8, failed_starts = 0;

	two_regions(e);
	region_img(e, "a", a, sizeof(a));
	itest_daemon_start(e);
	for (unsigned round = 0; round < rounds; round++) {
		struct pmemz_client *c = NULL;
		struct pmemz_region *r = NULL;
		struct pmemz_alloc *al = NULL;
		char tag[32], *out = NULL;
		int status;

		if (region_failed(e, "a", NULL)) {
			/* The operator's way back: a new file (never an implicit re-format). */
			failed_starts++;
			itest_daemon_stop(e);
			assert_int_equal(unlink(a), 0);
			itest_daemon_start(e);
			assert_false(region_failed(e, "a", NULL));
		}
		/* A tenant of a with a tag and a lease, then its scribbles. */
		assert_int_equal(pmemz_client_new(e->sock, &c), 0);
		assert_int_equal(pmemz_region_open(c, "a", &r), 0);
		snprintf(tag, sizeof(tag), "t%u", round);
		if (pmemz_alloc_new(r, 2 * MIB, PMEMZ_ALLOC_NOWAIT, &al) == 0) {
			(void)pmemz_alloc_commit(al, tag, 0);
			(void)pmemz_alloc_release(al);
		}
		{
			struct pmemz_alloc *lease = NULL;
			uint8_t *base = pmemz_region_address(r);
			struct layout_header h;

			memcpy(&h, base, sizeof(h));
			(void)pmemz_alloc_new(r, MIB, PMEMZ_ALLOC_NOWAIT, &lease);
			scribble_metadata(base,
					  h.data_off && h.data_off < pmemz_region_size(r)
					      ? h.data_off
					      : 3 * LAYOUT_BLOCK,
					  &seed, round);
			(void)msync(base, pmemz_region_size(r), MS_SYNC);
			if (lease)
				(void)pmemz_alloc_release(lease);
		}
		/* Meanwhile the other region serves. */
		region_serves(e, "b", "other");
		pmemz_region_close(r);
		pmemz_client_free(c);

		/* The offline checker reads what the tenant wrote: a verdict, never a signal. */
		status = ctl(&out, "check", a, NULL, NULL, NULL);
		print_message("round %u: pmemzctl check exit %d\n", round,
			      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		free(out);

		/* A restart: the daemon must come up (b is fine) and not die. */
		itest_daemon_stop(e);
		itest_daemon_start(e);
		assert_false(region_failed(e, "b", NULL));
		region_serves(e, "b", "other");
		if (!region_failed(e, "a", NULL)) {
			struct itest_stat st;

			itest_stat(e->sock, "a", &st);
			itest_assert_accounting(&st, "after recovery of scribbled metadata");
		}
		assert_int_equal(kill(e->pid, 0), 0);
	}
	print_message("%u rounds, region a refused at %u restarts\n", rounds, failed_starts);
	itest_daemon_stop(e);
}

/*
 * metadata = PATH: a tenant is handed the data file only, so it can write
 * every byte it maps without touching the allocation state; the operator
 * checks the pair with pmemzctl check --metadata.
 */
static void test_metadata_out_of_reach(void **state)
{
	struct itest_env *e = *state;
	char data[PATH_MAX], meta[PATH_MAX], *out = NULL;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *al = NULL;
	struct stat st_fd, st_data;
	struct itest_stat st;
	int sock, fd, status;

	itest_path(e, data, sizeof(data), "split.data");
	itest_path(e, meta, sizeof(meta), "split.meta");
	itest_write_conf(e,
			 "[region split]\n"
			 "path = %s\n"
			 "metadata = %s\n"
			 "size = 32M\n"
			 "extent_size = 1M\n",
			 data, meta);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "split", 10000, &st);
	assert_int_equal(st.data_offset, 0);
	assert_int_equal(st.extent_count, 32);

	/* The fd handed out is the data file's, never the metadata's. */
	sock = itest_raw_connect(e->sock);
	fd = open_region_fd(sock, "split");
	assert_int_equal(fstat(fd, &st_fd), 0);
	assert_int_equal(stat(data, &st_data), 0);
	assert_int_equal(st_fd.st_ino, st_data.st_ino);
	close(fd);
	close(sock);

	/* A tag, then a tenant writes over everything it maps. */
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "split", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &al), 0);
	assert_int_equal(pmemz_alloc_commit(al, "kept", PMEMZ_COMMIT_FLUSH), 0);
	pmemz_alloc_close(al);
	memset(pmemz_region_address(r), 0xa5, pmemz_region_size(r));
	(void)msync(pmemz_region_address(r), pmemz_region_size(r), MS_SYNC);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);

	status = ctl(&out, "check", "--metadata", meta, "--no-data", data);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pmemzctl check --metadata: %s", out);
	free(out);

	/* The allocation state survived: the tag is there, the region serves. */
	itest_daemon_start(e);
	assert_false(region_failed(e, "split", NULL));
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "split", &r), 0);
	assert_int_equal(pmemz_alloc_open(r, "kept", &al), 0);
	assert_int_equal(pmemz_alloc_size(al), 2 * MIB);
	assert_int_equal(pmemz_alloc_release(al), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
	region_round(e, "split", "after", false); /* the tenant wrote the free extents */
	itest_daemon_stop(e);
}

/* ---- a newer pmemzerod's feature bits ---- */

/* Both header blocks of the file at path: f or'ed into the masks (as v1: version 1), resealed. */
static void edit_headers(const char *path, const struct layout_features *f, bool v1)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct layout_header h;

	assert_true(fd >= 0);
	for (off_t off = 0; off < 2 * LAYOUT_BLOCK; off += LAYOUT_BLOCK) {
		assert_int_equal(pread(fd, &h, sizeof(h), off), (ssize_t)sizeof(h));
		if (v1) {
			h.flags = layout_header_split(&h) ? LAYOUT_FLAG_SPLIT : 0;
			h.version = 1;
			h.compat = h.ro_compat = h.incompat = 0;
		} else {
			h.compat |= f->compat;
			h.ro_compat |= f->ro_compat;
			h.incompat |= f->incompat;
		}
		layout_header_seal(&h);
		assert_int_equal(pwrite(fd, &h, sizeof(h), off), (ssize_t)sizeof(h));
	}
	close(fd);
}

static void assert_file_is(const char *path, const void *want, size_t len)
{
	size_t n;
	void *now = itest_read_file(path, &n);

	if (n != len || memcmp(now, want, len) != 0)
		fail_msg("%s was written to (%zu bytes, was %zu)", path, n, len);
	free(now);
}

/* A tag "keep" (2 MiB, pattern seed) committed in region, kept; then found again. */
static void keep_tag(const struct itest_env *e, const char *region, uint64_t seed, bool commit)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *al = NULL;

	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, region, &r), 0);
	if (commit) {
		assert_int_equal(pmemz_alloc_new(r, 2 * MIB, 0, &al), 0);
		itest_fill_alloc(r, al, seed);
		assert_int_equal(pmemz_alloc_commit(al, "keep", PMEMZ_COMMIT_FLUSH), 0);
	} else {
		assert_int_equal(pmemz_alloc_open(r, "keep", &al), 0);
		itest_check_alloc(r, al, seed);
	}
	pmemz_alloc_close(al);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

/* `pmemzctl check [--json] PATH`: its exit status; fails unless want is in its output. */
static int ctl_check(const char *path, bool json, const char *want)
{
	char *out = NULL;
	int status = ctl(&out, json ? "--json" : "check", json ? "check" : path, json ? path : NULL,
			 NULL, NULL);

	assert_true(WIFEXITED(status));
	if (want && !strstr(out, want))
		fail_msg("pmemzctl check %s: no \"%s\" in:\n%s", path, want, out);
	free(out);
	return WEXITSTATUS(status);
}

/*
 * A newer build's incompat and ro_compat bits in region a, a lease left
 * LEASED on its media by a crash: a is refused with the bits named and not
 * a byte of it changes; b serves; the checker says unsupported.  Without
 * the bits, a serves its tag again.
 */
static void test_newer_features_refused(void **state)
{
	static const struct {
		struct layout_features f;
		const char *reason, *status;
	} cases[] = {
	    {{.incompat = UINT64_C(1) << 40},
	     "unknown incompat features 0x0000010000000000 (bit 40): a newer pmemzerod",
	     "\"status\": \"unsupported\""},
	    {{.ro_compat = UINT64_C(1) << 3},
	     "unknown ro_compat features 0x0000000000000008 (bit 3): a newer pmemzerod",
	     "\"status\": \"unsupported (read-only)\""},
	};
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *held = NULL;
	char a[PATH_MAX];
	void *orig, *before;
	size_t len, n;
	uint64_t lease;
	int sock;

	two_regions(e);
	region_img(e, "a", a, sizeof(a));
	itest_daemon_start(e);
	keep_tag(e, "a", 41, true);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "a", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, MIB, 0, &held), 0);
	itest_daemon_kill(e);
	pmemz_alloc_close(held);
	pmemz_region_close(r);
	pmemz_client_free(c);
	orig = itest_read_file(a, &len);

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		edit_headers(a, &cases[k].f, false);
		before = itest_read_file(a, &n);
		itest_daemon_start(e);
		assert_true(region_failed(e, "a", cases[k].reason));
		region_serves(e, "b", "beside");
		sock = itest_raw_connect(e->sock);
		assert_int_equal(itest_raw_alloc(sock, "a", MIB, true, &lease), -EIO);
		close(sock);
		itest_daemon_stop(e);
		assert_file_is(a, before, n);
		assert_int_equal(ctl_check(a, false, "newer pmemzerod"), 3);
		assert_int_equal(ctl_check(a, true, cases[k].status), 3);
		assert_file_is(a, before, n);
		free(before);
		itest_write_file(a, orig, len);
	}
	/* With the bits gone (a pmemzerod that knows them), a serves its tag. */
	free(orig);
	itest_daemon_start(e);
	assert_false(region_failed(e, "a", NULL));
	keep_tag(e, "a", 41, false);
	itest_daemon_stop(e);
}

/*
 * Unknown compat bits: a serves, and the torn primary it repairs from the
 * backup keeps them.  Layout version 1 (inline, as every earlier build
 * wrote it) opens and stays version 1.
 */
static void test_compat_and_version_1(void **state)
{
	struct itest_env *e = *state;
	struct layout_features co = {.compat = UINT64_C(1) << 62};
	struct layout_header hp, hb;
	char a[PATH_MAX];
	uint64_t w = 0x5a5a5a5a;
	int fd;

	two_regions(e);
	region_img(e, "a", a, sizeof(a));
	itest_daemon_start(e);
	keep_tag(e, "a", 42, true);
	itest_daemon_stop(e);

	edit_headers(a, &co, false);
	fd = open(a, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &w, sizeof(w), 200), (ssize_t)sizeof(w));
	for (int round = 0; round < 2; round++) {
		itest_daemon_start(e);
		assert_false(region_failed(e, "a", NULL));
		keep_tag(e, "a", 42, false);
		region_serves(e, "a", round ? "v1" : "compat");
		itest_daemon_stop(e);
		assert_int_equal(pread(fd, &hp, sizeof(hp), 0), (ssize_t)sizeof(hp));
		assert_int_equal(pread(fd, &hb, sizeof(hb), LAYOUT_BACKUP_OFF),
				 (ssize_t)sizeof(hb));
		assert_memory_equal(&hp, &hb, sizeof(hp));
		if (round == 0) {
			assert_true(hp.compat == co.compat);
			assert_int_equal(ctl_check(a, false, "unknown compat"), 0);
			edit_headers(a, NULL, true);
		} else {
			assert_int_equal(hp.version, 1);
			assert_int_equal(ctl_check(a, false, "layout version"), 0);
		}
	}
	close(fd);
}

/*
 * A tenant of the inline region a writes its header's masks through its
 * mapping: resealed (unknown incompat; ro_compat in the primary alone; the
 * split bit), or flipped without resealing in both copies.  The daemon
 * running meanwhile does not notice; the restart refuses a without
 * writing to it, never crashes, and b serves throughout.
 */
static void test_tenant_flips_masks(void **state)
{
	static const struct {
		size_t off; /* of the mask byte, in each copy listed */
		uint8_t xor ;
		bool reseal, backup;
	} rounds[] = {
	    {offsetof(struct layout_header, incompat) + 3, 0x10, true, true},
	    {offsetof(struct layout_header, ro_compat), 0x01, true, false},
	    {offsetof(struct layout_header, incompat), LAYOUT_INCOMPAT_SPLIT, true, true},
	    {offsetof(struct layout_header, compat) + 7, 0x80, false, true},
	};
	struct itest_env *e = *state;
	char a[PATH_MAX];
	void *orig, *before;
	size_t len, n;

	two_regions(e);
	region_img(e, "a", a, sizeof(a));
	itest_daemon_start(e);
	keep_tag(e, "a", 43, true);
	itest_daemon_stop(e);
	orig = itest_read_file(a, &len);
	for (size_t k = 0; k < sizeof(rounds) / sizeof(rounds[0]); k++) {
		struct pmemz_client *c = NULL;
		struct pmemz_region *r = NULL;
		uint8_t *base;

		itest_daemon_start(e);
		assert_int_equal(pmemz_client_new(e->sock, &c), 0);
		assert_int_equal(pmemz_region_open(c, "a", &r), 0);
		base = pmemz_region_address(r);
		for (size_t off = 0; off <= (rounds[k].backup ? LAYOUT_BACKUP_OFF : 0);
		     off += LAYOUT_BACKUP_OFF) {
			base[off + rounds[k].off] ^= rounds[k].xor ;
			if (rounds[k].reseal)
				layout_header_seal((struct layout_header *)(void *)(base + off));
		}
		(void)msync(base, 2 * LAYOUT_BLOCK, MS_SYNC);
		pmemz_region_close(r);
		pmemz_client_free(c);
		region_serves(e, "b", "meanwhile");
		itest_daemon_stop(e);

		before = itest_read_file(a, &n);
		itest_daemon_start(e);
		assert_true(region_failed(e, "a", NULL));
		region_serves(e, "b", "beside");
		assert_int_equal(kill(e->pid, 0), 0);
		itest_daemon_stop(e);
		assert_file_is(a, before, n);
		free(before);
		itest_write_file(a, orig, len);
	}
	free(orig);
	itest_daemon_start(e);
	keep_tag(e, "a", 43, false);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_truncate_through_handed_fd, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_ofd_lock_does_not_block_restart, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_damaged_header_degraded_start, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_tenant_written_metadata, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_metadata_out_of_reach, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_newer_features_refused, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_compat_and_version_1, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_tenant_flips_masks, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
