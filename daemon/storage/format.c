/* SPDX-License-Identifier: MIT */
/* Format a region, load its header, repair a damaged copy (format.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "conf.h"
#include "feature-mask.h"
#include "format.h"
#include "log.h"
#include "util.h"

static void header_block(const struct layout_header *h, uint8_t block[LAYOUT_BLOCK])
{
	memset(block, 0, LAYOUT_BLOCK);
	memcpy(block, h, sizeof(*h));
}

static int write_header(struct pstore *ps, uint64_t off, const struct layout_header *h)
{
	_cleanup_free_ uint8_t *block = malloc(LAYOUT_BLOCK);

	if (!block)
		return -ENOMEM;
	header_block(h, block);
	pstore_memcpy(ps, (uint8_t *)pstore_base(ps) + off, block, LAYOUT_BLOCK);
	pstore_drain(ps);
	return 0;
}

/*
 * A repair: the good header block copied whole over the other, so that
 * what a newer build keeps there (compat features this build does not
 * know, and whatever they store) survives it.
 */
static int copy_header(struct pstore *ps, uint64_t to, uint64_t from)
{
	_cleanup_free_ uint8_t *block = malloc(LAYOUT_BLOCK);
	uint8_t *base = pstore_base(ps);

	if (!block)
		return -ENOMEM;
	memcpy(block, base + from, LAYOUT_BLOCK);
	pstore_memcpy(ps, base + to, block, LAYOUT_BLOCK);
	pstore_drain(ps);
	return 0;
}

/* A sealed header for geometry g, with a fresh random (version 4) uuid. */
static int new_header(const struct layout_geometry *g, bool split, struct layout_header *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, LAYOUT_MAGIC, sizeof(h->magic));
	h->version = LAYOUT_VERSION;
	h->header_size = sizeof(*h);
	if (getrandom(h->uuid, sizeof(h->uuid), 0) != (ssize_t)sizeof(h->uuid))
		return -(errno ? errno : EIO);
	h->uuid[6] = (uint8_t)((h->uuid[6] & 0x0f) | 0x40); /* version 4 */
	h->uuid[8] = (uint8_t)((h->uuid[8] & 0x3f) | 0x80); /* variant 1 */
	h->region_size = g->region_size;
	h->extent_size = g->extent_size;
	h->extent_count = g->extent_count;
	h->extent_table_off = g->extent_table_off;
	h->tag_table_off = g->tag_table_off;
	h->tag_count = g->tag_count;
	h->data_off = g->data_off;
	h->backup_off = LAYOUT_BACKUP_OFF;
	h->format_time = (uint64_t)time(NULL);
	h->data_align = g->data_align;
	h->tag_slot_size = LAYOUT_TAG_SLOT_SIZE;
	/* move on every region: a bit flipped per MOVE batch would cost two header writes. */
	h->incompat = LAYOUT_INCOMPAT_MOVE | (split ? LAYOUT_INCOMPAT_SPLIT : 0);
	layout_header_seal(h);
	return 0;
}

/*
 * Format: ps holds the headers and tables (the whole region, or a split
 * region's metadata file); region_size is what the header records (the
 * region's size, or the split region's data file size).
 */
static int format_region(struct pstore *ps, uint64_t region_size, bool split, const char *name,
			 uint64_t extent_size, uint64_t align, struct layout_header *out)
{
	struct layout_geometry g;
	struct layout_header h;
	uint8_t *base = pstore_base(ps);
	char s1[32], s2[32];
	int r;

	r = split ? layout_compute_split(region_size, extent_size, align, &g)
		  : layout_compute(region_size, extent_size, align, &g);
	if (r == -EINVAL)
		return log_error_errno(r,
				       "region '%s': extent size %" PRIu64
				       " is not a multiple of 4 KiB and of the device alignment %s",
				       name, extent_size, pmemz_format_size(align, s1, sizeof(s1)));
	if (r < 0)
		return log_error_errno(
		    r,
		    "region '%s': too small (%s) to hold one %s extent after its "
		    "metadata",
		    name, pmemz_format_size(region_size, s1, sizeof(s1)),
		    pmemz_format_size(extent_size, s2, sizeof(s2)));
	if (split && layout_meta_size(&g) > pstore_size(ps))
		return log_error_errno(ENOSPC,
				       "region '%s': the metadata needs %s but its file or device "
				       "holds %s",
				       name,
				       pmemz_format_size(layout_meta_size(&g), s1, sizeof(s1)),
				       pmemz_format_size(pstore_size(ps), s2, sizeof(s2)));

	r = new_header(&g, split, &h);
	if (r < 0)
		return log_error_errno(r, "region '%s': getrandom: %m", name);

	/* A crash at any point leaves either a blank region or a complete one. */
	pstore_zero_nt(ps, base, 2 * LAYOUT_BLOCK);
	pstore_drain(ps);
	pstore_zero_nt(ps, base + g.extent_table_off,
		       layout_tables_end(g.tag_table_off, g.tag_count) - g.extent_table_off);
	pstore_drain(ps);
	r = write_header(ps, LAYOUT_BACKUP_OFF, &h);
	if (r >= 0)
		r = write_header(ps, LAYOUT_PRIMARY_OFF, &h);
	if (r < 0)
		return log_error_errno(r, "region '%s': format: %m", name);

	log_info("region '%s': formatted: %" PRIu64 " extents of %s, data at offset %" PRIu64
		 "%s, %" PRIu64 " tag slots",
		 name, g.extent_count, pmemz_format_size(g.extent_size, s1, sizeof(s1)), g.data_off,
		 split ? " of the data file (metadata in its own file)" : "", g.tag_count);
	if (out)
		*out = h;
	return 0;
}

