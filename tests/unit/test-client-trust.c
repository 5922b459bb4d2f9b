/* SPDX-License-Identifier: MIT */
/*
 * Whom libpmemzclient trusts (docs/SECURITY.md):
 *  - a daemon whose SO_PEERCRED uid is neither root nor the caller's is
 *    refused with a clear error (a fake "daemon" run as uid 65534);
 *  - the /tmp fallback socket directory is refused as a symlink, as another
 *    uid's, or as group- or other-writable, by the checks the daemon and the
 *    client share (common/paths.c), and by pmemz_client_new itself.
 * The parts that need another uid skip with 77 when not root.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "libpmemzclient.h"
#include "util.h"

#define OTHER_UID 65534
#define OTHER_GID 65534

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	(void)snprintf(tmpdir, sizeof(tmpdir), "/tmp/pmemz-trust-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A listener as uid 65534 that accepts one connection and holds it until the parent is done. */
static pid_t fake_daemon(const char *path)
{
	int ready[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int fd, conn;

		(void)close(ready[0]);
		if (setgroups(0, NULL) < 0 || setgid(OTHER_GID) < 0 || setuid(OTHER_UID) < 0)
			_exit(2);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    chmod(path, 0666) < 0 || listen(fd, 4) < 0)
			_exit(3);
		(void)!write(ready[1], "r", 1);
		conn = accept(fd, NULL, NULL);
		/* Whatever the client sends is never answered: it must not wait for us. */
		(void)!read(conn, &c, 1);
		_exit(0);
	}
	(void)close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	(void)close(ready[0]);
	return pid;
}

