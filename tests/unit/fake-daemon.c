/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake-daemon.h"

int fake_listen(struct fake_listener *l)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int r;

	(void)snprintf(l->dir, sizeof(l->dir), "/tmp/pmemz-fake-XXXXXX");
	if (!mkdtemp(l->dir))
		return -errno;
	(void)snprintf(l->path, sizeof(l->path), "%s/sock", l->dir);
	memcpy(sa.sun_path, l->path, strlen(l->path) + 1); /* DIR/sock: 27 bytes, always fits */
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd >= 0 && bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    listen(l->fd, 4) == 0)
		return 0;
	r = -errno;
	if (l->fd >= 0)
		(void)close(l->fd);
	l->fd = -1;
	(void)unlink(l->path);
	(void)rmdir(l->dir);
	return r;
}

void fake_unlisten(struct fake_listener *l)
{
	(void)close(l->fd);
	l->fd = -1;
	(void)unlink(l->path);
	(void)rmdir(l->dir);
}

int fake_read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

Pmemz__Request *fake_read_request(int cfd)
{
	uint8_t hdr[PMEMZ_FRAME_HDR], *payload;
	Pmemz__Request *req = NULL;
	size_t len;

	if (fake_read_full(cfd, hdr, sizeof(hdr)) < 0 ||
	    pmemz_frame_peek(hdr, sizeof(hdr), &len) < 0 || len == 0)
		return NULL;
	payload = malloc(len);
	if (payload && fake_read_full(cfd, payload, len) == 0)
		(void)pmemz_frame_unpack_request(payload, len, &req);
	free(payload);
	return req;
}

int fake_send_raw(int cfd, const void *buf, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(cfd, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

int fake_send_response(int cfd, const Pmemz__Response *resp, int fd)
{
	uint8_t *frame;
	size_t len;
	int r;

	if (pmemz_frame_pack_response(resp, &frame, &len) < 0)
		return -1;
	r = fake_send_raw(cfd, frame, len, fd);
	free(frame);
	return r;
}
