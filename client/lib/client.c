/* SPDX-License-Identifier: MIT */
/*
 * The connection to pmemzerod: a Unix stream socket carrying length-prefixed
 * protobuf frames (proto/frame.h).
 *
 * Several threads may use one client at once and responses may come back in
 * any order.  Senders serialise on send_lock.  Receiving is leader/follower:
 * a waiting thread that finds nobody reading becomes the reader, reads one
 * frame without holding the client lock, files the response by id into the
 * pending list and wakes everybody; each waiter picks up its own response.
 *
 * File descriptors arrive as SCM_RIGHTS on the bytes of an OPEN_REGION
 * response frame.  Each received fd is queued with the stream offset of the
 * last byte read with it (the kernel ends a read at the segment carrying
 * fds, so that byte belongs to the frame the daemon attached the fd to).
 * When a frame is complete, the fds that arrived with bytes up to its end
 * belong to it: an OPEN_REGION response with fd_follows takes the oldest,
 * every other fd is unexpected and closed.
 *
 * A frame over the size cap or that does not decode breaks the connection:
 * the calls waiting at that moment fail with -EBADMSG, later calls with
 * -ENOTCONN.  So does the daemon going away: the calls waiting then, or the
 * send that finds the socket closed, fail with -ECONNRESET, later calls with
 * -ENOTCONN, until pmemz_client_reconnect() (reconnect.c) hands the client a
 * new connection and the next epoch.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "client-private.h"

#define RBUF_SIZE (2 * (PMEMZ_FRAME_HDR + PMEMZ_FRAME_MAX))
#define MAX_FDS_PER_READ 16

struct pmemz_pending {
	struct pmemz_pending *next;
	uint64_t id;
	int op;		/* request op case: the response must be of the same kind */
	uint64_t epoch; /* the connection it went out on */
	bool done;
	Pmemz__Response *resp;
	int fd;
};

void pmemz_response_free(Pmemz__Response *resp)
{
	if (resp)
		pmemz__response__free_unpacked(resp, NULL);
}

static void pending_free(struct pmemz_pending *p)
{
	if (!p)
		return;
	pmemz_response_free(p->resp);
	if (p->fd >= 0)
		(void)close(p->fd);
	free(p);
}

/* Caller holds c->lock. */
static void pending_unlink(struct pmemz_client *c, struct pmemz_pending *p)
{
	for (struct pmemz_pending **pp = &c->pending; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			p->next = NULL;
			return;
		}
	}
}

/* Caller holds c->lock.  The first reason sticks. */
static void conn_break_locked(struct pmemz_client *c, int err, const char *why)
{
	if (c->broken)
		return;
	c->broken = err;
	(void)snprintf(c->broken_msg, sizeof(c->broken_msg), "%s", why);
	pmemz_debug("connection to %s broken (%d): %s", c->path, err, why);
	/* Wake a reader blocked in recvmsg; the fd itself stays valid until the last unref. */
	(void)shutdown(c->fd, SHUT_RDWR);
	pthread_cond_broadcast(&c->cond);
}

static void conn_break(struct pmemz_client *c, int err, const char *why)
{
	pthread_mutex_lock(&c->lock);
	conn_break_locked(c, err, why);
	pthread_mutex_unlock(&c->lock);
}

static int conn_send(struct pmemz_client *c, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void rxfd_push(struct pmemz_client *c, int fd, uint64_t off)
{
	if (c->n_rxfds == c->cap_rxfds) {
		size_t cap = c->cap_rxfds ? 2 * c->cap_rxfds : 4;
		struct pmemz_rxfd *n = realloc(c->rxfds, cap * sizeof(*n));

		if (!n) {
			pmemz_debug("out of memory queueing received fd %d, closing it", fd);
			(void)close(fd);
			return;
		}
		c->rxfds = n;
		c->cap_rxfds = cap;
	}
	c->rxfds[c->n_rxfds++] = (struct pmemz_rxfd){.fd = fd, .off = off};
}

/* Reader only: one recvmsg into the receive buffer, queueing any fds. */
static int conn_recv(struct pmemz_client *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS_PER_READ)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = c->rbuf + c->rlen, .iov_len = RBUF_SIZE - c->rlen};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = cbuf.buf,
	    .msg_controllen = sizeof(cbuf.buf),
	};
	ssize_t n;

	do
		n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int r = -errno;
		return pmemz_err(r, "receive from %s failed: %s", c->path, pmemz_strerror(r));
	}

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t nfds;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfds; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			/* n > 0 here: the kernel delivers fds with at least one byte. */
			rxfd_push(c, fd, c->rbuf_off + c->rlen + (uint64_t)(n > 0 ? n - 1 : 0));
		}
	}
	if (msg.msg_flags & MSG_CTRUNC)
		pmemz_debug("too many fds in one read: the kernel dropped some");
	if (n == 0)
		return pmemz_err(-ECONNRESET, "connection to %s closed by the daemon", c->path);
	c->rlen += (size_t)n;
	return 0;
}

