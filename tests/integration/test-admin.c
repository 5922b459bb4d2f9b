/* SPDX-License-Identifier: MIT */
/*
 * Integration test: the admin RPCs and their pmemzctl commands against the
 * real daemon.
 *
 *   MAP      per-extent states; counts match leases and commits; the
 *            picture of `pmemzctl map` has one 'C' per committed extent and
 *            a legend; `--json map` gives counts and per-state runs; more
 *            than 64 Ki extents come as runs; a map with more runs than a
 *            frame holds is refused with -EMSGSIZE; -ENOENT for an unknown
 *            region, -EACCES for a peer the region does not allow.
 *   ZEROER   admin only (uid 65534 gets -EPERM for pause and rate); pause
 *            stops zeroing (released extents stay DIRTY, a NOWAIT allocation
 *            gets -EAGAIN), resume zeroes them; set-rate shows in STAT and
 *            throttles at once; bad rates exit 2; unknown regions -ENOENT.
 *
 * Needs root (setuid to 65534 for the non-admin peer); skipped with 77 otherwise.
 */
#include <errno.h>
#include <grp.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB
#define REGION "adm"
#define OTHER_UID 65534
#define OTHER_GID 65534
#define STATE_IDX(v) ((v) < S_N ? (v) : S_N)

/* MAP state values (proto/pmemz.proto). */
enum { S_DIRTY, S_ZEROED, S_LEASED, S_COMMITTED, S_BAD, S_ZEROING, S_N };

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/adm.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "allow_users = root, %d\n"
			 "\n"
			 "[region private]\n"
			 "path = %s/private.img\n"
			 "size = 16M\n"
			 "extent_size = 1M\n"
			 "allow_users = root\n",
			 e->dir, OTHER_UID, e->dir);
}

/* ---- raw RPCs ------------------------------------------------------- */

struct map_counts {
	uint64_t n;
	uint64_t count[S_N + 1]; /* [S_N]: values MAP does not define */
	bool runs;		 /* the reply used runs */
};

/* MAP over a fresh connection: status; counts filled on success. */
static int raw_map(const char *sock, const char *region, struct map_counts *mc, char *msg,
		   size_t msg_len)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__MapReq m = PMEMZ__MAP_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int fd = itest_raw_connect(sock);
	int r;

	if (fd < 0)
		fail_msg("MAP: connect %s: %s", sock, strerror(-fd));
	m.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_MAP;
	req.map = &m;
	r = itest_raw_call(fd, &req, &resp);
	close(fd);
	if (msg)
		snprintf(msg, msg_len, "%s", resp && resp->message ? resp->message : "");
	if (r == 0) {
		const Pmemz__MapResp *mp = resp->map;
		uint64_t total = 0;

		assert_int_equal(resp->op_case, PMEMZ__RESPONSE__OP_MAP);
		assert_non_null(mp);
		memset(mc, 0, sizeof(*mc));
		mc->n = mp->extent_count;
		mc->runs = mp->n_runs > 0;
		if (!mc->runs) {
			assert_int_equal(mp->states.len, mp->extent_count);
			for (size_t i = 0; i < mp->states.len; i++)
				mc->count[STATE_IDX(mp->states.data[i])]++;
		} else {
			assert_int_equal(mp->states.len, 0);
			for (size_t i = 0; i < mp->n_runs; i++) {
				assert_true(mp->runs[i]->count > 0);
				if (i)
					assert_int_not_equal(mp->runs[i]->state,
							     mp->runs[i - 1]->state);
				mc->count[STATE_IDX(mp->runs[i]->state)] += mp->runs[i]->count;
				total += mp->runs[i]->count;
			}
			assert_int_equal(total, mp->extent_count);
		}
		assert_int_equal(mc->count[S_N], 0);
	}
	itest_resp_free(resp);
	return r;
}

static int raw_zeroer_on(int fd, const char *region, int pause, const uint64_t *rate)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq z = PMEMZ__ZEROER_REQ__INIT;

	z.region = UNCONST(region ? region : "");
	if (pause >= 0) {
		z.has_pause = true;
		z.pause = pause > 0;
	}
	if (rate) {
		z.has_rate = true;
		z.rate = *rate;
	}
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &z;
	return itest_raw_call(fd, &req, NULL);
}

