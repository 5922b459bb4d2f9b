/* SPDX-License-Identifier: MIT */
/* The daemon's one-line STATUS for systemd (sd_notify) and pmemzctl. */
#ifndef PMEMZ_STATUS_H
#define PMEMZ_STATUS_H

#include <stddef.h>

struct manager;

void status_format(struct manager *m, char *buf, size_t len);
/* Compute STATUS again and send it to systemd if it changed. */
void status_update(struct manager *m);

#endif
