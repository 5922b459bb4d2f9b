/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "connection.h"
#include "listener.h"
#include "log.h"
#include "server.h"

#define ACCEPT_BATCH 64
#define ACCEPT_PAUSE_SEC 1
/*
 * Descriptors (docs/SECURITY.md).  Every connection may have one passed fd in
 * flight (connection.c), so the connections of non-admin peers may take
 * half of what RLIMIT_NOFILE leaves after FD_HEADROOM (regions, zeroer
 * pipes, the event loop, logs); admins may use all but FD_ADMIN_HEADROOM.
 * Over a limit, a peer is accepted, told why in one error frame and
 * closed.  One descriptor is kept in reserve, so that even at EMFILE the
 * listener can accept to refuse instead of pausing.
 */
#define FD_HEADROOM 64u
#define FD_ADMIN_HEADROOM 16u

struct listener {
	struct manager *m;
	int fd;
	int reserve_fd; /* /dev/null, given up to accept-and-refuse at EMFILE */
	uint64_t nofile;
	uint64_t max_connections; /* of non-admins: what nofile allows */
	struct event *accept_ev;
	struct event *resume_ev;
	struct event *idle_ev;
	char *path; /* what we bound (NULL when socket-activated) */
	bool paused;
	char desc[128];
};

static void listener_take_reserve(struct listener *l)
{
	if (l->reserve_fd < 0)
		l->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Out of descriptors: accept one with the reserve's slot, refuse it, keep the reserve. */
static bool listener_refuse_emfile(struct listener *l)
{
	int fd;

	if (l->reserve_fd < 0)
		return false;
	(void)close(l->reserve_fd);
	l->reserve_fd = -1;
	fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0)
		connection_refuse(fd, -EMFILE, "the daemon is out of file descriptors");
	listener_take_reserve(l);
	return fd >= 0;
}

/*
 * Over a limit: 0 to take the connection, else the status of the refusal
 * (msg filled in).  Admins (peer_is_admin, the same rule as their rights
 * once connected) are exempt.
 */
static int listener_check_limits(struct listener *l, int fd, const struct peer *p, char *msg,
				 size_t len)
{
	struct manager *m = l->m;
	unsigned per_uid = m->conf->max_connections_per_uid;

	if (peer_is_admin(m->conf, p)) {
		if (l->nofile && (uint64_t)fd + FD_ADMIN_HEADROOM >= l->nofile) {
			(void)snprintf(msg, len, "the daemon is out of file descriptors");
			return -EMFILE;
		}
		return 0; /* admins are exempt from the per-uid limit */
	}
	if (connections_count(m) >= l->max_connections) {
		(void)snprintf(msg, len, "too many connections (%" PRIu64 ", the limit)",
			       l->max_connections);
		return -EUSERS;
	}
	if (per_uid && connection_count_uid(m, p->uid) >= per_uid) {
		(void)snprintf(msg, len,
			       "uid %u has too many connections (%u, max_connections_per_uid)",
			       (unsigned)p->uid, per_uid);
		return -EUSERS;
	}
	return 0;
}

static int listener_limits(struct listener *l);

static void listener_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct listener *l = arg;

	connection_sweep_idle(l->m, pmemz_now_ns(),
			      (uint64_t)l->m->conf->idle_timeout_sec * 1000000000ull);
}

static void listener_pause(struct listener *l)
{
	struct timeval tv = {.tv_sec = ACCEPT_PAUSE_SEC};

	if (l->paused)
		return;
	l->paused = true;
	(void)event_del(l->accept_ev);
	(void)event_add(l->resume_ev, &tv);
}

static void listener_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct listener *l = arg;

	l->paused = false;
	(void)event_add(l->accept_ev, NULL);
	log_debug("Accepting connections again");
}

