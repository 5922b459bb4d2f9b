/* SPDX-License-Identifier: MIT */
/*
 * The identity race (daemon/server/peer.h): a client connects from cgroup
 * A and exits; its pid is then reused by a process in cgroup B.  Whoever
 * reads /proc/PID/cgroup by pid alone now finds B.
 *
 * The test makes that happen for real: it forces the reuse by writing
 * ns_last_pid (root) and moves the processes into two child cgroups of its
 * own (cgroup.procs).  Then, on the accepted socket:
 *
 *  - peer_identify (SO_PEERPIDFD) refuses the peer (-ESRCH) or names A --
 *    never B.  Asserted.
 *  - peer_identify with PEER_NO_PIDFD (the path of kernels before 6.5)
 *    names B.  Asserted too: it shows the race was really set up, so the
 *    first result is not vacuous, and it is the race the documentation
 *    owns up to.
 *
 * Twice: once with the peer gone before accept, once with the peer alive
 * at accept and the swap made inside peer_identify, between taking the pid
 * and reading its cgroup (peer_test_hook): there the pidfd path must
 * notice through its check after the read.
 *
 * And once more with the identifying process in a child pid namespace
 * (a daemon in a container without the host's): a live peer it has no pid
 * for is identified by uid alone, not refused as gone.
 *
 * What it does not prove: anything about a process that moves itself
 * between cgroups (it is the same process: whichever cgroup is read is
 * its own); or kernels other than the one it runs on.
 *
 * Needs root, a writable cgroup2 hierarchy and a writable ns_last_pid:
 * skipped with 77 otherwise (and when the pid cannot be reused in 200
 * tries on a busy machine).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peer.h"

#define CGROUP2_MAGIC 0x63677270
#define SKIP 77

static char base[2 * PATH_MAX], origin[2 * PATH_MAX], name_a[128], name_b[128];
static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		r = -errno;
	close(fd);
	return r;
}

static int enter(const char *dir)
{
	char path[3 * PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/cgroup.procs", dir);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return write_str(path, "0\n");
}

static int enter_child(const char *child)
{
	char dir[3 * PATH_MAX];

	(void)snprintf(dir, sizeof(dir), "%s/%s", base, child);
	return enter(dir);
}

static const char *setup(void)
{
	static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
	const char *root = NULL;
	char line[PATH_MAX], dir[3 * PATH_MAX];
	FILE *f;

	if (geteuid() != 0)
		return "needs root (cgroups, ns_last_pid)";
	for (size_t i = 0; i < 2 && !root; i++) {
		struct statfs sf;

		if (statfs(roots[i], &sf) == 0 && sf.f_type == CGROUP2_MAGIC)
			root = roots[i];
	}
	if (!root)
		return "no cgroup2 hierarchy";
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return "no /proc/self/cgroup";
	origin[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			(void)snprintf(origin, sizeof(origin), "%s%s", root,
				       strcmp(line + 3, "/") == 0 ? "" : line + 3);
		}
	fclose(f);
	if (!origin[0])
		return "no cgroup2 line in /proc/self/cgroup";
	if (access("/proc/sys/kernel/ns_last_pid", W_OK) < 0)
		return "/proc/sys/kernel/ns_last_pid is not writable";
	(void)snprintf(name_a, sizeof(name_a), "/pmemz-race-%d/a", (int)getpid());
	(void)snprintf(name_b, sizeof(name_b), "/pmemz-race-%d/b", (int)getpid());
	(void)snprintf(base, sizeof(base), "%s/pmemz-race-%d", root, (int)getpid());
	if (mkdir(base, 0755) < 0)
		return "the cgroup2 hierarchy is not writable";
	(void)snprintf(dir, sizeof(dir), "%s/a", base);
	if (mkdir(dir, 0755) < 0)
		return "cannot make child cgroups";
	(void)snprintf(dir, sizeof(dir), "%s/b", base);
	if (mkdir(dir, 0755) < 0)
		return "cannot make child cgroups";
	if (enter_child("a") < 0 || enter(origin) < 0)
		return "cannot move processes between cgroups";
	return NULL;
}

static void cleanup(void)
{
	char dir[3 * PATH_MAX];

	if (!base[0])
		return;
	(void)enter(origin);
	for (int i = 0; i < 2; i++) {
		(void)snprintf(dir, sizeof(dir), "%s/%s", base, i ? "b" : "a");
		for (int t = 0; t < 100 && rmdir(dir) < 0 && errno == EBUSY; t++)
			(void)usleep(20000);
	}
	(void)rmdir(base);
}

/*
 * A child with pid want, in cgroup b, parked until killed: its pid, or -1
 * when others took the pid first every time.
 */
