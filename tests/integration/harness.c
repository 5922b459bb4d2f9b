/* SPDX-License-Identifier: MIT */
/* Integration-test harness: see harness.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#ifndef PMEMZ_DAEMON_PATH
#define PMEMZ_DAEMON_PATH "pmemzerod"
#endif
#ifndef PMEMZ_CTL_PATH
#define PMEMZ_CTL_PATH "pmemzctl"
#endif

/* Daemons started by this process, killed at exit if a test bailed out. */
static pid_t live_daemons[16];

static void live_add(pid_t pid)
{
	for (size_t i = 0; i < sizeof(live_daemons) / sizeof(live_daemons[0]); i++)
		if (!live_daemons[i]) {
			live_daemons[i] = pid;
			return;
		}
}

static void live_del(pid_t pid)
{
	for (size_t i = 0; i < sizeof(live_daemons) / sizeof(live_daemons[0]); i++)
		if (live_daemons[i] == pid)
			live_daemons[i] = 0;
}

static void live_kill_all(void)
{
	for (size_t i = 0; i < sizeof(live_daemons) / sizeof(live_daemons[0]); i++)
		if (live_daemons[i] > 0) {
			(void)kill(live_daemons[i], SIGKILL);
			(void)waitpid(live_daemons[i], NULL, 0);
			live_daemons[i] = 0;
		}
}

const char *itest_daemon_path(void)
{
	const char *p = getenv("PMEMZ_ITEST_DAEMON");

	return p && *p ? p : PMEMZ_DAEMON_PATH;
}

const char *itest_ctl_path(void)
{
	const char *p = getenv("PMEMZ_ITEST_CTL");

	return p && *p ? p : PMEMZ_CTL_PATH;
}

