/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "connection.h"
#include "frame.h"
#include "hashtab.h"
#include "lease.h"
#include "log.h"
#include "rpc.h" /* RPC_MSG_MAX */
#include "server.h"
#include "usage.h"

#define READ_CHUNK (16 * 1024) /* per recv; well below malloc's mmap threshold */
#define READ_MAX_PER_EVENT 8   /* recvs per read event, for fairness */
#define WRITE_IOV_MAX 64

/* ---- memory budgets ---- */

/* A uid with live connections: in m->conns' table while n > 0. */
struct uid_conns {
	struct htab_node node; /* keyed by uid */
	unsigned n;
};

/*
 * The connections and their budgets, for m->conns: nobody else writes
 * them (connection.h has the readers).  live is in accept order, so
 * serials ascend; dead ones wait for the reaper, out of the callbacks
 * that may still hold them.
 */
struct connections {
	const struct connection_hooks *hooks;
	struct connection_list live;
	struct connection_list dead;
	struct event *reaper_ev;
	uint64_t n_live;
	uint64_t serial;
	size_t mem_total; /* sum of the connections' mem */
	bool mem_over;	  /* went over the daemon's budget: connections paused */
	struct htab uid_conns; /* connections per uid, for max_connections_per_uid */
};

static size_t frame_cost(const struct out_frame *f)
{
	return f->len + CONNECTION_FRAME_COST;
}

static size_t budget_conn(const struct manager *m)
{
	return m->conf->max_connection_memory ? (size_t)m->conf->max_connection_memory
					      : CONNECTION_MEM_DEFAULT;
}

static size_t budget_total(const struct manager *m)
{
	return m->conf->max_total_connection_memory
		   ? (size_t)m->conf->max_total_connection_memory
		   : CONNECTION_TOTAL_MEM_DEFAULT;
}

size_t connection_mem_used(const struct connection *c)
{
	return c->mem + evbuffer_get_length(c->in) + c->n_waiters * CONNECTION_WAITER_COST +
	       c->job_mem;
}

static void connection_charge(struct connection *c, const struct out_frame *f)
{
	c->mem += frame_cost(f);
	c->m->conns->mem_total += frame_cost(f);
	if (f->fd >= 0)
		c->fds_queued++;
}

static void connection_check_budget(struct connection *c);

/* The daemon-wide sum fell well below its budget: those it stopped may go on. */
static void connection_resume_all(struct manager *m)
{
	struct connection *c;

	m->conns->mem_over = false;
	TAILQ_FOREACH(c, &m->conns->live, link)
		if (!c->closing && (c->read_paused || c->stalled))
			connection_check_budget(c);
}

static void connection_discharge(struct connection *c, const struct out_frame *f)
{
	struct manager *m = c->m;

	c->mem -= frame_cost(f);
	m->conns->mem_total -= frame_cost(f);
	if (m->conns->mem_over && m->conns->mem_total <= budget_total(m) / 2)
		connection_resume_all(m);
}

static void frame_close_fd(struct out_frame *f)
{
	if (f->fd >= 0)
		(void)close(f->fd);
	f->fd = -1;
}

static void frame_free(struct out_frame *f)
{
	frame_close_fd(f);
	free(f->data);
	free(f);
}

void connection_frame_replace(struct connection *c, struct out_frame *f, uint8_t *data, size_t len)
{
	/* Uncharged at the old size, charged at the new: the budget stays exact. */
	connection_discharge(c, f);
	if (f->fd >= 0)
		c->fds_queued--;
	free(f->data);
	f->data = data;
	f->len = len;
	f->off = 0;
	connection_charge(c, f);
}

static void connection_frame_drop(struct connection *c, struct out_frame *f)
{
	connection_discharge(c, f);
	if (f->fd >= 0)
		c->fds_queued--;
	frame_free(f);
}