/* ZEROER over a fresh connection (region NULL: all); status. */
static int raw_zeroer(const char *sock, const char *region, int pause, const uint64_t *rate)
{
	int fd = itest_raw_connect(sock);
	int r;

	if (fd < 0)
		fail_msg("ZEROER: connect %s: %s", sock, strerror(-fd));
	r = raw_zeroer_on(fd, region, pause, rate);
	close(fd);
	return r;
}

/* STAT's paused flag of a region. */
static bool stat_paused(const char *sock, const char *region)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq s = PMEMZ__STAT_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int fd = itest_raw_connect(sock);
	bool paused;

	assert_true(fd >= 0);
	s.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &s;
	assert_int_equal(itest_raw_call(fd, &req, &resp), 0);
	close(fd);
	assert_int_equal(resp->stat->n_regions, 1);
	assert_true(resp->stat->regions[0]->has_paused);
	paused = resp->stat->regions[0]->paused;
	itest_resp_free(resp);
	return paused;
}

/* ---- pmemzctl ------------------------------------------------------- */

/* Run pmemzctl -s SOCK args... (NULL-terminated); the wait status. */
static int ctl(const struct itest_env *e, char **out, char **err, ...)
{
	char *argv[16] = {UNCONST(itest_ctl_path()), UNCONST("-s"), UNCONST(e->sock)};
	int n = 3;
	va_list ap;
	const char *a;

	va_start(ap, err);
	while ((a = va_arg(ap, const char *)) && n < 15)
		argv[n++] = UNCONST(a);
	va_end(ap);
	argv[n] = NULL;
	return itest_run(argv, 20000, out, err);
}

static void expect_exit(int status, int code, const char *what, const char *out, const char *err)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) != code)
		fail_msg("pmemzctl %s: status 0x%x, want exit %d\nstdout:\n%s\nstderr:\n%s", what,
			 status, code, out ? out : "", err ? err : "");
}

/* Count state characters in the picture lines ("<index> <chars>") of `pmemzctl map`. */
static void picture_counts(const char *text, uint64_t count[128], uint64_t *cells)
{
	const char *line = text;

	memset(count, 0, 128 * sizeof(count[0]));
	*cells = 0;
	while (line && *line) {
		const char *end = strchr(line, '\n');
		const char *stop = end ? end : line + strlen(line);
		const char *p = line, *chars;
		bool picture = true;

		while (p < stop && *p == ' ')
			p++;
		if (p == stop || *p < '0' || *p > '9')
			picture = false;
		while (p < stop && *p >= '0' && *p <= '9')
			p++;
		if (p + 1 >= stop || *p != ' ')
			picture = false;
		chars = p + 1;
		for (p = chars; picture && p < stop; p++)
			picture = strchr(".zdLCX?", *p) != NULL;
		for (p = chars; picture && p < stop; p++) {
			count[(unsigned char)*p]++;
			(*cells)++;
		}
		line = end ? end + 1 : NULL;
	}
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

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		fail_msg("JSON lacks integer '%s': %s", key, json_object_to_json_string(o));
	return json_object_get_uint64(v);
}

/* Sum of the counts of the runs of one state in `--json map` output. */
static uint64_t json_runs_sum(struct json_object *top, const char *state)
{
	struct json_object *runs, *arr;
	uint64_t sum = 0;

	if (!json_object_object_get_ex(top, "runs", &runs) ||
	    !json_object_object_get_ex(runs, state, &arr) ||
	    !json_object_is_type(arr, json_type_array))
		fail_msg("JSON lacks runs.%s: %s", state, json_object_to_json_string(top));
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		sum += jget_u64(json_object_array_get_idx(arr, i), "count");
	return sum;
}

/* ---- tests ---------------------------------------------------------- */

static void start(struct itest_env *e, struct itest_stat *st)
{
	write_conf(e);
	assert_int_equal(chmod(e->dir, 0711), 0);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 30000, st);
}