/*
 * Reader only, without c->lock: read until one complete response frame is
 * buffered, decode it and hand out the fd that belongs to it.
 */
static int conn_read_frame(struct pmemz_client *c, Pmemz__Response **out, int *out_fd)
{
	*out = NULL;
	*out_fd = -1;
	for (;;) {
		const uint8_t *p = c->rbuf + c->rpos;
		size_t avail = c->rlen - c->rpos, plen;
		Pmemz__Response *resp;
		uint64_t end;
		bool want_fd;
		size_t used;
		int r;

		r = pmemz_frame_peek(p, avail, &plen);
		if (r == -EMSGSIZE)
			return pmemz_err(
			    -EBADMSG,
			    "response frame of %u bytes from %s exceeds the %u byte limit",
			    pmemz_frame_len(p),
			    c->path, PMEMZ_FRAME_MAX);
		if (r < 0)
			return pmemz_err(-EBADMSG, "empty response frame from %s", c->path);

		if (plen == 0 || avail < PMEMZ_FRAME_HDR + plen) {
			/* Need more: compact, then read. */
			if (c->rpos > 0) {
				memmove(c->rbuf, p, avail);
				c->rbuf_off += c->rpos;
				c->rpos = 0;
				c->rlen = avail;
			}
			r = conn_recv(c);
			if (r < 0)
				return r;
			continue;
		}

		used = PMEMZ_FRAME_HDR + plen;
		end = c->rbuf_off + c->rpos + used;
		r = pmemz_frame_unpack_response(p + PMEMZ_FRAME_HDR, plen, &resp);
		c->rpos += used;
		if (r < 0)
			return pmemz_err(-EBADMSG, "undecodable response frame (%zu bytes) from %s",
					 plen, c->path);

		want_fd = resp->status == 0 && resp->op_case == PMEMZ__RESPONSE__OP_OPEN_REGION &&
			  resp->open_region && resp->open_region->fd_follows;
		used = 0;
		while (used < c->n_rxfds && c->rxfds[used].off < end) {
			int fd = c->rxfds[used++].fd;

			if (want_fd && *out_fd < 0) {
				*out_fd = fd;
			} else {
				pmemz_debug("closing unexpected fd %d that came with response %llu",
					    fd, (unsigned long long)resp->id);
				(void)close(fd);
			}
		}
		if (used > 0) {
			memmove(c->rxfds, c->rxfds + used, (c->n_rxfds - used) * sizeof(*c->rxfds));
			c->n_rxfds -= used;
		}
		*out = resp;
		return 0;
	}
}

/* Caller holds c->lock: give the response to its waiter. */
static void file_response(struct pmemz_client *c, Pmemz__Response *resp, int fd)
{
	for (struct pmemz_pending *p = c->pending; p; p = p->next) {
		if (p->id == resp->id && !p->done) {
			p->resp = resp;
			p->fd = fd;
			p->done = true;
			return;
		}
	}
	pmemz_debug("dropping response to unknown request id %llu", (unsigned long long)resp->id);
	pmemz_response_free(resp);
	if (fd >= 0)
		(void)close(fd);
}