static void out_frame_list_clear(struct connection *c, struct out_frame_list *l)
{
	struct out_frame *f;

	while ((f = TAILQ_FIRST(l))) {
		TAILQ_REMOVE(l, f, link);
		connection_frame_drop(c, f);
	}
}

/*
 * Stop processing c's requests: what it holds besides its unread input is
 * over its budget, or it holds any reply while the daemon is over its.
 */
static bool connection_out_over(struct connection *c)
{
	struct manager *m = c->m;

	if (connection_mem_used(c) - evbuffer_get_length(c->in) > budget_conn(m))
		return true;
	if (m->conns->mem_total > budget_total(m) && c->mem > 0) {
		if (!m->conns->mem_over)
			log_warning("Connections hold %zu bytes of replies, over the daemon's "
				    "budget of %zu: requests wait on those holding any",
				    m->conns->mem_total, budget_total(m));
		m->conns->mem_over = true;
		return true;
	}
	return false;
}

/* Stop reading c's socket: that, or everything it holds with its input is over. */
static bool connection_over_budget(struct connection *c)
{
	return connection_out_over(c) || connection_mem_used(c) > budget_conn(c->m);
}

/* ---- connections per uid ---- */

static struct uid_conns *uid_conns_find(struct manager *m, uid_t uid)
{
	struct htab_node *n = htab_find(&m->conns->uid_conns, uid);

	return n ? htab_entry(n, struct uid_conns, node) : NULL;
}

unsigned connection_count_uid(struct manager *m, uid_t uid)
{
	struct uid_conns *u = uid_conns_find(m, uid);

	return u ? u->n : 0;
}

static int uid_conns_add(struct manager *m, uid_t uid)
{
	struct uid_conns *u = uid_conns_find(m, uid);

	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		htab_insert(&m->conns->uid_conns, &u->node, uid);
	}
	u->n++;
	return 0;
}

static void uid_conns_del(struct manager *m, uid_t uid)
{
	struct uid_conns *u = uid_conns_find(m, uid);

	if (!u || --u->n > 0)
		return;
	(void)htab_remove(&m->conns->uid_conns, &u->node);
	free(u);
}

static void connection_pause_read(struct connection *c)
{
	if (c->read_paused)
		return;
	c->read_paused = true;
	(void)event_del(c->read_ev);
	log_debug("connection %" PRIu64 ": %zu bytes held for it (%zu unsent), reading paused",
		  c->serial, connection_mem_used(c), c->out_bytes);
}

void connection_kick(struct connection *c)
{
	/*
	 * Requests may already sit in the input buffer: process them (the
	 * read callback does, and does not recv while reading is paused).
	 */
	if (!c->closing && evbuffer_get_length(c->in) > 0)
		event_active(c->read_ev, EV_READ, 0);
}

static void connection_resume_read(struct connection *c)
{
	if (!c->read_paused || c->closing)
		return;
	c->read_paused = false;
	(void)event_add(c->read_ev, NULL);
	connection_kick(c);
}

/* After the charge changed: pause over the budget, resume well below it. */
static void connection_check_budget(struct connection *c)
{
	/*
	 * While the daemon is over its budget, a connection that has sent
	 * everything it held may go on, one request at a time: those that
	 * read their replies make progress, those that do not stay paused.
	 */
	if (connection_over_budget(c))
		connection_pause_read(c);
	else if (c->read_paused && connection_mem_used(c) <= budget_conn(c->m) / 2)
		connection_resume_read(c);
	/* Requests stopped on the budget may go on now. */
	if (c->stalled && !c->in_read && !connection_out_over(c)) {
		c->stalled = false;
		connection_kick(c);
	}
}

/* The unsent frames from the first, up to one that passes an fd (it goes first). */
static size_t flush_gather(struct connection *c, struct iovec *iov)
{
	struct out_frame *f = TAILQ_FIRST(&c->out);
	size_t n = 0;

	for (; f && n < WRITE_IOV_MAX; f = TAILQ_NEXT(f, link)) {
		/* A frame carrying an fd starts its own sendmsg. */
		if (n > 0 && f->fd >= 0 && f->off == 0)
			break;
		iov[n].iov_base = f->data + f->off;
		iov[n].iov_len = f->len - f->off;
		n++;
	}
	return n;
}

