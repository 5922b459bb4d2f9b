/* SPDX-License-Identifier: MIT */
/*
 * What the files of the checker share.  They are in layers, each calling
 * only those below it (tests/lint/call-cycles.py):
 *
 *   check-path.c                      files and devices, mapped read-only
 *     check.c                         the check: phases in order, SIGBUS armed
 *       check-header.c check-slots.c check-records.c check-data.c
 *         check-report.c, and common/sigbus.c (the SIGBUS guard)
 */
#ifndef PMEMZ_CHECK_INTERNAL_H
#define PMEMZ_CHECK_INTERNAL_H

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "sigbus.h"
#include "util.h"

/* On the heap: it must survive a siglongjmp with defined contents. */
struct checker {
	const uint8_t *base; /* headers and tables: the image, or a split region's metadata */
	uint64_t size;
	/* The extents: the image again, or a split region's data file (data_split). */
	const uint8_t *data;
	uint64_t data_size;
	bool data_split;
	const struct media_badblock *data_bbs;
	size_t n_data_bbs;
	bool meta_device; /* the metadata is a device: larger than its tables is fine */
	unsigned flags;
	struct check_report *rep;
	int err; /* first allocation failure */
	bool unusable;
	bool unsupported;	    /* a newer build's format (check_report_refuse) */
	enum media_refusal verdict; /* media_region_refusal's, on the headers and sizes */
	size_t cap_problems, cap_notes, cap_tags;
	const struct media_badblock *bbs; /* never read */
	size_t n_bbs;
	/* Per tag id, [0] unused: */
	uint8_t *kind;		  /* enum media_slot_kind */
	uint64_t *cnt;		  /* COMMITTED records naming the slot */
	uint64_t *first;	  /* the first of them */
	uint8_t *role;		  /* MOVE_ROLE_* (media_moves_resolve) */
	struct layout_tag *slots; /* the tag table, copied: slots[id - 1]; as it is once the
				     decided MOVE batches finished (check_slots_moves) */
	bool hold;		  /* recovery holds back records under WRITTEN / FREEING slots */
};

/* ---- check-report.c ---- */
/* Append line (NULL: out of memory, noted in c->err) to the vector *v. */
void check_report_push(struct checker *c, char ***v, size_t *n, size_t *cap, char *line);
void check_report_problem(struct checker *c, const char *fmt, ...) _printf_(2, 3);
void check_report_note(struct checker *c, const char *fmt, ...) _printf_(2, 3);
#define check_report_unusable(c, ...)                                                              \
	do {                                                                                       \
		(c)->unusable = true;                                                              \
		check_report_problem((c), __VA_ARGS__);                                            \
	} while (0)
/*
 * The media module's verdict that the daemon refuses the region
 * (media.h: enum media_refusal), the first verdict recorded in the
 * report: damage makes it unusable, with a problem line that ends with
 * the reason; a newer build's format (media_refusal_unsupported) makes it
 * unsupported, with rep->unsupported saying so, and no problem line.
 */
void check_report_refuse(struct checker *c, enum media_refusal why, const char *fmt, ...)
    _printf_(3, 4);
/* A name from the media, printable: at most 63 bytes, anything odd as '?'. */
const char *check_report_safe_name(const char name[64], char out[LAYOUT_TAG_NAME_MAX + 1]);
const char *check_report_state_name(unsigned s);
void check_report_add_tag(struct checker *c, uint32_t id, const struct layout_tag *t);

/* ---- the phases, in the order check.c runs them ---- */
/* false: no header to check the tables with. */
bool check_header_choice(struct checker *c);
bool check_header_geometry(struct checker *c);
void check_slots_load(struct checker *c);
void check_slots_moves(struct checker *c);
void check_slots_classify(struct checker *c);
void check_slots_duplicates(struct checker *c);
void check_records_walk(struct checker *c);
void check_slots_named(struct checker *c);
void check_slots_missing(struct checker *c);
void check_slots_use(struct checker *c);
void check_data_zeroed(struct checker *c);

/* ---- check.c ---- */
/*
 * meta: headers and tables (with bbs); data: the extents (with data_bbs);
 * split: data is a split region's data file, else data == meta.
 */
int check_run(const void *meta, uint64_t meta_size, const void *data, uint64_t data_size,
	      bool split, bool meta_device, unsigned flags, const struct media_badblock *bbs,
	      size_t n_bbs, const struct media_badblock *data_bbs, size_t n_data_bbs,
	      struct check_report *rep);

#endif
