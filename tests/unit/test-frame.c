/* SPDX-License-Identifier: MIT */
/* Framing: header peek, the size cap, pack/unpack round trips, NULs in strings. */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"

static void put_len(uint8_t *b, uint32_t len)
{
	b[0] = (uint8_t)len;
	b[1] = (uint8_t)(len >> 8);
	b[2] = (uint8_t)(len >> 16);
	b[3] = (uint8_t)(len >> 24);
}

static void test_peek_short_header(void **state)
{
	uint8_t b[4] = {0};
	size_t len = 99;

	put_len(b, 10);
	for (size_t avail = 0; avail < PMEMZ_FRAME_HDR; avail++) {
		assert_int_equal(pmemz_frame_peek(b, avail, &len), 0);
		assert_int_equal(len, 0);
	}
}

static void test_peek_exact(void **state)
{
	uint8_t b[8] = {0};
	size_t len = 0;

	put_len(b, 1);
	assert_int_equal(pmemz_frame_peek(b, 4, &len), 0);
	assert_int_equal(len, 1);
	/* The header alone is enough; the payload may still be missing. */
	put_len(b, PMEMZ_FRAME_MAX);
	assert_int_equal(pmemz_frame_peek(b, 4, &len), 0);
	assert_int_equal(len, PMEMZ_FRAME_MAX);
	/* Little endian. */
	b[0] = 0x34;
	b[1] = 0x12;
	b[2] = 0;
	b[3] = 0;
	assert_int_equal(pmemz_frame_peek(b, 8, &len), 0);
	assert_int_equal(len, 0x1234);
}

static void test_peek_oversize(void **state)
{
	uint8_t b[4];
	size_t len = 7;

	put_len(b, PMEMZ_FRAME_MAX + 1);
	assert_int_equal(pmemz_frame_peek(b, 4, &len), -EMSGSIZE);
	put_len(b, UINT32_MAX);
	assert_int_equal(pmemz_frame_peek(b, 4, &len), -EMSGSIZE);
	assert_int_equal(len, 0);
}

static void test_peek_zero(void **state)
{
	uint8_t b[4] = {0};
	size_t len = 7;

	assert_int_equal(pmemz_frame_peek(b, 4, &len), -EBADMSG);
}

/*
 * pmemz_frame_len is the one decoder of the header (the daemon and the
 * client quote it when they refuse a frame): it agrees with
 * pmemz_frame_peek on every length peek accepts, and decodes the ones peek
 * refuses in full, the top byte included.
 */
static void test_frame_len(void **state)
{
	static const uint32_t lens[] = {
	    0, 1, 0xff, 0x100, 0x1234, PMEMZ_FRAME_MAX, PMEMZ_FRAME_MAX + 1,
	    0x00ff0000, 0x7fffffff, 0x80000000, 0x80000001, UINT32_MAX,
	};
	uint8_t b[4];

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t len = 7;
		int r;

		put_len(b, lens[i]);
		assert_int_equal(pmemz_frame_len(b), lens[i]);
		r = pmemz_frame_peek(b, sizeof(b), &len);
		if (lens[i] == 0) {
			assert_int_equal(r, -EBADMSG);
		} else if (lens[i] > PMEMZ_FRAME_MAX) {
			assert_int_equal(r, -EMSGSIZE);
		} else {
			assert_int_equal(r, 0);
			assert_int_equal(len, pmemz_frame_len(b));
		}
	}
}

static void test_request_round_trip(void **state)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq alloc = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__Request *out = NULL;
	uint8_t *frame = NULL;
	size_t frame_len = 0, len = 0;

	alloc.region = (char *)"test";
	alloc.bytes = 3 << 20;
	alloc.has_nowait = true;
	alloc.nowait = true;
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 0x123456789abcull;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &alloc;

	assert_int_equal(pmemz_frame_pack_request(&req, &frame, &frame_len), 0);
	assert_int_equal(pmemz_frame_peek(frame, frame_len, &len), 0);
	assert_int_equal(len + PMEMZ_FRAME_HDR, frame_len);
	assert_int_equal(pmemz_frame_unpack_request(frame + PMEMZ_FRAME_HDR, len, &out), 0);
	assert_int_equal(out->version, PMEMZ_PROTO_VERSION);
	assert_int_equal(out->id, 0x123456789abcull);
	assert_int_equal(out->op_case, PMEMZ__REQUEST__OP_ALLOCATE);
	assert_string_equal(out->allocate->region, "test");
	assert_int_equal(out->allocate->bytes, 3 << 20);
	assert_true(out->allocate->has_nowait && out->allocate->nowait);
	pmemz__request__free_unpacked(out, NULL);
	free(frame);
}

