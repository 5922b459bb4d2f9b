/* SPDX-License-Identifier: MIT */
#include <time.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "notify.h"

static void notify_send(const char *what, const char *status)
{
	int r;

	if (status)
		r = sd_notifyf(0, "%s%sSTATUS=%s", what ? what : "", what ? "\n" : "", status);
	else
		r = sd_notify(0, what);
	if (r < 0)
		(void)log_debug_errno(r, "sd_notify failed: %m");
}

void notify_ready(const char *status)
{
	notify_send("READY=1", status);
}

void notify_status(const char *status)
{
	notify_send(NULL, status);
}

void notify_stopping(const char *status)
{
	notify_send("STOPPING=1", status);
}

void notify_watchdog(void)
{
	notify_send("WATCHDOG=1", NULL);
}

bool notify_watchdog_enabled(uint64_t *usec)
{
	return sd_watchdog_enabled(0, usec) > 0 && *usec > 0;
}

void notify_reloading(void)
{
	struct timespec ts;
	int r;

	/* MONOTONIC_USEC: what Type=notify-reload wants; harmless for Type=notify. */
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	r = sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
		       (unsigned long long)ts.tv_sec * 1000000ull +
			   (unsigned long long)ts.tv_nsec / 1000ull);
	if (r < 0)
		(void)log_debug_errno(r, "sd_notify failed: %m");
}