void itest_msleep(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

uint64_t itest_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int itest_skip(const char *why)
{
	fprintf(stderr,
		"\n"
		"************************************************************\n"
		"*** SKIP %s: %s\n"
		"************************************************************\n\n",
		program_invocation_short_name, why);
	return ITEST_SKIP;
}

void itest_path(const struct itest_env *e, char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", e->dir, name);

	assert_true(n > 0 && (size_t)n < len);
}

void itest_env_init(struct itest_env *e, const char *name)
{
	static bool atexit_done;
	char tmpl[PATH_MAX];

	if (!atexit_done) {
		atexit(live_kill_all);
		atexit_done = true;
	}
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(tmpl, sizeof(tmpl), "/dev/shm/pmemz-%s-XXXXXX", name);
	if (!mkdtemp(tmpl))
		fail_msg("mkdtemp %s: %s", tmpl, strerror(errno));
	snprintf(e->dir, sizeof(e->dir), "%s", tmpl);
	itest_path(e, e->sock, sizeof(e->sock), "d.sock");
	assert_true(strlen(e->sock) < sizeof(((struct sockaddr_un *)0)->sun_path));
	itest_path(e, e->log, sizeof(e->log), "daemon.log");
	itest_path(e, e->conf, sizeof(e->conf), "pmemzerod.conf");
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return 0;
}

void itest_env_cleanup(struct itest_env *e)
{
	if (e->pid > 0) {
		(void)kill(e->pid, SIGKILL);
		(void)waitpid(e->pid, NULL, 0);
		live_del(e->pid);
		e->pid = 0;
	}
	for (int i = 0; i < e->n_args; i++)
		free(e->args[i]);
	e->n_args = 0;
	for (int i = 0; i < e->n_env; i++)
		free(e->env[i]);
	e->n_env = 0;
	if (e->dir[0] && !getenv("PMEMZ_ITEST_KEEP"))
		(void)nftw(e->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	else if (e->dir[0])
		fprintf(stderr, "itest: keeping %s\n", e->dir);
	e->dir[0] = 0;
}

int itest_setup(void **state)
{
	struct itest_env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	itest_env_init(e, program_invocation_short_name);
	*state = e;
	return 0;
}

int itest_teardown(void **state)
{
	struct itest_env *e = *state;
	int r = 0;

	if (!e)
		return 0;
	if (e->pid > 0) {
		/* A daemon still running at the end of a test must stop cleanly. */
		int status;
		uint64_t deadline = itest_now_ms() + ITEST_STOP_TIMEOUT_MS;

		(void)kill(e->pid, SIGTERM);
		for (;;) {
			pid_t p = waitpid(e->pid, &status, WNOHANG);

			if (p == e->pid) {
				live_del(e->pid);
				e->pid = 0;
				if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
					itest_dump_log(e, true);
					fprintf(stderr, "teardown: daemon ended with status 0x%x\n",
						status);
					r = -1;
				} else {
					char *log = itest_read_log(e);

					if (strstr(log, "Sanitizer") ||
					    strstr(log, "runtime error:")) {
						itest_dump_log(e, true);
						r = -1;
					}
					free(log);
				}
				break;
			}
			if (itest_now_ms() > deadline) {
				itest_dump_log(e, true);
				fprintf(stderr, "teardown: daemon ignored SIGTERM\n");
				r = -1;
				break;
			}
			itest_msleep(10);
		}
	}
	itest_env_cleanup(e);
	free(e);
	*state = NULL;
	return r;
}

void itest_write_conf(struct itest_env *e, const char *fmt, ...)
{
	va_list ap;
	FILE *f = fopen(e->conf, "w");

	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	assert_int_equal(fclose(f), 0);
	e->has_conf = true;
}

void itest_daemon_arg(struct itest_env *e, const char *arg)
{
	assert_true(e->n_args < ITEST_MAX_ARGS);
	e->args[e->n_args] = strdup(arg);
	assert_non_null(e->args[e->n_args]);
	e->n_args++;
}

void itest_daemon_env(struct itest_env *e, const char *kv)
{
	assert_true(e->n_env < 8);
	e->env[e->n_env] = strdup(kv);
	assert_non_null(e->env[e->n_env]);
	e->n_env++;
}

void itest_cli_region(struct itest_env *e, const char *name, const char *size)
{
	char spec[PATH_MAX + 128];

	snprintf(spec, sizeof(spec), "%s=%s/%s.img,size=%s,extent=1M", name, e->dir, name, size);
	itest_daemon_arg(e, "--region");
	itest_daemon_arg(e, spec);
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

void itest_dump_log(const struct itest_env *e, bool since_start)
{
	FILE *f = fopen(e->log, "r");
	char line[4096];

	fprintf(stderr, "----- pmemzerod log (%s)%s -----\n", e->log,
		since_start ? " since the last start" : "");
	if (!f) {
		fprintf(stderr, "(no log: %s)\n", strerror(errno));
		return;
	}
	if (since_start)
		(void)fseek(f, e->log_mark, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
	fprintf(stderr, "----- end of log -----\n");
}

char *itest_read_log(const struct itest_env *e)
{
	size_t len;
	char *all = itest_read_file(e->log, &len);
	char *s;
	size_t from = (size_t)e->log_mark <= len ? (size_t)e->log_mark : len;

	s = malloc(len - from + 1);
	assert_non_null(s);
	memcpy(s, all + from, len - from);
	s[len - from] = 0;
	free(all);
	return s;
}

/* Sanitizer reports in the daemon's log since its last start fail the test. */
static void check_log_clean(const struct itest_env *e)
{
	static const char *const bad[] = {"AddressSanitizer", "LeakSanitizer",
					  "UndefinedBehaviorSanitizer", "runtime error:"};
	char *log = itest_read_log(e);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (strstr(log, bad[i])) {
			itest_dump_log(e, true);
			free(log);
			fail_msg("the daemon log has a sanitizer report ('%s')", bad[i]);
		}
	free(log);
}

/*
 * Ready = a HELLO round trip works (a bare connect is not enough: with
 * socket activation the listening socket exists before the daemon runs).
 */
static bool sock_accepts(const char *path)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__HelloReq h = PMEMZ__HELLO_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int fd = itest_raw_connect(path);
	bool ok;

	if (fd < 0)
		return false;
	h.client_name = "itest-probe";
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 1;
	req.op_case = PMEMZ__REQUEST__OP_HELLO;
	req.hello = &h;
	ok = itest_raw_send(fd, &req) == 0 && itest_raw_recv(fd, 250, &resp, NULL) == 0 &&
	     resp->id == 1 && resp->status == 0;
	itest_resp_free(resp);
	close(fd);
	return ok;
}

void itest_daemon_spawn(struct itest_env *e)
{
	char *argv[ITEST_MAX_ARGS + 12];
	int n = 0;
	pid_t pid;

	assert_int_equal(e->pid, 0);
	argv[n++] = UNCONST(itest_daemon_path());
	argv[n++] = "-d";
	argv[n++] = "--socket";
	argv[n++] = e->sock;
	if (e->has_conf) {
		argv[n++] = "-c";
		argv[n++] = e->conf;
	}
	if (getenv("PMEMZ_ITEST_VERBOSE"))
		argv[n++] = "-v";
	for (int i = 0; i < e->n_args; i++)
		argv[n++] = e->args[i];
	argv[n] = NULL;

	e->log_mark = file_size(e->log);
	{
		FILE *f = fopen(e->log, "a");

		assert_non_null(f);
		fprintf(f, "=== itest: starting");
		for (int i = 0; i < n; i++)
			fprintf(f, " %s", argv[i]);
		fprintf(f, " (PMEM2_FORCE_GRANULARITY=%s)\n",
			getenv("PMEM2_FORCE_GRANULARITY") ? getenv("PMEM2_FORCE_GRANULARITY")
							  : "unset");
		fclose(f);
	}

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(e->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd < 0 || nul < 0)
			_exit(126);
		(void)dup2(nul, 0);
		(void)dup2(fd, 1);
		(void)dup2(fd, 2);
		(void)setenv("STATE_DIRECTORY", e->dir, 1);
		(void)unsetenv("NOTIFY_SOCKET");
		(void)unsetenv("LISTEN_FDS");
		(void)unsetenv("LISTEN_PID");
		(void)unsetenv("LISTEN_FDNAMES");
		(void)unsetenv("WATCHDOG_USEC");
		(void)unsetenv("JOURNAL_STREAM");
		for (int i = 0; i < e->n_env; i++)
			(void)putenv(e->env[i]);
		if (e->nofile_soft || e->nofile_hard) {
			struct rlimit rl;

			if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
				_exit(126);
			if (e->nofile_soft)
				rl.rlim_cur = e->nofile_soft;
			if (e->nofile_hard)
				rl.rlim_max = e->nofile_hard;
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
				fprintf(stderr, "itest: setrlimit(RLIMIT_NOFILE): %s\n",
					strerror(errno));
				_exit(126);
			}
		}
		if (e->pass_listen_fd) {
			char pidbuf[32];

			if (dup2(e->listen_fd, 3) < 0 || fcntl(3, F_SETFD, 0) < 0)
				_exit(125);
			snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
			(void)setenv("LISTEN_FDS", "1", 1);
			(void)setenv("LISTEN_PID", pidbuf, 1);
		}
		execv(argv[0], argv);
		fprintf(stderr, "itest: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	e->pid = pid;
	live_add(pid);
}

int itest_daemon_expect_exit(struct itest_env *e, int timeout_ms)
{
	uint64_t deadline;
	pid_t pid;
	int status;

	itest_daemon_spawn(e);
	pid = e->pid;
	deadline = itest_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		pid_t p = waitpid(pid, &status, WNOHANG);

		if (p == pid)
			break;
		if (itest_now_ms() > deadline) {
			itest_dump_log(e, true);
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			live_del(pid);
			e->pid = 0;
			fail_msg(
			    "pmemzerod still running %d ms after start; it should have refused",
			    timeout_ms);
		}
		itest_msleep(10);
	}
	live_del(pid);
	e->pid = 0;
	check_log_clean(e);
	return status;
}

bool itest_daemon_try_start(struct itest_env *e, int timeout_ms, int *status)
{
	uint64_t deadline;
	pid_t pid;

	itest_daemon_spawn(e);
	pid = e->pid;
	deadline = itest_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		pid_t p = waitpid(pid, status, WNOHANG);

		if (p == pid) {
			live_del(pid);
			e->pid = 0;
			return false;
		}
		if (sock_accepts(e->sock))
			return true;
		if (itest_now_ms() > deadline) {
			itest_dump_log(e, true);
			fail_msg("pmemzerod neither accepted connections on %s nor exited within "
				 "%d ms",
				 e->sock, timeout_ms);
		}
		itest_msleep(10);
	}
}

