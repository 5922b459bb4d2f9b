/* SPDX-License-Identifier: MIT */
/*
 * Who a peer is (docs/SECURITY.md, "Identity"): uid and gid from
 * SO_PEERCRED (the kernel's record of connect() time), and the cgroup of
 * the peer's process, taken at accept time.
 *
 * The cgroup is read from /proc/PID/cgroup, so the pid must still name the
 * process that connected when it is read.  With SO_PEERPIDFD (Linux 6.5)
 * the daemon holds a pidfd of that very process: it takes the pid from the
 * pidfd (PIDFD_GET_INFO, Linux 6.13, or fdinfo's Pid:), reads the cgroup,
 * then checks through the pidfd that the process still lives with that pid:
 * a live process keeps its pid, so the file read was that process's.  A
 * peer that exited before the check is refused (-ESRCH), never identified
 * by whoever holds its pid now.  Without SO_PEERPIDFD the pid of
 * SO_PEERCRED is used as it is: if the peer exits and its pid is reused
 * before the read, the cgroup is the new process's (PEER_HOW_PID, "pid
 * (racy)" in pmemzctl clients).
 */
#ifndef PMEMZ_PEER_H
#define PMEMZ_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum peer_how {
	PEER_HOW_NONE,	     /* no cgroup: no cgroup2 line, or /proc unreadable */
	PEER_HOW_PID,	     /* SO_PEERCRED's pid: racy (see above) */
	PEER_HOW_PIDFD,	     /* SO_PEERPIDFD, fdinfo and a liveness check */
	PEER_HOW_PIDFD_INFO, /* SO_PEERPIDFD and PIDFD_GET_INFO (pid and cgroup id) */
};

#define PEER_CGROUP_MAX 4096u

struct peer {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	char *cgroup;	    /* "/system.slice/x.service" (cgroup v2); NULL: unknown */
	uint64_t cgroup_id; /* the cgroup's inode (PIDFD_INFO_CGROUPID); 0: unknown */
	enum peer_how how;
	gid_t *groups; /* supplementary groups (SO_PEERGROUPS); NULL: none or unknown */
	size_t n_groups;
};

struct daemon_conf;

/* Test hooks (tests/unit, tests/integration/test-peer-race.c). */
#define PEER_NO_PIDFD (1u << 0) /* take the fallback path, as on a kernel before 6.5 */
/* Called between taking the pid and reading its cgroup (NULL: none). */
extern void (*peer_test_hook)(pid_t pid, void *arg);
extern void *peer_test_hook_arg;

/*
 * Identify the peer of connected socket fd: 0; -ESRCH when it exited
 * before its cgroup could be tied to it; -errno when SO_PEERCRED fails.
 * A cgroup or groups that cannot be read are not an error: p->cgroup
 * stays NULL, p->groups empty (only group-based access is lost).
 */
int peer_identify(int fd, unsigned flags, struct peer *p);
void peer_done(struct peer *p);

/*
 * The one rule of who is an admin under conf (the listener's limits, a
 * connection's rights, a reload): root or a member of admin_group, by its
 * primary or a supplementary group, and, with admin_cgroups, in one of them.
 */
bool peer_is_admin(const struct daemon_conf *conf, const struct peer *p);
const char *peer_how_name(enum peer_how how);

/* The cgroup2 line ("0::PATH") of a /proc/PID/cgroup text, malloc'ed; NULL when none. */
char *peer_parse_cgroup(const char *text, size_t len);

#endif
