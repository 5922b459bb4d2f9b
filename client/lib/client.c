/* SPDX-License-Identifier: MIT */
/*
 * The connection to pmemzerod: a Unix stream socket carrying length-prefixed
 * protobuf frames (proto/frame.h).  This file makes it (the socket path,
 * the checks of its directory and of the daemon's credentials, HELLO) and
 * owns the client handle's lifetime; submit.c sends, receive.c reads,
 * pending.c keeps the requests in flight, call.c pairs them.
 *
 * pmemz_client_reconnect() (reconnect.c) makes a new connection the same
 * way and has the handle adopt it: the next epoch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport.h"
#include "wire.h"

/*
 * The daemon picked the connection's protocol version (the highest both
 * speak); it must be one this library speaks, and in the range the daemon
 * stated.  A daemon from before the ranges states none and speaks 1.
 */
static int hello_check_version(struct pmemz_client *c, const Pmemz__HelloResp *h)
{
	bool has_range = h->has_min_version && h->has_max_version;

	if (h->version < PMEMZ_PROTO_VERSION_MIN || h->version > PMEMZ_PROTO_VERSION_MAX ||
	    (has_range && (h->version < h->min_version || h->version > h->max_version)))
		return pmemz_err(-EPROTO,
				 "daemon at %s picked protocol version %u, libpmemzclient %s "
				 "speaks %u to %u",
				 c->path, h->version, PMEMZ_CLIENT_VERSION, PMEMZ_PROTO_VERSION_MIN,
				 PMEMZ_PROTO_VERSION_MAX);
	c->hello.version = h->version;
	c->hello.has_range = has_range;
	c->hello.min_version = has_range ? h->min_version : h->version;
	c->hello.max_version = has_range ? h->max_version : h->version;
	return 0;
}

static int client_hello(struct pmemz_client *c)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	int r;

	r = pmemz_wire_hello(c, program_invocation_short_name, &resp);
	if (r < 0)
		return r;
	r = hello_check_version(c, resp->hello);
	if (r < 0)
		return r;
	c->hello.daemon_version = strdup(resp->hello->daemon_version);
	if (!c->hello.daemon_version)
		return pmemz_err(-ENOMEM, "out of memory");
	c->hello.uid = resp->hello->uid;
	c->hello.gid = resp->hello->gid;
	c->hello.admin = resp->hello->admin;
	pmemz_debug("connected to %s: pmemzerod %s, protocol %u, uid %u gid %u%s", c->path,
		    c->hello.daemon_version, c->hello.version, c->hello.uid, c->hello.gid,
		    c->hello.admin ? " (admin)" : "");
	return 0;
}

static void client_destroy(struct pmemz_client *c)
{
	pmemz_pending_free_all(c);
	pmemz_receive_free(c);
	if (c->fd >= 0)
		(void)close(c->fd);
	free(c->hello.daemon_version);
	free(c->path);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
}

void pmemz_client_ref(struct pmemz_client *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void pmemz_client_unref(struct pmemz_client *c)
{
	if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
		client_destroy(c);
}

static int resolve_path(const char *socket_path, char **out)
{
	const char *env = secure_getenv(PMEMZ_SOCKET_ENV);
	int r;

	if (!socket_path && env && *env)
		socket_path = env;
	if (socket_path) {
		if (!*socket_path)
			return pmemz_err(-EINVAL, "empty socket path");
		*out = strdup(socket_path);
		return *out ? 0 : pmemz_err(-ENOMEM, "out of memory");
	}
	r = pmemz_default_socket_path(false, out);
	if (r < 0)
		return pmemz_err(r, "cannot determine the default socket path: %s",
				 pmemz_strerror(r));
	return 0;
}

/*
 * The last-resort socket directory in /tmp can be made by anyone first:
 * refuse it unless it is this user's own (docs/SECURITY.md).
 */
static int check_socket_dir(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash, why[128];
	int r;

	if (!dir)
		return pmemz_err(-ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (!pmemz_is_fallback_dir(dir))
		return 0;
	r = pmemz_fallback_dir_check(dir, false, why, sizeof(why));
	if (r == -ENOENT)
		return 0; /* connect() says so */
	if (r < 0)
		return pmemz_err(r, "refusing the socket %s: its directory %s is not safe: %s",
				 path, dir, why);
	return 0;
}

/*
 * Only root or this user may run the daemon the library talks to: another
 * user's process on the socket path would see every request and could
 * hand out any memory as "zeroed".
 */
static int check_peer(int fd, const char *path)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		int r = -errno;

		return pmemz_err(r, "cannot identify the daemon on %s: %s", path,
				 pmemz_strerror(r));
	}
	if (cred.uid != 0 && cred.uid != geteuid())
		return pmemz_err(-EPERM,
				 "refusing %s: the daemon there runs as uid %u, neither root nor "
				 "this user (uid %u)",
				 path, (unsigned)cred.uid, (unsigned)geteuid());
	return 0;
}

