/* SPDX-License-Identifier: MIT */
/* Value formatting for pmemzctl's text output. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pmemzctl.h"

const char *ctl_format_size(uint64_t bytes, bool human, char *buf, size_t len)
{
	if (human)
		return pmemz_format_size(bytes, buf, len);
	(void)snprintf(buf, len, "%" PRIu64, bytes);
	return buf;
}

const char *ctl_format_rate(double bytes_per_sec, bool human, char *buf, size_t len)
{
	char sz[48];

	if (!(bytes_per_sec >= 0.0) || bytes_per_sec > 1.8e19) /* NaN, negative, absurd */
		bytes_per_sec = 0.0;
	if (!human) {
		(void)snprintf(buf, len, "%.0f", bytes_per_sec);
		return buf;
	}
	(void)snprintf(buf, len, "%s/s",
		       pmemz_format_size((uint64_t)bytes_per_sec, sz, sizeof(sz)));
	return buf;
}

const char *ctl_format_duration(uint64_t sec, bool human, char *buf, size_t len)
{
	uint64_t d = sec / 86400, h = sec / 3600 % 24, m = sec / 60 % 60, s = sec % 60;

	if (!human)
		(void)snprintf(buf, len, "%" PRIu64, sec);
	else if (d)
		(void)snprintf(buf, len, "%" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m", d, h, m);
	else if (h)
		(void)snprintf(buf, len, "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", h, m, s);
	else if (m)
		(void)snprintf(buf, len, "%" PRIu64 "m %02" PRIu64 "s", m, s);
	else
		(void)snprintf(buf, len, "%" PRIu64 "s", s);
	return buf;
}

const char *ctl_format_runs(const struct ctl_run *runs, size_t n, char *buf, size_t len)
{
	static const char more[] = ",...";
	size_t used = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char one[48];
		int w;

		if (runs[i].count <= 1)
			w = snprintf(one, sizeof(one), "%s%" PRIu64, i ? "," : "", runs[i].first);
		else
			w = snprintf(one, sizeof(one), "%s%" PRIu64 "-%" PRIu64, i ? "," : "",
				     runs[i].first, runs[i].first + runs[i].count - 1);
		/* Keep room for the ellipsis unless this is the last run. */
		if (used + (size_t)w + (i + 1 < n ? sizeof(more) - 1 : 0) >= len) {
			const char *m = used ? more : more + 1;

			if (used + strlen(m) < len)
				memcpy(buf + used, m, strlen(m) + 1);
			return buf;
		}
		memcpy(buf + used, one, (size_t)w + 1);
		used += (size_t)w;
	}
	return buf;
}

const char *ctl_format_uuid(const uint8_t *b, size_t n, char *buf, size_t len)
{
	if (n != 16 || !b) {
		if (len)
			buf[0] = '\0';
		return buf;
	}
	(void)snprintf(buf, len,
		       "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		       b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		       b[13], b[14], b[15]);
	return buf;
}