/* MAP counts and the pmemzctl picture after leasing and committing. */
static void test_map(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	struct map_counts mc;
	uint64_t pic[128], cells, lease;
	char *out = NULL, *err = NULL;
	struct json_object *j;
	uint64_t n;
	int raw, s;

	start(e, &st);
	n = st.extent_count;
	assert_true(n >= 16);

	assert_int_equal(raw_map(e->sock, REGION, &mc, NULL, 0), 0);
	assert_int_equal(mc.n, n);
	assert_false(mc.runs);
	assert_int_equal(mc.count[S_ZEROED], n);

	/* 5 leased extents and 3 committed ones */
	raw = itest_raw_connect(e->sock);
	assert_true(raw >= 0);
	assert_int_equal(itest_raw_alloc(raw, REGION, 5 * MIB, true, NULL), 0);
	assert_int_equal(itest_raw_alloc(raw, REGION, 3 * MIB, true, &lease), 0);
	assert_int_equal(itest_raw_commit(raw, REGION, lease, "admin-map", true), 0);

	assert_int_equal(raw_map(e->sock, REGION, &mc, NULL, 0), 0);
	print_message("map: %lu zeroed, %lu leased, %lu committed, %lu dirty, %lu zeroing\n",
		      (unsigned long)mc.count[S_ZEROED], (unsigned long)mc.count[S_LEASED],
		      (unsigned long)mc.count[S_COMMITTED], (unsigned long)mc.count[S_DIRTY],
		      (unsigned long)mc.count[S_ZEROING]);
	assert_int_equal(mc.count[S_LEASED], 5);
	assert_int_equal(mc.count[S_COMMITTED], 3);
	assert_int_equal(mc.count[S_ZEROED], n - 8);
	assert_int_equal(mc.count[S_BAD], 0);

	/* the picture: one character per extent, 3 'C', 5 'L', a legend, the counts */
	s = ctl(e, &out, &err, "map", REGION, NULL);
	expect_exit(s, 0, "map", out, err);
	print_message("pmemzctl map %s:\n%s", REGION, out);
	picture_counts(out, pic, &cells);
	assert_int_equal(cells, n);
	assert_int_equal(pic['C'], 3);
	assert_int_equal(pic['L'], 5);
	assert_int_equal(pic['.'], n - 8);
	assert_non_null(strstr(out, ". zeroed"));
	assert_non_null(strstr(out, "C committed"));
	assert_non_null(strstr(out, "L leased"));
	assert_non_null(strstr(out, "X bad"));
	assert_non_null(strstr(out, "d dirty"));
	assert_non_null(strstr(out, "z zeroing"));
	assert_non_null(strstr(out, "committed: 3"));
	assert_non_null(strstr(out, "1 extent per character"));
	free(out);
	free(err);

	/* a narrow picture wraps: still one character per extent */
	s = ctl(e, &out, &err, "map", REGION, "--width", "8", NULL);
	expect_exit(s, 0, "map --width 8", out, err);
	picture_counts(out, pic, &cells);
	assert_int_equal(cells, n);
	assert_int_equal(pic['C'], 3);
	free(out);
	free(err);

	/* JSON: counts and runs */
	s = ctl(e, &out, &err, "--json", "map", REGION, NULL);
	expect_exit(s, 0, "--json map", out, err);
	j = parse_json(out, "--json map");
	assert_int_equal(jget_u64(j, "extents"), n);
	assert_int_equal(jget_u64(j, "extent_size"), MIB);
	assert_int_equal(jget_u64(j, "committed"), 3);
	assert_int_equal(jget_u64(j, "leased"), 5);
	assert_int_equal(json_runs_sum(j, "committed"), 3);
	assert_int_equal(json_runs_sum(j, "leased"), 5);
	assert_int_equal(json_runs_sum(j, "zeroed"), n - 8);
	json_object_put(j);
	free(out);
	free(err);

	/* regions --map: the table, then each region's picture */
	s = ctl(e, &out, &err, "regions", "--map", NULL);
	expect_exit(s, 0, "regions --map", out, err);
	assert_non_null(strstr(out, "region:      " REGION));
	assert_non_null(strstr(out, "region:      private"));
	assert_non_null(strstr(out, "C committed"));
	free(out);
	free(err);
	s = ctl(e, &out, &err, "--json", "regions", "--map", NULL);
	expect_exit(s, 0, "--json regions --map", out, err);
	{
		struct json_object *maps, *one;

		j = parse_json(out, "--json regions --map");
		assert_true(json_object_object_get_ex(j, "maps", &maps));
		assert_true(json_object_object_get_ex(maps, REGION, &one));
		assert_int_equal(jget_u64(one, "committed"), 3);
		json_object_put(j);
	}
	free(out);
	free(err);

	/* the lease goes with its connection: DIRTY, then zeroed again */
	close(raw);
	itest_wait_zeroed(e->sock, REGION, 30000, &st);
	assert_int_equal(raw_map(e->sock, REGION, &mc, NULL, 0), 0);
	assert_int_equal(mc.count[S_ZEROED], n - 3);
	assert_int_equal(mc.count[S_COMMITTED], 3);
	itest_daemon_stop(e);
}