/* w bytes went: drop the frames sent whole, advance the one sent in part. */
static void flush_consume(struct connection *c, ssize_t w)
{
	while (w > 0) {
		struct out_frame *f = TAILQ_FIRST(&c->out);
		size_t left = f->len - f->off;

		if ((size_t)w < left) {
			f->off += (size_t)w;
			c->out_bytes -= (size_t)w;
			break;
		}
		w -= (ssize_t)left;
		c->out_bytes -= left;
		TAILQ_REMOVE(&c->out, f, link);
		connection_frame_drop(c, f);
	}
}

void connection_flush(struct connection *c)
{
	while (!c->closing && !TAILQ_EMPTY(&c->out)) {
		struct iovec iov[WRITE_IOV_MAX];
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} control;
		struct msghdr msg = {.msg_iov = iov};
		struct out_frame *f = TAILQ_FIRST(&c->out);
		int pass_fd = f->off == 0 ? f->fd : -1;
		ssize_t w;

		msg.msg_iovlen = flush_gather(c, iov);
		if (pass_fd >= 0) {
			struct cmsghdr *cm;

			memset(&control, 0, sizeof(control));
			msg.msg_control = control.buf;
			msg.msg_controllen = sizeof(control.buf);
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
		}

		w = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (!c->write_armed) {
					c->write_armed = true;
					(void)event_add(c->write_ev, NULL);
				}
				break;
			}
			(void)log_debug_errno(errno, "connection %" PRIu64 ": send failed: %m",
					      c->serial);
			connection_close(c);
			return;
		}
		if (pass_fd >= 0) {
			/* Went with the first byte: the peer has its own reference now. */
			frame_close_fd(TAILQ_FIRST(&c->out));
			c->fds_queued--;
			/* An OPEN_REGION may wait for the fd in flight to go. */
			connection_kick(c);
		}
		flush_consume(c, w);
	}
	if (c->closing)
		return;
	if (TAILQ_EMPTY(&c->out) && c->write_armed) {
		c->write_armed = false;
		(void)event_del(c->write_ev);
	}
	connection_check_budget(c);
}

static void connection_push(struct connection *c, struct out_frame *f)
{
	TAILQ_INSERT_TAIL(&c->out, f, link);
	c->out_bytes += f->len;
}

int connection_queue(struct connection *c, uint8_t *frame, size_t len, int fd, bool hold)
{
	struct out_frame *f;

	if (c->closing) {
		free(frame);
		if (fd >= 0)
			(void)close(fd);
		return -ENOTCONN;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		free(frame);
		if (fd >= 0)
			(void)close(fd);
		log_warning("connection %" PRIu64 ": out of memory queueing a reply, closing",
			    c->serial);
		connection_close(c);
		return -ENOMEM;
	}
	f->data = frame;
	f->len = len;
	f->fd = fd;
	connection_charge(c, f);
	/* Outside the read callback nobody flushes but the commit pass. */
	if (hold || !c->in_read) {
		TAILQ_INSERT_TAIL(&c->held, f, link);
		c->n_held++;
		c->m->conns->hooks->held(c);
	} else {
		connection_push(c, f);
	}
	return 0;
}

void connection_release_held(struct connection *c)
{
	struct out_frame *f;

	while ((f = TAILQ_FIRST(&c->held))) {
		TAILQ_REMOVE(&c->held, f, link);
		connection_push(c, f);
	}
	c->n_held = 0;
	connection_flush(c);
}

int connection_pack_error(uint64_t id, int status, const char *msg, uint8_t **frame, size_t *len)
{
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	char buf[RPC_MSG_MAX];

	/* Never more than a frame, whatever the message. */
	(void)snprintf(buf, sizeof(buf), "%s", msg ? msg : strerror(-status));
	resp.id = id;
	resp.status = status < 0 ? status : -EIO;
	resp.message = buf;
	return pmemz_frame_pack_response(&resp, frame, len);
}