int pmemz_client_submit_many(struct pmemz_client *c, Pmemz__Request *const *reqs, size_t n,
			     struct pmemz_pending **tickets)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;

	if (!c || !reqs || !tickets || n == 0)
		return pmemz_err(-EINVAL, "pmemz_client_submit: NULL argument");
	for (size_t i = 0; i < n; i++)
		tickets[i] = NULL;
	for (size_t i = 0; i < n; i++) {
		struct pmemz_pending *p = calloc(1, sizeof(*p));

		if (!p) {
			r = pmemz_err(-ENOMEM, "out of memory");
			goto fail_unlinked;
		}
		p->fd = -1;
		p->op = (int)reqs[i]->op_case;
		tickets[i] = p;
	}

	pthread_mutex_lock(&c->lock);
	if (c->broken) {
		char why[sizeof(c->broken_msg)];

		memcpy(why, c->broken_msg, sizeof(why));
		pthread_mutex_unlock(&c->lock);
		r = pmemz_err(
		    -ENOTCONN,
		    "not connected to the daemon: %s (pmemz_client_reconnect() reconnects)", why);
		goto fail_unlinked;
	}
	for (size_t i = 0; i < n; i++) {
		tickets[i]->epoch = c->epoch;
		tickets[i]->id = ++c->next_id;
		tickets[i]->next = c->pending;
		c->pending = tickets[i];
	}
	pthread_mutex_unlock(&c->lock);

	/* All frames in one buffer: one send, one wakeup of the daemon. */
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ uint8_t *frame = NULL;
		size_t flen;

		reqs[i]->version = PMEMZ_PROTO_VERSION;
		reqs[i]->id = tickets[i]->id;
		r = pmemz_frame_pack_request(reqs[i], &frame, &flen);
		if (r < 0) {
			r = pmemz_err(r, "cannot encode request: %s", pmemz_strerror(r));
			goto fail;
		}
		if (len + flen > cap) {
			size_t ncap = MAX(2 * cap, len + flen);
			uint8_t *nb = realloc(buf, ncap);

			if (!nb) {
				r = pmemz_err(-ENOMEM, "out of memory");
				goto fail;
			}
			buf = nb;
			cap = ncap;
		}
		memcpy(buf + len, frame, flen);
		len += flen;
	}

	pthread_mutex_lock(&c->send_lock);
	/* Registered before a reconnect: not a word of it on the new connection. */
	if (tickets[0]->epoch != c->epoch)
		r = -ECONNRESET;
	else
		r = conn_send(c, buf, len);
	pthread_mutex_unlock(&c->send_lock);
	if (r < 0)
		goto fail_send;
	return 0;

fail_send:
	if (tickets[0]->epoch != pmemz_client_epoch(c)) {
		r = pmemz_err(r, "the connection to %s was replaced by pmemz_client_reconnect()",
			      c->path);
	} else if (r == -EPIPE || r == -ECONNRESET) {
		/* The daemon is gone (or restarting): say so as a reset, as the reader does. */
		r = -ECONNRESET;
		conn_break(c, r, "connection closed by the daemon");
		r = pmemz_err(r, "connection to %s closed by the daemon", c->path);
	} else {
		char why[128];

		(void)snprintf(why, sizeof(why), "send failed: %s", pmemz_strerror(r));
		/* Part of a frame may be out: the stream is unusable. */
		conn_break(c, r, why);
		r = pmemz_err(r, "cannot send to %s: %s", c->path, pmemz_strerror(r));
	}

fail:
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		pending_unlink(c, tickets[i]);
	pthread_mutex_unlock(&c->lock);
fail_unlinked:
	for (size_t i = 0; i < n; i++) {
		pending_free(tickets[i]);
		tickets[i] = NULL;
	}
	return r;
}

int pmemz_client_submit(struct pmemz_client *c, Pmemz__Request *req, struct pmemz_pending **ticket)
{
	if (!c || !req || !ticket)
		return pmemz_err(-EINVAL, "pmemz_client_submit: NULL argument");
	return pmemz_client_submit_many(c, &req, 1, ticket);
}