/* Pause keeps released extents DIRTY; resume zeroes them. */
static void test_pause_resume(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	struct map_counts mc;
	char *out = NULL, *err = NULL;
	struct json_object *j, *regions;
	uint64_t n, lease;
	int raw, s;

	start(e, &st);
	n = st.extent_count;

	s = ctl(e, &out, &err, "pause", REGION, NULL);
	expect_exit(s, 0, "pause", out, err);
	assert_non_null(strstr(out, "paused"));
	free(out);
	free(err);
	assert_true(stat_paused(e->sock, REGION));
	assert_false(stat_paused(e->sock, "private"));

	/* take the whole region and give it back: every extent DIRTY */
	raw = itest_raw_connect(e->sock);
	assert_true(raw >= 0);
	assert_int_equal(itest_raw_alloc(raw, REGION, n * MIB, true, &lease), 0);
	assert_int_equal(itest_raw_free_lease(raw, REGION, lease), 0);
	itest_msleep(400);

	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "paused");
	assert_int_equal(st.dirty, n);
	assert_int_equal(st.zeroed, 0);
	assert_int_equal(st.zeroing, 0);
	assert_int_equal(itest_raw_alloc(raw, REGION, n * MIB, true, NULL), -EAGAIN);
	assert_int_equal(itest_raw_alloc(raw, REGION, MIB, true, NULL), -EAGAIN);
	assert_int_equal(raw_map(e->sock, REGION, &mc, NULL, 0), 0);
	assert_int_equal(mc.count[S_DIRTY], n);

	/* still nothing after a while */
	itest_msleep(300);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.dirty, n);

	/* status --json shows it */
	s = ctl(e, &out, &err, "--json", "status", NULL);
	expect_exit(s, 0, "--json status", out, err);
	j = parse_json(out, "--json status");
	assert_true(json_object_object_get_ex(j, "regions", &regions));
	for (size_t i = 0; i < json_object_array_length(regions); i++) {
		struct json_object *r = json_object_array_get_idx(regions, i), *name, *p;

		assert_true(json_object_object_get_ex(r, "name", &name));
		assert_true(json_object_object_get_ex(r, "zeroer_paused", &p));
		assert_int_equal(json_object_get_boolean(p),
				 strcmp(json_object_get_string(name), REGION) == 0);
	}
	json_object_put(j);
	free(out);
	free(err);

	/* resume: zeroed again, and the whole region can be had at once */
	s = ctl(e, &out, &err, "resume", REGION, NULL);
	expect_exit(s, 0, "resume", out, err);
	free(out);
	free(err);
	assert_false(stat_paused(e->sock, REGION));
	itest_wait_zeroed(e->sock, REGION, 30000, &st);
	assert_int_equal(st.zeroed, n);
	assert_int_equal(itest_raw_alloc(raw, REGION, n * MIB, true, &lease), 0);
	assert_int_equal(itest_raw_free_lease(raw, REGION, lease), 0);

	/* --all: every region */
	s = ctl(e, &out, &err, "pause", "--all", NULL);
	expect_exit(s, 0, "pause --all", out, err);
	free(out);
	free(err);
	assert_true(stat_paused(e->sock, REGION));
	assert_true(stat_paused(e->sock, "private"));
	assert_int_equal(raw_zeroer(e->sock, NULL, 0, NULL), 0);
	assert_false(stat_paused(e->sock, REGION));
	assert_false(stat_paused(e->sock, "private"));
	itest_wait_zeroed(e->sock, REGION, 30000, &st);
	close(raw);
	itest_daemon_stop(e);
}