/* Reply to a request the connection cannot go on from, then close. */
static void connection_protocol_error(struct connection *c, uint64_t id, int status,
				      const char *msg)
{
	log_debug("connection %" PRIu64 " (pid %d uid %u): %s, closing", c->serial, (int)c->pid,
		  (unsigned)c->uid, msg);
	uint8_t *frame;
	size_t len;

	if (connection_pack_error(id, status, msg, &frame, &len) == 0)
		(void)connection_queue(c, frame, len, -1, false);
	connection_flush(c);
	connection_close(c);
}

/* Returns true when it stopped on the memory budget with requests left. */
static bool connection_process(struct connection *c)
{
	while (!c->closing) {
		_cleanup_(pmemz__request__free_unpackedp) Pmemz__Request *req = NULL;
		size_t avail = evbuffer_get_length(c->in);
		size_t plen;
		uint8_t *data;
		char msg[128], field[64];
		int r, nul = 0;

		if (avail < PMEMZ_FRAME_HDR)
			return false;
		/* A sliced request runs: the next waits for its reply. */
		if (c->job)
			return false;
		if (connection_out_over(c))
			return true;
		data = evbuffer_pullup(c->in, PMEMZ_FRAME_HDR);
		if (!data)
			return false;
		r = pmemz_frame_peek(data, avail, &plen);
		if (r == -EMSGSIZE) {
			uint32_t len = pmemz_frame_len(data);

			(void)snprintf(msg, sizeof(msg),
				       "frame of %u bytes exceeds the %u byte limit", len,
				       PMEMZ_FRAME_MAX);
			connection_protocol_error(c, 0, r, msg);
			return false;
		}
		if (r < 0) {
			connection_protocol_error(c, 0, -EBADMSG, "empty frame");
			return false;
		}
		if (avail < PMEMZ_FRAME_HDR + plen)
			return false;
		data = evbuffer_pullup(c->in, (ssize_t)(PMEMZ_FRAME_HDR + plen));
		if (!data) {
			connection_protocol_error(c, 0, -ENOMEM, "out of memory");
			return false;
		}
		r = pmemz_frame_unpack_request(data + PMEMZ_FRAME_HDR, plen, &req);
		/* The wire bytes are gone once drained: look for cut names now. */
		if (r >= 0)
			nul = pmemz_frame_find_nul(&pmemz__request__descriptor,
						   data + PMEMZ_FRAME_HDR, plen, field, sizeof(field));
		if (nul < 0) {
			pmemz__request__free_unpacked(req, NULL);
			req = NULL;
			r = nul;
		}
		/*
		 * One passed fd in flight per connection: a pipelined
		 * OPEN_REGION waits (undrained, decoded again) until the
		 * peer has taken the previous one.
		 */
		if (r >= 0 && req->op_case == PMEMZ__REQUEST__OP_OPEN_REGION && c->fds_queued > 0)
			return false;
		(void)evbuffer_drain(c->in, PMEMZ_FRAME_HDR + plen);
		c->partial_since_ns = 0;
		if (r < 0) {
			connection_protocol_error(c, 0, -EBADMSG, "undecodable request");
			return false;
		}
		/*
		 * HELLO is answered at any version: it is where a client
		 * outside the range learns which versions this daemon speaks.
		 */
		if ((req->version < PMEMZ_PROTO_VERSION_MIN || req->version > PMEMZ_PROTO_VERSION_MAX) &&
		    req->op_case != PMEMZ__REQUEST__OP_HELLO) {
			(void)snprintf(msg, sizeof(msg),
				       "protocol version %u is not supported (daemon speaks %u to %u)",
				       req->version, PMEMZ_PROTO_VERSION_MIN, PMEMZ_PROTO_VERSION_MAX);
			connection_protocol_error(c, req->id, -EPROTO, msg);
			return false;
		}
		c->m->conns->hooks->request(c, req, nul > 0 ? field : NULL);
	}
	return false;
}

