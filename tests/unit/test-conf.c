/* SPDX-License-Identifier: MIT */
/*
 * Configuration tests.
 *
 *   test-conf                        cmocka unit tests (sizes, --region specs,
 *                                    conf_load, conf_access_region)
 *   test-conf --check FILE           FILE loads (the shipped example)
 *   test-conf --golden DIR NAME      one golden case from tests/golden/:
 *
 * A golden case NAME has NAME.expected and at least one of NAME.conf (passed
 * as "-c NAME.conf") and NAME.args (extra command-line arguments, one per
 * line; '#' lines are comments).  The driver changes into DIR, runs
 * conf_load() and compares conf_print() output (success) or the error lines
 * (failure) with NAME.expected, in which "@EUID@" stands for the effective
 * uid of the test.  good-* cases must load, bad-* cases must fail; the output
 * of a good case must load again and print the same (comments aside).
 *
 * The environment is pinned so that defaults do not depend on the machine:
 * RUNTIME_DIRECTORY=/run/pmemzerod-test, STATE_DIRECTORY=/var/lib/pmemzerod-test.
 * Nothing is created there: configuration parsing does not touch the file
 * system.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "util.h"

#define TEST_RUNTIME_DIR "/run/pmemzerod-test"
#define TEST_STATE_DIR "/var/lib/pmemzerod-test"

/* ---- helpers ---- */

struct capture {
	char *buf;
	size_t len;
	FILE *f;
};

static void capture_open(struct capture *cap)
{
	memset(cap, 0, sizeof(*cap));
	cap->f = open_memstream(&cap->buf, &cap->len);
	assert_non_null(cap->f);
}

static const char *capture_text(struct capture *cap)
{
	fflush(cap->f);
	return cap->buf;
}

static void capture_close(struct capture *cap)
{
	if (cap->f)
		fclose(cap->f);
	free(cap->buf);
	memset(cap, 0, sizeof(*cap));
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* conf_load on a NULL-terminated argument list; errors go to cap. */
static int load_args(struct daemon_conf *c, struct capture *cap, char *arg0, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)"pmemzerod";
	va_start(ap, arg0);
	for (char *a = arg0; a; a = va_arg(ap, char *)) {
		assert_true(argc < 31);
		argv[argc++] = a;
	}
	va_end(ap);
	argv[argc] = NULL;
	memset(c, 0, sizeof(*c));
	return conf_load(c, argc, argv, cap->f);
}

/* A private temporary config file (parallel-safe); returns its malloc'ed path. */
static char *write_temp_conf(const char *text)
{
	const char *tmp = getenv("TMPDIR");
	char *path;
	FILE *f;
	int fd;

	if (asprintf(&path, "%s/test-conf-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		return NULL;
	fd = mkstemp(path);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		free(path);
		return NULL;
	}
	fputs(text, f);
	if (fclose(f) != 0) {
		unlink(path);
		free(path);
		return NULL;
	}
	return path;
}

/* ---- pmemz_parse_size ---- */

static void test_parse_size_good(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} cases[] = {
	    {"0", 0},
	    {"4096", 4096},
	    {"64K", 64ull << 10},
	    {"64k", 64ull << 10},
	    {"2M", 2ull << 20},
	    {"1G", 1ull << 30},
	    {"3T", 3ull << 40},
	    {"2MiB", 2ull << 20},
	    {"2MB", 2ull << 20},
	    {"512B", 512},
	    {"  8M", 8ull << 20},
	    {"16777215T", 16777215ull << 40},
	    {"18446744073709551615", UINT64_MAX},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t v = 12345;

		assert_int_equal(pmemz_parse_size(cases[i].s, &v), 0);
		assert_true(v == cases[i].v);
	}
}

static void test_parse_size_bad(void **state)
{
	static const char *const cases[] = {
	    "",	   "abc", "-1",	  "+1",	 "1X",	  "1KK", "1.5G", "K",
	    "1 K", "1K ", "0x10", "1Ki", "1GiBs", "1e3", "M1",
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t v = 777;

		assert_int_equal(pmemz_parse_size(cases[i], &v), -EINVAL);
		assert_true(v == 777);
	}
	assert_int_equal(pmemz_parse_size(NULL, &(uint64_t){0}), -EINVAL);
}

static void test_parse_size_overflow(void **state)
{
	static const char *const cases[] = {
	    "18446744073709551616", "99999999999999999999999", "16777216T",
	    "17179869184G",	    "17592186044416M",	       "18014398509481984K",
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t v = 777;

		assert_int_equal(pmemz_parse_size(cases[i], &v), -ERANGE);
		assert_true(v == 777);
	}
}

/* ---- --region specs ---- */