/* set-rate shows in STAT and throttles at once. */
static void test_set_rate(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	char *out = NULL, *err = NULL;
	uint64_t n, lease, rate = 5 * MIB;
	int raw, s;

	start(e, &st);
	n = st.extent_count;
	assert_int_equal(st.zero_rate_limit, 0);

	assert_int_equal(raw_zeroer(e->sock, REGION, -1, &rate), 0);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.zero_rate_limit, 5 * MIB);
	assert_false(stat_paused(e->sock, REGION));

	s = ctl(e, &out, &err, "set-rate", REGION, "2G", NULL);
	expect_exit(s, 0, "set-rate 2G", out, err);
	free(out);
	free(err);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.zero_rate_limit, 2048 * MIB);

	s = ctl(e, &out, &err, "set-rate", REGION, "300K/s", NULL);
	expect_exit(s, 0, "set-rate 300K/s", out, err);
	free(out);
	free(err);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.zero_rate_limit, 300 * 1024);

	/* 1 MiB/s: 8 released extents take ~8 s; after 1 s most are still dirty */
	s = ctl(e, &out, &err, "set-rate", REGION, "1M", NULL);
	expect_exit(s, 0, "set-rate 1M", out, err);
	free(out);
	free(err);
	raw = itest_raw_connect(e->sock);
	assert_true(raw >= 0);
	assert_int_equal(itest_raw_alloc(raw, REGION, 8 * MIB, true, &lease), 0);
	assert_int_equal(itest_raw_free_lease(raw, REGION, lease), 0);
	itest_msleep(1000);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "throttled");
	print_message("at 1 MiB/s, 1 s after releasing 8 extents: %lu dirty\n",
		      (unsigned long)st.dirty);
	assert_true(st.dirty >= 4);

	/* unlimited: done at once */
	s = ctl(e, &out, &err, "set-rate", REGION, "unlimited", NULL);
	expect_exit(s, 0, "set-rate unlimited", out, err);
	free(out);
	free(err);
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.zero_rate_limit, 0);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(st.zeroed, n);

	/* --all, and 0 means unlimited too */
	s = ctl(e, &out, &err, "set-rate", "--all", "64M", NULL);
	expect_exit(s, 0, "set-rate --all 64M", out, err);
	free(out);
	free(err);
	itest_stat(e->sock, "private", &st);
	assert_int_equal(st.zero_rate_limit, 64 * MIB);
	s = ctl(e, &out, &err, "set-rate", "private", "0", NULL);
	expect_exit(s, 0, "set-rate 0", out, err);
	free(out);
	free(err);
	itest_stat(e->sock, "private", &st);
	assert_int_equal(st.zero_rate_limit, 0);
	close(raw);
	itest_daemon_stop(e);
}

static void drop_privileges(void)
{
	CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	CHILD_CHECK(setgid(OTHER_GID) == 0, "setgid: %s", strerror(errno));
	CHILD_CHECK(setuid(OTHER_UID) == 0, "setuid: %s", strerror(errno));
	CHILD_CHECK(getuid() == OTHER_UID && geteuid() == OTHER_UID, "uid");
}


static int child_zeroer(int fd, const char *region, int pause, const uint64_t *rate)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq z = PMEMZ__ZEROER_REQ__INIT;

	z.region = UNCONST(region);
	if (pause >= 0) {
		z.has_pause = true;
		z.pause = pause > 0;
	}
	if (rate) {
		z.has_rate = true;
		z.rate = *rate;
	}
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &z;
	return itest_child_call(fd, &req);
}

static int child_map(int fd, const char *region)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__MapReq m = PMEMZ__MAP_REQ__INIT;

	m.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_MAP;
	req.map = &m;
	return itest_child_call(fd, &req);
}