int format_layout(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		  struct layout_header *out)
{
	return format_region(ps, pstore_size(ps), false, name, extent_size, align, out);
}

/* A format's extent size when the configuration leaves it to the media (0). */
static uint64_t format_extent_size(uint64_t extent_size, uint64_t align)
{
	return extent_size ? extent_size : MAX(CONF_DEFAULT_EXTENT_SIZE, align);
}

static int format_blank(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
			const struct pstore_badblock *bbs, size_t n_bbs, struct layout_header *out)
{
	uint64_t used, first = 0;

	used = media_wiped_records(pstore_base(ps), pstore_size(ps), extent_size, align, bbs, n_bbs,
				   &first);
	if (used)
		return log_error_errno(
		    EUCLEAN,
		    "region '%s': both header blocks are blank, but the extent table "
		    "holds %" PRIu64 " records of a used region (first: extent %" PRIu64
		    " at offset %" PRIu64 "): were its headers wiped? Refusing to format "
		    "over it (to reuse it as a new region, zero it first); refused: %s",
		    name, used, first, (uint64_t)LAYOUT_EXTENT_TABLE_OFF + first * 8,
		    media_refusal_str(REFUSE_BLANK));
	return format_layout(ps, name, extent_size, align, out);
}

/* No usable header, not both blank: an interrupted format is formatted again. */
static int no_header(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		     const struct pstore_badblock *bbs, size_t n_bbs, const struct media_headers *m,
		     struct layout_header *out)
{
	if (m->primary == HDR_BLANK && media_interrupted_format(pstore_base(ps), pstore_size(ps),
								extent_size, align, bbs, n_bbs)) {
		log_warning("region '%s': a format was interrupted (blank primary "
			    "header, incomplete backup, empty tables); formatting "
			    "again",
			    name);
		return format_layout(ps, name, extent_size, align, out);
	}
	if (m->primary == HDR_BLANK)
		return log_error_errno(EUCLEAN,
				       "region '%s': primary header is blank but the "
				       "backup header block is %s (%s); refusing to "
				       "touch it; refused: %s",
				       name, layout_hdr_status_str(m->backup), m->backup_why,
				       media_refusal_str(REFUSE_BLANK));
	return log_error_errno(EUCLEAN,
			       "region '%s': primary header %s (%s) and backup header "
			       "%s (%s); refusing to touch it; refused: %s",
			       name, layout_hdr_status_str(m->primary), m->primary_why,
			       layout_hdr_status_str(m->backup), m->backup_why,
			       media_refusal_str(REFUSE_NO_HEADER));
}

/*
 * A split region's metadata without a usable header: formatted only when
 * nothing but the headers could hold anything (the tables are all zero), so
 * no allocation state is lost; its data file is never touched by a format.
 */
static int split_no_header(struct pstore *ps, uint64_t data_size, const char *name,
			   uint64_t extent_size, uint64_t align, const struct media_headers *m,
			   struct layout_header *out)
{
	if ((m->choice == HDRS_BLANK || m->primary == HDR_BLANK) &&
	    media_meta_tables_blank(pstore_base(ps), pstore_size(ps))) {
		if (m->choice != HDRS_BLANK)
			log_warning("region '%s': a format of the metadata was interrupted; "
				    "formatting again",
				    name);
		return format_region(ps, data_size, true, name, extent_size, align, out);
	}
	return log_error_errno(EUCLEAN,
			       "region '%s': metadata: primary header %s (%s), backup header %s "
			       "(%s), and the tables are not empty; refusing to touch it",
			       name, layout_hdr_status_str(m->primary), m->primary_why,
			       layout_hdr_status_str(m->backup), m->backup_why);
}