static void test_response_round_trip(void **state)
{
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__AllocateResp alloc = PMEMZ__ALLOCATE_RESP__INIT;
	Pmemz__Run runs[3];
	Pmemz__Run *ptrs[3];
	Pmemz__Response *out = NULL;
	uint8_t *frame = NULL;
	size_t frame_len = 0, len = 0;

	for (int i = 0; i < 3; i++) {
		pmemz__run__init(&runs[i]);
		runs[i].first = (uint64_t)i * 100;
		runs[i].count = (uint64_t)i + 1;
		ptrs[i] = &runs[i];
	}
	alloc.lease = 42;
	alloc.n_runs = 3;
	alloc.runs = ptrs;
	resp.id = 7;
	resp.status = -ENOSPC;
	resp.message = (char *)"no space";
	resp.op_case = PMEMZ__RESPONSE__OP_ALLOCATE;
	resp.allocate = &alloc;

	assert_int_equal(pmemz_frame_pack_response(&resp, &frame, &frame_len), 0);
	assert_int_equal(pmemz_frame_peek(frame, frame_len, &len), 0);
	assert_int_equal(pmemz_frame_unpack_response(frame + PMEMZ_FRAME_HDR, len, &out), 0);
	assert_int_equal(out->id, 7);
	assert_int_equal(out->status, -ENOSPC);
	assert_string_equal(out->message, "no space");
	assert_int_equal(out->allocate->lease, 42);
	assert_int_equal(out->allocate->n_runs, 3);
	assert_int_equal(out->allocate->runs[2]->first, 200);
	assert_int_equal(out->allocate->runs[2]->count, 3);
	pmemz__response__free_unpacked(out, NULL);
	free(frame);
}

static void test_pack_too_large(void **state)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__NoopReq noop = PMEMZ__NOOP_REQ__INIT;
	size_t big = PMEMZ_FRAME_MAX + 1;
	uint8_t *payload = calloc(1, big);
	uint8_t *frame = (uint8_t *)1;
	size_t frame_len = 0;

	assert_non_null(payload);
	noop.has_payload = true;
	noop.payload.data = payload;
	noop.payload.len = big;
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 1;
	req.op_case = PMEMZ__REQUEST__OP_NOOP;
	req.noop = &noop;
	assert_int_equal(pmemz_frame_pack_request(&req, &frame, &frame_len), -EMSGSIZE);
	assert_ptr_equal(frame, (uint8_t *)1); /* untouched */

	/* Just under the cap packs. */
	noop.payload.len = PMEMZ_FRAME_MAX - 32;
	assert_int_equal(pmemz_frame_pack_request(&req, &frame, &frame_len), 0);
	assert_true(frame_len <= PMEMZ_FRAME_HDR + PMEMZ_FRAME_MAX);
	free(frame);
	free(payload);
}

static void test_unpack_garbage(void **state)
{
	static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
	/* Valid encoding, but the required fields (version, id) are missing. */
	static const uint8_t missing[] = {0x52, 0x00}; /* field 10 (hello), empty */
	Pmemz__Request *req = NULL;

	assert_int_equal(pmemz_frame_unpack_request(garbage, sizeof(garbage), &req), -EBADMSG);
	assert_null(req);
	assert_int_equal(pmemz_frame_unpack_request(missing, sizeof(missing), &req), -EBADMSG);
	assert_int_equal(pmemz_frame_unpack_request(garbage, PMEMZ_FRAME_MAX + 1, &req), -EMSGSIZE);
}

/* req packed, each '\x7f' of its strings turned into a NUL on the wire (same length). */
static size_t pack_with_nuls(const Pmemz__Request *req, uint8_t *buf, size_t cap)
{
	size_t len = pmemz__request__get_packed_size(req);

	assert_true(len <= cap);
	pmemz__request__pack(req, buf);
	for (size_t i = 0; i < len; i++)
		if (buf[i] == 0x7f)
			buf[i] = 0;
	return len;
}

static void test_find_nul_claim(void **state)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT, *out = NULL;
	Pmemz__ClaimReq claim = PMEMZ__CLAIM_REQ__INIT;
	uint8_t buf[256];
	char path[64];
	size_t len;

	claim.region = (char *)"r";
	claim.name = (char *)"a\x7f" "b";
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 9;
	req.op_case = PMEMZ__REQUEST__OP_CLAIM;
	req.claim = &claim;
	len = pack_with_nuls(&req, buf, sizeof(buf));
	/* What protobuf-c hands the daemon: the name cut at the NUL. */
	assert_int_equal(pmemz_frame_unpack_request(buf, len, &out), 0);
	assert_string_equal(out->claim->name, "a");
	pmemz__request__free_unpacked(out, NULL);
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, buf, len, path,
					      sizeof(path)),
			 1);
	assert_string_equal(path, "claim.name");
	/* A path cut to the buffer still finds it. */
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, buf, len, path, 4), 1);
	assert_string_equal(path, "cla");
	/* The region's NUL is found first: it comes first on the wire. */
	claim.region = (char *)"r\x7f";
	len = pack_with_nuls(&req, buf, sizeof(buf));
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, buf, len, path,
					      sizeof(path)),
			 1);
	assert_string_equal(path, "claim.region");
	/* Clean names: nothing found, the path left empty. */
	claim.region = (char *)"r";
	claim.name = (char *)"ab";
	len = pack_with_nuls(&req, buf, sizeof(buf));
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, buf, len, path,
					      sizeof(path)),
			 0);
	assert_string_equal(path, "");
}