static void child_non_admin(const char *sock)
{
	uint64_t rate = MIB;
	int fd, r;

	drop_privileges();
	fd = itest_raw_connect(sock);
	CHILD_CHECK(fd >= 0, "connect as uid %d: %s", OTHER_UID, strerror(-fd));
	r = child_zeroer(fd, REGION, 1, NULL);
	CHILD_CHECK(r == -EPERM, "pause by uid %d: %d, want -EPERM", OTHER_UID, r);
	r = child_zeroer(fd, "", 1, NULL);
	CHILD_CHECK(r == -EPERM, "pause all by uid %d: %d, want -EPERM", OTHER_UID, r);
	r = child_zeroer(fd, REGION, 0, NULL);
	CHILD_CHECK(r == -EPERM, "resume by uid %d: %d, want -EPERM", OTHER_UID, r);
	r = child_zeroer(fd, REGION, -1, &rate);
	CHILD_CHECK(r == -EPERM, "set-rate by uid %d: %d, want -EPERM", OTHER_UID, r);
	/* MAP: the regions it may open, not the others */
	r = child_map(fd, REGION);
	CHILD_CHECK(r == 0, "MAP of an allowed region by uid %d: %d", OTHER_UID, r);
	r = child_map(fd, "private");
	CHILD_CHECK(r == -EACCES, "MAP of a private region by uid %d: %d, want -EACCES", OTHER_UID,
		    r);
	close(fd);

	/* pmemzctl as uid 65534: a one-line refusal, exit 1 */
	{
		char *argv[] = {
		    UNCONST(itest_ctl_path()), UNCONST("-s"), UNCONST(sock), UNCONST("set-rate"),
		    UNCONST(REGION),	       UNCONST("1M"), NULL};
		pid_t pid;
		int status;

		fflush(NULL);
		pid = fork();
		CHILD_CHECK(pid >= 0, "fork");
		if (pid == 0) {
			execv(argv[0], argv);
			_exit(127);
		}
		CHILD_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1,
			    "pmemzctl set-rate as uid %d: status 0x%x, want exit 1", OTHER_UID,
			    status);
	}
	_exit(0);
}

/* Admin operations need root or the admin group (I4). */
static void test_non_admin(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	pid_t pid;

	start(e, &st);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_non_admin(e->sock);
	itest_wait_child_ok(pid, 30000, "uid 65534 admin requests");
	/* nothing changed */
	assert_false(stat_paused(e->sock, REGION));
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.zero_rate_limit, 0);
	itest_daemon_stop(e);
}

/*
 * A member of admin_group by a supplementary group only: an admin once
 * connected (HELLO says so) and so, by the same rule, exempt from
 * max_connections_per_uid at accept.  The listener used to judge the
 * primary group only and refused its second connection.
 */
static void child_supplementary_admin(const char *sock, gid_t admin_gid)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ClientsReq cl = PMEMZ__CLIENTS_REQ__INIT;
	int fd[3], r;

	CHILD_CHECK(setgroups(1, &admin_gid) == 0, "setgroups: %s", strerror(errno));
	CHILD_CHECK(setgid(OTHER_GID) == 0, "setgid: %s", strerror(errno));
	CHILD_CHECK(setuid(OTHER_UID) == 0, "setuid: %s", strerror(errno));
	req.op_case = PMEMZ__REQUEST__OP_CLIENTS;
	req.clients = &cl;
	for (int i = 0; i < 3; i++) {
		fd[i] = itest_raw_connect(sock);
		CHILD_CHECK(fd[i] >= 0, "connect %d: %s", i, strerror(-fd[i]));
		/* CLIENTS is admin only; a refused connection fails the call. */
		r = itest_child_call(fd[i], &req);
		CHILD_CHECK(r == 0, "CLIENTS on connection %d of a supplementary admin: %d", i, r);
	}
	for (int i = 0; i < 3; i++)
		close(fd[i]);
	_exit(0);
}