/* The media's refusal of a region whose header it read, as the error logged once. */
static int refusal_error(const char *name, enum media_refusal why, const struct media_headers *m,
			 const struct layout_header *h, bool split, uint64_t region_size,
			 uint64_t meta_size)
{
	char mask[96];

	switch (why) {
	case REFUSE_FOREIGN:
		return log_error_errno(EMEDIUMTYPE,
				       "region '%s': %s holds a foreign header (%s); refusing to "
				       "touch it (format it explicitly to use it); refused: %s",
				       name, "offset 0", m->primary_why, media_refusal_str(why));
	case REFUSE_UNSUPPORTED:
	case REFUSE_INCOMPAT:
		return log_error_errno(ENOTSUP,
				       "region '%s': %s header: %s; not opened, nothing written; "
				       "refused: %s",
				       name, m->primary == HDR_UNSUPPORTED ? "primary" : "backup",
				       m->primary == HDR_UNSUPPORTED ? m->primary_why
								     : m->backup_why,
				       media_refusal_str(why));
	case REFUSE_RO_COMPAT:
		/* Readable without writing, but recovery, the zeroer and every lease write. */
		return log_error_errno(
		    EROFS,
		    "region '%s': header: unknown ro_compat features %s: a newer "
		    "pmemzerod wrote it; not opened (using it writes), nothing "
		    "written; refused: %s",
		    name, pmemz_mask_str(m->unknown.ro_compat, mask, sizeof(mask)),
		    media_refusal_str(why));
	case REFUSE_LAYOUT_KIND:
		return log_error_errno(
		    EINVAL,
		    split
			? "region '%s': the metadata file holds the header of a region that "
			  "keeps its metadata inline; refusing to touch it; refused: %s"
			: "region '%s': the header is that of a region whose metadata is in a "
			  "file of its own; configure its metadata = PATH (refusing to touch it); "
			  "refused: %s",
		    name, media_refusal_str(why));
	case REFUSE_SIZE:
		return log_error_errno(
		    EINVAL,
		    "region '%s': header says the %s is %" PRIu64 " bytes but it is %" PRIu64
		    " bytes (%s); refusing to touch it; refused: %s",
		    name, split ? "data file" : "region", h->region_size, region_size,
		    h->region_size > region_size ? "truncated?" : "grown?", media_refusal_str(why));
	case REFUSE_META_SIZE:
		return log_error_errno(EINVAL,
				       "region '%s': the metadata is %" PRIu64
				       " bytes, too small for its tables (%" PRIu64
				       " bytes); refusing to touch it; refused: %s",
				       name, meta_size,
				       layout_tables_end(h->tag_table_off, h->tag_count),
				       media_refusal_str(why));
	case REFUSE_TABLES_BAD:
		return log_error_errno(
		    EIO,
		    "region '%s': media errors in the extent or tag table; "
		    "refusing to use it (clear the errors or reformat); refused: %s",
		    name, media_refusal_str(why));
	case REFUSE_BLANK:     /* formatted by the caller */
	case REFUSE_NO_HEADER: /* formatted by the caller */
	case REFUSE_NONE:
	case REFUSE_TOO_SMALL: /* the caller's */
	case REFUSE_MISSING:   /* the tables' verdict: recovery's */
		break;
	}
	return 0;
}

/* Which header is used, and which is rewritten: worth a warning each. */
static void log_header_choice(const char *name, const struct media_headers *m)
{
	char mask[96];

	if (m->unknown.compat)
		log_notice("region '%s': the header carries compat features %s that this pmemzerod "
			   "does not know (a newer one wrote them); using the region, and keeping "
			   "them",
			   name, pmemz_mask_str(m->unknown.compat, mask, sizeof(mask)));
	if (m->choice == HDRS_PRIMARY) {
		if (m->backup == HDR_UNREADABLE)
			log_warning("region '%s': backup header is unreadable (media error); "
				    "continuing with the primary",
				    name);
		else if (m->repair_backup)
			log_warning("region '%s': backup header %s (%s); rewriting it from "
				    "the primary",
				    name, m->differ ? "differs" : layout_hdr_status_str(m->backup),
				    m->backup_why);
	} else {
		log_warning("region '%s': primary header %s (%s); using the backup header%s", name,
			    layout_hdr_status_str(m->primary), m->primary_why,
			    m->repair_primary ? " and repairing the primary" : "");
	}
}

