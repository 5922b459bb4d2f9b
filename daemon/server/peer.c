/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "peer.h"
#include "util.h"

/*
 * Debian 12's headers predate these; the values are the kernel's ABI
 * (include/uapi/asm-generic/socket.h, include/uapi/linux/pidfd.h).
 */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* struct pidfd_info as first published (Linux 6.13, PIDFD_INFO_SIZE_VER0 = 64 bytes). */
struct peer_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
_Static_assert(sizeof(struct peer_pidfd_info) == 64, "PIDFD_INFO_SIZE_VER0");
#define PEER_PIDFD_INFO_CGROUPID (1ull << 2)
/* _IOWR(PIDFS_IOCTL_MAGIC, 11, struct pidfd_info): the size in the number picks the version. */
#define PEER_PIDFD_GET_INFO _IOWR(0xFF, 11, struct peer_pidfd_info)

void (*peer_test_hook)(pid_t pid, void *arg);
void *peer_test_hook_arg;

const char *peer_how_name(enum peer_how how)
{
	switch (how) {
	case PEER_HOW_PID:
		return "pid (racy)";
	case PEER_HOW_PIDFD:
		return "pidfd";
	case PEER_HOW_PIDFD_INFO:
		return "pidfd-info";
	case PEER_HOW_NONE:
		break;
	}
	return "none";
}

/* SO_PEERGROUPS: start with room for this many groups, take at most that many. */
#define PEER_GROUPS_START 64u
#define PEER_GROUPS_MAX 65536u

void peer_done(struct peer *p)
{
	free(p->cgroup);
	p->cgroup = NULL;
	free(p->groups);
	p->groups = NULL;
	p->n_groups = 0;
}

bool peer_is_admin(const struct daemon_conf *conf, const struct peer *p)
{
	bool admin = p->uid == 0 || (conf->has_admin_gid && p->gid == conf->admin_gid);

	for (size_t i = 0; !admin && conf->has_admin_gid && i < p->n_groups; i++)
		admin = p->groups[i] == conf->admin_gid;
	return admin && conf_access_admin_cgroup(conf, p->cgroup);
}

/* Supplementary groups of the peer; failure only loses group-based access. */
static void peer_get_groups(int fd, struct peer *p)
{
	socklen_t len = PEER_GROUPS_START * sizeof(gid_t);

	for (int attempt = 0; attempt < 2; attempt++) {
		gid_t *g = malloc(len);
		socklen_t got = len;

		if (!g)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &got) == 0) {
			p->groups = g;
			p->n_groups = got / sizeof(gid_t);
			return;
		}
		free(g);
		if (errno != ERANGE || got <= len || got > PEER_GROUPS_MAX * sizeof(gid_t)) {
			(void)log_debug_errno(errno, "SO_PEERGROUPS of pid %d: %m", (int)p->pid);
			return;
		}
		len = got; /* the kernel told us the size it needs */
	}
}

/* A small /proc file, NUL-terminated; -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off + 1 < size) {
		ssize_t n = read(fd, buf + off, size - 1 - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	return (ssize_t)off;
}

char *peer_parse_cgroup(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (le - p >= 4 && memcmp(p, "0::", 3) == 0 && p[3] == '/' &&
		    (size_t)(le - p - 3) < PEER_CGROUP_MAX && !memchr(p, '\0', (size_t)(le - p)))
			return strndup(p + 3, (size_t)(le - p - 3));
		p = le + 1;
	}
	return NULL;
}

static char *read_cgroup(pid_t pid)
{
	char path[64], buf[PEER_CGROUP_MAX + 1024];
	ssize_t n;

	(void)snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	n = read_small(path, buf, sizeof(buf));
	return n > 0 ? peer_parse_cgroup(buf, (size_t)n) : NULL;
}

/*
 * fdinfo's "Pid:" of a pidfd: the pid; -1 when the process is gone; 0 when
 * it lives in a pid namespace the daemon does not see (or fdinfo says nothing).
 */
static pid_t pidfd_fdinfo_pid(int pidfd)
{
	char path[64], buf[2048];
	const char *s;

	(void)snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	s = strstr(buf, "\nPid:");
	if (!s)
		return 0;
	return (pid_t)strtol(s + 5, NULL, 10);
}

/*
 * 0: alive (EPERM, for a daemon that is not root, still says it exists);
 * -ESRCH: gone; -EINVAL: in a pid namespace the daemon does not see.
 */
static int pidfd_alive(int pidfd)
{
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 || errno == EPERM)
		return 0;
	return errno == EINVAL ? -EINVAL : -ESRCH;
}

/* A live peer the daemon has no pid for (another pid namespace): no cgroup either. */
static int identify_unseen(struct peer *p)
{
	p->pid = 0;
	p->how = PEER_HOW_NONE;
	return 0;
}