/* The input ends in a frame not complete yet (more bytes are needed). */
static bool connection_input_incomplete(struct connection *c)
{
	size_t avail = evbuffer_get_length(c->in), plen;
	uint8_t *data;

	if (avail == 0)
		return false;
	if (avail < PMEMZ_FRAME_HDR)
		return true;
	data = evbuffer_pullup(c->in, PMEMZ_FRAME_HDR);
	return data && pmemz_frame_peek(data, avail, &plen) == 0 &&
	       avail < PMEMZ_FRAME_HDR + plen;
}

/*
 * recv straight into the input evbuffer (evbuffer_read would add a
 * FIONREAD ioctl per call).  Returns bytes read, 0 at EOF, -errno.
 */
static ssize_t connection_recv(struct connection *c)
{
	ssize_t total = 0;

	for (int i = 0; i < READ_MAX_PER_EVENT; i++) {
		struct evbuffer_iovec v;
		ssize_t n;

		if (evbuffer_reserve_space(c->in, READ_CHUNK, &v, 1) < 1)
			return total ? total : -ENOMEM;
		n = recv(c->fd, v.iov_base, READ_CHUNK, MSG_DONTWAIT);
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				return total ? total : -EAGAIN;
			if (total)
				return total; /* EOF or error again on the next event */
			return n < 0 ? -errno : 0;
		}
		v.iov_len = (size_t)n;
		if (evbuffer_commit_space(c->in, &v, 1) < 0)
			return -ENOMEM;
		total += n;
		if (n < READ_CHUNK)
			break; /* drained the socket for now */
	}
	return total;
}

static void connection_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct connection *c = arg;
	bool more = false;
	ssize_t n;

	c->in_read = true;
	/* Paused: only the requests already buffered (see connection_kick). */
	n = c->read_paused ? -EAGAIN : connection_recv(c);
	if (n == 0) {
		log_debug("connection %" PRIu64 ": closed by the peer", c->serial);
		connection_close(c);
	} else if (n < 0 && n != -EAGAIN) {
		(void)log_debug_errno((int)n, "connection %" PRIu64 ": read failed: %m", c->serial);
		connection_close(c);
	} else {
		if (n > 0)
			c->sent_any = true;
		more = connection_process(c);
		/* Since when an incomplete frame waits (idle_timeout). */
		if (!c->closing && !c->partial_since_ns && connection_input_incomplete(c))
			c->partial_since_ns = pmemz_now_ns();
	}
	c->in_read = false;
	if (!c->closing) {
		/* Requests left behind the budget: go on once it allows (check_budget). */
		c->stalled = more;
		connection_flush(c);
	}
	c->m->conns->hooks->read_done(c->m);
}

static void connection_write_cb(evutil_socket_t fd, short what, void *arg)
{
	connection_flush(arg);
}

int connection_new(struct manager *m, int fd, struct connection **out)
{
	struct peer p;
	int r = peer_identify(fd, 0, &p);

	if (r < 0) {
		(void)close(fd);
		if (r == -ESRCH)
			return log_debug_errno(r, "A new peer exited before it was identified");
		return log_warning_errno(r, "Failed to get the credentials of a new peer: %m");
	}
	return connection_new_peer(m, fd, &p, out);
}

