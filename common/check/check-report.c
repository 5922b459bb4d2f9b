/* SPDX-License-Identifier: MIT */
/*
 * The checker's report: problem and note lines (capped, counted), the
 * daemon's refusal, the tags listed, names made printable.  Calls nothing
 * else of the checker.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-internal.h"
#include "vector.h"

void check_report_push(struct checker *c, char ***v, size_t *n, size_t *cap, char *line)
{
	if (!line) {
		c->err = -ENOMEM;
		return;
	}
	int r = PMEMZ_GROW(*v, cap, *n + 1);

	if (r < 0) {
		free(line);
		c->err = r;
		return;
	}
	(*v)[(*n)++] = line;
}

static char *vformat(const char *fmt, va_list ap) _printf_(1, 0);
static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

void check_report_problem(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	c->rep->problems_total++;
	if (c->rep->n_problems >= CHECK_MAX_LINES)
		return;
	va_start(ap, fmt);
	check_report_push(c, &c->rep->problems, &c->rep->n_problems, &c->cap_problems,
			  vformat(fmt, ap));
	va_end(ap);
}

void check_report_note(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	if (c->rep->n_notes >= CHECK_MAX_LINES)
		return;
	va_start(ap, fmt);
	check_report_push(c, &c->rep->notes, &c->rep->n_notes, &c->cap_notes, vformat(fmt, ap));
	va_end(ap);
}

/*
 * The media module's verdict that the daemon refuses the region
 * (media.h: enum media_refusal), the first one recorded in the report,
 * with the line that names it: "DETAIL; the daemon refuses the region
 * (REASON)".  Damage makes the image unusable, the line a problem; a
 * newer build's format (media_refusal_unsupported) makes it unsupported,
 * the line rep->unsupported, not a problem.
 */
void check_report_refuse(struct checker *c, enum media_refusal why, const char *fmt, ...)
{
	struct check_report *rep = c->rep;
	_cleanup_free_ char *detail = NULL;
	va_list ap;

	if (rep->refusal == REFUSE_NONE)
		rep->refusal = why;
	va_start(ap, fmt);
	detail = vformat(fmt, ap);
	va_end(ap);
	if (!detail)
		c->err = -ENOMEM;
	if (!media_refusal_unsupported(why)) {
		c->unusable = true;
		if (detail)
			check_report_problem(c, "%s; the daemon refuses the region (%s)", detail,
					     media_refusal_str(why));
		return;
	}
	c->unsupported = true;
	if (detail)
		(void)snprintf(rep->unsupported, sizeof(rep->unsupported),
			       "%s; the daemon refuses the region (%s)", detail,
			       media_refusal_str(why));
}

/* A name from the media, printable: at most 63 bytes, anything odd as '?'. */
const char *check_report_safe_name(const char name[64], char out[LAYOUT_TAG_NAME_MAX + 1])
{
	size_t i;

	for (i = 0; i < LAYOUT_TAG_NAME_MAX && name[i]; i++)
		out[i] = (unsigned char)name[i] < 0x20 || (unsigned char)name[i] >= 0x7f ||
				 name[i] == '\''
			     ? '?'
			     : name[i];
	out[i] = '\0';
	return out;
}

const char *check_report_state_name(unsigned s)
{
	static const char *const names[EXT_NSTATES] = {"DIRTY", "ZEROED", "LEASED", "COMMITTED",
						       "BAD"};

	return s < EXT_NSTATES ? names[s] : "?";
}

void check_report_add_tag(struct checker *c, uint32_t id, const struct layout_tag *t)
{
	struct check_report *rep = c->rep;
	struct check_tag *ct;
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	int r = PMEMZ_GROW(rep->tags, &c->cap_tags, rep->n_tags + 1);

	if (r < 0) {
		c->err = r;
		return;
	}
	ct = &rep->tags[rep->n_tags++];
	memset(ct, 0, sizeof(*ct));
	ct->id = id;
	ct->uid = t->uid;
	ct->state = t->state;
	(void)snprintf(ct->name, sizeof(ct->name), "%s", check_report_safe_name(t->name, nm));
}

void check_report_free(struct check_report *rep)
{
	if (!rep)
		return;
	for (size_t i = 0; i < rep->n_problems; i++)
		free(rep->problems[i]);
	for (size_t i = 0; i < rep->n_notes; i++)
		free(rep->notes[i]);
	free(rep->problems);
	free(rep->notes);
	free(rep->tags);
	rep->problems = rep->notes = NULL;
	rep->tags = NULL;
	rep->n_problems = rep->n_notes = rep->n_tags = 0;
}
