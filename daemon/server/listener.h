/* SPDX-License-Identifier: MIT */
/*
 * The listening Unix socket: taken from systemd socket activation when
 * present, else bound at the configured path (a stale socket is replaced
 * only when nothing answers on it).  Accepts are paused for a second when
 * the process runs out of file descriptors.
 */
#ifndef PMEMZ_LISTENER_H
#define PMEMZ_LISTENER_H

#include "util.h"

struct manager;
struct listener;

int listener_new(struct manager *m, const char *path, struct listener **out);
/* Stop accepting; unlink the socket when we created it. */
void listener_free(struct listener *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct listener *, listener_free)
const char *listener_describe(const struct listener *l);

#endif
