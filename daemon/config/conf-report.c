/* SPDX-License-Identifier: MIT */
/*
 * Configuration errors: every one is printed ("WHERE: message") and counted;
 * parsing goes on, so one run shows them all.
 */
#include <stdarg.h>
#include <string.h>

#include "conf-private.h"

void conf_report(struct errsink *e, const char *fmt, ...)
{
	va_list ap;

	e->n++;
	if (!e->out)
		return;
	fprintf(e->out, "%s: ", e->where);
	va_start(ap, fmt);
	vfprintf(e->out, fmt, ap);
	va_end(ap);
	fputc('\n', e->out);
}

char *conf_report_strdup(struct errsink *e, const char *s)
{
	char *p = strdup(s);

	if (!p)
		conf_report(e, "out of memory");
	return p;
}
