/* SPDX-License-Identifier: MIT */
/*
 * Receiving: the reader role and the frames and fds it reads.
 *
 * Several threads may wait on one client at once and responses may come
 * back in any order.  Receiving is leader/follower: a waiting thread that
 * finds nobody reading becomes the reader, reads one frame without holding
 * the client lock, files the response by id into the pending list and
 * wakes everybody; each waiter picks up its own response.
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
 * -ENOTCONN.  So does the daemon going away: the calls waiting then fail
 * with -ECONNRESET, later calls with -ENOTCONN, until
 * pmemz_client_reconnect() (reconnect.c) hands the client a new connection
 * and the next epoch.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport.h"
#include "vector.h"

#define RBUF_SIZE (2 * (PMEMZ_FRAME_HDR + PMEMZ_FRAME_MAX))
#define MAX_FDS_PER_READ 16

int pmemz_receive_init(struct pmemz_client *c)
{
	c->rbuf = malloc(RBUF_SIZE);
	return c->rbuf ? 0 : pmemz_err(-ENOMEM, "out of memory");
}

void pmemz_receive_reset(struct pmemz_client *c)
{
	c->rpos = c->rlen = 0;
	c->rbuf_off = 0;
	for (size_t i = 0; i < c->n_rxfds; i++)
		(void)close(c->rxfds[i].fd);
	c->n_rxfds = 0;
}

void pmemz_receive_free(struct pmemz_client *c)
{
	pmemz_receive_reset(c);
	free(c->rxfds);
	free(c->rbuf);
}

static void rxfd_push(struct pmemz_client *c, int fd, uint64_t off)
{
	if (PMEMZ_GROW(c->rxfds, &c->cap_rxfds, c->n_rxfds + 1) < 0) {
		pmemz_debug("out of memory queueing received fd %d, closing it", fd);
		(void)close(fd);
		return;
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

/* Reader only: the fds that came with the stream up to end belong to resp's frame. */
static void frame_take_fds(struct pmemz_client *c, const Pmemz__Response *resp, uint64_t end,
			   int *out_fd)
{
	bool want_fd = resp->status == 0 && resp->op_case == PMEMZ__RESPONSE__OP_OPEN_REGION &&
		       resp->open_region && resp->open_region->fd_follows;
	size_t used = 0;

	while (used < c->n_rxfds && c->rxfds[used].off < end) {
		int fd = c->rxfds[used++].fd;

		if (want_fd && *out_fd < 0) {
			*out_fd = fd;
		} else {
			pmemz_debug("closing unexpected fd %d that came with response %llu", fd,
				    (unsigned long long)resp->id);
			(void)close(fd);
		}
	}
	if (used > 0) {
		memmove(c->rxfds, c->rxfds + used, (c->n_rxfds - used) * sizeof(*c->rxfds));
		c->n_rxfds -= used;
	}
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
		size_t used;
		int r;

		r = pmemz_frame_peek(p, avail, &plen);
		if (r == -EMSGSIZE)
			return pmemz_err(
			    -EBADMSG,
			    "response frame of %u bytes from %s exceeds the %u byte limit",
			    pmemz_frame_len(p), c->path, PMEMZ_FRAME_MAX);
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
		frame_take_fds(c, resp, end, out_fd);
		*out = resp;
		return 0;
	}
}

/* Reader only: does the receive buffer already hold one complete frame? */
static bool frame_buffered(const struct pmemz_client *c)
{
	size_t plen;

	if (pmemz_frame_peek(c->rbuf + c->rpos, c->rlen - c->rpos, &plen) < 0)
		return true; /* a bad frame: let conn_read_frame report it */
	return plen > 0 && c->rlen - c->rpos >= PMEMZ_FRAME_HDR + plen;
}

/*
 * Caller holds c->lock again after reading as the reader: the frame to its
 * waiter (rr 0) or the stream's failure to everybody (rr < 0); the reader
 * role is free again and every waiter looks.
 */
static void reader_done(struct pmemz_client *c, int rr, Pmemz__Response *in, int infd)
{
	c->reading = false;
	if (rr < 0)
		pmemz_pending_break_locked(c, rr, pmemz_errormsg());
	else
		pmemz_pending_file(c, in, infd);
	pthread_cond_broadcast(&c->cond);
}

