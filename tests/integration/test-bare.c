/* SPDX-License-Identifier: MIT */
/*
 * The bare daemon, as a newcomer starts it outside systemd: `pmemzerod` with
 * no argument at all runs on the embedded default region in its state
 * directory, which it must create (mode 0700, owned by its user) when
 * missing, and refuse when it is a symbolic link or belongs to another user.
 * Each run is followed by `pmemzctl status` and a client allocation with no
 * socket option, as root and as an ordinary user (uid 65534).
 *
 * Every session runs in a forked child with a clean environment (HOME,
 * XDG_STATE_HOME, XDG_RUNTIME_DIR or STATE_DIRECTORY pointing into the
 * test's temporary directory); the ordinary user's child drops to uid 65534
 * before it starts the daemon.  One session uses root's real default paths
 * (/var/lib/pmemzerod, /run/pmemzerod) when this machine has no
 * /var/lib/pmemzerod and no daemon on the system socket, and removes what
 * it created there afterwards.  The sessions of every run of this test (and of other
 * checkouts on the machine) are serialised by one lock file, because a
 * client with no socket option prefers /run/pmemzerod/pmemzerod.sock when
 * it exists.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB
#define NOBODY_UID 65534
#define DEFAULT_REGION_SIZE (256 * MIB) /* CONF_DEFAULT_REGION_SIZE */
#define SESSION_TIMEOUT_MS 60000
#define LOCK_PATH "/tmp/pmemz-itest-bare.lock"
#define SYSTEM_STATE_DIR "/var/lib/pmemzerod"
#define SYSTEM_RUNTIME_DIR "/run/pmemzerod"
#define SYSTEM_SOCKET SYSTEM_RUNTIME_DIR "/pmemzerod.sock"

struct session {
	uid_t uid;
	gid_t gid;
	const char *env[6];	  /* NAME=VALUE: the whole environment but PATH */
	char state_dir[PATH_MAX]; /* where the daemon must keep default.region */
	const char *refusal;	  /* NULL: must run; else a phrase of its error */
	const char *log;
	const char *ctl_out;
};

static char env_buf[6][PATH_MAX + 32];

static const char *env_kv(int i, const char *name, const char *dir, const char *sub)
{
	snprintf(env_buf[i], sizeof(env_buf[i]), "%s=%s%s", name, dir, sub);
	return env_buf[i];
}

/* ---- in the forked child: no cmocka, CHILD_CHECK ------------------------- */

/* Variables of the test run the sessions keep (sanitizers, granularity). */
static const char *const kept_env[] = {"PMEM2_FORCE_GRANULARITY", "ASAN_OPTIONS", "UBSAN_OPTIONS",
				       "LSAN_OPTIONS", "PMEMZ_ITEST_VERBOSE"};

static void child_environment(const struct session *s)
{
	char kept[sizeof(kept_env) / sizeof(kept_env[0])][512] = {{0}};

	for (size_t i = 0; i < sizeof(kept_env) / sizeof(kept_env[0]); i++) {
		const char *v = getenv(kept_env[i]);

		if (v)
			snprintf(kept[i], sizeof(kept[i]), "%s=%s", kept_env[i], v);
	}
	CHILD_CHECK(clearenv() == 0, "clearenv");
	for (size_t i = 0; i < sizeof(kept_env) / sizeof(kept_env[0]); i++)
		if (kept[i][0])
			CHILD_CHECK(putenv(strdup(kept[i])) == 0, "putenv");
	CHILD_CHECK(setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1) == 0, "setenv");
	for (size_t i = 0; i < sizeof(s->env) / sizeof(s->env[0]) && s->env[i]; i++)
		CHILD_CHECK(putenv(UNCONST(s->env[i])) == 0, "putenv %s", s->env[i]);
}