int connection_new_peer(struct manager *m, int fd, struct peer *p, struct connection **out)
{
	struct connection *c;

	c = calloc(1, sizeof(*c));
	if (!c) {
		(void)close(fd);
		peer_done(p);
		return log_warning_errno(ENOMEM, "Out of memory accepting a connection");
	}
	c->m = m;
	c->fd = fd;
	c->serial = ++m->conns->serial;
	c->accepted_ns = pmemz_now_ns();
	c->admin = peer_is_admin(m->conf, p); /* before the identity moves into c */
	c->uid = p->uid;
	c->gid = p->gid;
	c->pid = p->pid;
	c->cgroup = TAKE_PTR(p->cgroup);
	c->cgroup_id = p->cgroup_id;
	c->how = p->how;
	c->groups = TAKE_PTR(p->groups);
	c->n_groups = p->n_groups;
	TAILQ_INIT(&c->out);
	TAILQ_INIT(&c->held);
	LIST_INIT(&c->leases);
	LIST_INIT(&c->claims);
	TAILQ_INIT(&c->waiters);

	c->in = evbuffer_new();
	c->read_ev = event_new(m->base, fd, EV_READ | EV_PERSIST, connection_read_cb, c);
	c->write_ev = event_new(m->base, fd, EV_WRITE | EV_PERSIST, connection_write_cb, c);
	if (!c->in || !c->read_ev || !c->write_ev ||
	    event_priority_set(c->read_ev, MANAGER_PRIO_IO) < 0 ||
	    event_priority_set(c->write_ev, MANAGER_PRIO_IO) < 0 ||
	    uid_conns_add(m, c->uid) < 0) {
		c->closing = true; /* nothing to release yet */
		connection_free(c);
		return log_warning_errno(ENOMEM, "Out of memory accepting a connection");
	}
	if (event_add(c->read_ev, NULL) < 0) {
		uid_conns_del(m, c->uid);
		c->closing = true;
		connection_free(c);
		return log_warning_errno(ENOMEM, "Out of memory accepting a connection");
	}
	TAILQ_INSERT_TAIL(&m->conns->live, c, link);
	m->conns->n_live++;
	log_debug("connection %" PRIu64 ": pid %d uid %u gid %u cgroup %s (%s)%s", c->serial,
		  (int)c->pid, (unsigned)c->uid, (unsigned)c->gid,
		  c->cgroup ? LOG_ESC(c->cgroup) : "unknown", peer_how_name(c->how),
		  c->admin ? " (admin)" : "");
	if (out)
		*out = c;
	return 0;
}

void connection_close(struct connection *c)
{
	struct manager *m = c->m;
	struct lease *l;
	uint64_t released = 0;

	if (c->closing)
		return;
	c->closing = true;
	(void)event_del(c->read_ev);
	(void)event_del(c->write_ev);

	/* Uncommitted leases go back to the free pool (DIRTY, then zeroed). */
	while ((l = LIST_FIRST(&c->leases))) {
		released += l->n_extents;
		usage_release_lease(m, l);
	}
	out_frame_list_clear(c, &c->held);
	c->n_held = 0;
	m->conns->hooks->closed(c, released > 0);
	/* Claims are names only: gone with the connection, nothing to sync. */
	if (c->n_claims) {
		log_debug("connection %" PRIu64 ": released %zu claims", c->serial,
			  claim_table_release_all(m->claims, &c->claims));
		c->n_claims = 0;
	}
	if (released)
		log_debug("connection %" PRIu64 ": released %" PRIu64 " leased extents", c->serial,
			  released);

	out_frame_list_clear(c, &c->out);
	c->out_bytes = 0;

	if (c->fd >= 0) {
		(void)close(c->fd);
		c->fd = -1;
	}
	TAILQ_REMOVE(&m->conns->live, c, link);
	m->conns->n_live--;
	uid_conns_del(m, c->uid);
	TAILQ_INSERT_TAIL(&m->conns->dead, c, link);
	event_active(m->conns->reaper_ev, EV_TIMEOUT, 0);
}

void connection_free(struct connection *c)
{
	if (!c)
		return;
	if (c->read_ev)
		event_free(c->read_ev);
	if (c->write_ev)
		event_free(c->write_ev);
	if (c->in)
		evbuffer_free(c->in);
	out_frame_list_clear(c, &c->out);
	if (c->fd >= 0)
		(void)close(c->fd);
	free(c->groups);
	free(c->cgroup);
	free(c);
}