static pid_t fork_with_pid(pid_t want)
{
	char last[32];

	(void)snprintf(last, sizeof(last), "%d", (int)want - 1);
	for (int attempt = 0; attempt < 200; attempt++) {
		int p[2];
		char ok;
		pid_t pid;

		if (pipe(p) < 0 || write_str("/proc/sys/kernel/ns_last_pid", last) < 0)
			return -1;
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			if (getpid() == want && enter_child("b") == 0)
				(void)!write(p[1], "1", 1);
			close(p[1]);
			for (;;)
				pause();
		}
		close(p[1]);
		if (pid > 0 && pid == want && read(p[0], &ok, 1) == 1) {
			close(p[0]);
			return pid;
		}
		close(p[0]);
		if (pid > 0) {
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
		}
	}
	return -1;
}

static int listen_abstract(struct sockaddr_un *sa, socklen_t *len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	(void)snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "pmemz-race-%d", (int)getpid());
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa->sun_path + 1));
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, *len) < 0 || listen(fd, 4) < 0)
		return -1;
	return fd;
}

/* A client in cgroup a: connects, says so, then waits to be killed (or exits at once). */
static pid_t client_a(const struct sockaddr_un *sa, socklen_t len, bool exit_at_once)
{
	int p[2];
	char ok;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		close(p[0]);
		if (enter_child("a") < 0 || fd < 0 ||
		    connect(fd, (const struct sockaddr *)sa, len) < 0)
			_exit(1);
		(void)!write(p[1], "1", 1);
		if (exit_at_once)
			_exit(0);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &ok, 1) != 1)
		pid = -1;
	close(p[0]);
	return pid;
}

static void check_identities(int fd, const char *when)
{
	struct peer p;
	int r;

	r = peer_identify(fd, 0, &p);
	CHECK(r == -ESRCH || (r == 0 && p.cgroup && strcmp(p.cgroup, name_a) == 0),
	      "%s: pidfd identity: r=%d cgroup '%s' (%s), want -ESRCH or '%s'", when, r,
	      r == 0 && p.cgroup ? p.cgroup : "-", r == 0 ? peer_how_name(p.how) : "-", name_a);
	CHECK(r != 0 || !p.cgroup || strcmp(p.cgroup, name_b) != 0,
	      "%s: the connection was charged to the pid's new owner '%s'", when, name_b);
	printf("%s: SO_PEERPIDFD path: %s%s\n", when, r == 0 ? "identified as " : strerror(-r),
	       r == 0 && p.cgroup ? p.cgroup : "");
	if (r == 0)
		peer_done(&p);
}

static void check_fallback(int fd, const char *when)
{
	struct peer p;
	int r = peer_identify(fd, PEER_NO_PIDFD, &p);

	CHECK(r == 0 && p.cgroup && strcmp(p.cgroup, name_b) == 0,
	      "%s: the fallback should show the race (cgroup '%s'), got r=%d '%s'", when, name_b, r,
	      r == 0 && p.cgroup ? p.cgroup : "-");
	printf("%s: fallback (SO_PEERCRED pid) path: %s (the documented race)\n", when,
	       r == 0 && p.cgroup ? p.cgroup : "?");
	if (r == 0)
		peer_done(&p);
}

/* The peer exited and its pid is B's before the daemon accepts. */
static int race_before_accept(int lfd, const struct sockaddr_un *sa, socklen_t len)
{
	pid_t a = client_a(sa, len, true), b;
	int fd;

	if (a < 0)
		return -1;
	(void)waitpid(a, NULL, 0);
	b = fork_with_pid(a);
	if (b < 0)
		return SKIP;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	check_identities(fd, "gone before accept");
	check_fallback(fd, "gone before accept");
	close(fd);
	(void)kill(b, SIGKILL);
	(void)waitpid(b, NULL, 0);
	return 0;
}

