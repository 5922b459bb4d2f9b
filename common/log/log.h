/* SPDX-License-Identifier: MIT */
/*
 * Daemon logging.  Lines go to stderr; under systemd (JOURNAL_STREAM set)
 * each line carries an sd-daemon "<N>" prefix so journald keeps the level.
 * The function that handles an error logs it, once:
 *     return log_error_errno(r, "Failed to map region '%s': %m", name);
 * %m prints strerror(-r).
 */
#ifndef PMEMZ_LOG_H
#define PMEMZ_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

#include "util.h"

void log_open(bool journal);      /* journal: force "<N>" prefixes */
void log_set_max_level(int level); /* LOG_ERR .. LOG_DEBUG */
int log_get_max_level(void);
int log_level_from_string(const char *s); /* "err", "warning", "info", "debug"; -EINVAL */

void log_internal(int level, const char *fmt, ...) _printf_(2, 3);
/* Logs with errno = |err| (for %m) and returns -|err|. */
int log_internal_errno(int level, int err, const char *fmt, ...) _printf_(3, 4);
/*
 * The calling thread's last message at error level or worse ("" after
 * log_clear_last_error): lets a caller report why a callee failed (a
 * region that did not open) without each callee returning a message.
 */
const char *log_last_error(void);
void log_clear_last_error(void);

/*
 * A client-chosen string made safe for one log line: bytes outside printable
 * ASCII and the backslash become \xNN, so that a name cannot end
 * the line, forge another, move the terminal's cursor or reorder text (bidi
 * controls).  Cut to fit len with "..." at the end.  Returns buf.
 *     log_debug("tag '%s'", LOG_ESC(name));
 */
const char *log_escape(const char *s, char *buf, size_t len);
#define LOG_ESC_MAX 272 /* 64 bytes escaped in full, and the ending */
#define LOG_ESC(s) log_escape((s), (char[LOG_ESC_MAX]){0}, LOG_ESC_MAX)

#define log_debug(...) log_internal(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_internal(LOG_ERR, __VA_ARGS__)
#define log_debug_errno(e, ...) log_internal_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_internal_errno(LOG_ERR, e, __VA_ARGS__)

#endif