static void test_region_spec_good(void **state)
{
	struct daemon_conf c = {0};
	struct capture cap;

	capture_open(&cap);
	assert_int_equal(conf_cmdline_region(&c, "a=/x/a.region,size=64M,extent=1M", cap.f), 0);
	assert_int_equal(conf_cmdline_region(&c, "b.2_c-d=/dev/dax0.0", cap.f), 0);
	assert_int_equal(conf_cmdline_region(&c, "e=/e,extent_size=8K", cap.f), 0);
	assert_string_equal(capture_text(&cap), "");
	assert_int_equal(c.n_regions, 3);
	assert_string_equal(c.regions[0].name, "a");
	assert_string_equal(c.regions[0].path, "/x/a.region");
	assert_true(c.regions[0].size == 64ull << 20);
	assert_true(c.regions[0].extent_size == 1ull << 20);
	assert_true(c.regions[0].from_cmdline);
	assert_string_equal(c.regions[0].source, "--region 'a=/x/a.region,size=64M,extent=1M'");
	assert_string_equal(c.regions[1].name, "b.2_c-d");
	assert_true(c.regions[1].size == 0);
	assert_true(c.regions[2].extent_size == 8192);

	assert_int_equal(conf_check(&c, cap.f), 0);
	assert_string_equal(capture_text(&cap), "");
	assert_true(c.regions[1].extent_size == CONF_DEFAULT_EXTENT_SIZE);
	assert_int_equal(c.regions[1].zeroer_threads, 1);
	assert_int_equal(c.regions[1].batch_extents, CONF_DEFAULT_BATCH_EXTENTS);
	assert_true(c.regions[1].zero_rate == 0);
	/* Open to the daemon's own uid (and root). */
	assert_int_equal(c.regions[0].n_allow_uids, 1);
	assert_int_equal(c.regions[0].allow_uids[0], geteuid());
	assert_int_equal(c.regions[0].n_allow_gids, 0);
	conf_free(&c);
	capture_close(&cap);
}

static void test_region_spec_relative(void **state)
{
	_cleanup_free_ char *cwd = get_current_dir_name();
	_cleanup_free_ char *want = NULL;
	struct daemon_conf c = {0};

	assert_non_null(cwd);
	assert_true(asprintf(&want, "%s/sub/r.region", strcmp(cwd, "/") ? cwd : "") > 0);
	assert_int_equal(conf_cmdline_region(&c, "r=sub/r.region", NULL), 0);
	assert_string_equal(c.regions[0].path, want);
	conf_free(&c);
}

