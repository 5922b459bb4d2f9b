/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util.h"

int pmemz_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s)
		return -EINVAL;
	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL; /* strtoull would accept "-1" */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	case '\0':
	case 'B':
		break;
	default:
		return -EINVAL;
	}
	if (shift)
		end++;
	if (strcasecmp(end, "") && strcasecmp(end, "B") && strcasecmp(end, "iB"))
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

int pmemz_parse_rate(const char *s, uint64_t *out)
{
	_cleanup_free_ char *size = NULL;
	size_t n;

	if (!s)
		return -EINVAL;
	if (strcasecmp(s, "unlimited") == 0) {
		*out = 0;
		return 0;
	}
	n = strlen(s);
	if (n >= 2 && strcasecmp(s + n - 2, "/s") == 0) {
		size = strndup(s, n - 2);
		if (!size)
			return -ENOMEM;
		s = size;
	}
	return pmemz_parse_size(s, out);
}

const char *pmemz_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024.0 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

uint64_t pmemz_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