/* Caller holds c->lock: 0 while p may still get its answer, else why it will not. */
static int ticket_fate(struct pmemz_client *c, struct pmemz_pending *p)
{
	if (p->epoch != c->epoch)
		/* Even an answer that came: what it granted died with that connection. */
		return pmemz_err(-ECONNRESET,
				 "the connection to %s that request %llu went out on was "
				 "replaced by pmemz_client_reconnect()",
				 c->path, (unsigned long long)p->id);
	if (p->done)
		return 1;
	if (c->broken)
		/* Our request went out before the break: its fate is unknown. */
		return pmemz_err(c->broken, "%s", c->broken_msg);
	return 0;
}

int pmemz_client_wait_epoch(struct pmemz_client *c, struct pmemz_pending *p, Pmemz__Response **resp,
			    int *fd, uint64_t *epoch)
{
	int r;

	if (!c || !p || !resp)
		return pmemz_err(-EINVAL, "pmemz_client_wait: NULL argument");
	*resp = NULL;
	if (fd)
		*fd = -1;

	pthread_mutex_lock(&c->lock);
	while ((r = ticket_fate(c, p)) == 0) {
		if (!c->reading) {
			Pmemz__Response *in;
			int infd, rr;

			c->reading = true;
			pthread_mutex_unlock(&c->lock);
			rr = conn_read_frame(c, &in, &infd);
			pthread_mutex_lock(&c->lock);
			reader_done(c, rr, in, infd);
			continue;
		}
		pthread_cond_wait(&c->cond, &c->lock);
	}
	pmemz_pending_unlink(c, p);
	pthread_mutex_unlock(&c->lock);

	if (r > 0) {
		r = 0;
		*resp = TAKE_PTR(p->resp);
		if (fd)
			*fd = TAKE_FD(p->fd);
		if (epoch)
			*epoch = p->epoch;
	}
	pmemz_pending_free(p);
	return r;
}

int pmemz_client_wait(struct pmemz_client *c, struct pmemz_pending *p, Pmemz__Response **resp,
		      int *fd)
{
	return pmemz_client_wait_epoch(c, p, resp, fd, NULL);
}

bool pmemz_client_poll(struct pmemz_client *c, struct pmemz_pending *p)
{
	bool done;

	pthread_mutex_lock(&c->lock);
	while (!p->done && !c->broken && !c->reading && p->epoch == c->epoch) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		Pmemz__Response *in = NULL;
		int infd = -1, rr = 0;
		bool ready;

		/* Become the reader only while frames are there to read now. */
		c->reading = true;
		pthread_mutex_unlock(&c->lock);
		ready = frame_buffered(c) || poll(&pfd, 1, 0) > 0;
		/* Readable: a frame is (about to be) complete, the daemon writes whole frames. */
		if (ready)
			rr = conn_read_frame(c, &in, &infd);
		pthread_mutex_lock(&c->lock);
		if (!ready) {
			c->reading = false;
			pthread_cond_broadcast(&c->cond);
			break;
		}
		reader_done(c, rr, in, infd);
	}
	done = p->done || c->broken || p->epoch != c->epoch;
	pthread_mutex_unlock(&c->lock);
	return done;
}

int pmemz_client_check_alive(struct pmemz_client *c, uint64_t epoch)
{
	struct pollfd pfd;
	int r = 0;

	pthread_mutex_lock(&c->lock);
	if (c->epoch != epoch) {
		r = pmemz_err(-ECONNRESET, "the connection to %s that granted the lease was replaced",
			      c->path);
	} else if (c->broken) {
		r = pmemz_err(c->broken, "%s", c->broken_msg);
	} else {
		pfd = (struct pollfd){.fd = c->fd, .events = POLLRDHUP};
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			pmemz_pending_break_locked(c, -ECONNRESET, "pmemzerod closed the connection");
			r = pmemz_err(-ECONNRESET,
				      "pmemzerod closed the connection to %s: the lease it had "
				      "granted is gone",
				      c->path);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}