static void test_region_spec_bad(void **state)
{
	static const struct {
		const char *spec;
		const char *error;
	} cases[] = {
	    {"noequals", "--region 'noequals': expected NAME=PATH[,size=SIZE][,extent=SIZE]\n"},
	    {"=/x", "--region '=/x': invalid region name '' (1-63 characters from A-Z a-z 0-9 "
		    "_ . -)\n"},
	    {"a b=/x", "--region 'a b=/x': invalid region name 'a b' (1-63 characters from "
		       "A-Z a-z 0-9 _ . -)\n"},
	    {"..=/x", "--region '..=/x': invalid region name '..' (1-63 characters from A-Z "
		      "a-z 0-9 _ . -)\n"},
	    {"a=", "--region 'a=': the path is empty\n"},
	    {"a=,size=1G", "--region 'a=,size=1G': the path is empty\n"},
	    {"a=/x,size=abc", "--region 'a=/x,size=abc': size: invalid size 'abc' (a number "
			      "with an optional K, M, G or T suffix)\n"},
	    {"a=/x,size=99999999999T", "--region 'a=/x,size=99999999999T': size: "
				       "'99999999999T' is too large\n"},
	    {"a=/x,size=1000", "--region 'a=/x,size=1000': size: 1000 is not a multiple of "
			       "4 KiB\n"},
	    {"a=/x,extent=3000", "--region 'a=/x,extent=3000': extent: 3000 is not a "
				 "non-zero multiple of 4 KiB\n"},
	    {"a=/x,extent=0", "--region 'a=/x,extent=0': extent: 0 is not a non-zero multiple "
			      "of 4 KiB\n"},
	    {"a=/x,extent=2G", "--region 'a=/x,extent=2G': extent: 2147483648 is larger than "
			       "1 GiB\n"},
	    {"a=/x,foo=1", "--region 'a=/x,foo=1': unknown option 'foo' (size= or extent=)\n"},
	    {"a=/x,size", "--region 'a=/x,size': expected KEY=VALUE instead of 'size' (size= or "
			  "extent=)\n"},
	    {"a=/x,", "--region 'a=/x,': expected KEY=VALUE instead of '' (size= or extent=)\n"},
	    {"a=/x,size=1G,size=2G", "--region 'a=/x,size=1G,size=2G': size is given twice\n"},
	    /* Every problem of a spec is reported. */
	    {"a/b=/x,size=1X,extent=1", "--region 'a/b=/x,size=1X,extent=1': invalid region "
					"name 'a/b' (1-63 characters from A-Z a-z 0-9 _ . -)\n"
					"--region 'a/b=/x,size=1X,extent=1': size: invalid "
					"size '1X' (a number with an optional K, M, G or T "
					"suffix)\n"
					"--region 'a/b=/x,size=1X,extent=1': extent: 1 is not "
					"a non-zero multiple of 4 KiB\n"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct daemon_conf c = {0};
		struct capture cap;

		capture_open(&cap);
		assert_int_equal(conf_cmdline_region(&c, cases[i].spec, cap.f), -EINVAL);
		assert_string_equal(capture_text(&cap), cases[i].error);
		assert_int_equal(c.n_regions, 0);
		conf_free(&c);
		capture_close(&cap);
	}
}

static void test_region_spec_name_length(void **state)
{
	char spec[128];
	struct daemon_conf c = {0};

	memset(spec, 'n', 63);
	strcpy(spec + 63, "=/x");
	assert_int_equal(conf_cmdline_region(&c, spec, NULL), 0);
	memset(spec, 'm', 64);
	strcpy(spec + 64, "=/y");
	assert_int_equal(conf_cmdline_region(&c, spec, NULL), -EINVAL);
	assert_int_equal(c.n_regions, 1);
	assert_int_equal(strlen(c.regions[0].name), 63);
	conf_free(&c);
}

static void test_region_spec_overrides_file(void **state)
{
	_cleanup_free_ char *path = write_temp_conf("[region a]\n"
						    "path = /file/a\n"
						    "size = 1G\n"
						    "extent_size = 4M\n"
						    "allow_users = root, 12345\n"
						    "allow_groups = 0\n"
						    "zeroer_threads = 3\n"
						    "[region b]\n"
						    "path = /file/b\n");
	struct daemon_conf c;
	struct capture cap;

	assert_non_null(path);
	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, "-c", path, "--region", "a=/cmd/a,size=64M",
				   "--region", "z=/cmd/z", NULL),
			 0);
	assert_string_equal(capture_text(&cap), "");
	assert_int_equal(c.n_regions, 3);
	assert_string_equal(c.regions[0].path, "/cmd/a");
	assert_true(c.regions[0].size == 64ull << 20);
	assert_true(c.regions[0].extent_size == 4ull << 20); /* kept from the file */
	assert_int_equal(c.regions[0].zeroer_threads, 3);
	assert_int_equal(c.regions[0].n_allow_uids, 2); /* the file's allow lists stay */
	assert_int_equal(c.regions[0].allow_uids[0], 0);
	assert_int_equal(c.regions[0].allow_uids[1], 12345);
	assert_int_equal(c.regions[0].n_allow_gids, 1);
	assert_true(c.regions[0].from_cmdline);
	assert_false(c.regions[1].from_cmdline);
	assert_string_equal(c.regions[2].name, "z");
	assert_int_equal(c.regions[2].n_allow_uids, 1);
	assert_int_equal(c.regions[2].allow_uids[0], geteuid());
	conf_free(&c);
	capture_close(&cap);
	unlink(path);
}

static void test_region_spec_twice(void **state)
{
	struct daemon_conf c;
	struct capture cap;

	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, "--region", "a=/x", "--region", "a=/y", NULL),
			 -EINVAL);
	assert_string_equal(capture_text(&cap),
			    "--region 'a=/y': region 'a' is given twice on the command line\n");
	conf_free(&c);
	capture_close(&cap);
}

/* ---- conf_access_region ---- */

static void test_region_allows(void **state)
{
	uid_t uids[] = {1000, 1001};
	gid_t gids[] = {50, 60};
	const struct region_conf rc = {
	    .name = (char *)"r",
	    .allow_uids = uids,
	    .n_allow_uids = 2,
	    .allow_gids = gids,
	    .n_allow_gids = 2,
	};
	const struct region_conf nobody = {.name = (char *)"n"};
	const gid_t sup_yes[] = {10, 20, 60};
	const gid_t sup_no[] = {10, 20, 30};

	assert_true(conf_access_region(&rc, 0, 12345, NULL, 0));     /* root */
	assert_true(conf_access_region(&nobody, 0, 0, NULL, 0));     /* root, empty lists */
	assert_true(conf_access_region(&rc, 1001, 999, NULL, 0));    /* uid */
	assert_true(conf_access_region(&rc, 2000, 50, NULL, 0));     /* primary gid */
	assert_true(conf_access_region(&rc, 2000, 999, sup_yes, 3)); /* supplementary */
	assert_false(conf_access_region(&rc, 2000, 999, sup_no, 3));
	assert_false(conf_access_region(&rc, 2000, 999, NULL, 0));
	assert_false(conf_access_region(&nobody, 1000, 50, sup_yes, 3));
	assert_false(conf_access_region(&rc, 1002, 1000, NULL, 0)); /* gid 1000 != uid 1000 */
}