static void test_supplementary_admin(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	struct group *g = getgrnam("staff");
	pid_t pid;

	if (getuid() != 0) {
		print_message("SKIP: needs root to run a client as uid %d\n", OTHER_UID);
		skip();
	}
	if (!g || g->gr_gid == OTHER_GID) {
		print_message("SKIP: needs a group 'staff' (Debian's gid 50)\n");
		skip();
	}
	itest_write_conf(e,
			 "[daemon]\n"
			 "admin_group = staff\n"
			 "max_connections_per_uid = 1\n"
			 "[region " REGION "]\n"
			 "path = %s/adm.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "allow_users = root, %d\n",
			 e->dir, OTHER_UID);
	assert_int_equal(chmod(e->dir, 0711), 0);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 30000, &st);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_supplementary_admin(e->sock, g->gr_gid);
	itest_wait_child_ok(pid, 30000, "a supplementary admin's connections");
	itest_daemon_stop(e);
}

/* Unknown regions, bad requests, bad command lines. */
static void test_bad_inputs(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	struct map_counts mc;
	char *out = NULL, *err = NULL, msg[256];
	uint64_t rate = MIB;
	int raw, s;

	start(e, &st);
	assert_int_equal(raw_map(e->sock, "nosuch", &mc, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "nosuch"));
	assert_int_equal(raw_map(e->sock, "", &mc, NULL, 0), -EINVAL);
	assert_int_equal(raw_zeroer(e->sock, "nosuch", 1, NULL), -ENOENT);
	assert_int_equal(raw_zeroer(e->sock, "nosuch", -1, &rate), -ENOENT);
	assert_int_equal(raw_zeroer(e->sock, REGION, -1, NULL), -EINVAL);
	assert_false(stat_paused(e->sock, REGION));
	/* the connection survives a refused request */
	raw = itest_raw_connect(e->sock);
	assert_true(raw >= 0);
	assert_int_equal(raw_zeroer_on(raw, "nosuch", 1, NULL), -ENOENT);
	assert_int_equal(raw_zeroer_on(raw, REGION, 1, NULL), 0);
	assert_int_equal(raw_zeroer_on(raw, REGION, 0, NULL), 0);
	close(raw);

	s = ctl(e, &out, &err, "map", "nosuch", NULL);
	expect_exit(s, 1, "map nosuch", out, err);
	assert_non_null(strstr(err, "no region 'nosuch'"));
	free(out);
	free(err);
	s = ctl(e, &out, &err, "pause", "nosuch", NULL);
	expect_exit(s, 1, "pause nosuch", out, err);
	assert_non_null(strstr(err, "no region"));
	free(out);
	free(err);

	/* usage errors: exit 2 with a message, nothing sent */
	{
		static const char *const bad_rates[] = {"fast", "12Q",	"1M/min",
							"",	"1.5G", "1/s/s"};

		for (size_t i = 0; i < sizeof(bad_rates) / sizeof(bad_rates[0]); i++) {
			s = ctl(e, &out, &err, "set-rate", REGION, bad_rates[i], NULL);
			expect_exit(s, 2, "set-rate with a bad rate", out, err);
			assert_non_null(strstr(err, "invalid rate"));
			free(out);
			free(err);
		}
	}
	/* "-1" is an unknown option to getopt; after "--" it is a bad rate */
	s = ctl(e, &out, &err, "set-rate", REGION, "-1", NULL);
	expect_exit(s, 2, "set-rate -1", out, err);
	free(out);
	free(err);
	s = ctl(e, &out, &err, "set-rate", REGION, "--", "-1", NULL);
	expect_exit(s, 2, "set-rate -- -1", out, err);
	assert_non_null(strstr(err, "invalid rate"));
	free(out);
	free(err);
	s = ctl(e, &out, &err, "set-rate", REGION, "99999999999T", NULL);
	expect_exit(s, 2, "set-rate with a huge rate", out, err);
	assert_non_null(strstr(err, "pmemzctl: "));
	free(out);
	free(err);
	s = ctl(e, &out, &err, "set-rate", REGION, NULL);
	expect_exit(s, 2, "set-rate without a rate", out, err);
	free(out);
	free(err);
	s = ctl(e, &out, &err, "pause", NULL);
	expect_exit(s, 2, "pause without a region", out, err);
	assert_non_null(strstr(err, "--all"));
	free(out);
	free(err);
	s = ctl(e, &out, &err, "resume", REGION, "--all", NULL);
	expect_exit(s, 2, "resume REGION --all", out, err);
	free(out);
	free(err);
	s = ctl(e, &out, &err, "map", NULL);
	expect_exit(s, 2, "map without a region", out, err);
	free(out);
	free(err);
	s = ctl(e, &out, &err, "map", REGION, "--width", "0", NULL);
	expect_exit(s, 2, "map --width 0", out, err);
	assert_non_null(strstr(err, "invalid width"));
	free(out);
	free(err);
	s = ctl(e, &out, &err, "map", REGION, "--width", "abc", NULL);
	expect_exit(s, 2, "map --width abc", out, err);
	free(out);
	free(err);
	assert_false(stat_paused(e->sock, REGION));
	itest_stat(e->sock, REGION, &st);
	assert_int_equal(st.zero_rate_limit, 0);
	itest_daemon_stop(e);
}

