/* SPDX-License-Identifier: MIT */
/* Thread-local last error message and the optional debug log. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client-private.h"

static __thread char errmsg[512];

PMEMZ_EXPORT const char *pmemz_errormsg(void)
{
	return errmsg;
}

void pmemz_err_clear(void)
{
	errmsg[0] = '\0';
}

const char *pmemz_strerror(int err)
{
	static __thread char buf[128];

	return strerror_r(err < 0 ? -err : err, buf, sizeof(buf));
}

int pmemz_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	pmemz_debug("error %d: %s", err, errmsg);
	return err;
}

void pmemz_debug(const char *fmt, ...)
{
	static int enabled = -1; /* every thread computes the same value */
	int en = __atomic_load_n(&enabled, __ATOMIC_RELAXED);
	char line[640];
	va_list ap;

	if (en < 0) {
		const char *e = secure_getenv("PMEMZ_DEBUG");
		en = e && *e && strcmp(e, "0") != 0;
		__atomic_store_n(&enabled, en, __ATOMIC_RELAXED);
	}
	if (!en)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	(void)fprintf(stderr, "libpmemzclient[%d]: %s\n", (int)getpid(), line);
}
