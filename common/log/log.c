/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

static int max_level = LOG_INFO;
static bool journal_prefix;
/* The calling thread's last error line, for status reports (log_last_error). */
static __thread char last_error[256];

void log_open(bool journal)
{
	/* systemd sets JOURNAL_STREAM when stderr is connected to journald. */
	journal_prefix = journal || getenv("JOURNAL_STREAM") != NULL;
}

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
}

int log_level_from_string(const char *s)
{
	static const struct {
		const char *name;
		int level;
	} names[] = {
		{"emerg", LOG_EMERG}, {"alert", LOG_ALERT},	{"crit", LOG_CRIT},
		{"err", LOG_ERR},     {"error", LOG_ERR},	{"warning", LOG_WARNING},
		{"warn", LOG_WARNING}, {"notice", LOG_NOTICE}, {"info", LOG_INFO},
		{"debug", LOG_DEBUG},
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcasecmp(s, names[i].name) == 0)
			return names[i].level;
	return -EINVAL;
}

static void log_write(int level, const char *fmt, va_list ap) _printf_(2, 0);
static void log_write(int level, const char *fmt, va_list ap)
{
	static const char *const tags[] = {"emerg", "alert", "crit",   "error",
					   "warning", "notice", "info", "debug"};
	char line[2048];

	(void)vsnprintf(line, sizeof(line), fmt, ap);
	if (level <= LOG_ERR) {
		size_t n = strnlen(line, sizeof(last_error) - 1);

		memcpy(last_error, line, n);
		last_error[n] = '\0';
	}
	if (journal_prefix)
		fprintf(stderr, "<%d>%s\n", level, line);
	else
		fprintf(stderr, "pmemzerod: %s: %s\n", tags[level & 7], line);
}

void log_internal(int level, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (level > max_level)
		return;
	va_start(ap, fmt);
	log_write(level, fmt, ap);
	va_end(ap);
	errno = saved;
}

const char *log_last_error(void)
{
	return last_error;
}

void log_clear_last_error(void)
{
	last_error[0] = '\0';
}

int log_internal_errno(int level, int err, const char *fmt, ...)
{
	va_list ap;

	err = err < 0 ? -err : err;
	if (level <= max_level) {
		errno = err; /* %m */
		va_start(ap, fmt);
		log_write(level, fmt, ap);
		va_end(ap);
	}
	return -err;
}

static bool log_plain(unsigned char ch)
{
	return ch >= 0x20 && ch < 0x7f && ch != '\\';
}

const char *log_escape(const char *s, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, full = 0, room;

	if (len < 4) {
		if (len)
			buf[0] = '\0';
		return buf;
	}
	if (!s)
		s = "(null)";
	for (const char *p = s; *p; p++)
		full += log_plain((unsigned char)*p) ? 1 : 4;
	/* All of it, or as much as leaves room for "..." */
	room = full < len ? len - 1 : len - 4;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (o + (log_plain(ch) ? 1 : 4) > room)
			break;
		if (log_plain(ch)) {
			buf[o++] = (char)ch;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[ch >> 4];
			buf[o++] = hex[ch & 15];
		}
	}
	if (*s) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}