/* ---- cgroups: allow_cgroups, admin_cgroups, tenant = cgroup:N ---- */

static void test_cgroup_rules(void **state)
{
	char *allowed[] = {(char *)"/kubepods.slice/pod1", (char *)"/system.slice/x.service"};
	char *adm[] = {(char *)"/system.slice/ops.service"};
	const struct region_conf rc = {
	    .name = (char *)"r",
	    .allow_cgroups = allowed,
	    .n_allow_cgroups = 2,
	    .tenant_cgroup = true,
	    .tenant_levels = 2,
	};
	const struct region_conf whole = {.name = (char *)"w", .tenant_cgroup = true};
	struct daemon_conf dc = {.admin_cgroups = adm, .n_admin_cgroups = 1};
	const struct daemon_conf any = {0};
	char buf[64];

	/* Whole path components only: /a holds /a/b, not /ab. */
	assert_true(conf_access_cgroup_under("/kubepods.slice/pod1", "/kubepods.slice/pod1"));
	assert_true(conf_access_cgroup_under("/kubepods.slice/pod1/c1", "/kubepods.slice/pod1"));
	assert_false(conf_access_cgroup_under("/kubepods.slice/pod10", "/kubepods.slice/pod1"));
	assert_false(conf_access_cgroup_under("/kubepods.slice", "/kubepods.slice/pod1"));
	assert_true(conf_access_cgroup_under("/anything", "/"));
	assert_false(conf_access_cgroup_under(NULL, "/"));
	assert_true(conf_access_region_cgroup(&rc, "/system.slice/x.service"));
	assert_false(conf_access_region_cgroup(&rc, "/system.slice/y.service"));
	assert_false(conf_access_region_cgroup(&rc, NULL));
	/* root is allowed; the lists alone do not name root. */
	assert_true(conf_access_region(&rc, 0, 0, NULL, 0));
	assert_false(conf_access_region_lists(&rc, 0, 0, NULL, 0));

	assert_true(conf_access_admin_cgroup(&any, NULL));
	assert_true(conf_access_admin_cgroup(&dc, "/system.slice/ops.service"));
	assert_false(conf_access_admin_cgroup(&dc, "/kubepods.slice/pod1"));
	assert_false(conf_access_admin_cgroup(&dc, NULL)); /* an unknown cgroup is outside */

	assert_string_equal(conf_tenant_cgroup(&rc, "/kubepods.slice/pod1/c1", buf, sizeof(buf)),
			    "/kubepods.slice/pod1");
	assert_string_equal(conf_tenant_cgroup(&rc, "/kubepods.slice", buf, sizeof(buf)),
			    "/kubepods.slice");
	assert_string_equal(conf_tenant_cgroup(&rc, "/", buf, sizeof(buf)), "/");
	assert_string_equal(conf_tenant_cgroup(&whole, "/a/b/c", buf, sizeof(buf)), "/a/b/c");
	assert_null(conf_tenant_cgroup(&rc, NULL, buf, sizeof(buf)));
	assert_null(conf_tenant_cgroup(&whole, "/a/b/c", buf, 4)); /* does not fit */
	(void)dc;
}

/* ---- conf_load ---- */

static void test_load_defaults(void **state)
{
	struct daemon_conf c;
	struct capture cap;

	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, NULL), 0);
	assert_string_equal(capture_text(&cap), "");
	assert_null(c.config_path);
	assert_false(c.foreground);
	assert_false(c.check_only);
	assert_string_equal(c.socket_path, TEST_RUNTIME_DIR "/pmemzerod.sock");
	assert_string_equal(c.state_dir, TEST_STATE_DIR);
	assert_int_equal(c.log_level, LOG_INFO);
	assert_false(c.has_admin_gid);
	assert_int_equal(c.n_regions, 1);
	assert_string_equal(c.regions[0].name, CONF_DEFAULT_REGION_NAME);
	assert_string_equal(c.regions[0].path, TEST_STATE_DIR "/default.region");
	assert_true(c.regions[0].size == CONF_DEFAULT_REGION_SIZE);
	assert_true(c.regions[0].extent_size == CONF_DEFAULT_EXTENT_SIZE);
	assert_string_equal(c.regions[0].source, "built-in default");
	assert_false(c.regions[0].from_cmdline);
	assert_int_equal(c.regions[0].n_allow_uids, 1);
	assert_int_equal(c.regions[0].allow_uids[0], geteuid());
	conf_free(&c);
	capture_close(&cap);
}