void itest_daemon_start(struct itest_env *e)
{
	int status = 0;

	if (!itest_daemon_try_start(e, ITEST_START_TIMEOUT_MS, &status)) {
		itest_dump_log(e, true);
		fail_msg("pmemzerod exited during start-up (%s %d)",
			 WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
}

void itest_daemon_stop(struct itest_env *e)
{
	uint64_t deadline = itest_now_ms() + ITEST_STOP_TIMEOUT_MS;
	pid_t pid = e->pid;
	int status;

	assert_true(pid > 0);
	assert_int_equal(kill(pid, SIGTERM), 0);
	for (;;) {
		pid_t p = waitpid(pid, &status, WNOHANG);

		if (p == pid)
			break;
		if (itest_now_ms() > deadline) {
			itest_dump_log(e, true);
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			live_del(pid);
			e->pid = 0;
			fail_msg("pmemzerod did not exit within %d ms of SIGTERM",
				 ITEST_STOP_TIMEOUT_MS);
		}
		itest_msleep(10);
	}
	live_del(pid);
	e->pid = 0;
	check_log_clean(e);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		itest_dump_log(e, true);
		fail_msg("pmemzerod did not exit 0 after SIGTERM (%s %d)",
			 WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
}

void itest_daemon_kill(struct itest_env *e)
{
	assert_true(e->pid > 0);
	assert_int_equal(kill(e->pid, SIGKILL), 0);
	assert_int_equal(waitpid(e->pid, NULL, 0), e->pid);
	live_del(e->pid);
	e->pid = 0;
}

static void append(char **buf, size_t *len, const char *data, size_t n)
{
	char *nb = realloc(*buf, *len + n + 1);

	assert_non_null(nb);
	memcpy(nb + *len, data, n);
	*len += n;
	nb[*len] = 0;
	*buf = nb;
}

int itest_run(char *const argv[], int timeout_ms, char **out, char **err)
{
	int po[2], pe[2], status;
	char *ob = NULL, *eb = NULL;
	size_t ol = 0, el = 0;
	uint64_t deadline = itest_now_ms() + (uint64_t)timeout_ms;
	pid_t pid;
	bool o_open = true, e_open = true;

	assert_int_equal(pipe2(po, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pe, O_CLOEXEC), 0);
	append(&ob, &ol, "", 0);
	append(&eb, &el, "", 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		(void)dup2(nul, 0);
		(void)dup2(po[1], 1);
		(void)dup2(pe[1], 2);
		execv(argv[0], argv);
		fprintf(stderr, "itest: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	while (o_open || e_open) {
		struct pollfd pfd[2] = {{.fd = o_open ? po[0] : -1, .events = POLLIN},
					{.fd = e_open ? pe[0] : -1, .events = POLLIN}};
		int64_t left = (int64_t)(deadline - itest_now_ms());
		char buf[4096];

		if (left <= 0) {
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			fail_msg("%s did not finish within %d ms; stdout: %s stderr: %s", argv[0],
				 timeout_ms, ob, eb);
		}
		if (poll(pfd, 2, (int)left) < 0 && errno != EINTR)
			fail_msg("poll: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(pfd[i].fd, buf, sizeof(buf));

			if (n > 0) {
				if (i == 0)
					append(&ob, &ol, buf, (size_t)n);
				else
					append(&eb, &el, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				if (i == 0)
					o_open = false;
				else
					e_open = false;
			}
		}
	}
	close(po[0]);
	close(pe[0]);
	for (;;) {
		pid_t p = waitpid(pid, &status, WNOHANG);

		if (p == pid)
			break;
		if (itest_now_ms() > deadline) {
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			fail_msg("%s did not exit within %d ms", argv[0], timeout_ms);
		}
		itest_msleep(5);
	}
	if (out)
		*out = ob;
	else
		free(ob);
	if (err)
		*err = eb;
	else
		free(eb);
	return status;
}

void *itest_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t got = 0;

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	*len = got;
	return buf;
}

void itest_write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t done = 0;

	if (fd < 0)
		fail_msg("create %s: %s", path, strerror(errno));
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		assert_true(n > 0);
		done += (size_t)n;
	}
	assert_int_equal(close(fd), 0);
}

size_t itest_first_nonzero(const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i = 0;

	/* word-wise fast path */
	for (; i < len && ((uintptr_t)(b + i) & 7); i++)
		if (b[i])
			return i;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		if (w)
			break;
	}
	for (; i < len; i++)
		if (b[i])
			return i;
	return (size_t)-1;
}

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t pattern_word(uint64_t seed, size_t word)
{
	/* never zero, so a zeroed word can never match */
	return mix64(seed * 0x100000001b3ull + word) | 1;
}

void itest_fill_pattern(void *p, size_t len, uint64_t seed)
{
	unsigned char *b = p;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(seed, i / 8);

		memcpy(b + i, &w, 8);
	}
	for (; i < len; i++)
		b[i] = 0xa5;
}