/*
 * More extents than a frame holds as bytes: runs.  Then more runs than a
 * frame holds: -EMSGSIZE with a message, and pmemzctl says so.
 */
#define BIG_EXTENT 4096ull
#define BIG_EXTENTS 72000ull
#define BIG_LEASES 11500u
static void test_map_big(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	struct map_counts mc;
	char *out = NULL, *err = NULL, msg[256];
	uint64_t *leases, pic[128], cells;
	int raw, s;

	itest_write_conf(e,
			 "[region big]\n"
			 "path = %s/big.img\n"
			 "size = %llu\n"
			 "extent_size = 4K\n",
			 e->dir, (BIG_EXTENTS + 256) * BIG_EXTENT);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "big", 120000, &st);
	assert_true(st.extent_count > 65536);

	assert_int_equal(raw_map(e->sock, "big", &mc, NULL, 0), 0);
	assert_true(mc.runs);
	assert_int_equal(mc.n, st.extent_count);
	assert_int_equal(mc.count[S_ZEROED], st.extent_count);

	/* grouped picture: 32 lines of 64 at most */
	s = ctl(e, &out, &err, "map", "big", NULL);
	expect_exit(s, 0, "map big", out, err);
	picture_counts(out, pic, &cells);
	assert_true(cells <= 64 * 32 && cells >= 64 * 31);
	assert_int_equal(pic['.'], cells);
	assert_non_null(strstr(out, "extents per character"));
	free(out);
	free(err);

	/* alternate leased and dirty extents: more runs than fit in a frame */
	assert_int_equal(raw_zeroer(e->sock, "big", 1, NULL), 0);
	raw = itest_raw_connect(e->sock);
	assert_true(raw >= 0);
	leases = calloc(BIG_LEASES, sizeof(*leases));
	assert_non_null(leases);
	for (unsigned i = 0; i < BIG_LEASES; i++)
		assert_int_equal(itest_raw_alloc(raw, "big", BIG_EXTENT, true, &leases[i]), 0);
	for (unsigned i = 0; i < BIG_LEASES; i += 2)
		assert_int_equal(itest_raw_free_lease(raw, "big", leases[i]), 0);
	free(leases);

	assert_int_equal(raw_map(e->sock, "big", &mc, msg, sizeof(msg)), -EMSGSIZE);
	print_message("MAP of a fragmented region: %s\n", msg);
	assert_non_null(strstr(msg, "runs"));
	s = ctl(e, &out, &err, "map", "big", NULL);
	expect_exit(s, 1, "map of a fragmented region", out, err);
	assert_non_null(strstr(err, "too many state runs"));
	free(out);
	free(err);

	/* the daemon is fine: the leases go with the connection, resume zeroes them */
	close(raw);
	assert_int_equal(raw_zeroer(e->sock, "big", 0, NULL), 0);
	itest_wait_zeroed(e->sock, "big", 120000, &st);
	assert_int_equal(raw_map(e->sock, "big", &mc, NULL, 0), 0);
	assert_int_equal(mc.count[S_ZEROED], st.extent_count);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_map, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_pause_resume, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_set_rate, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_non_admin, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_supplementary_admin, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_bad_inputs, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_map_big, itest_setup, itest_teardown),
	};

	if (geteuid() != 0)
		return itest_skip("the admin tests need root (admin, and setuid to uid 65534 "
				  "for the non-admin peer)");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