static void test_load_flags(void **state)
{
	struct daemon_conf c;
	struct capture cap;

	capture_open(&cap);
	assert_int_equal(
	    load_args(&c, &cap, "-d", "-n", "--socket", "/s/x.sock", "--region", "r=/r", NULL), 0);
	assert_true(c.foreground);
	assert_true(c.check_only);
	assert_string_equal(c.socket_path, "/s/x.sock");
	assert_int_equal(c.n_regions, 1); /* --region: no default region */
	assert_string_equal(c.regions[0].name, "r");
	conf_free(&c);

	assert_int_equal(load_args(&c, &cap, "--foreground", "--check-config", NULL), 0);
	assert_true(c.foreground);
	assert_true(c.check_only);
	conf_free(&c);
	assert_string_equal(capture_text(&cap), "");
	capture_close(&cap);
}

static void test_load_verbose(void **state)
{
	_cleanup_free_ char *path = write_temp_conf("[daemon]\nlog_level = warning\n");
	struct daemon_conf c;
	struct capture cap;

	assert_non_null(path);
	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, "-v", NULL), 0);
	assert_int_equal(c.log_level, LOG_DEBUG);
	conf_free(&c);
	assert_int_equal(load_args(&c, &cap, "-vvv", "--verbose", NULL), 0);
	assert_int_equal(c.log_level, LOG_DEBUG); /* clamped */
	conf_free(&c);
	assert_int_equal(load_args(&c, &cap, "-c", path, NULL), 0);
	assert_int_equal(c.log_level, LOG_WARNING);
	conf_free(&c);
	assert_int_equal(load_args(&c, &cap, "-c", path, "-v", NULL), 0);
	assert_int_equal(c.log_level, LOG_NOTICE); /* one step per -v */
	conf_free(&c);
	assert_int_equal(load_args(&c, &cap, "-vv", "-c", path, NULL), 0);
	assert_int_equal(c.log_level, LOG_INFO);
	conf_free(&c);
	assert_string_equal(capture_text(&cap), "");
	capture_close(&cap);
	unlink(path);
}

static void test_load_help_version(void **state)
{
	struct daemon_conf c;
	struct capture cap;
	int saved, null;

	/* --help/--version print to stdout; keep the test output readable. */
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(saved >= 0 && null >= 0);
	assert_true(dup2(null, STDOUT_FILENO) >= 0);
	close(null);
	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, "--version", NULL), -EAGAIN);
	conf_free(&c);
	assert_int_equal(load_args(&c, &cap, "-h", NULL), -EAGAIN);
	conf_free(&c);
	assert_int_equal(load_args(&c, &cap, "--region", "a=/x", "--help", NULL), -EAGAIN);
	conf_free(&c);
	fflush(stdout);
	assert_true(dup2(saved, STDOUT_FILENO) >= 0);
	close(saved);
	assert_string_equal(capture_text(&cap), "");
	capture_close(&cap);
}

static void test_load_bad_options(void **state)
{
	struct daemon_conf c;
	struct capture cap;

	capture_open(&cap);
	assert_int_equal(
	    load_args(&c, &cap, "--bogus", "-x", "--foreground=1", "--region", "bad", "--socket",
		      "relative/but/far/too/long/"
		      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.sock",
		      "-c", "/nonexistent/pmemzerod-test.conf", "-c", "/again", "stray", NULL),
	    -EINVAL);
	const char *out = capture_text(&cap);
	assert_non_null(strstr(out, "pmemzerod: unknown option '--bogus' (see --help)\n"));
	assert_non_null(strstr(out, "pmemzerod: unknown option '-x' (see --help)\n"));
	assert_non_null(strstr(out, "pmemzerod: unknown option '--foreground=1' (see --help)\n"));
	assert_non_null(strstr(out, "pmemzerod: -c/--config is given more than once\n"));
	assert_non_null(strstr(out, "pmemzerod: unexpected argument 'stray'\n"));
	assert_non_null(strstr(out, "pmemzerod: cannot read configuration file "
				    "'/nonexistent/pmemzerod-test.conf': No such file or "
				    "directory\n"));
	assert_non_null(strstr(out, "is longer than 107 bytes\n"));
	assert_non_null(strstr(out, "--region 'bad': expected NAME=PATH"));
	assert_int_equal(count_lines(out), 8); /* every error, nothing else */
	conf_free(&c);
	capture_close(&cap);

	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, "--socket", NULL), -EINVAL);
	assert_string_equal(capture_text(&cap), "pmemzerod: option '--socket' needs an argument\n");
	conf_free(&c);
	capture_close(&cap);

	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, "-c", NULL), -EINVAL);
	assert_string_equal(capture_text(&cap), "pmemzerod: option '-c' needs an argument\n");
	conf_free(&c);
	capture_close(&cap);
}

