/* SPDX-License-Identifier: MIT */
#include "feature-mask.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

void pmemz_append(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*o >= len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *o, len - *o, fmt, ap);
	va_end(ap);
	*o = k < 0 ? len : MIN(len, *o + (size_t)k);
}

const char *pmemz_mask_str(uint64_t mask, char *buf, size_t len)
{
	size_t o = 0;
	unsigned n = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	if (!mask) {
		pmemz_append(buf, len, &o, "0");
		return buf;
	}
	pmemz_append(buf, len, &o, "0x%016" PRIx64 " (bit%s ", mask, (mask & (mask - 1)) ? "s" : "");
	for (unsigned b = 0; b < 64; b++)
		if (mask & (UINT64_C(1) << b))
			pmemz_append(buf, len, &o, "%s%u", n++ ? ", " : "", b);
	pmemz_append(buf, len, &o, ")");
	return buf;
}
