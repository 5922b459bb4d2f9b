/* SPDX-License-Identifier: MIT */
/*
 * The socket side of a fake pmemzerod, for tests of the client library
 * that script the daemon's answers (test-libpmemzclient, test-wire-compat):
 * a listening socket in a fresh directory, whole frames in and out, a file
 * descriptor passed with a frame as the daemon passes a region's.
 */
#ifndef PMEMZ_FAKE_DAEMON_H
#define PMEMZ_FAKE_DAEMON_H

#include <stddef.h>

#include "frame.h"

struct fake_listener {
	char dir[64];   /* /tmp/pmemz-fake-XXXXXX */
	char path[128]; /* DIR/sock */
	int fd;
};

/* Listen on a socket in a fresh directory: 0, or -errno (nothing left behind). */
int fake_listen(struct fake_listener *l);
/* Close the socket, remove it and its directory. */
void fake_unlisten(struct fake_listener *l);

/* Read exactly len bytes: 0, or -1 at EOF or on an error. */
int fake_read_full(int fd, void *buf, size_t len);
/* The next request frame, unpacked; NULL at EOF or for a bad frame. */
Pmemz__Request *fake_read_request(int cfd);
/* Send buf in one sendmsg, with fd attached when fd >= 0: 0 or -1. */
int fake_send_raw(int cfd, const void *buf, size_t len, int fd);
/* Pack resp and send it (fd as fake_send_raw): 0 or -1. */
int fake_send_response(int cfd, const Pmemz__Response *resp, int fd);

#endif
