/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the daemon's input path for one connection's bytes, without
 * the socket: frames split by pmemz_frame_peek() exactly as
 * connection_process() does, each payload unpacked as a Request; every
 * decoded request without unknown fields is packed again and must decode
 * to the same bytes (the client library packs what the daemon unpacks).
 * The daemon's scan for NULs in strings (pmemz_frame_find_nul) walks every
 * payload protobuf-c accepts, and accepts it too.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "fuzz.h"

/* Unknown fields anywhere in the message tree. */
static bool has_unknown(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	if (m->n_unknown_fields)
		return true;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		/* Oneof members share their storage: only the set one is there. */
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(const void *)(base + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(const void *)(base + f->quantifier_offset);
			ProtobufCMessage *const *v =
			    *(ProtobufCMessage *const *const *)(const void *)(base + f->offset);

			for (size_t k = 0; k < n; k++)
				if (has_unknown(v[k]))
					return true;
		} else {
			const ProtobufCMessage *sub =
			    *(const ProtobufCMessage *const *)(const void *)(base + f->offset);

			if (sub && has_unknown(sub))
				return true;
		}
	}
	return false;
}

static void roundtrip(const Pmemz__Request *req)
{
	Pmemz__Request *again = NULL;
	uint8_t *frame = NULL, *frame2 = NULL;
	size_t len = 0, len2 = 0, plen = 0;
	int r;

	/*
	 * protobuf-c keeps unknown fields and packs them back in canonical
	 * form, which it may then refuse (a field number 0 written as a
	 * two-byte varint is accepted, as one byte it is not).  The daemon never
	 * packs what it received; only known fields must round-trip.
	 */
	if (has_unknown(&req->base))
		return;
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
			char path[64];

			FUZZ_ASSERT(req != NULL);
			FUZZ_ASSERT(pmemz_frame_find_nul(&pmemz__request__descriptor,
							 data + PMEMZ_FRAME_HDR, plen, path,
							 sizeof(path)) >= 0);
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
