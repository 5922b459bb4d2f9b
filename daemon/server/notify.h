/* SPDX-License-Identifier: MIT */
/*
 * sd_notify wrappers.  All are no-ops outside systemd (NOTIFY_SOCKET unset);
 * failures to reach systemd are logged at debug level and otherwise ignored.
 */
#ifndef PMEMZ_NOTIFY_H
#define PMEMZ_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

void notify_ready(const char *status);
void notify_status(const char *status);
void notify_stopping(const char *status);
/* A reload begins; notify_ready() ends it. */
void notify_reloading(void);
void notify_watchdog(void);
/* True with the interval (microseconds) when systemd expects WATCHDOG=1. */
bool notify_watchdog_enabled(uint64_t *usec);

#endif