/* A socket connected to path, the daemon there checked: 0 with *out, or -errno. */
static int connect_socket(const char *path, int *out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return pmemz_err(-ENAMETOOLONG, "socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	r = check_socket_dir(path);
	if (r < 0)
		return r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		return pmemz_err(r, "cannot create a socket: %s", pmemz_strerror(r));
	}
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EISCONN) /* an interrupted connect went through */
			break;
		r = -errno;
		return pmemz_err(r, "cannot connect to %s: %s", path, pmemz_strerror(r));
	}
	r = check_peer(fd, path);
	if (r < 0)
		return r;
	*out = TAKE_FD(fd);
	return 0;
}

PMEMZ_EXPORT int pmemz_client_new(const char *socket_path, struct pmemz_client **out)
{
	_cleanup_free_ char *path = NULL;
	struct pmemz_client *c;
	int fd = -1, r;

	if (!out)
		return pmemz_err(-EINVAL, "pmemz_client_new: out is NULL");
	*out = NULL;
	r = resolve_path(socket_path, &path);
	if (r < 0)
		return r;
	r = connect_socket(path, &fd);
	if (r < 0)
		return r;

	c = calloc(1, sizeof(*c));
	if (!c) {
		(void)close(fd);
		return pmemz_err(-ENOMEM, "out of memory");
	}
	c->refs = 1;
	c->fd = fd;
	c->path = TAKE_PTR(path);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_cond_init(&c->cond, NULL);

	r = pmemz_receive_init(c);
	if (r == 0)
		r = client_hello(c);
	if (r < 0) {
		client_destroy(c);
		return r;
	}
	*out = c;
	return 0;
}

PMEMZ_EXPORT void pmemz_client_free(struct pmemz_client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->closed = true;
	pmemz_pending_break_locked(c, -ENOTCONN, "the client handle was freed");
	pthread_mutex_unlock(&c->lock);
	pmemz_client_unref(c);
}

const struct pmemz_hello *pmemz_client_hello(const struct pmemz_client *c)
{
	return c ? &c->hello : NULL;
}

const char *pmemz_client_path(const struct pmemz_client *c)
{
	return c ? c->path : NULL;
}

void pmemz_client_adopt(struct pmemz_client *c, struct pmemz_client *fresh)
{
	struct pmemz_hello hello;
	int fd;

	/* No sender between frames, and (below) no reader: the socket is ours to swap. */
	pthread_mutex_lock(&c->send_lock);
	pthread_mutex_lock(&c->lock);
	pmemz_pending_break_locked(c, -ECONNRESET,
				   "the connection was replaced by pmemz_client_reconnect()");
	while (c->reading)
		pthread_cond_wait(&c->cond, &c->lock);

	fd = c->fd;
	c->fd = fresh->fd;
	fresh->fd = fd;
	hello = c->hello;
	c->hello = fresh->hello;
	fresh->hello = hello;
	/* What the old stream left half-read, and fds that came with it, are the old one's. */
	pmemz_receive_reset(c);
	__atomic_store_n(&c->epoch, c->epoch + 1, __ATOMIC_RELEASE);
	c->broken = 0;
	c->broken_msg[0] = '\0';
	pthread_cond_broadcast(&c->cond); /* waiters of the old epoch: fail now */
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->send_lock);
}
