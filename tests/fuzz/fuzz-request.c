/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: arbitrary sequences of requests on several connections, run by
 * the real server library (manager, connections, RPC handlers, group
 * commit) in this process, over the in-memory storage of
 * tests/unit/fake-region.c.  No listener: each connection is one end of a
 * socketpair handed to connection_new(), its peer identity then set to one
 * of three users; the event loop is pumped without blocking until idle.
 *
 * The input is a program, one instruction after the other (fuzz-request.h
 * has the encoding the corpus generator shares):
 *   OP_CONNECT  slot, identity   (re)open connection slot (0..3)
 *   OP_CLOSE    slot             the client hangs up
 *   OP_FRAME    slot, len16, payload   one frame with a correct header
 *   OP_RAW      slot, len8, bytes      raw bytes (bad or partial headers)
 *   OP_ZERO     region, n        the "zeroer" finishes n extents
 *   OP_REQUEST  slot, kind, args       a well-formed request built from
 *                                      args (lease ids seen in replies)
 * After every instruction: I3 (per-state counts sum to the extent count),
 * every lease in the table belongs to a live connection and each region's
 * LEASED extents are exactly its leases', and every reply decodes.  A
 * request built with a NUL inside a name is refused (-EINVAL, or -EPROTO
 * for a bad version) and changes no extent's state.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "commit.h"
#include "connection.h"
#include "fake-region.h"
#include "frame.h"
#include "fuzz-request.h"
#include "fuzz.h"
#include "lease.h"
#include "log.h"
#include "manager.h"

#define EXTENT 4096u
#define PUMP_MAX 64
#define LEASES_KEPT 8

static const struct identity {
	uid_t uid;
	gid_t gid;
} identities[FUZZ_REQ_N_IDENTITIES] = {{0, 0}, {1000, 1000}, {2000, 2000}};

static uid_t allow_a[] = {1000};
static gid_t allow_b[] = {2000};
static struct region_conf rcs[FUZZ_REQ_N_REGIONS];
static struct daemon_conf conf;

struct slot {
	struct connection *c; /* NULL: not connected (or closed by the server) */
	int fd;		      /* the client's end, -1 if none */
	uint8_t in[PMEMZ_FRAME_HDR + PMEMZ_FRAME_MAX];
	size_t in_len;
	uint64_t nul_id; /* a request with a NUL in a name whose reply is due, or 0 */
};

static struct manager *m;
static struct slot slots[FUZZ_REQ_N_SLOTS];
static uint64_t leases_seen[LEASES_KEPT];
static unsigned n_leases_seen;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_set_max_level(getenv("PMEMZ_FUZZ_DEBUG") ? LOG_DEBUG : LOG_EMERG);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)unsetenv("NOTIFY_SOCKET");
	fake_region_set_sync_delay(0);
	for (unsigned i = 0; i < FUZZ_REQ_N_REGIONS; i++) {
		struct region_conf *rc = &rcs[i];

		rc->name = fuzz_mut(fuzz_req_regions[i]);
		rc->path = rc->name;
		rc->size = (i == 0 ? 16 : 8) * (uint64_t)EXTENT;
		rc->extent_size = EXTENT;
		rc->zeroer_threads = 1;
		rc->batch_extents = 4;
		rc->source = (char *)"fuzz-request";
	}
	rcs[0].allow_uids = allow_a;
	rcs[0].n_allow_uids = 1;
	rcs[1].allow_gids = allow_b;
	rcs[1].n_allow_gids = 1;
	conf.regions = rcs;
	conf.n_regions = FUZZ_REQ_N_REGIONS;
	conf.socket_path = (char *)"/nonexistent/fuzz.sock"; /* no listener is made */
	conf.log_level = LOG_EMERG;
	return 0;
}

/* ---- reading replies on the client side ---- */

static void remember_lease(uint64_t id)
{
	leases_seen[n_leases_seen++ % LEASES_KEPT] = id;
}

static void parse_replies(struct slot *s)
{
	size_t off = 0;

	for (;;) {
		Pmemz__Response *resp = NULL;
		size_t plen = 0;

		if (s->in_len - off < PMEMZ_FRAME_HDR)
			break;
		/* The daemon only sends frames the client accepts. */
		FUZZ_ASSERT(pmemz_frame_peek(s->in + off, s->in_len - off, &plen) == 0);
		if (s->in_len - off - PMEMZ_FRAME_HDR < plen)
			break;
		FUZZ_ASSERT(pmemz_frame_unpack_response(s->in + off + PMEMZ_FRAME_HDR, plen,
							&resp) == 0);
		FUZZ_ASSERT(resp->status <= 0);
		if (s->nul_id && resp->id == s->nul_id) {
			FUZZ_ASSERT(resp->status == -EINVAL || resp->status == -EPROTO);
			s->nul_id = 0;
		}
		if (resp->status == 0 && resp->op_case == PMEMZ__RESPONSE__OP_ALLOCATE)
			remember_lease(resp->allocate->lease);
		pmemz__response__free_unpacked(resp, NULL);
		off += PMEMZ_FRAME_HDR + plen;
	}
	memmove(s->in, s->in + off, s->in_len - off);
	s->in_len -= off;
}