int pmemz_client_wait_epoch(struct pmemz_client *c, struct pmemz_pending *p, Pmemz__Response **resp,
			    int *fd, uint64_t *epoch)
{
	int r = 0;

	if (!c || !p || !resp)
		return pmemz_err(-EINVAL, "pmemz_client_wait: NULL argument");
	*resp = NULL;
	if (fd)
		*fd = -1;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		if (p->epoch != c->epoch) {
			/* Even an answer that came: what it granted died with that connection. */
			r = pmemz_err(-ECONNRESET,
				      "the connection to %s that request %llu went out on was "
				      "replaced by pmemz_client_reconnect()",
				      c->path, (unsigned long long)p->id);
			break;
		}
		if (p->done)
			break;
		if (c->broken) {
			/* Our request went out before the break: its fate is unknown. */
			r = pmemz_err(c->broken, "%s", c->broken_msg);
			break;
		}
		if (!c->reading) {
			Pmemz__Response *in;
			int infd, rr;

			c->reading = true;
			pthread_mutex_unlock(&c->lock);
			rr = conn_read_frame(c, &in, &infd);
			pthread_mutex_lock(&c->lock);
			c->reading = false;
			if (rr < 0)
				conn_break_locked(c, rr, pmemz_errormsg());
			else
				file_response(c, in, infd);
			pthread_cond_broadcast(&c->cond);
			continue;
		}
		pthread_cond_wait(&c->cond, &c->lock);
	}
	pending_unlink(c, p);
	pthread_mutex_unlock(&c->lock);

	if (r == 0) {
		*resp = TAKE_PTR(p->resp);
		if (fd)
			*fd = TAKE_FD(p->fd);
		if (epoch)
			*epoch = p->epoch;
	}
	pending_free(p);
	return r;
}

int pmemz_client_wait(struct pmemz_client *c, struct pmemz_pending *p, Pmemz__Response **resp,
		      int *fd)
{
	return pmemz_client_wait_epoch(c, p, resp, fd, NULL);
}

/* Reader only: does the receive buffer already hold one complete frame? */
static bool frame_buffered(const struct pmemz_client *c)
{
	size_t plen;

	if (pmemz_frame_peek(c->rbuf + c->rpos, c->rlen - c->rpos, &plen) < 0)
		return true; /* a bad frame: let conn_read_frame report it */
	return plen > 0 && c->rlen - c->rpos >= PMEMZ_FRAME_HDR + plen;
}

bool pmemz_client_poll(struct pmemz_client *c, struct pmemz_pending *p)
{
	bool done;

	pthread_mutex_lock(&c->lock);
	while (!p->done && !c->broken && !c->reading && p->epoch == c->epoch) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		Pmemz__Response *in;
		int infd, rr;

		/* Become the reader only while frames are there to read now. */
		c->reading = true;
		pthread_mutex_unlock(&c->lock);
		if (!frame_buffered(c) && poll(&pfd, 1, 0) <= 0) {
			pthread_mutex_lock(&c->lock);
			c->reading = false;
			pthread_cond_broadcast(&c->cond);
			break;
		}
		/* Readable: a frame is (about to be) complete, the daemon writes whole frames. */
		rr = conn_read_frame(c, &in, &infd);
		pthread_mutex_lock(&c->lock);
		c->reading = false;
		if (rr < 0)
			conn_break_locked(c, rr, pmemz_errormsg());
		else
			file_response(c, in, infd);
		pthread_cond_broadcast(&c->cond);
	}
	done = p->done || c->broken || p->epoch != c->epoch;
	pthread_mutex_unlock(&c->lock);
	return done;
}

int pmemz_check_response(int op, const Pmemz__Response *resp)
{
	if (resp->status > 0 || resp->status < -4095)
		return pmemz_err(-EPROTO, "daemon sent an invalid status %d", resp->status);
	if (resp->status < 0)
		return pmemz_err(resp->status, "%s",
				 resp->message && *resp->message ? resp->message
								 : pmemz_strerror(resp->status));
	if ((int)resp->op_case != op)
		return pmemz_err(-EPROTO, "daemon answered request kind %d with kind %d", op,
				 (int)resp->op_case);
	return 0;
}

int pmemz_client_call_fd(struct pmemz_client *c, Pmemz__Request *req, Pmemz__Response **out,
			 int *out_fd)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	_cleanup_close_ int fd = -1;
	struct pmemz_pending *ticket;
	int op, r;

	if (!c || !req || !out)
		return pmemz_err(-EINVAL, "pmemz_client_call: NULL argument");
	*out = NULL;
	if (out_fd)
		*out_fd = -1;
	op = (int)req->op_case;
	r = pmemz_client_submit(c, req, &ticket);
	if (r < 0)
		return r;
	r = pmemz_client_wait(c, ticket, &resp, &fd);
	if (r < 0)
		return r;
	r = pmemz_check_response(op, resp);
	if (r < 0)
		return r;
	*out = TAKE_PTR(resp);
	if (out_fd)
		*out_fd = TAKE_FD(fd);
	return 0;
}

