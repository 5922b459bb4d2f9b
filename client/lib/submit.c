/* SPDX-License-Identifier: MIT */
/*
 * Sending: requests become tickets (pending.c) and length-prefixed frames
 * (proto/frame.h), all of one submit in one send, so that n pipelined
 * requests cost the daemon one wakeup.  Senders serialise on send_lock;
 * a request registered before pmemz_client_reconnect() replaced the
 * connection is not sent on the new one.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "transport.h"
#include "vector.h"

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

/* The frames of reqs[0..n), with their tickets' ids, one after the other in *out. */
static int frames_pack(Pmemz__Request *const *reqs, size_t n, struct pmemz_pending **tickets,
		       uint8_t **out, size_t *out_len)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0, cap = 0, need;
	int r;

	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ uint8_t *frame = NULL;
		size_t flen;

		reqs[i]->version = tickets[i]->version;
		reqs[i]->id = tickets[i]->id;
		r = pmemz_frame_pack_request(reqs[i], &frame, &flen);
		if (r < 0)
			return pmemz_err(r, "cannot encode request: %s", pmemz_strerror(r));
		r = pmemz_add_size(len, flen, &need);
		if (r == 0)
			r = PMEMZ_GROW(buf, &cap, need);
		if (r < 0)
			return pmemz_err(r, "cannot pack %zu requests: %s", n, pmemz_strerror(r));
		memcpy(buf + len, frame, flen);
		len += flen;
	}
	*out = TAKE_PTR(buf);
	*out_len = len;
	return 0;
}

/* The send of a request of connection `epoch` failed with r: say why, break the stream. */
static int send_failed(struct pmemz_client *c, uint64_t epoch, int r)
{
	char why[128];

	if (epoch != pmemz_client_epoch(c))
		return pmemz_err(r, "the connection to %s was replaced by pmemz_client_reconnect()",
				 c->path);
	if (r == -EPIPE || r == -ECONNRESET) {
		/* The daemon is gone (or restarting): say so as a reset, as the reader does. */
		pmemz_pending_break(c, -ECONNRESET, "connection closed by the daemon");
		return pmemz_err(-ECONNRESET, "connection to %s closed by the daemon", c->path);
	}
	(void)snprintf(why, sizeof(why), "send failed: %s", pmemz_strerror(r));
	/* Part of a frame may be out: the stream is unusable. */
	pmemz_pending_break(c, r, why);
	return pmemz_err(r, "cannot send to %s: %s", c->path, pmemz_strerror(r));
}

int pmemz_client_submit_many(struct pmemz_client *c, Pmemz__Request *const *reqs, size_t n,
			     struct pmemz_pending **tickets)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	if (!c || !reqs || !tickets || n == 0)
		return pmemz_err(-EINVAL, "pmemz_client_submit: NULL argument");
	r = pmemz_pending_add(c, reqs, n, tickets);
	if (r < 0)
		return r;
	r = frames_pack(reqs, n, tickets, &buf, &len);
	if (r == 0) {
		pthread_mutex_lock(&c->send_lock);
		/* Registered before a reconnect: not a word of it on the new connection. */
		if (tickets[0]->epoch != c->epoch)
			r = -ECONNRESET;
		else
			r = conn_send(c, buf, len);
		pthread_mutex_unlock(&c->send_lock);
		if (r < 0)
			r = send_failed(c, tickets[0]->epoch, r);
	}
	if (r < 0)
		pmemz_pending_cancel(c, tickets, n);
	return r;
}

int pmemz_client_submit(struct pmemz_client *c, Pmemz__Request *req, struct pmemz_pending **ticket)
{
	if (!c || !req || !ticket)
		return pmemz_err(-EINVAL, "pmemz_client_submit: NULL argument");
	return pmemz_client_submit_many(c, &req, 1, ticket);
}