static void test_peer_of_another_uid_refused(void **state)
{
	char dir[96], path[108];
	struct pmemz_client *c = NULL;
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	(void)snprintf(dir, sizeof(dir), "%s/other", tmpdir);
	assert_int_equal(chmod(tmpdir, 0711), 0);
	assert_int_equal(mkdir(dir, 0777), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	(void)snprintf(path, sizeof(path), "%s/fake.sock", dir);
	pid = fake_daemon(path);

	assert_int_equal(pmemz_client_new(path, &c), -EPERM);
	assert_null(c);
	if (!strstr(pmemz_errormsg(), "runs as uid 65534, neither root nor this user (uid 0)"))
		fail_msg("unclear error: %s", pmemz_errormsg());

	(void)kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void test_fallback_dir_checks(void **state)
{
	char dir[96], link[96], why[128];

	(void)state;
	(void)snprintf(dir, sizeof(dir), "%s/d", tmpdir);

	/* Missing: only made when asked, 0700 whatever the umask. */
	assert_int_equal(pmemz_fallback_dir_check(dir, false, why, sizeof(why)), -ENOENT);
	{
		mode_t old = umask(0);
		struct stat st;

		assert_int_equal(pmemz_fallback_dir_check(dir, true, why, sizeof(why)), 0);
		(void)umask(old);
		assert_int_equal(stat(dir, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
	}
	assert_int_equal(pmemz_fallback_dir_check(dir, false, why, sizeof(why)), 0);

	assert_int_equal(chmod(dir, 0770), 0);
	assert_int_equal(pmemz_fallback_dir_check(dir, true, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "writable by its group"));
	assert_int_equal(chmod(dir, 0703), 0);
	assert_int_equal(pmemz_fallback_dir_check(dir, true, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "writable by others"));
	assert_int_equal(chmod(dir, 0755), 0); /* readable by others is fine */
	assert_int_equal(pmemz_fallback_dir_check(dir, true, why, sizeof(why)), 0);

	(void)snprintf(link, sizeof(link), "%s/l", tmpdir);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(pmemz_fallback_dir_check(link, true, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "symbolic link"));

	(void)snprintf(link, sizeof(link), "%s/f", tmpdir);
	assert_int_equal(mknod(link, S_IFREG | 0600, 0), 0);
	assert_int_equal(pmemz_fallback_dir_check(link, true, why, sizeof(why)), -ENOTDIR);

	if (geteuid() == 0) {
		assert_int_equal(chown(dir, OTHER_UID, OTHER_GID), 0);
		assert_int_equal(pmemz_fallback_dir_check(dir, true, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "owned by uid 65534"));
	}
}

/* What the daemon calls before bind(): the checks for its own fallback directory only. */
static void test_daemon_socket_dir(void **state)
{
	char own[64], dir[96], why[128];
	struct stat st;

	(void)state;
	(void)snprintf(dir, sizeof(dir), "%s/run/sub", tmpdir);
	assert_int_equal(pmemz_socket_dir_prepare(dir, why, sizeof(why)), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));

	(void)snprintf(own, sizeof(own), "/tmp/pmemzerod-%u", (unsigned)geteuid());
	assert_true(pmemz_is_fallback_dir(own));
	assert_false(pmemz_is_fallback_dir(dir));
	if (lstat(own, &st) == 0)
		skip(); /* in use: leave it alone */
	/* Planted by someone else as a link to a directory they control. */
	assert_int_equal(symlink(tmpdir, own), 0);
	assert_int_equal(pmemz_socket_dir_prepare(own, why, sizeof(why)), -ELOOP);
	assert_int_equal(unlink(own), 0);
	assert_int_equal(pmemz_socket_dir_prepare(own, why, sizeof(why)), 0);
	assert_int_equal(lstat(own, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(rmdir(own), 0);
}

/*
 * pmemz_client_new with the default path of a user without a runtime
 * directory: /tmp/pmemzerod-UID, refused when another user made it first.
 * Runs as uid 65534 in a child; its fallback directory is made by root.
 */
static void test_client_refuses_foreign_fallback(void **state)
{
	const char *fallback = "/tmp/pmemzerod-65534";
	struct stat st;
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	if (lstat(fallback, &st) == 0 || access(PMEMZ_SYSTEM_SOCKET, F_OK) == 0)
		skip(); /* someone's real directory, or a system socket the client prefers */
	assert_int_equal(mkdir(fallback, 0755), 0); /* root's */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct pmemz_client *c = NULL;
		int r;

		if (setgroups(0, NULL) < 0 || setgid(OTHER_GID) < 0 || setuid(OTHER_UID) < 0)
			_exit(2);
		(void)unsetenv("PMEMZ_SOCKET");
		(void)unsetenv("XDG_RUNTIME_DIR");
		r = pmemz_client_new(NULL, &c);
		if (r != -EPERM || !strstr(pmemz_errormsg(), "/tmp/pmemzerod-65534 is not safe") ||
		    !strstr(pmemz_errormsg(), "owned by uid 0")) {
			fprintf(stderr, "client: %d: %s\n", r, pmemz_errormsg());
			_exit(1);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	(void)rmdir(fallback);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * The daemon side: pmemzerod of uid 65534, with no runtime directory, falls
 * back to /tmp/pmemzerod-65534; planted by root, it refuses to start
 * (PMEMZ_DAEMON names the binary; skipped without it).
 */
static void test_daemon_refuses_foreign_fallback(void **state)
{
	const char *daemon = getenv("PMEMZ_DAEMON"), *fallback = "/tmp/pmemzerod-65534";
	char log[96], region[128], statedir[96], buf[4096];
	struct stat st;
	int status = 0, fd;
	ssize_t n;
	pid_t pid;

	(void)state;
	if (geteuid() != 0 || !daemon || !*daemon)
		skip();
	if (lstat(fallback, &st) == 0 || access(PMEMZ_SYSTEM_SOCKET, F_OK) == 0)
		skip();
	assert_int_equal(chmod(tmpdir, 0711), 0);
	(void)snprintf(statedir, sizeof(statedir), "%s/state", tmpdir);
	assert_int_equal(mkdir(statedir, 0700), 0);
	assert_int_equal(chown(statedir, OTHER_UID, OTHER_GID), 0);
	(void)snprintf(region, sizeof(region), "r=%s/r.img,size=16M,extent=1M", statedir);
	(void)snprintf(log, sizeof(log), "%s/daemon.log", tmpdir);
	assert_int_equal(mkdir(fallback, 0700), 0); /* root's */

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(100);
		if (setgroups(0, NULL) < 0 || setgid(OTHER_GID) < 0 || setuid(OTHER_UID) < 0)
			_exit(101);
		(void)unsetenv("RUNTIME_DIRECTORY");
		(void)unsetenv("XDG_RUNTIME_DIR");
		(void)unsetenv("NOTIFY_SOCKET");
		(void)unsetenv("LISTEN_FDS");
		(void)unsetenv("LISTEN_PID");
		(void)setenv("STATE_DIRECTORY", statedir, 1);
		execl(daemon, daemon, "-d", "--region", region, (char *)NULL);
		_exit(102);
	}
	for (int i = 0; i < 200 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(50 * 1000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		(void)kill(pid, SIGKILL);
		(void)waitpid(pid, &status, 0);
		(void)rmdir(fallback);
		fail_msg("pmemzerod started on a socket directory owned by root");
	}
	(void)rmdir(fallback);
	fd = open(log, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	buf[n > 0 ? n : 0] = '\0';
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 0);
	if (!strstr(buf, "Refusing the socket directory of /tmp/pmemzerod-65534/") ||
	    !strstr(buf, "owned by uid 0"))
		fail_msg("daemon log says: %s", buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_peer_of_another_uid_refused),
	    cmocka_unit_test(test_fallback_dir_checks),
	    cmocka_unit_test(test_daemon_socket_dir),
	    cmocka_unit_test(test_client_refuses_foreign_fallback),
	    cmocka_unit_test(test_daemon_refuses_foreign_fallback),
	};

	if (geteuid() != 0)
		fprintf(stderr, "*** not root: the tests that need uid 65534 are skipped ***\n");
	return cmocka_run_group_tests(tests, setup, teardown);
}