/* Read what the server sent; true if anything came. */
static bool drain_client(struct slot *s)
{
	bool got = false;

	while (s->fd >= 0) {
		union {
			char b[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr a;
		} ctl;
		struct iovec iov = {.iov_base = s->in + s->in_len,
				    .iov_len = sizeof(s->in) - s->in_len};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl.b,
				     .msg_controllen = sizeof(ctl.b)};
		ssize_t n = recvmsg(s->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n <= 0)
			break;
		got = true;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

				for (size_t k = 0; k < nfd; k++) {
					int fd;

					memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
					(void)close(fd);
				}
			}
		s->in_len += (size_t)n;
		parse_replies(s);
		FUZZ_ASSERT(s->in_len < sizeof(s->in)); /* no reply exceeds a frame */
	}
	return got;
}

/* ---- the server side ---- */

static bool conn_live(const struct connection *c)
{
	const struct connection *x;

	for (x = connections_first(m); x; x = TAILQ_NEXT(x, link))
		if (x == c)
			return true;
	return false;
}

/* Forget slots whose connection the server closed (protocol errors). */
static void forget_closed(void)
{
	for (unsigned i = 0; i < FUZZ_REQ_N_SLOTS; i++)
		if (slots[i].c && !conn_live(slots[i].c))
			slots[i].c = NULL;
}

static void pump(void)
{
	int quiet = 0;

	for (int i = 0; i < PUMP_MAX && quiet < 2; i++) {
		bool got = false;

		FUZZ_ASSERT(event_base_loop(m->base, EVLOOP_NONBLOCK) >= 0);
		for (unsigned k = 0; k < FUZZ_REQ_N_SLOTS; k++)
			got |= drain_client(&slots[k]);
		if (got || commit_pending(m) || connections_first_dead(m))
			quiet = 0;
		else
			quiet++;
	}
	forget_closed();
}

static void check_invariants(void)
{
	uint64_t leased[FUZZ_REQ_N_REGIONS] = {0};
	size_t n_leases = 0;
	struct connection *c;

	for (c = connections_first(m); c; c = TAILQ_NEXT(c, link)) {
		struct lease *l;

		FUZZ_ASSERT(!c->closing);
		LIST_FOREACH(l, &c->leases, owner_link) {
			FUZZ_ASSERT(l->owner == c);
			FUZZ_ASSERT(lease_table_find(m->leases, l->id) == l);
			FUZZ_ASSERT(l->region < FUZZ_REQ_N_REGIONS);
			leased[l->region] += l->n_extents;
			n_leases++;
		}
	}
	for (c = connections_first_dead(m); c; c = TAILQ_NEXT(c, link))
		FUZZ_ASSERT(c->closing && LIST_EMPTY(&c->leases) && TAILQ_EMPTY(&c->waiters));
	/* Every lease in the table is one of a live connection's. */
	FUZZ_ASSERT(lease_table_count(m->leases) == n_leases);
	for (size_t i = 0; i < m->n_regions; i++) {
		struct region_stats st;
		uint64_t sum = 0;

		region_get_stats(m->regions[i]->r, &st);
		for (int s = 0; s < EXT_NSTATES; s++)
			sum += st.count[s];
		FUZZ_ASSERT(sum == m->regions[i]->info.extent_count); /* I3 */
		FUZZ_ASSERT(st.count[EXT_LEASED] == leased[i]);
	}
}

/*
 * Nothing but the next request can change state during a pump: no input
 * buffered behind a memory budget, no sliced request.  Returns the number
 * of live connections (a close releases leases), or -1.
 */
static int server_quiet(void)
{
	int n = 0;

	for (struct connection *c = connections_first(m); c; c = TAILQ_NEXT(c, link), n++)
		if (evbuffer_get_length(c->in) || c->job)
			return -1;
	return n;
}

static void region_counts(uint64_t n[FUZZ_REQ_N_REGIONS][EXT_NSTATES])
{
	for (size_t i = 0; i < m->n_regions; i++) {
		struct region_stats st;

		region_get_stats(m->regions[i]->r, &st);
		for (int k = 0; k < EXT_NSTATES; k++)
			n[i][k] = st.count[k];
	}
}

/* A refused request changed no extent's state (nothing else ran meanwhile). */
static void check_unchanged(uint64_t before[FUZZ_REQ_N_REGIONS][EXT_NSTATES])
{
	uint64_t after[FUZZ_REQ_N_REGIONS][EXT_NSTATES];

	region_counts(after);
	FUZZ_ASSERT(memcmp(before, after, sizeof(after)) == 0);
}

/* ---- instructions ---- */

struct reader {
	const uint8_t *p;
	size_t left;
};