static void test_load_relative_socket(void **state)
{
	_cleanup_free_ char *cwd = get_current_dir_name();
	_cleanup_free_ char *want = NULL;
	struct daemon_conf c;
	struct capture cap;

	assert_non_null(cwd);
	assert_true(asprintf(&want, "%s/s.sock", strcmp(cwd, "/") ? cwd : "") > 0);
	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, "--socket", "s.sock", NULL), 0);
	assert_string_equal(c.socket_path, want);
	conf_free(&c);
	capture_close(&cap);
}

/* The file is reported with every error, each with its line. */
static void test_load_file_errors_all_reported(void **state)
{
	_cleanup_free_ char *path = write_temp_conf("[daemon]\n"
						    "log_level = loud\n"
						    "[region a]\n"
						    "size = 1X\n"
						    "zeroer_threads = 0\n");
	_cleanup_free_ char *want = NULL;
	struct daemon_conf c;
	struct capture cap;

	assert_non_null(path);
	assert_true(asprintf(&want,
			     "%1$s:2: log_level: unknown level 'loud' (err, warning, notice, "
			     "info or debug)\n"
			     "%1$s:4: size: invalid size '1X' (a number with an optional K, M, G "
			     "or T suffix)\n"
			     "%1$s:5: zeroer_threads: '0' is not a number from 1 to 64\n"
			     "--region 'b=/b,size=1': size: 1 is not a multiple of 4 KiB\n",
			     path) > 0);
	capture_open(&cap);
	assert_int_equal(load_args(&c, &cap, "-c", path, "--region", "b=/b,size=1", NULL), -EINVAL);
	assert_string_equal(capture_text(&cap), want);
	conf_free(&c);
	capture_close(&cap);
	unlink(path);
}

static void test_load_twice(void **state)
{
	struct daemon_conf c;
	struct capture cap;

	/* getopt state is reset on every call. */
	capture_open(&cap);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(load_args(&c, &cap, "-d", "--region", "a=/a", NULL), 0);
		assert_true(c.foreground);
		assert_int_equal(c.n_regions, 1);
		conf_free(&c);
	}
	assert_string_equal(capture_text(&cap), "");
	capture_close(&cap);
}

/* ---- reload: what changed, what stays ---- */

static void load_text(struct daemon_conf *c, const char *text)
{
	struct capture cap;
	char *path = write_temp_conf(text);

	assert_non_null(path);
	capture_open(&cap);
	assert_int_equal(load_args(c, &cap, "-c", path, NULL), 0);
	assert_string_equal(capture_text(&cap), "");
	capture_close(&cap);
	unlink(path);
	free(path);
}

static void test_region_diff(void **state)
{
	struct daemon_conf a, b;
	struct region_conf *ra, *rb;
	char names[256];

	load_text(&a, "[region r]\npath = /r\nsize = 64M\nallow_users = 1, 2\n"
		      "zeroer_threads = 2\n[region s]\npath = /s\n");
	load_text(&b, "[region s]\npath = /s\n[region r]\npath = /r\nsize = 64M\n"
		      "allow_users = 2 1 2\nzeroer_threads = 2\n");
	ra = conf_find_region(&a, "r");
	rb = conf_find_region(&b, "r");
	assert_non_null(ra);
	assert_non_null(rb);
	assert_null(conf_find_region(&a, "t"));
	/* The order of sections and of ids in a list does not matter. */
	assert_int_equal(conf_diff_region(ra, rb), 0);
	assert_int_equal(conf_diff_region(conf_find_region(&a, "s"), conf_find_region(&b, "s")),
			 0);
	conf_free(&b);

	load_text(&b, "[region r]\npath = /r2\nsize = 64M\nextent_size = 4M\n"
		      "metadata = /m\nallow_users = 1\nzeroer_threads = 3\nzero_rate = 1M\n"
		      "batch_extents = 8\nuid_quota = 8M\n");
	rb = conf_find_region(&b, "r");
	assert_int_equal(conf_diff_region(ra, rb),
			 CONF_CHANGE_PATH | CONF_CHANGE_EXTENT_SIZE | CONF_CHANGE_METADATA |
			     CONF_CHANGE_ALLOW | CONF_CHANGE_ZEROER_THREADS |
			     CONF_CHANGE_ZERO_RATE | CONF_CHANGE_BATCH_EXTENTS |
			     CONF_CHANGE_UID_LIMITS);
	assert_string_equal(conf_diff_names(conf_diff_region(ra, rb) & CONF_CHANGE_FIXED, names,
					      sizeof(names)),
			    "path, extent_size, metadata");
	assert_string_equal(conf_diff_names(CONF_CHANGE_SIZE | CONF_CHANGE_ZERO_RATE, names, 11),
			    "size, zero");
	/* The running values of the fixed keys stay; the others are the new ones. */
	assert_int_equal(conf_diff_keep_fixed(rb, ra), 0);
	assert_int_equal(conf_diff_region(ra, rb) & CONF_CHANGE_FIXED, 0);
	assert_string_equal(rb->path, "/r");
	assert_null(rb->metadata);
	assert_true(rb->extent_size_default);
	assert_int_equal(rb->zeroer_threads, 3);
	assert_true(rb->uid_quota == 8ull << 20);
	conf_free(&b);

	/* tenant, allow_cgroups (a set: order and repeats aside), the new limit names. */
	load_text(&b, "[region r]\npath = /r\nsize = 64M\nallow_users = 1, 2\n"
		      "zeroer_threads = 2\ntenant = cgroup:2\nallow_cgroups = /b /a\n"
		      "tenant_max_tags = 3\n");
	rb = conf_find_region(&b, "r");
	assert_int_equal(conf_diff_region(ra, rb),
			 CONF_CHANGE_TENANT | CONF_CHANGE_ALLOW | CONF_CHANGE_UID_LIMITS);
	assert_string_equal(conf_diff_names(CONF_CHANGE_TENANT, names, sizeof(names)), "tenant");
	assert_true(rb->tenant_cgroup);
	assert_int_equal(rb->tenant_levels, 2);
	assert_int_equal(rb->uid_max_tags, 3);
	conf_free(&a);
	load_text(&a, "[region r]\npath = /r\nsize = 64M\nallow_users = 1, 2\n"
		      "zeroer_threads = 2\ntenant = cgroup:2\nallow_cgroups = /a /b /a\n"
		      "uid_max_tags = 3\n");
	assert_int_equal(conf_diff_region(conf_find_region(&a, "r"), rb), 0);
	conf_free(&a);
	conf_free(&b);
}