/* An accepted fd: identified, refused over a limit, or a connection (fd passes). */
static void listener_take(struct listener *l, int fd)
{
	char msg[160];
	struct peer p;
	int r = peer_identify(fd, 0, &p);

	if (r < 0) {
		/* Debug only: a flood of these must not flood the log. */
		(void)log_debug_errno(r, "Refusing a connection: peer not identified: %m");
		(void)close(fd);
		return;
	}
	r = listener_check_limits(l, fd, &p, msg, sizeof(msg));
	if (r < 0) {
		log_debug("Refusing a connection: %s", msg);
		peer_done(&p);
		connection_refuse(fd, r, msg);
		return;
	}
	/* connection_new_peer logs its own failures and closes fd. */
	(void)connection_new_peer(l->m, fd, &p, NULL);
}

static void listener_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct listener *l = arg;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			switch (errno) {
			case EAGAIN:
#if EWOULDBLOCK != EAGAIN
			case EWOULDBLOCK:
#endif
				return;
			case EINTR:
			case ECONNABORTED:
			case EPROTO:
				continue;
			case EMFILE:
				if (listener_refuse_emfile(l))
					continue;
				/* fall through */
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				(void)log_warning_errno(errno,
							"Cannot accept connections (%m), pausing "
							"for %d s",
							ACCEPT_PAUSE_SEC);
				listener_pause(l);
				return;
			default:
				(void)log_error_errno(errno, "accept failed, pausing for %d s: %m",
						      ACCEPT_PAUSE_SEC);
				listener_pause(l);
				return;
			}
		}
		listener_take(l, fd);
	}
}

/*
 * A socket file at path: replace it only if it is a socket nobody answers
 * on (a daemon that died); refuse when another daemon is listening.
 */
static int listener_remove_stale(const char *path, const struct sockaddr_un *sa)
{
	_cleanup_close_ int probe = -1;
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return log_error_errno(errno, "Cannot access socket path %s: %m", path);
	}
	if (!S_ISSOCK(st.st_mode))
		return log_error_errno(
		    EEXIST, "%s exists and is not a socket, refusing to replace it", path);
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return log_error_errno(errno, "Failed to create a socket: %m");
	if (connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0 || errno == EAGAIN)
		return log_error_errno(EADDRINUSE, "Another daemon is listening on %s", path);
	if (errno != ECONNREFUSED)
		return log_error_errno(errno, "Cannot probe the existing socket %s: %m", path);
	if (unlink(path) < 0 && errno != ENOENT)
		return log_error_errno(errno, "Failed to remove the stale socket %s: %m", path);
	log_info("Removed stale socket %s", path);
	return 0;
}

static int listener_bind(struct listener *l, const char *path)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *dir = NULL;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char why[128];
	mode_t old_mask;
	int r;

	if (!path || !*path)
		return log_error_errno(EINVAL, "No socket path configured");
	if (strlen(path) >= sizeof(sa.sun_path))
		return log_error_errno(ENAMETOOLONG, "Socket path %s is too long (max %zu bytes)",
				       path, sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);

	dir = strdup(path);
	if (!dir)
		return log_error_errno(ENOMEM, "Out of memory");
	r = pmemz_socket_dir_prepare(dirname(dir), why, sizeof(why));
	if (r < 0) /* dirname() cut dir down to the directory */
		return log_error_errno(r, "Refusing the socket directory of %s: %s", path, why);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error_errno(errno, "Failed to create a socket: %m");
	r = listener_remove_stale(path, &sa);
	if (r < 0)
		return r;
	/* Everyone may connect; each region checks the peer's credentials. */
	old_mask = umask(0111);
	r = bind(fd, (const struct sockaddr *)&sa, sizeof(sa));
	(void)umask(old_mask);
	if (r < 0)
		return log_error_errno(errno, "Failed to bind %s: %m", path);
	l->path = strdup(path);
	if (!l->path) {
		(void)unlink(path);
		return log_error_errno(ENOMEM, "Out of memory");
	}
	if (chmod(path, 0666) < 0)
		(void)log_warning_errno(errno, "Failed to chmod %s: %m", path);
	if (listen(fd, SOMAXCONN) < 0)
		return log_error_errno(errno, "Failed to listen on %s: %m", path);
	(void)snprintf(l->desc, sizeof(l->desc), "%s", path);
	l->fd = TAKE_FD(fd);
	return 0;
}

