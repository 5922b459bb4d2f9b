/* SPDX-License-Identifier: MIT */
/* The daemon's one-line STATUS for systemd (sd_notify) and pmemzctl. */
#ifndef PMEMZ_STATUS_H
#define PMEMZ_STATUS_H

#include <stddef.h>

struct manager;
struct status;

/* For m->status; -ENOMEM. */
int status_new(struct status **out);
void status_free(struct status *st);

void status_format(struct manager *m, char *buf, size_t len);
/* Compute STATUS again and send it to systemd if it changed. */
void status_update(struct manager *m);
/* Compute STATUS again and send it with READY=1 (at start, after a reload). */
void status_ready(struct manager *m);
/* A reload changed nothing, for why (shown first until the next reload), or NULL: it applied. */
void status_reload_result(struct manager *m, const char *why);

#endif
