/* SPDX-License-Identifier: MIT */
/* Hostile-client building blocks (attack.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "attack.h"

/*
 * No harness.h here: pmemz-bench (tests/bench/bench-attack.c) links this
 * file without cmocka or the integration harness.
 */
#define UNCONST(s) ((char *)(uintptr_t)(s))

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int attack_stream_add(struct attack_stream *s, Pmemz__Request *req, uint64_t id)
{
	uint8_t *frame = NULL;
	size_t len = 0;
	int r;

	req->version = PMEMZ_PROTO_VERSION;
	req->id = id;
	r = pmemz_frame_pack_request(req, &frame, &len);
	if (r < 0)
		return r;
	if (s->len + len > s->cap) {
		size_t cap = (s->len + len) * 2;
		uint8_t *buf = realloc(s->buf, cap);

		if (!buf) {
			free(frame);
			return -ENOMEM;
		}
		s->buf = buf;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, frame, len);
	s->len += len;
	s->n_frames++;
	free(frame);
	return 0;
}

int attack_stream_add_alloc_map(struct attack_stream *s, const char *region, uint64_t id)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__MapReq m = PMEMZ__MAP_REQ__INIT;
	int r;

	a.region = UNCONST(region);
	a.bytes = 4096;
	a.has_nowait = true;
	a.nowait = true;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &a;
	r = attack_stream_add(s, &req, id);
	if (r < 0)
		return r;
	req = (Pmemz__Request)PMEMZ__REQUEST__INIT;
	m.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_MAP;
	req.map = &m;
	return attack_stream_add(s, &req, id + 1);
}

int attack_flush_init(struct attack_flush *q, const char *region, const uint64_t *offlen,
		      size_t n)
{
	q->req = (Pmemz__Request)PMEMZ__REQUEST__INIT;
	q->f = (Pmemz__FlushReq)PMEMZ__FLUSH_REQ__INIT;
	q->br = calloc(n ? n : 1, sizeof(*q->br));
	q->brs = calloc(n ? n : 1, sizeof(*q->brs));
	if (!q->br || !q->brs) {
		attack_flush_done(q);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		pmemz__byte_range__init(&q->br[i]);
		q->br[i].offset = offlen[2 * i];
		q->br[i].length = offlen[2 * i + 1];
		q->brs[i] = &q->br[i];
	}
	q->f.region = UNCONST(region);
	q->f.n_ranges = n;
	q->f.ranges = q->brs;
	q->req.op_case = PMEMZ__REQUEST__OP_FLUSH;
	q->req.flush = &q->f;
	return 0;
}

void attack_flush_done(struct attack_flush *q)
{
	free(q->br);
	free(q->brs);
	q->br = NULL;
	q->brs = NULL;
}

int attack_stream_add_flush(struct attack_stream *s, const char *region, const uint64_t *offlen,
			    size_t n, uint64_t id)
{
	struct attack_flush q;
	int r = attack_flush_init(&q, region, offlen, n);

	if (r == 0)
		r = attack_stream_add(s, &q.req, id);
	attack_flush_done(&q);
	return r;
}

void attack_stream_free(struct attack_stream *s)
{
	free(s->buf);
	*s = (struct attack_stream){0};
}

ssize_t attack_push_until_stalled(int fd, const struct attack_stream *s, size_t sent,
				  unsigned idle_ms)
{
	uint64_t last = now_ms();

	while (sent < s->len && now_ms() - last < idle_ms) {
		ssize_t w = send(fd, s->buf + sent, s->len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			sent += (size_t)w;
			last = now_ms();
		} else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			return -errno;
		} else {
			nanosleep(&(struct timespec){.tv_nsec = 10000000L}, NULL);
		}
	}
	return (ssize_t)sent;
}