int pmemz_client_call(struct pmemz_client *c, Pmemz__Request *req, Pmemz__Response **resp)
{
	return pmemz_client_call_fd(c, req, resp, NULL);
}

const struct pmemz_hello *pmemz_client_hello(const struct pmemz_client *c)
{
	return c ? &c->hello : NULL;
}

const char *pmemz_client_path(const struct pmemz_client *c)
{
	return c ? c->path : NULL;
}

uint64_t pmemz_client_epoch(struct pmemz_client *c)
{
	return __atomic_load_n(&c->epoch, __ATOMIC_ACQUIRE);
}

bool pmemz_client_broken(struct pmemz_client *c)
{
	bool b;

	pthread_mutex_lock(&c->lock);
	b = c->broken != 0;
	pthread_mutex_unlock(&c->lock);
	return b;
}

void pmemz_client_adopt(struct pmemz_client *c, struct pmemz_client *fresh)
{
	struct pmemz_hello hello;
	int fd;

	/* No sender between frames, and (below) no reader: the socket is ours to swap. */
	pthread_mutex_lock(&c->send_lock);
	pthread_mutex_lock(&c->lock);
	conn_break_locked(c, -ECONNRESET,
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
	c->rpos = c->rlen = 0;
	c->rbuf_off = 0;
	for (size_t i = 0; i < c->n_rxfds; i++)
		(void)close(c->rxfds[i].fd);
	c->n_rxfds = 0;
	__atomic_store_n(&c->epoch, c->epoch + 1, __ATOMIC_RELEASE);
	c->broken = 0;
	c->broken_msg[0] = '\0';
	pthread_cond_broadcast(&c->cond); /* waiters of the old epoch: fail now */
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->send_lock);
}

static int client_hello(struct pmemz_client *c)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__HelloReq hello = PMEMZ__HELLO_REQ__INIT;
	int r;

	hello.client_name = program_invocation_short_name;
	req.op_case = PMEMZ__REQUEST__OP_HELLO;
	req.hello = &hello;
	r = pmemz_client_call(c, &req, &resp);
	if (r < 0)
		return r;
	if (resp->hello->version != PMEMZ_PROTO_VERSION)
		return pmemz_err(
		    -EPROTO, "daemon at %s speaks protocol version %u, libpmemzclient speaks %u",
		    c->path, resp->hello->version, PMEMZ_PROTO_VERSION);
	c->hello.version = resp->hello->version;
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
	while (c->pending) {
		struct pmemz_pending *p = c->pending;

		c->pending = p->next;
		pending_free(p);
	}
	for (size_t i = 0; i < c->n_rxfds; i++)
		(void)close(c->rxfds[i].fd);
	free(c->rxfds);
	if (c->fd >= 0)
		(void)close(c->fd);
	free(c->rbuf);
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

PMEMZ_EXPORT int pmemz_client_new(const char *socket_path, struct pmemz_client **out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct pmemz_client *c;
	char *path = NULL;
	int fd, r;

	if (!out)
		return pmemz_err(-EINVAL, "pmemz_client_new: out is NULL");
	*out = NULL;
	r = resolve_path(socket_path, &path);
	if (r < 0)
		return r;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		r = pmemz_err(-ENAMETOOLONG, "socket path too long: %s", path);
		free(path);
		return r;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	r = check_socket_dir(path);
	if (r < 0) {
		free(path);
		return r;
	}

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		r = pmemz_err(r, "cannot create a socket: %s", pmemz_strerror(r));
		free(path);
		return r;
	}
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EISCONN) /* an interrupted connect went through */
			break;
		r = -errno;
		r = pmemz_err(r, "cannot connect to %s: %s", path, pmemz_strerror(r));
		(void)close(fd);
		free(path);
		return r;
	}
	r = check_peer(fd, path);
	if (r < 0) {
		(void)close(fd);
		free(path);
		return r;
	}

	c = calloc(1, sizeof(*c));
	if (!c || !(c->rbuf = malloc(RBUF_SIZE))) {
		free(c);
		(void)close(fd);
		free(path);
		return pmemz_err(-ENOMEM, "out of memory");
	}
	c->refs = 1;
	c->fd = fd;
	c->path = path;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_cond_init(&c->cond, NULL);

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
	conn_break_locked(c, -ENOTCONN, "the client handle was freed");
	pthread_mutex_unlock(&c->lock);
	pmemz_client_unref(c);
}