size_t itest_check_pattern(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(seed, i / 8), v;

		memcpy(&v, b + i, 8);
		if (v != w)
			return i;
	}
	for (; i < len; i++)
		if (b[i] != 0xa5)
			return i;
	return (size_t)-1;
}

void itest_assert_alloc_in_region(const struct pmemz_region *r, const struct pmemz_alloc *a)
{
	const char *base = pmemz_region_address(r);
	size_t rsize = pmemz_region_size(r), esz = pmemz_region_extent_size(r);
	size_t n = pmemz_alloc_count(a), total = 0;

	assert_non_null(base);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		const char *p = pmemz_alloc_range(a, i, &len);

		assert_non_null(p);
		assert_true(len > 0);
		assert_true(p >= base && p + len <= base + rsize);
		assert_int_equal(len % esz, 0);
		assert_int_equal((size_t)(p - base) % esz, 0);
		/* ranges are disjoint */
		for (size_t j = 0; j < i; j++) {
			size_t l2 = 0;
			const char *q = pmemz_alloc_range(a, j, &l2);

			assert_true(p + len <= q || q + l2 <= p);
		}
		total += len;
	}
	assert_int_equal(total, pmemz_alloc_size(a));
	{
		size_t dummy = 0;

		assert_null(pmemz_alloc_range(a, n, &dummy)); /* past the end */
	}
}