/* ---- golden files ---- */

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int ch;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	if (!m) {
		fclose(f);
		return NULL;
	}
	while ((ch = fgetc(f)) != EOF)
		fputc(ch, m);
	fclose(f);
	fclose(m);
	return buf;
}

static char *replace_all(const char *s, const char *from, const char *to)
{
	char *buf = NULL;
	size_t len = 0, flen = strlen(from);
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	for (const char *p; (p = strstr(s, from)); s = p + flen) {
		fwrite(s, 1, (size_t)(p - s), m);
		fputs(to, m);
	}
	fputs(s, m);
	fclose(m);
	return buf;
}

static char *strip_comments(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	while (*s) {
		size_t n = strcspn(s, "\n");

		if (*s != '#')
			fprintf(m, "%.*s\n", (int)n, s);
		s += n + (s[n] == '\n');
	}
	fclose(m);
	return buf;
}

static void show_diff(const char *name, const char *expected, const char *actual)
{
	unsigned line = 1;
	const char *e = expected, *a = actual;

	while (*e && *a) {
		size_t ne = strcspn(e, "\n"), na = strcspn(a, "\n");

		if (ne != na || memcmp(e, a, ne) != 0)
			break;
		e += ne + (e[ne] == '\n');
		a += na + (a[na] == '\n');
		line++;
	}
	fprintf(stderr, "%s: output differs from the expected output at line %u\n", name, line);
	fprintf(stderr, "---- expected ----\n%s---- actual ----\n%s------------------\n", expected,
		actual);
}

