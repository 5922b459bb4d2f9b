/* SPDX-License-Identifier: MIT */
/*
 * Hostile-client building blocks shared by the attack tests
 * (test-attack.c) and the soak's hostile tenants (tests/soak): streams of
 * raw request frames sent without reading the replies, and FLUSH requests
 * of many ranges.  No cmocka here: errors are returned (negative errno).
 */
#ifndef PMEMZ_ITEST_ATTACK_H
#define PMEMZ_ITEST_ATTACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "frame.h"

/* Frames packed back to back, to be pushed at a connection. */
struct attack_stream {
	uint8_t *buf;
	size_t len, cap;
	size_t n_frames;
};

/* Append req (version and id filled in).  0 or -errno. */
int attack_stream_add(struct attack_stream *s, Pmemz__Request *req, uint64_t id);
/* ALLOCATE(4 KiB, nowait) as id, then MAP as id + 1. */
int attack_stream_add_alloc_map(struct attack_stream *s, const char *region, uint64_t id);
/* A FLUSH of n (offset, length) pairs. */
int attack_stream_add_flush(struct attack_stream *s, const char *region, const uint64_t *offlen,
			    size_t n, uint64_t id);
void attack_stream_free(struct attack_stream *s);

/*
 * Send s from byte `sent` on without reading, until it is all sent or the
 * daemon has taken nothing for idle_ms.  The bytes sent in all, or -errno
 * when the connection failed.
 */
ssize_t attack_push_until_stalled(int fd, const struct attack_stream *s, size_t sent,
				  unsigned idle_ms);

/* A FLUSH request of n (offset, length) pairs; attack_flush_done frees it. */
struct attack_flush {
	Pmemz__Request req;
	Pmemz__FlushReq f;
	Pmemz__ByteRange *br;
	Pmemz__ByteRange **brs;
};

int attack_flush_init(struct attack_flush *q, const char *region, const uint64_t *offlen,
		      size_t n);
void attack_flush_done(struct attack_flush *q);

#endif