static int listener_activated(struct listener *l, int n)
{
	int fd = SD_LISTEN_FDS_START;
	int flags;

	if (n > 1) {
		log_warning("systemd passed %d sockets, using the first", n);
		for (int i = 1; i < n; i++)
			(void)close(SD_LISTEN_FDS_START + i);
	}
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
		return log_error_errno(
		    EINVAL, "The socket passed by systemd is not a listening Unix stream "
			    "socket");
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return log_error_errno(errno, "Failed to set up the socket passed by systemd: %m");
	l->fd = fd;
	(void)snprintf(l->desc, sizeof(l->desc), "the socket passed by systemd");
	return 0;
}

int listener_new(struct manager *m, const char *path, struct listener **out)
{
	_cleanup_(listener_freep) struct listener *l = NULL;
	int n, r;

	l = calloc(1, sizeof(*l));
	if (!l)
		return log_error_errno(ENOMEM, "Out of memory");
	l->m = m;
	l->fd = -1;
	l->reserve_fd = -1;

	n = sd_listen_fds(1);
	if (n < 0)
		(void)log_warning_errno(n, "Ignoring socket activation: %m");
	if (n > 0)
		r = listener_activated(l, n);
	else
		r = listener_bind(l, path);
	if (r < 0)
		return r;

	l->accept_ev = event_new(m->base, l->fd, EV_READ | EV_PERSIST, listener_accept_cb, l);
	l->resume_ev = evtimer_new(m->base, listener_resume_cb, l);
	if (!l->accept_ev || !l->resume_ev ||
	    event_priority_set(l->accept_ev, MANAGER_PRIO_IO) < 0 ||
	    event_priority_set(l->resume_ev, MANAGER_PRIO_IO) < 0 ||
	    event_add(l->accept_ev, NULL) < 0)
		return log_error_errno(ENOMEM, "Failed to watch the listening socket");
	r = listener_limits(l);
	if (r < 0)
		return r;
	*out = TAKE_PTR(l);
	return 0;
}

/* The descriptor budget, the reserve and the idle sweep. */
static int listener_limits(struct listener *l)
{
	struct manager *m = l->m;
	struct rlimit rl;
	unsigned idle = m->conf->idle_timeout_sec;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		l->nofile = rl.rlim_cur;
	if (l->nofile)
		l->max_connections =
		    l->nofile > 2 * FD_HEADROOM ? (l->nofile - FD_HEADROOM) / 2 : l->nofile / 4;
	else
		l->max_connections = UINT64_MAX;
	listener_take_reserve(l);
	if (l->reserve_fd < 0)
		(void)log_warning_errno(errno, "Cannot keep a reserve descriptor: %m");
	log_debug("Descriptors: %" PRIu64 "; connections of non-admins: at most %" PRIu64
		  ", %u per uid",
		  l->nofile, l->max_connections, m->conf->max_connections_per_uid);
	if (!idle)
		return 0;
	{
		/* Closed within a sweep period past the timeout. */
		struct timeval tv = {.tv_sec = idle > 2 ? 1 : 0, .tv_usec = idle > 2 ? 0 : 250000};

		l->idle_ev = event_new(m->base, -1, EV_PERSIST, listener_idle_cb, l);
		if (!l->idle_ev || event_priority_set(l->idle_ev, MANAGER_PRIO_IO) < 0 ||
		    event_add(l->idle_ev, &tv) < 0)
			return log_error_errno(ENOMEM, "Failed to create the idle timer");
	}
	return 0;
}

const char *listener_describe(const struct listener *l)
{
	return l->desc;
}

void listener_free(struct listener *l)
{
	if (!l)
		return;
	if (l->accept_ev)
		event_free(l->accept_ev);
	if (l->resume_ev)
		event_free(l->resume_ev);
	if (l->idle_ev)
		event_free(l->idle_ev);
	if (l->reserve_fd >= 0)
		(void)close(l->reserve_fd);
	if (l->fd >= 0)
		(void)close(l->fd);
	if (l->path) {
		(void)unlink(l->path);
		free(l->path);
	}
	free(l);
}