static void child_drop_to(const struct session *s)
{
	if (s->uid == 0)
		return;
	CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	CHILD_CHECK(setgid(s->gid) == 0, "setgid %u: %s", (unsigned)s->gid, strerror(errno));
	CHILD_CHECK(setuid(s->uid) == 0, "setuid %u: %s", (unsigned)s->uid, strerror(errno));
	CHILD_CHECK(geteuid() == s->uid, "still uid %u", (unsigned)geteuid());
}

/* fork + exec argv with stdout to out_path (appended) and stderr to log. */
static pid_t child_spawn(char *const argv[], const char *out_path, const char *log)
{
	pid_t pid = fork();

	CHILD_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int out = open(out_path, O_WRONLY | O_APPEND | O_CLOEXEC);
		int err = open(log, O_WRONLY | O_APPEND | O_CLOEXEC);

		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Wait status of pid within timeout_ms; -1 (still running) on timeout. */
static int child_wait(pid_t pid, int timeout_ms)
{
	uint64_t deadline = itest_now_ms() + (uint64_t)timeout_ms;
	int status;

	while (itest_now_ms() < deadline) {
		pid_t p = waitpid(pid, &status, WNOHANG);

		CHILD_CHECK(p >= 0, "waitpid: %s", strerror(errno));
		if (p == pid)
			return status;
		itest_msleep(20);
	}
	return -1;
}

static int child_ctl(const char *cmd, const char *out_path, const char *log)
{
	char *argv[] = {UNCONST(itest_ctl_path()), UNCONST(cmd), NULL};
	pid_t pid = child_spawn(argv, out_path, log);
	int status = child_wait(pid, 20000);

	if (status == -1) {
		(void)kill(pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
	}
	return status;
}

static bool file_has(const char *path, const char *what)
{
	char buf[16384];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = 0;
	return strstr(buf, what) != NULL;
}

/* An allocation through libpmemzclient with no socket path: zero, then released. */
static void child_allocate(void)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	int rc;

	rc = pmemz_client_new(NULL, &c);
	CHILD_CHECK(rc == 0, "pmemz_client_new(NULL): %s (%s)", strerror(-rc), pmemz_errormsg());
	rc = pmemz_region_open(c, "default", &r);
	CHILD_CHECK(rc == 0, "pmemz_region_open default: %s (%s)", strerror(-rc), pmemz_errormsg());
	CHILD_CHECK(pmemz_region_size(r) == DEFAULT_REGION_SIZE, "default region of %zu bytes",
		    pmemz_region_size(r));
	rc = pmemz_alloc_new(r, 4 * MIB, 0, &a);
	CHILD_CHECK(rc == 0, "pmemz_alloc_new: %s (%s)", strerror(-rc), pmemz_errormsg());
	CHILD_CHECK(pmemz_alloc_size(a) == 4 * MIB, "allocated %zu bytes", pmemz_alloc_size(a));
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len = 0;
		const char *p = pmemz_alloc_range(a, i, &len);
		size_t off = itest_first_nonzero(p, len);

		CHILD_CHECK(off == (size_t)-1, "I1: range %zu has a non-zero byte at +%zu", i, off);
	}
	rc = pmemz_alloc_release(a);
	CHILD_CHECK(rc == 0, "pmemz_alloc_release: %s (%s)", strerror(-rc), pmemz_errormsg());
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void child_check_state_dir(const struct session *s)
{
	char region[PATH_MAX + 32];
	struct stat st;

	CHILD_CHECK(lstat(s->state_dir, &st) == 0, "state directory %s: %s", s->state_dir,
		    strerror(errno));
	CHILD_CHECK(S_ISDIR(st.st_mode), "%s is not a directory", s->state_dir);
	CHILD_CHECK((st.st_mode & 07777) == 0700, "%s has mode %04o, expected 0700", s->state_dir,
		    (unsigned)(st.st_mode & 07777));
	CHILD_CHECK(st.st_uid == s->uid, "%s is owned by uid %u, expected %u", s->state_dir,
		    (unsigned)st.st_uid, (unsigned)s->uid);
	snprintf(region, sizeof(region), "%s/default.region", s->state_dir);
	CHILD_CHECK(stat(region, &st) == 0, "%s: %s", region, strerror(errno));
	CHILD_CHECK((uint64_t)st.st_size == DEFAULT_REGION_SIZE, "%s is %lld bytes", region,
		    (long long)st.st_size);
}

static void child_session(const struct session *s)
{
	char *argv[] = {UNCONST(itest_daemon_path()), NULL}; /* no argument at all */
	pid_t daemon;
	int status = -1;

	child_drop_to(s);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	child_environment(s);
	umask(022);
	daemon = child_spawn(argv, s->log, s->log);

	if (s->refusal) {
		status = child_wait(daemon, 20000);
		if (status == -1)
			(void)kill(daemon, SIGKILL);
		CHILD_CHECK(status != -1, "pmemzerod still running; it should have refused");
		CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 0,
			    "pmemzerod exited with status 0x%x, expected a failure", status);
		CHILD_CHECK(file_has(s->log, s->refusal), "no '%s' in the daemon's log",
			    s->refusal);
		_exit(0);
	}

	/* pmemzctl status with no socket option: until the daemon answers. */
	for (uint64_t deadline = itest_now_ms() + ITEST_START_TIMEOUT_MS;;) {
		int d;

		status = child_ctl("status", s->ctl_out, s->log);
		if (status == 0)
			break;
		d = waitpid(daemon, &status, WNOHANG);
		CHILD_CHECK(d == 0, "pmemzerod exited (status 0x%x) during start-up", status);
		CHILD_CHECK(itest_now_ms() < deadline, "pmemzctl status failed for %d ms",
			    ITEST_START_TIMEOUT_MS);
		itest_msleep(100);
	}
	CHILD_CHECK(file_has(s->ctl_out, "default"),
		    "pmemzctl status does not show region "
		    "'default' (see %s)",
		    s->ctl_out);
	child_allocate();

	CHILD_CHECK(kill(daemon, SIGTERM) == 0, "kill: %s", strerror(errno));
	status = child_wait(daemon, ITEST_STOP_TIMEOUT_MS);
	if (status == -1)
		(void)kill(daemon, SIGKILL);
	CHILD_CHECK(status == 0, "pmemzerod: wait status 0x%x after SIGTERM", status);
	child_check_state_dir(s);
	_exit(0);
}