void connection_refuse(int fd, int status, const char *msg)
{
	_cleanup_free_ uint8_t *frame = NULL;
	size_t len;

	/* A fresh socket's buffer takes one small frame; if not, close says enough. */
	if (connection_pack_error(0, status, msg, &frame, &len) == 0)
		(void)send(fd, frame, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)close(fd);
}

/*
 * Idle: an incomplete frame held for the timeout (a peer that trickles a
 * request, or stopped halfway), or nothing at all sent since accepted.  A
 * connection that sent a request and waits for nothing is not idle: it
 * may hold a region mapping and flush later.
 */
void connection_sweep_idle(struct manager *m, uint64_t now_ns, uint64_t idle_timeout_ns)
{
	struct connection *c, *next;

	for (c = TAILQ_FIRST(&m->conns->live); c; c = next) {
		/* Not while paused: then it is us who do not read the rest. */
		bool partial = c->partial_since_ns && !c->read_paused &&
			       now_ns - c->partial_since_ns >= idle_timeout_ns;
		bool silent = !c->sent_any && LIST_EMPTY(&c->leases) &&
			      now_ns - c->accepted_ns >= idle_timeout_ns;

		next = TAILQ_NEXT(c, link);
		if (!partial && !silent)
			continue;
		log_info("connection %" PRIu64 " (pid %d uid %u): %s for %" PRIu64 " s, closing",
			 c->serial, (int)c->pid, (unsigned)c->uid,
			 partial ? "an incomplete request pending" : "idle since connecting",
			 idle_timeout_ns / UINT64_C(1000000000));
		connection_close(c);
	}
}

/* ---- the set of connections ---- */

static void connections_reap(struct connections *cs)
{
	struct connection *c;

	while ((c = TAILQ_FIRST(&cs->dead))) {
		TAILQ_REMOVE(&cs->dead, c, link);
		connection_free(c);
	}
}

static void connections_reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	connections_reap(arg);
}

int connections_new(struct manager *m, const struct connection_hooks *hooks,
		    struct connections **out)
{
	struct connections *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return -ENOMEM;
	cs->hooks = hooks;
	if (htab_init(&cs->uid_conns, 16) < 0) {
		free(cs);
		return -ENOMEM;
	}
	TAILQ_INIT(&cs->live);
	TAILQ_INIT(&cs->dead);
	cs->reaper_ev = event_new(m->base, -1, 0, connections_reaper_cb, cs);
	if (!cs->reaper_ev || event_priority_set(cs->reaper_ev, MANAGER_PRIO_IO) < 0) {
		connections_free(cs);
		return -ENOMEM;
	}
	*out = cs;
	return 0;
}

void connections_close_all(struct manager *m)
{
	struct connection *c;

	while ((c = TAILQ_FIRST(&m->conns->live)))
		connection_close(c);
}

void connections_free(struct connections *cs)
{
	struct htab_iter it;
	struct htab_node *n;

	if (!cs)
		return;
	connections_reap(cs);
	if (cs->reaper_ev)
		event_free(cs->reaper_ev);
	/* Empty once every connection closed, unless a uid changed under one (tests do). */
	for (n = htab_first(&cs->uid_conns, &it); n; n = htab_next(&cs->uid_conns, &it))
		free(htab_entry(n, struct uid_conns, node));
	htab_free(&cs->uid_conns);
	free(cs);
}

struct connection *connections_first(const struct manager *m)
{
	return TAILQ_FIRST(&m->conns->live);
}

struct connection *connections_first_dead(const struct manager *m)
{
	return TAILQ_FIRST(&m->conns->dead);
}

uint64_t connections_count(const struct manager *m)
{
	return m->conns->n_live;
}

struct connection *connections_find(const struct manager *m, uint64_t serial)
{
	struct connection *c;

	TAILQ_FOREACH(c, &m->conns->live, link)
		if (c->serial == serial)
			return c;
	return NULL;
}
