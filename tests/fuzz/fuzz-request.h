/* SPDX-License-Identifier: MIT */
/*
 * The instruction encoding of fuzz-request (fuzz-request.c), shared with
 * the corpus generator (gen-corpus.c), and the builder of well-formed
 * requests both use.
 */
#ifndef PMEMZ_FUZZ_REQUEST_H
#define PMEMZ_FUZZ_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"

#define FUZZ_REQ_N_SLOTS 4u
#define FUZZ_REQ_N_IDENTITIES 3u /* root (admin), uid 1000 (region a), uid 2000 (region b) */
#define FUZZ_REQ_N_REGIONS 2u

/* Each instruction: op, slot, then the op's bytes. */
enum {
	FUZZ_REQ_OP_CONNECT, /* identity */
	FUZZ_REQ_OP_CLOSE,   /* - */
	FUZZ_REQ_OP_FRAME,   /* len lo, len hi, payload */
	FUZZ_REQ_OP_RAW,     /* len, bytes */
	FUZZ_REQ_OP_ZERO,    /* n (the slot byte picks the region) */
	FUZZ_REQ_OP_REQUEST, /* kind, region, num, flags, tag */
	FUZZ_REQ_N_OPS,
};

/* Request kinds of FUZZ_REQ_OP_REQUEST, in Request's oneof order. */
enum {
	FUZZ_REQ_HELLO,
	FUZZ_REQ_OPEN_REGION,
	FUZZ_REQ_ALLOCATE,
	FUZZ_REQ_COMMIT,
	FUZZ_REQ_FREE,
	FUZZ_REQ_FLUSH,
	FUZZ_REQ_LIST,
	FUZZ_REQ_STAT,
	FUZZ_REQ_NOOP,
	FUZZ_REQ_MAP,
	FUZZ_REQ_ZEROER,
	FUZZ_REQ_CLAIM, /* after ZEROER: the kinds before keep their numbers */
	FUZZ_REQ_MOVE,	/* num: moves (low 3 bits) of extents from (num >> 3) on */
	FUZZ_REQ_RUNS,	/* of the lease, or with FUZZ_REQ_F_BY_TAG of the tag; from run num */
	FUZZ_REQ_USAGE,
	FUZZ_REQ_N_KINDS,
};

/* Flag bits of FUZZ_REQ_OP_REQUEST. */
#define FUZZ_REQ_F_NOWAIT 0x01u /* ALLOCATE nowait; FLUSH deep; LIST all_users; ZEROER pause;
				   MOVE one extent named by every move */
#define FUZZ_REQ_F_FLUSH 0x02u	/* COMMIT flush_data; ZEROER set rate; LIST a page (prefix, num);
				   MOVE 257 moves (one past the limit) */
#define FUZZ_REQ_F_BY_TAG 0x04u /* FREE by tag instead of lease; CLAIM release; MOVE one to_tag
				   for every move */
#define FUZZ_REQ_F_NO_REGION 0x08u /* STAT of every region; LIST without a tag filter; MOVE
				      to_tags named as the from_tags ("t0".., existing ones) */
/*
 * A NUL inside the request's region name (HELLO: its client name), or
 * inside its other names (tag, claim, prefix, from and to tags): the
 * string as built with "\x7fNUL" appended, its 0x7f byte turned into a NUL
 * after packing.  The request's id then has FUZZ_REQ_ID_NUL set.
 */
#define FUZZ_REQ_F_NUL_REGION 0x10u
#define FUZZ_REQ_F_NUL_NAME 0x20u
#define FUZZ_REQ_F_BAD_VERSION 0x40u
#define FUZZ_REQ_F_SEEN_LEASE 0x80u /* lease: one seen in a reply (num picks it) */

#define FUZZ_REQ_MOVE_MAX 257u /* one past a MOVE's limit */
/* The id bit of a request that carries a NUL in a string (refused: -EINVAL). */
#define FUZZ_REQ_ID_NUL (1ull << 62)

/* A MOVE request's largest frame: what the buffers of the harness and generator hold. */
#define FUZZ_REQ_BUF 65536u

/* Region names the builder picks from: the two regions, then unknown ones. */
extern const char *const fuzz_req_regions[4];

struct fuzz_req_args {
	uint8_t kind, region, num, flags, tag;
	uint64_t lease;
};

/*
 * Pack the request args describe into buf (payload, no frame header);
 * returns its length.  req is scratch space.
 */
size_t fuzz_req_build(const struct fuzz_req_args *a, Pmemz__Request *req, uint8_t *buf,
		      size_t cap);

#endif