/* ---- in the test ------------------------------------------------------- */

static void run_session(struct itest_env *e, struct session *s)
{
	char log[PATH_MAX], out[PATH_MAX];
	int status;
	pid_t pid;
	int fd;

	itest_path(e, log, sizeof(log), "bare.log");
	itest_path(e, out, sizeof(out), "pmemzctl.out");
	for (int i = 0; i < 2; i++) {
		fd = open(i ? out : log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(fchown(fd, s->uid, s->gid), 0);
		close(fd);
	}
	s->log = log;
	s->ctl_out = out;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_session(s);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (status != 0 || getenv("PMEMZ_ITEST_VERBOSE")) {
		size_t len = 0;
		char *text = itest_read_file(log, &len);

		fprintf(stderr, "---- pmemzerod (uid %u) log ----\n%.*s----\n", (unsigned)s->uid,
			(int)len, text);
		free(text);
	}
	if (status != 0)
		fail_msg("bare pmemzerod session as uid %u failed (wait status 0x%x)",
			 (unsigned)s->uid, status);
}

static void mkdir_owned(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	if (mkdir(path, mode) < 0)
		fail_msg("mkdir %s: %s", path, strerror(errno));
	assert_int_equal(chown(path, uid, gid), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void nobody_session(struct itest_env *e, struct session *s)
{
	struct passwd *pw = getpwuid(NOBODY_UID);
	char home[PATH_MAX], run[PATH_MAX];

	memset(s, 0, sizeof(*s));
	s->uid = NOBODY_UID;
	s->gid = pw ? pw->pw_gid : NOBODY_UID;
	/* uid 65534 must reach its directories inside the test's. */
	assert_int_equal(chmod(e->dir, 0755), 0);
	itest_path(e, home, sizeof(home), "home");
	itest_path(e, run, sizeof(run), "run");
	mkdir_owned(home, s->uid, s->gid, 0755);
	mkdir_owned(run, s->uid, s->gid, 0700);
	s->env[0] = env_kv(0, "HOME", home, "");
	s->env[1] = env_kv(1, "XDG_RUNTIME_DIR", run, "");
}

/* Sessions of root must not meet another daemon at the system socket. */
static bool system_socket_free(void)
{
	if (access(SYSTEM_SOCKET, F_OK) == 0) {
		print_message("SKIP: %s exists (a pmemzerod runs on this machine): a client "
			      "with no socket option would reach it, not the test's daemon\n",
			      SYSTEM_SOCKET);
		return false;
	}
	return true;
}

/* The first report: $HOME only, ~/.local/state does not exist. */
static void test_nobody_home(void **state)
{
	struct itest_env *e = *state;
	struct session s;

	if (!system_socket_free())
		skip();
	nobody_session(e, &s);
	itest_path(e, s.state_dir, sizeof(s.state_dir), "home/.local/state/pmemzerod");
	run_session(e, &s);
}

static void test_nobody_xdg_state_home(void **state)
{
	struct itest_env *e = *state;
	struct session s;
	char xdg[PATH_MAX];

	if (!system_socket_free())
		skip();
	nobody_session(e, &s);
	/* missing, like its parent directory pmemzerod must create as well */
	itest_path(e, xdg, sizeof(xdg), "home/xdg/state");
	s.env[2] = env_kv(2, "XDG_STATE_HOME", xdg, "");
	itest_path(e, s.state_dir, sizeof(s.state_dir), "home/xdg/state/pmemzerod");
	run_session(e, &s);
}

/*
 * uid 65534 with XDG_STATE_HOME=DIR/xdg-state, whose pmemzerod/ the caller
 * makes with make_state_dir: the daemon must refuse it (refusal: a phrase of
 * its error) and create no region file in it.
 */
static void refusal_session(struct itest_env *e, const char *refusal,
			    void (*make_state_dir)(const struct session *s, const char *path))
{
	struct session s;
	char xdg[PATH_MAX], dir[PATH_MAX], region[PATH_MAX];
	struct stat st;

	nobody_session(e, &s);
	itest_path(e, xdg, sizeof(xdg), "xdg-state");
	itest_path(e, dir, sizeof(dir), "xdg-state/pmemzerod");
	itest_path(e, region, sizeof(region), "xdg-state/pmemzerod/default.region");
	mkdir_owned(xdg, s.uid, s.gid, 0700);
	make_state_dir(&s, dir);
	s.env[2] = env_kv(2, "XDG_STATE_HOME", xdg, "");
	s.refusal = refusal;
	run_session(e, &s);
	assert_int_equal(stat(region, &st), -1);
}

static char symlink_target[PATH_MAX];

static void make_symlink(const struct session *s, const char *path)
{
	mkdir_owned(symlink_target, s->uid, s->gid, 0700);
	assert_int_equal(symlink(symlink_target, path), 0);
	assert_int_equal(lchown(path, s->uid, s->gid), 0);
}

/* A state directory that can be pointed elsewhere is refused. */
static void test_nobody_refuses_symlink(void **state)
{
	struct itest_env *e = *state;
	char region[PATH_MAX];
	struct stat st;

	itest_path(e, symlink_target, sizeof(symlink_target), "elsewhere");
	refusal_session(e, "is a symbolic link, refusing to use it", make_symlink);
	itest_path(e, region, sizeof(region), "elsewhere/default.region");
	assert_int_equal(stat(region, &st), -1);
}

static void make_roots_dir(const struct session *s, const char *path)
{
	(void)s;
	/* root's, but writable by uid 65534: only the owner gives it away */
	mkdir_owned(path, 0, 0, 0777);
}

static void test_nobody_refuses_foreign_dir(void **state)
{
	refusal_session(*state, "is owned by uid 0, not by the daemon's user (uid 65534)",
			make_roots_dir);
}

/* Root, outside systemd but with systemd's variables naming temp dirs. */
static void test_root_state_directory(void **state)
{
	struct itest_env *e = *state;
	struct session s = {0};
	char run[PATH_MAX];

	itest_path(e, s.state_dir, sizeof(s.state_dir), "state/pmemzerod");
	itest_path(e, run, sizeof(run), "run");
	s.env[0] = env_kv(0, "STATE_DIRECTORY", s.state_dir, "");
	s.env[1] = env_kv(1, "RUNTIME_DIRECTORY", run, "");
	/* root's client default is the system socket: name this one */
	s.env[2] = env_kv(2, PMEMZ_SOCKET_ENV, run, "/pmemzerod.sock");
	s.env[3] = env_kv(3, "HOME", e->dir, "");
	run_session(e, &s);
}

/* What test_root_system_defaults created, for its teardown. */
static bool made_system_state, made_system_run;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

/*
 * The directories did not exist before the test: everything in them is the
 * test daemon's (the region file, the socket, whatever else the daemon
 * keeps there).  0, or -errno of the first failure.
 */
static int remove_system_dirs(void)
{
	struct stat st;

	if (made_system_state && lstat(SYSTEM_STATE_DIR, &st) == 0 &&
	    nftw(SYSTEM_STATE_DIR, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return -errno;
	made_system_state = false;
	if (made_system_run && lstat(SYSTEM_RUNTIME_DIR, &st) == 0 &&
	    nftw(SYSTEM_RUNTIME_DIR, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return -errno;
	made_system_run = false;
	return 0;
}

/*
 * Root's real defaults, exactly as the README's "pmemzerod": only when this
 * machine has no /var/lib/pmemzerod and no daemon on the system socket;
 * what the test creates there is removed afterwards.
 */
static void test_root_system_defaults(void **state)
{
	struct itest_env *e = *state;
	struct session s = {0};
	struct stat st;

	if (lstat(SYSTEM_STATE_DIR, &st) == 0) {
		print_message("SKIP: %s exists; the test does not touch a real state directory\n",
			      SYSTEM_STATE_DIR);
		skip();
	}
	if (!system_socket_free())
		skip();
	made_system_state = true;
	made_system_run = lstat(SYSTEM_RUNTIME_DIR, &st) < 0;
	snprintf(s.state_dir, sizeof(s.state_dir), "%s", SYSTEM_STATE_DIR);
	s.env[0] = env_kv(0, "HOME", e->dir, "");
	run_session(e, &s);
	/* a clean stop takes the socket away */
	assert_int_equal(lstat(SYSTEM_SOCKET, &st), -1);
	assert_int_equal(remove_system_dirs(), 0);
}

/* A failed session must not leave root's real defaults behind. */
static int system_teardown(void **state)
{
	int r = itest_teardown(state); /* stops a daemon left running */

	(void)remove_system_dirs();
	return r;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_nobody_home, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_nobody_xdg_state_home, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_nobody_refuses_symlink, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_nobody_refuses_foreign_dir, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_root_state_directory, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_root_system_defaults, itest_setup,
					    system_teardown),
	};
	int lock;

	if (geteuid() != 0)
		return itest_skip("the bare daemon is tested as root and as uid 65534 (setuid): "
				  "run as root");
	lock = open(LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		fprintf(stderr, "cannot lock %s: %s\n", LOCK_PATH, strerror(errno));
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
