/* SPDX-License-Identifier: MIT */
/*
 * The daemon's main loop: event base, signals, timers, start and stop
 * (types in server.h).
 *
 * The server's layers, each calling only down (docs/ARCHITECTURE.md):
 * manager.c (loop, signals, status timer) > reload.c > listener.c >
 * dispatch.c > rpc-*.c > rpc.c > commit.c (group commit, held replies) >
 * regions.c (lifecycle) > waitq.c > connection.c (transport, hooks up) >
 * usage.c, lease.c, claim.c, peer.c, notify.c, status.c.
 */
#ifndef PMEMZ_MANAGER_H
#define PMEMZ_MANAGER_H

#include "server.h"

/* Event base and regions (each region_open logs its own failure). */
int manager_new(const struct daemon_conf *conf, struct manager **out);
/* Listen, install signal handlers and timers, tell systemd READY=1. */
int manager_start(struct manager *m);
/* Run until SIGTERM/SIGINT or a fatal error; 0 or -errno. */
int manager_run(struct manager *m);
/* Closes connections, syncs and closes every region. */
void manager_free(struct manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct manager *, manager_free)

/* The command line SIGHUP parses again (with the file it names); kept by the caller. */
void manager_set_args(struct manager *m, int argc, char **argv);

/* Begin an orderly shutdown (as on SIGTERM) with the given exit status. */
void manager_stop(struct manager *m, int status);

#endif
