/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int pmemz_frame_peek(const uint8_t *buf, size_t avail, size_t *payload_len)
{
	uint32_t len;

	*payload_len = 0;
	if (avail < PMEMZ_FRAME_HDR)
		return 0;
	len = pmemz_frame_len(buf);
	if (len == 0)
		return -EBADMSG;
	if (len > PMEMZ_FRAME_MAX)
		return -EMSGSIZE;
	*payload_len = len;
	return 0;
}

static int frame_pack(const ProtobufCMessage *msg, uint8_t **frame, size_t *frame_len)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (len == 0 || len > PMEMZ_FRAME_MAX)
		return -EMSGSIZE;
	buf = malloc(PMEMZ_FRAME_HDR + len);
	if (!buf)
		return -ENOMEM;
	buf[0] = (uint8_t)len;
	buf[1] = (uint8_t)(len >> 8);
	buf[2] = (uint8_t)(len >> 16);
	buf[3] = (uint8_t)(len >> 24);
	protobuf_c_message_pack(msg, buf + PMEMZ_FRAME_HDR);
	*frame = buf;
	*frame_len = PMEMZ_FRAME_HDR + len;
	return 0;
}

int pmemz_frame_pack_request(const Pmemz__Request *req, uint8_t **frame, size_t *frame_len)
{
	return frame_pack(&req->base, frame, frame_len);
}

int pmemz_frame_pack_response(const Pmemz__Response *resp, uint8_t **frame, size_t *frame_len)
{
	return frame_pack(&resp->base, frame, frame_len);
}

int pmemz_frame_unpack_request(const uint8_t *payload, size_t len, Pmemz__Request **req)
{
	if (len > PMEMZ_FRAME_MAX)
		return -EMSGSIZE;
	*req = pmemz__request__unpack(NULL, len, payload);
	return *req ? 0 : -EBADMSG;
}

int pmemz_frame_unpack_response(const uint8_t *payload, size_t len, Pmemz__Response **resp)
{
	if (len > PMEMZ_FRAME_MAX)
		return -EMSGSIZE;
	*resp = pmemz__response__unpack(NULL, len, payload);
	return *resp ? 0 : -EBADMSG;
}