/* Loads the configuration the way pmemzerod does; returns conf_load's result. */
static int golden_load(const char *name, char **output)
{
	_cleanup_free_ char *conf = NULL, *args_path = NULL, *args = NULL;
	char *argv[64];
	int argc = 0, r;
	struct daemon_conf c = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	if (asprintf(&conf, "%s.conf", name) < 0 || asprintf(&args_path, "%s.args", name) < 0)
		return -ENOMEM;
	argv[argc++] = (char *)"pmemzerod";
	if (access(conf, F_OK) == 0) {
		argv[argc++] = (char *)"-c";
		argv[argc++] = conf;
	}
	args = read_file(args_path);
	if (args) {
		char *save = NULL;

		for (char *l = strtok_r(args, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			if (*l == '#')
				continue;
			if (argc >= 63)
				return -E2BIG;
			argv[argc++] = l;
		}
	}
	if (argc == 1) {
		fprintf(stderr, "%s: neither %s nor %s exists\n", name, conf, args_path);
		return -ENOENT;
	}
	argv[argc] = NULL;

	out = open_memstream(&buf, &len);
	if (!out)
		return -ENOMEM;
	r = conf_load(&c, argc, argv, out);
	if (r == 0)
		conf_print(&c, out);
	fclose(out);
	conf_free(&c);
	*output = buf;
	return r;
}

static int run_golden(const char *dir, const char *name)
{
	_cleanup_free_ char *expected_path = NULL, *raw = NULL, *expected = NULL, *actual = NULL;
	char euid[32];
	bool good = strncmp(name, "good-", 5) == 0;
	int r;

	if (!good && strncmp(name, "bad-", 4) != 0) {
		fprintf(stderr, "%s: golden case names start with good- or bad-\n", name);
		return 1;
	}
	if (chdir(dir) < 0) {
		fprintf(stderr, "cannot change into %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (asprintf(&expected_path, "%s.expected", name) < 0)
		return 1;
	raw = read_file(expected_path);
	if (!raw) {
		fprintf(stderr, "%s: cannot read %s/%s: %s\n", name, dir, expected_path,
			strerror(errno));
		return 1;
	}
	snprintf(euid, sizeof(euid), "%u", (unsigned)geteuid());
	expected = replace_all(raw, "@EUID@", euid);
	if (!expected)
		return 1;

	r = golden_load(name, &actual);
	if (!actual) {
		fprintf(stderr, "%s: cannot run: %s\n", name, strerror(-r));
		return 1;
	}
	if (good && r != 0) {
		fprintf(stderr, "%s: conf_load failed (%d) but should load:\n%s", name, r, actual);
		return 1;
	}
	if (!good && r != -EINVAL) {
		fprintf(stderr, "%s: conf_load returned %d instead of -EINVAL:\n%s", name, r,
			actual);
		return 1;
	}
	if (strcmp(expected, actual) != 0) {
		show_diff(name, expected, actual);
		return 1;
	}

	if (good) {
		/* What -n prints is itself a configuration that loads to the same. */
		_cleanup_free_ char *tmp = write_temp_conf(actual);
		_cleanup_free_ char *again = NULL, *a1 = NULL, *a2 = NULL;
		struct daemon_conf c = {0};
		char *argv[] = {(char *)"pmemzerod", (char *)"-c", tmp, NULL};
		size_t len = 0;
		FILE *out;

		if (!tmp || !(out = open_memstream(&again, &len)))
			return 1;
		r = conf_load(&c, 3, argv, out);
		if (r == 0)
			conf_print(&c, out);
		fclose(out);
		conf_free(&c);
		unlink(tmp);
		a1 = strip_comments(actual);
		a2 = strip_comments(again);
		if (r != 0 || !a1 || !a2 || strcmp(a1, a2) != 0) {
			fprintf(stderr,
				"%s: the printed configuration does not load back the same\n",
				name);
			show_diff(name, actual, again);
			return 1;
		}
	}
	printf("%s: ok\n", name);
	return 0;
}

/* --check FILE: FILE (e.g. the shipped etc/pmemzerod.conf) loads. */
static int check_file(char *path)
{
	char *argv[] = {(char *)"pmemzerod", (char *)"-c", path, NULL};
	struct daemon_conf c = {0};
	int r;

	r = conf_load(&c, 3, argv, stderr);
	if (r == 0)
		conf_print(&c, stdout);
	conf_free(&c);
	printf("%s: %s\n", path, r == 0 ? "ok" : "FAILED");
	return r == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_size_good),
	    cmocka_unit_test(test_parse_size_bad),
	    cmocka_unit_test(test_parse_size_overflow),
	    cmocka_unit_test(test_region_spec_good),
	    cmocka_unit_test(test_region_spec_relative),
	    cmocka_unit_test(test_region_spec_bad),
	    cmocka_unit_test(test_region_spec_name_length),
	    cmocka_unit_test(test_region_spec_overrides_file),
	    cmocka_unit_test(test_region_spec_twice),
	    cmocka_unit_test(test_region_allows),
	    cmocka_unit_test(test_load_defaults),
	    cmocka_unit_test(test_load_flags),
	    cmocka_unit_test(test_load_verbose),
	    cmocka_unit_test(test_load_help_version),
	    cmocka_unit_test(test_load_bad_options),
	    cmocka_unit_test(test_load_relative_socket),
	    cmocka_unit_test(test_load_file_errors_all_reported),
	    cmocka_unit_test(test_load_twice),
	    cmocka_unit_test(test_region_diff),
	    cmocka_unit_test(test_cgroup_rules),
	};

	setenv("RUNTIME_DIRECTORY", TEST_RUNTIME_DIR, 1);
	setenv("STATE_DIRECTORY", TEST_STATE_DIR, 1);

	if (argc == 4 && strcmp(argv[1], "--golden") == 0)
		return run_golden(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "--check") == 0)
		return check_file(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--golden DIR NAME | --check FILE]\n", argv[0]);
		return 2;
	}
	return cmocka_run_group_tests_name("conf", tests, NULL, NULL);
}