/*
 * The cgroup2 mount (the unified hierarchy of a hybrid host, or
 * /sys/fs/cgroup); NULL.  Looked up once: mounts do not move under a
 * running daemon.
 */
static const char *cgroup2_root(void)
{
	static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
	static const char *root;
	static bool looked;

	if (looked)
		return root;
	looked = true;
	for (size_t i = 0; i < ARRAY_SIZE(roots) && !root; i++) {
		struct statfs sf;

		if (statfs(roots[i], &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
			root = roots[i];
	}
	return root;
}

/* Does path name the cgroup whose inode is id?  true when it cannot be told. */
static bool cgroup_matches_id(const char *path, uint64_t id)
{
	const char *root = cgroup2_root();
	char full[PEER_CGROUP_MAX + 64];
	struct stat st;

	if (!root || !id)
		return true;
	(void)snprintf(full, sizeof(full), "%s%s", root, path);
	if (stat(full, &st) < 0)
		return true; /* another cgroup namespace, or gone: no evidence either way */
	return (uint64_t)st.st_ino == id;
}

/*
 * With the peer's pidfd: pid, cgroup, then proof that the process still
 * lives (a live process keeps its pid, so the cgroup read was its own).
 */
static int identify_pidfd(int pidfd, struct peer *p)
{
	/* A process that moves between cgroups while we read: try again, then take the read. */
	for (int attempt = 0; attempt < 3; attempt++) {
		struct peer_pidfd_info a = {.mask = PEER_PIDFD_INFO_CGROUPID}, b = a;
		bool info = ioctl(pidfd, PEER_PIDFD_GET_INFO, &a) == 0;
		pid_t pid;
		char *cg;

		/*
		 * PIDFD_GET_INFO: EREMOTE for a peer in a pid namespace the
		 * daemon does not see; ESRCH for one that is gone (and, before
		 * 6.18, for the unseen too: pidfd_send_signal tells them apart).
		 */
		if (!info && errno == EREMOTE)
			return identify_unseen(p);
		if (!info && errno == ESRCH && pidfd_alive(pidfd) == -ESRCH)
			return -ESRCH;
		pid = info ? (pid_t)a.pid : pidfd_fdinfo_pid(pidfd);
		if (pid <= 0)
			return pidfd_alive(pidfd) == -ESRCH ? -ESRCH : identify_unseen(p);
		if (peer_test_hook)
			peer_test_hook(pid, peer_test_hook_arg);
		cg = read_cgroup(pid);
		if (info) {
			if (ioctl(pidfd, PEER_PIDFD_GET_INFO, &b) < 0 || (pid_t)b.pid != pid) {
				free(cg);
				return -ESRCH;
			}
		} else if (pidfd_alive(pidfd) < 0 || pidfd_fdinfo_pid(pidfd) != pid) {
			free(cg);
			return -ESRCH;
		}
		p->pid = pid;
		if (info && (b.mask & PEER_PIDFD_INFO_CGROUPID) && cg &&
		    !cgroup_matches_id(cg, b.cgroupid) && attempt < 2) {
			free(cg);
			continue;
		}
		free(p->cgroup);
		p->cgroup = cg;
		p->cgroup_id = info && (b.mask & PEER_PIDFD_INFO_CGROUPID) ? b.cgroupid : 0;
		p->how = !cg ? PEER_HOW_NONE : info ? PEER_HOW_PIDFD_INFO : PEER_HOW_PIDFD;
		return 0;
	}
	return 0;
}

int peer_identify(int fd, unsigned flags, struct peer *p)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int pidfd = -ENOPROTOOPT; /* PEER_NO_PIDFD: as if the kernel had none */
	int r;

	*p = (struct peer){0};
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	p->uid = cred.uid;
	p->gid = cred.gid;
	p->pid = cred.pid;
	peer_get_groups(fd, p);
	if (!(flags & PEER_NO_PIDFD)) {
		len = sizeof(pidfd);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
			pidfd = -errno;
	}
	if (pidfd >= 0) {
		r = identify_pidfd(pidfd, p);
		(void)close(pidfd);
		if (r < 0)
			peer_done(p);
		return r;
	}
	/*
	 * Only a kernel without SO_PEERPIDFD (before 6.5: ENOPROTOOPT) takes
	 * the racy path; a peer already reaped (EINVAL, ESRCH) is refused.
	 */
	if (pidfd == -EINVAL || (pidfd < 0 && pidfd != -ENOPROTOOPT)) {
		peer_done(p);
		return pidfd == -EINVAL ? -ESRCH : pidfd;
	}
	/* The racy pid, see peer.h. */
	if (p->pid <= 0)
		return 0;
	if (peer_test_hook)
		peer_test_hook(p->pid, peer_test_hook_arg);
	p->cgroup = read_cgroup(p->pid);
	p->how = p->cgroup ? PEER_HOW_PID : PEER_HOW_NONE;
	return 0;
}