static uint8_t next(struct reader *rd)
{
	if (!rd->left)
		return 0;
	rd->left--;
	return *rd->p++;
}

/* The next *len bytes (fewer at the end of the input). */
static const uint8_t *take(struct reader *rd, size_t *len)
{
	const uint8_t *p = rd->p;

	if (*len > rd->left)
		*len = rd->left;
	rd->p += *len;
	rd->left -= *len;
	return p;
}

static void slot_close(struct slot *s)
{
	if (s->fd >= 0)
		(void)close(s->fd);
	s->fd = -1;
	s->c = NULL;
	s->in_len = 0;
}

static void op_connect(struct slot *s, uint8_t who)
{
	const struct identity *id = &identities[who % FUZZ_REQ_N_IDENTITIES];
	int sv[2];

	slot_close(s);
	FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
	s->fd = sv[0];
	FUZZ_ASSERT(connection_new(m, sv[1], &s->c) == 0);
	/* SO_PEERCRED says who runs the fuzzer: play another peer. */
	s->c->uid = id->uid;
	s->c->gid = id->gid;
	s->c->n_groups = 0;
	s->c->admin = id->uid == 0;
}

static void send_bytes(struct slot *s, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (s->fd >= 0 && len) {
		ssize_t w = send(s->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0) {
			/* Full: let the server read; it may also have hung up. */
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return;
			pump();
			if (!s->c)
				return;
			continue;
		}
		p += w;
		len -= (size_t)w;
	}
}

static void send_frame(struct slot *s, const uint8_t *payload, size_t len)
{
	uint8_t hdr[PMEMZ_FRAME_HDR] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
					(uint8_t)(len >> 24)};

	send_bytes(s, hdr, sizeof(hdr));
	send_bytes(s, payload, len);
}

static void op_request(struct slot *s, struct reader *rd)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	struct fuzz_req_args a;
	static uint8_t buf[FUZZ_REQ_BUF];
	size_t len;

	a.kind = next(rd);
	a.region = next(rd);
	a.num = next(rd);
	a.flags = next(rd);
	a.tag = next(rd);
	a.lease = a.flags & 0x80 ? leases_seen[a.num % LEASES_KEPT] : a.num;
	len = fuzz_req_build(&a, &req, buf, sizeof(buf));
	if ((req.id & FUZZ_REQ_ID_NUL) && !s->nul_id) {
		uint64_t before[FUZZ_REQ_N_REGIONS][EXT_NSTATES];
		int quiet = server_quiet();

		s->nul_id = req.id;
		region_counts(before);
		send_frame(s, buf, len);
		pump();
		if (quiet >= 0 && server_quiet() == quiet)
			check_unchanged(before);
		return;
	}
	send_frame(s, buf, len);
}

static void run(struct reader *rd)
{
	while (rd->left) {
		uint8_t op = next(rd) % FUZZ_REQ_N_OPS;
		struct slot *s = &slots[next(rd) % FUZZ_REQ_N_SLOTS];
		const uint8_t *bytes;
		size_t len;

		switch (op) {
		case FUZZ_REQ_OP_CONNECT:
			op_connect(s, next(rd));
			break;
		case FUZZ_REQ_OP_CLOSE:
			slot_close(s);
			break;
		case FUZZ_REQ_OP_FRAME:
			len = next(rd);
			len |= (size_t)next(rd) << 8;
			bytes = take(rd, &len);
			if (s->fd >= 0)
				send_frame(s, bytes, len);
			break;
		case FUZZ_REQ_OP_RAW:
			len = next(rd);
			bytes = take(rd, &len);
			if (s->fd >= 0)
				send_bytes(s, bytes, len);
			break;
		case FUZZ_REQ_OP_ZERO: {
			/* The slot byte chose the region. */
			unsigned ri = (unsigned)(s - slots) % FUZZ_REQ_N_REGIONS;

			fake_region_zero(m->regions[ri]->r, next(rd) % 32);
			break;
		}
		case FUZZ_REQ_OP_REQUEST:
			if (s->fd >= 0)
				op_request(s, rd);
			else
				for (int k = 0; k < 5; k++)
					(void)next(rd);
			break;
		}
		pump();
		check_invariants();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader rd = {.p = data, .left = size};

	fake_region_reset();
	n_leases_seen = 0;
	memset(leases_seen, 0, sizeof(leases_seen));
	for (unsigned i = 0; i < FUZZ_REQ_N_SLOTS; i++)
		slots[i] = (struct slot){.fd = -1};
	FUZZ_ASSERT(manager_new(&conf, &m) == 0);
	run(&rd);
	for (unsigned i = 0; i < FUZZ_REQ_N_SLOTS; i++)
		slot_close(&slots[i]);
	pump();
	check_invariants();
	FUZZ_ASSERT(lease_table_count(m->leases) == 0);
	manager_free(m);
	m = NULL;
	return 0;
}
