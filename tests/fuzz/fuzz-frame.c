/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the daemon's input path for one connection's bytes, without
 * the socket: frames split by pmemz_frame_peek() exactly as
 * connection_process() does, each payload unpacked as a Request; every
 * decoded request is packed again and must decode to the same bytes (the
 * client library packs what the daemon unpacks).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "fuzz.h"

static void roundtrip(const Pmemz__Request *req)
{
	Pmemz__Request *again = NULL;
	uint8_t *frame = NULL, *frame2 = NULL;
	size_t len = 0, len2 = 0, plen = 0;
	int r;

	r = pmemz_frame_pack_request(req, &frame, &len);
	if (r == -EMSGSIZE)
		return; /* an empty Request packs to nothing: refused, as it should */
	FUZZ_ASSERT(r == 0);
	FUZZ_ASSERT(pmemz_frame_peek(frame, len, &plen) == 0);
	FUZZ_ASSERT(plen + PMEMZ_FRAME_HDR == len);
	FUZZ_ASSERT(pmemz_frame_unpack_request(frame + PMEMZ_FRAME_HDR, plen, &again) == 0);
	FUZZ_ASSERT(again->op_case == req->op_case && again->id == req->id &&
		    again->version == req->version);
	FUZZ_ASSERT(pmemz_frame_pack_request(again, &frame2, &len2) == 0);
	FUZZ_ASSERT(len2 == len && memcmp(frame, frame2, len) == 0);
	pmemz__request__free_unpacked(again, NULL);
	free(frame);
	free(frame2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size > 0) {
		Pmemz__Request *req = NULL;
		size_t plen = 0;
		int r = pmemz_frame_peek(data, size, &plen);

		if (r < 0) {
			FUZZ_ASSERT(r == -EMSGSIZE || r == -EBADMSG);
			FUZZ_ASSERT(plen == 0);
			return 0; /* the daemon closes the connection here */
		}
		if (plen == 0 || size - PMEMZ_FRAME_HDR < plen)
			return 0; /* incomplete: the daemon waits for more */
		FUZZ_ASSERT(plen <= PMEMZ_FRAME_MAX);
		r = pmemz_frame_unpack_request(data + PMEMZ_FRAME_HDR, plen, &req);
		if (r == 0) {
			FUZZ_ASSERT(req != NULL);
			roundtrip(req);
			pmemz__request__free_unpacked(req, NULL);
		} else {
			FUZZ_ASSERT(r == -EBADMSG && req == NULL);
			return 0;
		}
		data += PMEMZ_FRAME_HDR + plen;
		size -= PMEMZ_FRAME_HDR + plen;
	}
	return 0;
}