void itest_assert_alloc_zero(const struct pmemz_region *r, const struct pmemz_alloc *a)
{
	const char *base = pmemz_region_address(r);

	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len = 0;
		const char *p = pmemz_alloc_range(a, i, &len);
		size_t off = itest_first_nonzero(p, len);

		if (off != (size_t)-1)
			fail_msg("I1 violated: range %zu (region offset %zu, %zu bytes) has a "
				 "non-zero byte 0x%02x at +%zu (region offset %zu)",
				 i, (size_t)(p - base), len, (unsigned char)p[off], off,
				 (size_t)(p - base) + off);
	}
}

void itest_wait_child_ok(pid_t pid, int timeout_ms, const char *what)
{
	uint64_t deadline = itest_now_ms() + (uint64_t)timeout_ms;
	int status;

	for (;;) {
		pid_t p = waitpid(pid, &status, WNOHANG);

		if (p == pid)
			break;
		if (itest_now_ms() > deadline) {
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			fail_msg("%s: child did not finish within %d ms", what, timeout_ms);
		}
		itest_msleep(5);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s: child failed (%s %d)", what, WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

void itest_fill_alloc(const struct pmemz_region *r, const struct pmemz_alloc *a, uint64_t seed)
{
	const char *base = pmemz_region_address(r);
	size_t esz = pmemz_region_extent_size(r);

	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len = 0;
		char *p = pmemz_alloc_range(a, i, &len);

		for (size_t o = 0; o < len; o += esz) {
			uint64_t roff = (uint64_t)(p + o - base);

			itest_fill_pattern(p + o, esz, seed * 0x9e3779b97f4a7c15ull + roff);
		}
	}
}

void itest_check_alloc(const struct pmemz_region *r, const struct pmemz_alloc *a, uint64_t seed)
{
	const char *base = pmemz_region_address(r);
	size_t esz = pmemz_region_extent_size(r);

	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len = 0;
		const char *p = pmemz_alloc_range(a, i, &len);

		for (size_t o = 0; o < len; o += esz) {
			uint64_t roff = (uint64_t)(p + o - base);
			size_t bad =
			    itest_check_pattern(p + o, esz, seed * 0x9e3779b97f4a7c15ull + roff);

			if (bad != (size_t)-1)
				fail_msg("data lost: extent at region offset %llu differs from "
					 "the written pattern at +%zu (byte 0x%02x)",
					 (unsigned long long)roff, bad, (unsigned char)p[o + bad]);
		}
	}
}

