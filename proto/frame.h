/* SPDX-License-Identifier: MIT */
/*
 * Wire framing shared by pmemzerod and libpmemzclient: a 4-byte
 * little-endian payload length followed by one packed protobuf message.
 * The length is checked against PMEMZ_FRAME_MAX before anything is
 * allocated or unpacked.
 */
#ifndef PMEMZ_FRAME_H
#define PMEMZ_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "pmemz.pb-c.h"

/*
 * Protocol versions (proto/pmemz.proto says how they are agreed).
 * PMEMZ_PROTO_VERSION is the one a client's HELLO is sent at, the only one
 * daemons before the version ranges accept; this build speaks
 * PMEMZ_PROTO_VERSION_MIN to PMEMZ_PROTO_VERSION_MAX.
 */
#define PMEMZ_PROTO_VERSION 1u
#define PMEMZ_PROTO_VERSION_MIN 1u
#define PMEMZ_PROTO_VERSION_MAX 1u
#define PMEMZ_FRAME_HDR 4u
#define PMEMZ_FRAME_MAX (64u * 1024u) /* payload bytes */

/*
 * The payload length announced by a frame header (PMEMZ_FRAME_HDR bytes,
 * little endian), unchecked: the one decoder of the length, for
 * pmemz_frame_peek and for messages that quote a refused length.
 */
static inline uint32_t pmemz_frame_len(const uint8_t *hdr)
{
	return (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
	       (uint32_t)hdr[3] << 24;
}

/*
 * Look at the first bytes of a receive buffer.
 * Returns 0 with *payload_len = 0 when fewer than PMEMZ_FRAME_HDR bytes are
 * there yet, 0 with *payload_len set when the header is complete,
 * -EMSGSIZE when the announced payload exceeds PMEMZ_FRAME_MAX and
 * -EBADMSG for an empty payload.
 */
int pmemz_frame_peek(const uint8_t *buf, size_t avail, size_t *payload_len);

/* Pack into a newly malloc'ed frame (header + payload). -EMSGSIZE if too large. */
int pmemz_frame_pack_request(const Pmemz__Request *req, uint8_t **frame, size_t *frame_len);
int pmemz_frame_pack_response(const Pmemz__Response *resp, uint8_t **frame, size_t *frame_len);

/* Unpack a payload (without header). -EBADMSG when protobuf-c rejects it. */
int pmemz_frame_unpack_request(const uint8_t *payload, size_t len, Pmemz__Request **req);
int pmemz_frame_unpack_response(const uint8_t *payload, size_t len, Pmemz__Response **resp);

/*
 * Find a string field whose wire bytes hold a NUL in payload, a packed
 * message of type desc (sub-messages included).  protobuf-c ends a string
 * at its first NUL when it unpacks it and keeps no length, so "a\0b"
 * would reach a handler as "a": the daemon refuses such a request rather
 * than act on another name.  Returns 0 when no string holds a NUL, 1 with
 * the field's path ("claim.name", "move.moves.to_tag") in path when one
 * does, -EBADMSG when payload is not well-formed protobuf.  path_size > 0.
 */
int pmemz_frame_find_nul(const ProtobufCMessageDescriptor *desc, const uint8_t *payload,
			 size_t len, char *path, size_t path_size);

#endif