/* The configuration against the media: not the media's verdict, the checker cannot see it. */
static int check_conf(const char *name, const struct layout_header *h, uint64_t extent_size,
		      uint64_t align)
{
	char s1[32], s2[32];

	if (extent_size && extent_size != h->extent_size)
		return log_error_errno(EINVAL,
				       "region '%s': configured extent size %s differs from the "
				       "on-media extent size %s; refusing (reformat to change it)",
				       name, pmemz_format_size(extent_size, s1, sizeof(s1)),
				       pmemz_format_size(h->extent_size, s2, sizeof(s2)));
	if (align && (h->extent_size % align || h->data_off % align))
		return log_error_errno(EINVAL,
				       "region '%s': the device alignment is now %s, which the "
				       "on-media layout (extent size %s) does not satisfy",
				       name, pmemz_format_size(align, s1, sizeof(s1)),
				       pmemz_format_size(h->extent_size, s2, sizeof(s2)));
	return 0;
}

int format_repair(struct pstore *ps, const char *name, const struct format_loaded *res)
{
	int r;

	if (res->repair_primary) {
		r = copy_header(ps, LAYOUT_PRIMARY_OFF, LAYOUT_BACKUP_OFF);
		if (r < 0)
			return log_error_errno(r, "region '%s': repairing the primary header: %m",
					       name);
	}
	if (res->repair_backup) {
		r = copy_header(ps, LAYOUT_BACKUP_OFF, LAYOUT_PRIMARY_OFF);
		if (r < 0)
			return log_error_errno(r, "region '%s': repairing the backup header: %m",
					       name);
	}
	return 0;
}

/*
 * ps holds the headers and tables; region_size is the size the header must
 * record (the mapping's, or with split the data file's).
 */
static int load_region(struct pstore *ps, uint64_t region_size, bool split, const char *name,
		       uint64_t extent_size, uint64_t align, const struct pstore_badblock *bbs,
		       size_t n_bbs, struct layout_header *out, struct format_loaded *res)
{
	struct media_headers m;
	struct layout_header h;
	int r;
	struct media_image img = {
	    .base = pstore_base(ps),
	    .size = pstore_size(ps),
	    .data_size = region_size,
	    .split = split,
	    /* The file-or-device question is region.c's (load_split): only "too small" here. */
	    .meta_exact = false,
	    .bbs = bbs,
	    .n_bbs = n_bbs,
	};
	enum media_refusal why;

	*res = (struct format_loaded){0};
	/* The media module decides whether the region is usable (media_region_refusal). */
	why = media_region_refusal(&img, &m);
	if (why == REFUSE_TOO_SMALL)
		return log_error_errno(ENOSPC, "region '%s': too small (%" PRIu64 " bytes)", name,
				       pstore_size(ps));
	if (split && (why == REFUSE_BLANK || why == REFUSE_NO_HEADER)) {
		r = split_no_header(ps, region_size, name, format_extent_size(extent_size, align),
				    align, &m, out);
		if (r < 0)
			return r;
		res->formatted = true;
		return 0;
	}
	switch (why) {
	case REFUSE_BLANK:
	case REFUSE_NO_HEADER:
		r = m.choice == HDRS_BLANK
			? format_blank(ps, name, format_extent_size(extent_size, align), align, bbs,
				       n_bbs, out)
			: no_header(ps, name, format_extent_size(extent_size, align), align, bbs,
				    n_bbs, &m, out);
		if (r < 0)
			return r;
		res->formatted = true;
		return 0;
	default:
		break;
	}
	/* The chosen header (filled when why says a header was usable). */
	h = m.choice == HDRS_BACKUP ? m.hb : m.hp;
	r = refusal_error(name, why, &m, &h, split, region_size, pstore_size(ps));
	if (r < 0)
		return r;
	log_header_choice(name, &m);
	r = check_conf(name, &h, extent_size, align);
	if (r < 0)
		return r;
	res->repair_primary = m.repair_primary;
	res->repair_backup = m.repair_backup;
	*out = h;
	return 0;
}

int format_load(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		const struct pstore_badblock *bbs, size_t n_bbs, struct layout_header *out,
		struct format_loaded *res)
{
	return load_region(ps, pstore_size(ps), false, name, extent_size, align, bbs, n_bbs, out,
			   res);
}

int format_load_split(struct pstore *meta, uint64_t data_size, const char *name,
		      uint64_t extent_size, uint64_t align, const struct pstore_badblock *bbs,
		      size_t n_bbs, struct layout_header *out, struct format_loaded *res)
{
	return load_region(meta, data_size, true, name, extent_size, align, bbs, n_bbs, out, res);
}

int format_meta_size_for(uint64_t data_size, uint64_t extent_size, uint64_t align,
			 uint64_t *meta_size)
{
	struct layout_geometry g;
	int r = layout_compute_split(data_size, format_extent_size(extent_size, align), align, &g);

	if (r < 0)
		return r;
	*meta_size = layout_meta_size(&g);
	return 0;
}