struct hook_state {
	pid_t victim, replacement;
	bool done;
};

/* Between the pid and the cgroup read: the peer dies and B takes its pid. */
static void swap_hook(pid_t pid, void *arg)
{
	struct hook_state *h = arg;

	if (h->done || pid != h->victim)
		return;
	h->done = true;
	(void)kill(h->victim, SIGKILL);
	(void)waitpid(h->victim, NULL, 0);
	h->replacement = fork_with_pid(pid);
}

static int race_inside_identify(int lfd, const struct sockaddr_un *sa, socklen_t len, bool pidfd)
{
	struct hook_state h = {0};
	pid_t a = client_a(sa, len, false);
	int fd;

	if (a < 0)
		return -1;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	h.victim = a;
	peer_test_hook = swap_hook;
	peer_test_hook_arg = &h;
	if (pidfd)
		check_identities(fd, "swapped during identify");
	else
		check_fallback(fd, "swapped during identify");
	peer_test_hook = NULL;
	close(fd);
	if (!h.done) {
		(void)kill(a, SIGKILL);
		(void)waitpid(a, NULL, 0);
	}
	if (h.replacement > 0) {
		(void)kill(h.replacement, SIGKILL);
		(void)waitpid(h.replacement, NULL, 0);
	}
	CHECK(h.done, "the hook did not run");
	return h.replacement < 0 ? SKIP : 0;
}

/*
 * A daemon in a child pid namespace (a container without the host's pid
 * namespace) has no pid for a peer outside it: the peer is alive, so it is
 * identified by uid without pid or cgroup -- not refused as if it had gone.
 */
static int unseen_peer(int lfd, const struct sockaddr_un *sa, socklen_t len)
{
	int c, status;
	pid_t outer;

	outer = fork();
	if (outer == 0) {
		pid_t inner;

		if (unshare(CLONE_NEWPID) < 0)
			_exit(77);
		inner = fork(); /* pid 1 of the new namespace */
		if (inner == 0) {
			struct peer p;
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			int r = peer_identify(fd, 0, &p);

			if (r != 0 || p.pid != 0 || p.how != PEER_HOW_NONE || p.cgroup ||
			    p.uid != geteuid()) {
				fprintf(stderr, "unseen peer: r=%d pid %d how %s cgroup %s\n", r,
					(int)p.pid, r == 0 ? peer_how_name(p.how) : "-",
					r == 0 && p.cgroup ? p.cgroup : "-");
				_exit(1);
			}
			_exit(0);
		}
		if (inner < 0 || waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
			_exit(1);
		_exit(WEXITSTATUS(status));
	}
	c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (outer < 0 || c < 0 || connect(c, (const struct sockaddr *)sa, len) < 0)
		return -1;
	if (waitpid(outer, &status, 0) != outer || !WIFEXITED(status))
		return -1;
	close(c);
	if (WEXITSTATUS(status) == 77)
		return SKIP;
	CHECK(WEXITSTATUS(status) == 0, "a live peer the daemon cannot name was refused");
	printf("peer outside the daemon's pid namespace: %s\n",
	       WEXITSTATUS(status) == 0 ? "identified by uid, no pid or cgroup" : "refused");
	return 0;
}

int main(void)
{
	const char *why = setup();
	struct sockaddr_un sa;
	socklen_t len;
	int lfd, r;

	if (why) {
		printf("SKIP: %s\n", why);
		cleanup();
		return SKIP;
	}
	lfd = listen_abstract(&sa, &len);
	if (lfd < 0) {
		perror("listen");
		cleanup();
		return 1;
	}
	r = race_before_accept(lfd, &sa, len);
	if (r == 0)
		r = race_inside_identify(lfd, &sa, len, true);
	if (r == 0)
		r = race_inside_identify(lfd, &sa, len, false);
	if (r == 0)
		r = unseen_peer(lfd, &sa, len);
	close(lfd);
	cleanup();
	if (r == SKIP) {
		printf("SKIP: could not get the pid reused (a busy machine)\n");
		return SKIP;
	}
	if (r < 0 || failures) {
		fprintf(stderr, "%d failure(s)\n", failures ? failures : 1);
		return 1;
	}
	printf("ok\n");
	return 0;
}