void itest_persist_alloc(struct pmemz_region *r, const struct pmemz_alloc *a)
{
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len = 0;
		void *p = pmemz_alloc_range(a, i, &len);

		assert_int_equal(pmemz_persist(r, p, len), 0);
	}
}

uint8_t *itest_alloc_bitmap(const struct pmemz_region *r, const struct pmemz_alloc *a)
{
	const char *base = pmemz_region_address(r);
	size_t esz = pmemz_region_extent_size(r);
	size_t nbits = pmemz_region_size(r) / esz + 1;
	uint8_t *bits = calloc(nbits, 1);

	assert_non_null(bits);
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len = 0;
		const char *p = pmemz_alloc_range(a, i, &len);

		for (size_t o = 0; o < len; o += esz) {
			size_t idx = (size_t)(p + o - base) / esz;

			assert_true(idx < nbits);
			if (bits[idx])
				fail_msg("extent at region offset %zu appears twice in one "
					 "allocation",
					 idx * esz);
			bits[idx] = 1;
		}
	}
	return bits;
}

static uint64_t proc_field(pid_t pid, const char *file, const char *key, unsigned skip)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		const char *p = line + strlen(key);
		unsigned long long v;

		if (strncmp(line, key, strlen(key)) != 0)
			continue;
		for (unsigned i = 0; i < skip; i++) {
			p += strspn(p, " \t");
			p += strcspn(p, " \t");
		}
		if (sscanf(p, " %llu", &v) == 1) {
			fclose(f);
			return v;
		}
	}
	fclose(f);
	fail_msg("no '%s' in %s", key, path);
	return 0;
}

uint64_t itest_rss_anon_kib(pid_t pid)
{
	return proc_field(pid, "status", "RssAnon:", 0);
}

uint64_t itest_nofile_soft(pid_t pid)
{
	return proc_field(pid, "limits", "Max open files", 0);
}
