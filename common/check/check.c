/* SPDX-License-Identifier: MIT */
/*
 * Offline consistency check of a region image (check.h).  Reads only.
 *
 * The rules are the daemon's, from the media module (media.h): which header
 * is used, what a record or a slot is, what the records naming a slot say
 * about it, whether committed extents are missing; the checker walks the
 * image itself and reports their verdicts.  In a raw (crashed) image
 * the states recovery resolves on purpose -- LEASED records, WRITTEN and
 * FREEING slots, COMMITTED records under a WRITTEN or FREEING slot with an
 * intact body -- are notes, not problems; with CHECK_RECOVERED they are
 * problems.  Everything else that recovery treats as damage (and
 * quarantines) is a problem in both modes: in particular COMMITTED records
 * under a FREE slot, which no crash leaves (region-tag.c).
 *
 * A media error (SIGBUS) while reading is caught: in the metadata it makes
 * the image unusable, in a ZEROED extent it is a problem of that extent.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-internal.h"

const char *check_status_str(enum check_status s)
{
	switch (s) {
	case CHECK_CLEAN:
		return "clean";
	case CHECK_INCONSISTENT:
		return "inconsistent";
	case CHECK_UNUSABLE:
		return "unusable";
	case CHECK_UNSUPPORTED:
		return "unsupported";
	}
	return "?";
}

const char *check_report_status_str(const struct check_report *rep)
{
	if (rep->status == CHECK_UNSUPPORTED && rep->refusal == REFUSE_RO_COMPAT)
		return "unsupported (read-only)";
	return check_status_str(rep->status);
}

static void run_checks(struct checker *c)
{
	const struct layout_header *h;

	if (!check_header_choice(c))
		return;
	if (!check_header_geometry(c))
		return;
	h = &c->rep->hdr;
	c->kind = calloc(h->tag_count + 1, sizeof(*c->kind));
	c->cnt = calloc(h->tag_count + 1, sizeof(*c->cnt));
	c->first = calloc(h->tag_count + 1, sizeof(*c->first));
	c->role = calloc(h->tag_count + 1, sizeof(*c->role));
	c->slots = calloc(MAX(h->tag_count, (uint64_t)1), sizeof(*c->slots));
	if (!c->kind || !c->cnt || !c->first || !c->slots || !c->role) {
		c->err = -ENOMEM;
		return;
	}
	/* The records first: the MOVE rule reads them, and every slot rule after it. */
	check_slots_load(c);
	check_records_walk(c);
	check_slots_moves(c);
	check_slots_classify(c);
	check_slots_duplicates(c);
	check_slots_named(c);
	check_slots_missing(c);
	check_slots_use(c);
	if (!(c->flags & CHECK_NO_DATA))
		check_data_zeroed(c);
}

int check_image(const void *base, uint64_t size, unsigned flags, struct check_report *rep)
{
	return check_image_badblocks(base, size, flags, NULL, 0, rep);
}

/* The report's last line and status; frees c.  c->err (first allocation failure) or 0. */
static int finish(struct checker *c)
{
	struct check_report *rep = c->rep;
	int r;

	if (rep->problems_total > rep->n_problems) {
		char *s = NULL;

		if (asprintf(&s, "... and %" PRIu64 " more problems not listed",
			     rep->problems_total - rep->n_problems) < 0)
			s = NULL;
		check_report_push(c, &rep->problems, &rep->n_problems, &c->cap_problems, s);
	}
	/* Damage found beside a newer build's features (read-only ones) is still damage. */
	rep->status = c->unusable		? CHECK_UNUSABLE
		      : c->unsupported		? CHECK_UNSUPPORTED
		      : rep->problems_total > 0 ? CHECK_INCONSISTENT
						: CHECK_CLEAN;
	r = c->err;
	free(c->kind);
	free(c->cnt);
	free(c->first);
	free(c->slots);
	free(c->role);
	free(c);
	return r;
}

int check_run(const void *meta, uint64_t meta_size, const void *data, uint64_t data_size,
	      bool split, bool meta_device, unsigned flags, const struct media_badblock *bbs,
	      size_t n_bbs, const struct media_badblock *data_bbs, size_t n_data_bbs,
	      struct check_report *rep)
{
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = pmemz_bus.jmp;
	struct checker *c;
	int r;

	memset(rep, 0, sizeof(*rep));
	rep->image_size = meta_size; /* where the headers are */
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base = meta;
	c->size = meta ? meta_size : 0;
	c->data = data;
	c->data_size = data ? data_size : 0;
	c->data_split = split;
	c->meta_device = meta_device;
	c->flags = flags;
	c->rep = rep;
	c->bbs = bbs;
	c->n_bbs = n_bbs;
	c->data_bbs = data_bbs;
	c->n_data_bbs = n_data_bbs;
	rep->badblocks = n_bbs + (split ? n_data_bbs : 0);

	pmemz_sigbus_install();
	if (sigsetjmp(jb, 1)) {
		pmemz_bus.jmp = outer;
		if (split && pmemz_bus.addr >= (uintptr_t)data &&
		    pmemz_bus.addr - (uintptr_t)data < data_size)
			check_report_unusable(
			    c, "media error (SIGBUS) reading the data file at offset %" PRIu64,
			    (uint64_t)(pmemz_bus.addr - (uintptr_t)data));
		else
			check_report_unusable(
			    c, "media error (SIGBUS) reading the metadata at offset %" PRIu64,
			    (uint64_t)(pmemz_bus.addr - (uintptr_t)meta));
	} else {
		pmemz_bus.jmp = &jb;
		run_checks(c);
		pmemz_bus.jmp = outer;
	}

	r = finish(c);
	if (r < 0)
		check_report_free(rep);
	return r;
}

int check_image_badblocks(const void *base, uint64_t size, unsigned flags,
			  const struct media_badblock *bbs, size_t n_bbs, struct check_report *rep)
{
	return check_run(base, size, base, size, false, false, flags, bbs, n_bbs, bbs, n_bbs, rep);
}
