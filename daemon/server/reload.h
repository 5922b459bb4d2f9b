/* SPDX-License-Identifier: MIT */
/* SIGHUP: the configuration again, applied to the running daemon (reload.c). */
#ifndef PMEMZ_RELOAD_H
#define PMEMZ_RELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "server.h"

struct connection;
struct reload;

/*
 * For m->reload: the command line SIGHUP parses again and the
 * configurations loaded since start (freed here).  -ENOMEM.
 */
int reload_new(struct reload **out);
void reload_free(struct reload *rl);
/* The command line, kept by the caller; until given, reloads are refused. */
void reload_set_args(struct reload *rl, int argc, char **argv);

/* Parse the configuration again and apply what may change. */
void reload_sighup(struct manager *m);
/* c opened mr (OPEN_REGION): mr is in use while c lives. */
void reload_region_opened(struct manager_region *mr, const struct connection *c);
/* Take down the removed regions that nobody uses any more. */
void reload_reap_removed(struct manager *m);
/* What keeps mr up ("2 leases, 1 connection"); false when nothing. */
bool reload_region_busy(struct manager *m, struct manager_region *mr, char *why, size_t len);

#endif
