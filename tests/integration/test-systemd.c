/* SPDX-License-Identifier: MIT */
/*
 * systemd integration of the real daemon, without systemd: a NOTIFY_SOCKET
 * of our own receives READY=1 (only once the socket accepts connections),
 * STATUS=, WATCHDOG=1 keep-alives and STOPPING=1 on SIGTERM; and socket
 * activation (LISTEN_FDS) serves on the socket it is handed without
 * unlinking it on exit.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB

static int bind_unix(const char *path, int type)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		fail_msg("bind %s: %s", path, strerror(errno));
	return fd;
}

/* Next datagram (NUL-terminated) within timeout_ms; false on timeout. */
static bool recv_notify(int fd, int timeout_ms, char *buf, size_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, timeout_ms) <= 0)
		return false;
	n = recv(fd, buf, len - 1, 0);
	assert_true(n >= 0);
	buf[n] = 0;
	return true;
}

static bool has_line(const char *msg, const char *line)
{
	size_t l = strlen(line);

	for (const char *p = msg; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, line, l) == 0 && (p[l] == '\n' || p[l] == 0))
			return true;
	return false;
}

static void test_notify(void **state)
{
	struct itest_env *e = *state;
	char npath[PATH_MAX], env[PATH_MAX + 32], msg[4096];
	bool ready = false, status = false, stopping = false;
	int nfd, watchdogs = 0;
	uint64_t deadline;

	itest_path(e, npath, sizeof(npath), "notify.sock");
	nfd = bind_unix(npath, SOCK_DGRAM);
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", npath);
	itest_daemon_env(e, env);
	itest_daemon_env(e, "WATCHDOG_USEC=1000000");
	itest_cli_region(e, "n", "32M");

	/* READY=1 must not come before the socket accepts connections */
	itest_daemon_spawn(e);
	deadline = itest_now_ms() + 10000;
	while (!ready && itest_now_ms() < deadline) {
		if (!recv_notify(nfd, 500, msg, sizeof(msg)))
			continue;
		if (has_line(msg, "READY=1")) {
			int fd = itest_raw_connect(e->sock);

			if (fd < 0)
				fail_msg("READY=1 sent but the socket does not accept: %s",
					 strerror(-fd));
			close(fd);
			ready = true;
		}
		if (strstr(msg, "STATUS="))
			status = true;
		if (has_line(msg, "STOPPING=1"))
			fail_msg("STOPPING=1 before READY=1");
	}
	if (!ready) {
		itest_dump_log(e, true);
		fail_msg("no READY=1 within 10 s");
	}
	/* WATCHDOG_USEC=1 s: keep-alives at least every second */
	deadline = itest_now_ms() + 2500;
	while (itest_now_ms() < deadline)
		if (recv_notify(nfd, 200, msg, sizeof(msg))) {
			if (has_line(msg, "WATCHDOG=1"))
				watchdogs++;
			if (strstr(msg, "STATUS="))
				status = true;
		}
	print_message("READY=1 seen, STATUS %s, %d WATCHDOG=1 in 2.5 s\n",
		      status ? "seen" : "not seen", watchdogs);
	assert_true(status);
	if (watchdogs < 2)
		fail_msg("only %d WATCHDOG=1 in 2.5 s with WATCHDOG_USEC=1000000", watchdogs);

	itest_daemon_stop(e); /* SIGTERM, exit 0; the datagrams stay queued */
	while (!stopping && recv_notify(nfd, 0, msg, sizeof(msg)))
		if (has_line(msg, "STOPPING=1"))
			stopping = true;
	if (!stopping)
		fail_msg("no STOPPING=1 after SIGTERM");
	close(nfd);
}

/*
 * Failed regions show in sd_notify STATUS: one refused at start (degraded
 * start), then one whose file is truncated while it runs.
 */
static void test_notify_failed_regions(void **state)
{
	struct itest_env *e = *state;
	char npath[PATH_MAX], env[PATH_MAX + 32], msg[4096], path[PATH_MAX];
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	bool degraded = false, two = false;
	uint64_t deadline;
	void *junk;
	int nfd;

	itest_path(e, npath, sizeof(npath), "notify.sock");
	nfd = bind_unix(npath, SOCK_DGRAM);
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", npath);
	itest_daemon_env(e, env);
	itest_cli_region(e, "bad", "32M");
	itest_cli_region(e, "good", "32M");
	itest_cli_region(e, "cut", "32M");
	/* Not a region: a foreign header. */
	itest_path(e, path, sizeof(path), "bad.img");
	junk = malloc(32 * MIB);
	assert_non_null(junk);
	itest_fill_pattern(junk, 32 * MIB, 5);
	itest_write_file(path, junk, 32 * MIB);
	free(junk);

	itest_daemon_start(e);
	deadline = itest_now_ms() + 5000;
	while (!degraded && itest_now_ms() < deadline)
		if (recv_notify(nfd, 200, msg, sizeof(msg)) &&
		    strstr(msg, "STATUS=DEGRADED: region 'bad' failed"))
			degraded = true;
	if (!degraded)
		fail_msg("no STATUS=DEGRADED naming region 'bad' after a degraded start");

	/* A fault while running: the status follows. */
	{
		struct itest_stat st;

		itest_wait_zeroed(e->sock, "cut", 10000, &st);
	}
	itest_path(e, path, sizeof(path), "cut.img");
	assert_int_equal(truncate(path, 4096), 0);
	{
		int fd = itest_raw_connect(e->sock);
		uint64_t lease;

		assert_true(fd >= 0);
		assert_int_equal(itest_raw_alloc(fd, "cut", MIB, true, &lease), -EIO);
		close(fd);
	}
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "good", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, MIB, 0, &a), 0);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	deadline = itest_now_ms() + 5000;
	while (!two && itest_now_ms() < deadline)
		if (recv_notify(nfd, 200, msg, sizeof(msg)) &&
		    strstr(msg, "STATUS=DEGRADED: 2 regions failed"))
			two = true;
	if (!two)
		fail_msg("no STATUS=DEGRADED with 2 failed regions after a truncation");
	itest_daemon_stop(e);
	close(nfd);
}

static void test_socket_activation(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct stat st;
	int lfd;

	itest_path(e, e->sock, sizeof(e->sock), "activated.sock");
	lfd = bind_unix(e->sock, SOCK_STREAM);
	assert_int_equal(listen(lfd, 16), 0);
	e->pass_listen_fd = true;
	e->listen_fd = lfd;
	itest_cli_region(e, "act", "32M");
	itest_daemon_start(e);

	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "act", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, MIB, 0, &a), 0);
	itest_assert_alloc_zero(r, a);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);

	/* the socket belongs to systemd: still there, still the same inode */
	if (stat(e->sock, &st) < 0)
		fail_msg("the daemon removed the activated socket %s on exit", e->sock);
	assert_true(S_ISSOCK(st.st_mode));
	/* and the next start on it works (systemd would re-activate) */
	itest_daemon_start(e);
	itest_daemon_stop(e);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_notify, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_notify_failed_regions, itest_setup,
					    itest_teardown),
	    cmocka_unit_test_setup_teardown(test_socket_activation, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