/* A repeated sub-message's string, past a clean first element. */
static void test_find_nul_move(void **state)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__MoveReq move = PMEMZ__MOVE_REQ__INIT;
	Pmemz__Move mv[2] = {PMEMZ__MOVE__INIT, PMEMZ__MOVE__INIT};
	Pmemz__Move *pv[2] = {&mv[0], &mv[1]};
	uint8_t buf[256];
	char path[64];
	size_t len;

	mv[0].from_tag = (char *)"p";
	mv[0].extent = 0x7f; /* a varint byte of 0x7f is not a string: left alone */
	mv[0].to_tag = (char *)"c0";
	mv[1].from_tag = (char *)"p";
	mv[1].extent = 2;
	mv[1].to_tag = (char *)"c1\x7f" "x";
	move.region = (char *)"r";
	move.n_moves = 2;
	move.moves = pv;
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 1;
	req.op_case = PMEMZ__REQUEST__OP_MOVE;
	req.move = &move;
	len = pmemz__request__get_packed_size(&req);
	assert_true(len <= sizeof(buf));
	pmemz__request__pack(&req, buf);
	for (size_t i = 0; i + 2 < len; i++)
		if (memcmp(buf + i, "c1\x7f", 3) == 0)
			buf[i + 2] = 0;
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, buf, len, path,
					      sizeof(path)),
			 1);
	assert_string_equal(path, "move.moves.to_tag");
}

/* Bytes fields and unknown fields may hold NULs; malformed input is refused. */
static void test_find_nul_other_fields(void **state)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__NoopReq noop = PMEMZ__NOOP_REQ__INIT;
	static const uint8_t zeros[8];
	/* field 99, length-delimited, 3 bytes with a NUL; then id = 1 */
	static const uint8_t unknown[] = {0x9a, 0x06, 0x03, 'a', 0, 'b', 0x10, 0x01};
	static const uint8_t cut_len[] = {0x62, 0x05, 0x0a, 0x01};	 /* allocate: 5 bytes, 2 there */
	static const uint8_t cut_varint[] = {0x10, 0xff};		 /* id, varint unfinished */
	static const uint8_t group[] = {0x0b, 0x0c};			 /* field 1 as a group */
	static const uint8_t cut_fixed[] = {0x09, 1, 2, 3};		 /* 64-bit field, 3 bytes */
	static const uint8_t long_varint[] = {0x10, 0x80, 0x80, 0x80, 0x80, 0x80,
					      0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
	uint8_t buf[64];
	char path[64];
	size_t len;

	noop.has_payload = true;
	noop.payload.data = (uint8_t *)(uintptr_t)zeros;
	noop.payload.len = sizeof(zeros);
	req.version = PMEMZ_PROTO_VERSION;
	req.id = 1;
	req.op_case = PMEMZ__REQUEST__OP_NOOP;
	req.noop = &noop;
	len = pmemz__request__get_packed_size(&req);
	pmemz__request__pack(&req, buf);
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, buf, len, path,
					      sizeof(path)),
			 0);
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, unknown,
					      sizeof(unknown), path, sizeof(path)),
			 0);
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, cut_len,
					      sizeof(cut_len), path, sizeof(path)),
			 -EBADMSG);
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, cut_varint,
					      sizeof(cut_varint), path, sizeof(path)),
			 -EBADMSG);
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, group, sizeof(group),
					      path, sizeof(path)),
			 -EBADMSG);
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, cut_fixed,
					      sizeof(cut_fixed), path, sizeof(path)),
			 -EBADMSG);
	assert_int_equal(pmemz_frame_find_nul(&pmemz__request__descriptor, long_varint,
					      sizeof(long_varint), path, sizeof(path)),
			 -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_peek_short_header),  cmocka_unit_test(test_peek_exact),
	    cmocka_unit_test(test_peek_oversize),      cmocka_unit_test(test_peek_zero),
	    cmocka_unit_test(test_frame_len),
	    cmocka_unit_test(test_request_round_trip), cmocka_unit_test(test_response_round_trip),
	    cmocka_unit_test(test_pack_too_large),     cmocka_unit_test(test_unpack_garbage),
	    cmocka_unit_test(test_find_nul_claim),     cmocka_unit_test(test_find_nul_move),
	    cmocka_unit_test(test_find_nul_other_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
