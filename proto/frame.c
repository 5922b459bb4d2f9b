/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
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

/* A varint at *p (at most 10 bytes, before end); moves *p past it. */
static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -EBADMSG;
}

/*
 * The fields of one message at [p, end): strings are searched, known
 * sub-messages walked (the schema has no recursive message, so the depth is
 * the schema's), everything else skipped by its wire type.
 */
static int find_nul(const ProtobufCMessageDescriptor *desc, const uint8_t *p,
		    const uint8_t *end, char *path, size_t path_size, size_t path_len)
{
	while (p < end) {
		const ProtobufCFieldDescriptor *f;
		uint64_t key, n;
		int r;

		if (wire_varint(&p, end, &key) < 0)
			return -EBADMSG;
		switch (key & 7) {
		case 0: /* varint */
			r = wire_varint(&p, end, &n);
			if (r < 0)
				return r;
			continue;
		case 1: /* 64-bit */
			n = 8;
			break;
		case 5: /* 32-bit */
			n = 4;
			break;
		case 2: /* length-delimited */
			if (wire_varint(&p, end, &n) < 0)
				return -EBADMSG;
			break;
		default: /* groups: protobuf-c unpacks none */
			return -EBADMSG;
		}
		if (n > (uint64_t)(end - p))
			return -EBADMSG;
		f = (key & 7) == 2 && key >> 3 <= UINT32_MAX
			? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3))
			: NULL;
		if (f && (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE)) {
			int w = snprintf(path + path_len, path_size - path_len, "%s%s",
					 path_len ? "." : "", f->name);
			size_t len = w < 0 ? path_len : path_len + (size_t)w;

			if (len >= path_size)
				len = path_size - 1;
			if (f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, n))
				return 1;
			if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
				r = find_nul(f->descriptor, p, p + n, path, path_size, len);
				if (r != 0)
					return r;
			}
			path[path_len] = '\0';
		}
		p += n;
	}
	return 0;
}

int pmemz_frame_find_nul(const ProtobufCMessageDescriptor *desc, const uint8_t *payload,
			 size_t len, char *path, size_t path_size)
{
	path[0] = '\0';
	return find_nul(desc, payload, payload + len, path, path_size, 0);
}
