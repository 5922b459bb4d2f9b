/* SPDX-License-Identifier: MIT */
/*
 * Offline consistency check of a region image (file or device), without the
 * daemon: the oracle of the crash tests and the operator's tool after an
 * incident (`pmemzctl check PATH`).  Reads only; never writes.
 */
#ifndef PMEMZ_CHECK_H
#define PMEMZ_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "media.h"

/*
 * Bad ranges are the media module's struct media_badblock; callers of
 * check_image_badblocks() written against its earlier name still build.
 */
#define pstore_badblock media_badblock

/* check flags */
#define CHECK_RECOVERED (1u << 0) /* after recovery: no LEASED, no WRITTEN or FREEING tag */
#define CHECK_NO_DATA (1u << 1)	  /* skip reading ZEROED extents' data (I1) */

enum check_status {
	CHECK_CLEAN = 0,	/* exit 0 */
	CHECK_INCONSISTENT = 1, /* exit 1: problems listed */
	CHECK_UNUSABLE = 2,	/* exit 2: the daemon refuses it (check_report.refusal), or unreadable */
	/* exit 3: a newer pmemzerod wrote it, not damage (media_refusal_unsupported) */
	CHECK_UNSUPPORTED = 3,
};

struct check_tag {
	uint32_t id;
	uint32_t uid;
	uint64_t state; /* the slot's state word: TAG_FREE ... TAG_FREEING, or damage */
	char name[LAYOUT_TAG_NAME_MAX + 1];
	uint64_t n_extents; /* COMMITTED records naming this tag */
};

struct check_report {
	enum check_status status;
	char path[256];
	uint64_t image_size; /* of the image, or of a split region's metadata */
	bool primary_ok, backup_ok;
	struct layout_header hdr;    /* the header used (primary, else backup) */
	uint64_t count[EXT_NSTATES]; /* records per state */
	uint64_t invalid_records;    /* unknown state / tag out of range */
	uint64_t zeroed_checked;     /* ZEROED extents whose data was read */
	uint64_t zeroed_not_zero;    /* ... and found not all zero (I1), or unreadable */
	struct check_tag *tags;	     /* slots not FREE */
	size_t n_tags;
	char **problems; /* one line each, human readable */
	size_t n_problems;

	/* Added by the checker (all zero / NULL when not applicable). */
	bool have_hdr; /* hdr is valid (a header was usable) */
	enum layout_hdr_status primary_status, backup_status;
	char primary_why[160], backup_why[160]; /* layout_header_check()'s reasons */
	bool headers_differ;			/* both valid, different bytes */
	bool data_checked;			/* the I1 pass ran (no CHECK_NO_DATA) */
	uint64_t valid_tags;			/* VALID slots */
	uint64_t rollback_extents; /* COMMITTED under a WRITTEN slot: rolled back at recovery */
	uint64_t release_extents;  /* COMMITTED under a FREEING slot: released at recovery */
	uint64_t problems_total;   /* problems found; > n_problems when lines were dropped */
	uint64_t badblocks;	   /* bad ranges known (device-DAX: libndctl) */
	uint64_t zeroed_bad;	   /* ZEROED extents with a bad range: not read */
	char **notes;		   /* legal crash states recovery resolves; one line each */
	size_t n_notes;
	char meta_path[256]; /* a split region's metadata file; "" otherwise */
	/*
	 * Why the daemon refuses the region (the media module's verdict,
	 * media_refusal_str): REFUSE_NONE when it opens it.  Anything else
	 * makes status CHECK_UNUSABLE.  REFUSE_BLANK: no region yet, which
	 * the daemon formats when nothing would be lost.
	 */
	enum media_refusal refusal;
	/*
	 * The layout version and features of the header used (a version 1
	 * header as the features it had), or of the newer build's header
	 * that makes the region unsupported; the features this build does not
	 * know, of every intact header; and, when the status is
	 * CHECK_UNSUPPORTED (or that verdict was reached beside damage), why.
	 */
	uint32_t layout_version;
	struct layout_features features, unknown;
	char unsupported[320];
};

/* At most this many problem (and note) lines are kept; problems_total counts them all. */
#define CHECK_MAX_LINES 1000u

/* "clean", "inconsistent", "unusable", "unsupported" */
const char *check_status_str(enum check_status s);
/* The same for a report: "unsupported (read-only)" when only ro_compat features are unknown. */
const char *check_report_status_str(const struct check_report *rep);

/* Check an image in memory (base points at offset 0 of the region). */
int check_image(const void *base, uint64_t size, unsigned flags, struct check_report *rep);
/*
 * The same, knowing the media's bad ranges (offsets from the image start):
 * they are never read.  A bad range in a header block makes that header
 * unreadable, one in the extent or tag table makes the image unusable (as
 * the daemon refuses it), one in a ZEROED extent is recovery's work (it
 * marks the extent BAD) or, with CHECK_RECOVERED, a problem.
 */
int check_image_badblocks(const void *base, uint64_t size, unsigned flags,
			  const struct media_badblock *bbs, size_t n_bbs,
			  struct check_report *rep);
/*
 * Open PATH read-only (file or /dev/daxX.Y), map it, check_image (for a
 * device-DAX with the bad ranges libndctl reports, when it can).  -errno if
 * it cannot be read: -EISDIR, -EINVAL (neither a file nor a character
 * device), -ENODEV (a character device that is not a device-DAX), or what
 * open/mmap said.  check_image catches SIGBUS (a media error, a file
 * truncated under the mapping) while it runs: the handler is installed
 * process-wide for the duration of the call.
 */
int check_path(const char *path, unsigned flags, struct check_report *rep);
/*
 * A split region (metadata = PATH): headers and tables in the file (or
 * device) at meta_path, extents in the one at data_path.  An inline
 * region's header there, or a split header checked with check_path /
 * check_image, is unusable input.
 */
int check_path_split(const char *meta_path, const char *data_path, unsigned flags,
		     struct check_report *rep);
void check_report_free(struct check_report *rep);

#endif
