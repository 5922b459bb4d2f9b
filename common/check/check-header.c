/* SPDX-License-Identifier: MIT */
/*
 * The headers and the geometry: which header the daemon uses, whether it
 * refuses the region on them and on the sizes (media_region_refusal).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "check-internal.h"
#include "feature-mask.h"

static const char *hdr_verdict(enum layout_hdr_status s)
{
	return s == HDR_BLANK ? "blank (all zero)" : layout_hdr_status_str(s);
}

/* The daemon uses the primary: what it does about the backup. */
static void primary_chosen(struct checker *c, const struct media_headers *m)
{
	struct check_report *rep = c->rep;
	enum layout_hdr_status sb = m->backup;

	rep->hdr = m->hp;
	if (m->differ) {
		rep->headers_differ = true;
		check_report_problem(
		    c,
		    "backup header (offset %u) is valid but differs from the primary; "
		    "the daemon rewrites it from the primary",
		    LAYOUT_BACKUP_OFF);
	} else if (sb == HDR_UNREADABLE) {
		check_report_problem(c, "backup header (offset %u) is unreadable (%s)",
				     LAYOUT_BACKUP_OFF, rep->backup_why);
	} else if (m->repair_backup) {
		check_report_problem(
		    c,
		    "backup header (offset %u) is %s (%s); the daemon rewrites it from "
		    "the primary",
		    LAYOUT_BACKUP_OFF, hdr_verdict(sb), rep->backup_why);
	}
}

/* The backup is valid: the daemon uses it, or refuses the region. */
static void backup_valid(struct checker *c, const struct media_headers *m)
{
	struct check_report *rep = c->rep;
	enum layout_hdr_status sp = m->primary;

	/* The daemon uses the backup (or refuses): check the region it describes. */
	rep->hdr = m->hb;
	if (m->choice != HDRS_BACKUP)
		check_report_refuse(c, c->verdict,
				    "primary header (offset 0) is %s (%s) but the backup is valid",
				    hdr_verdict(sp), rep->primary_why);
	else if (!m->repair_primary)
		check_report_problem(
		    c,
		    "primary header (offset 0) is unreadable (%s); the daemon uses the "
		    "backup header",
		    rep->primary_why);
	else
		check_report_problem(
		    c,
		    "primary header (offset 0) is %s (%s); the daemon uses the backup "
		    "header and repairs the primary",
		    hdr_verdict(sp), rep->primary_why);
}

/* Neither header is usable: why the daemon refuses the region. */
static void no_header(struct checker *c, const struct media_headers *m)
{
	struct check_report *rep = c->rep;
	enum layout_hdr_status sp = m->primary, sb = m->backup;

	if ((sp == HDR_BLANK || sp == HDR_FOREIGN) && (sb == HDR_BLANK || sb == HDR_FOREIGN))
		check_report_refuse(c, c->verdict,
				    "not a pmemzerod region: primary header %s (%s), backup header "
				    "%s (%s)",
				    hdr_verdict(sp), rep->primary_why, hdr_verdict(sb),
				    rep->backup_why);
	else
		check_report_refuse(c, c->verdict,
				    "both headers are unusable: primary (offset 0) %s (%s), backup "
				    "(offset %u) %s (%s)",
				    hdr_verdict(sp), rep->primary_why, LAYOUT_BACKUP_OFF,
				    hdr_verdict(sb), rep->backup_why);
}

/*
 * A newer build's header, primary or backup: the daemon neither uses nor
 * rewrites either, and nothing past the header may be read as this build
 * reads it.
 */
static void unsupported_header(struct checker *c, const struct media_headers *m)
{
	struct check_report *rep = c->rep;
	bool primary = m->primary == HDR_UNSUPPORTED;
	const struct layout_header *h = primary ? &m->hp : &m->hb;

	rep->layout_version = h->version;
	if (!m->newer_version)
		layout_header_features(h, &rep->features);
	check_report_refuse(c, c->verdict,
			    "%s header (offset %u): %s; its tables are not read and nothing is "
			    "repaired (a pmemzerod that knows its format reads it)",
			    primary ? "primary" : "backup",
			    primary ? LAYOUT_PRIMARY_OFF : LAYOUT_BACKUP_OFF,
			    primary ? rep->primary_why : rep->backup_why);
}

/* The header used: its features, and the verdict its unknown ro_compat features make. */
static void header_features(struct checker *c, const struct media_headers *m)
{
	struct check_report *rep = c->rep;
	char mask[96];

	rep->layout_version = rep->hdr.version;
	layout_header_features(&rep->hdr, &rep->features);
	if (c->verdict == REFUSE_RO_COMPAT)
		check_report_refuse(
		    c, c->verdict,
		    "the header carries unknown ro_compat features %s: a newer pmemzerod wrote "
		    "it; a reader may read it but not write it, so its tables are checked (read "
		    "only) and nothing is repaired",
		    pmemz_mask_str(m->unknown.ro_compat, mask, sizeof(mask)));
}

/*
 * The daemon's verdict on the headers and sizes (media_region_refusal), and
 * the header it uses.  false: no header to check the tables with.
 */
bool check_header_choice(struct checker *c)
{
	struct check_report *rep = c->rep;
	struct media_image img = {
	    .base = c->base,
	    .size = c->size,
	    .data_size = c->data_size,
	    .split = c->data_split,
	    .meta_exact = !c->meta_device,
	    .bbs = c->bbs,
	    .n_bbs = c->n_bbs,
	};
	struct media_headers m;
	enum layout_hdr_status sp, sb;

	c->verdict = media_region_refusal(&img, &m);
	if (c->verdict == REFUSE_TOO_SMALL) {
		check_report_refuse(c, c->verdict,
				    "image is %" PRIu64
				    " bytes: too small for the two header blocks (%u)",
				    c->size, 2 * LAYOUT_BLOCK);
		return false;
	}
	sp = m.primary;
	sb = m.backup;
	(void)snprintf(rep->primary_why, sizeof(rep->primary_why), "%s", m.primary_why);
	(void)snprintf(rep->backup_why, sizeof(rep->backup_why), "%s", m.backup_why);
	rep->primary_status = sp;
	rep->backup_status = sb;
	rep->primary_ok = sp == HDR_OK;
	rep->backup_ok = sb == HDR_OK;
	rep->unknown = m.unknown;

	if (m.choice == HDRS_UNSUPPORTED) {
		unsupported_header(c, &m);
		return false;
	}
	if (m.choice == HDRS_PRIMARY) {
		primary_chosen(c, &m);
	} else if (sb == HDR_OK) {
		backup_valid(c, &m);
	} else {
		no_header(c, &m);
		return false;
	}
	rep->have_hdr = true;
	header_features(c, &m);
	return true;
}

/* The daemon's refusal on the sizes or the layout kind; false: the tables cannot be read. */
static bool report_size_refusal(struct checker *c, uint64_t meta_end, bool split)
{
	const struct layout_header *h = &c->rep->hdr;

	switch (c->verdict) {
	case REFUSE_LAYOUT_KIND:
		check_report_refuse(
		    c, c->verdict,
		    split ? "the header is that of a region whose metadata is in a file of its "
			    "own: check it with --metadata THIS_FILE DATA_FILE"
			  : "the metadata file holds the header of a region that keeps its "
			    "metadata inline, not a split region's");
		return false;
	case REFUSE_SIZE:
		if (c->data_size < h->region_size)
			check_report_refuse(
			    c, c->verdict,
			    "%s is truncated: %" PRIu64 " bytes, but the header says the region "
			    "is %" PRIu64 " bytes",
			    split ? "data file" : "image", c->data_size, h->region_size);
		else
			check_report_refuse(
			    c, c->verdict,
			    "%s is %" PRIu64 " bytes but the header says the region is %" PRIu64
			    " bytes: grown, and a region is never resized",
			    split ? "data file" : "image", c->data_size, h->region_size);
		break;
	case REFUSE_META_SIZE:
		check_report_refuse(c, c->verdict,
				    "metadata file is %" PRIu64
				    " bytes but its tables end at %" PRIu64
				    " (a metadata file is never resized)",
				    c->size, meta_end);
		break;
	case REFUSE_TABLES_BAD:
		check_report_refuse(c, c->verdict,
				    "bad blocks in the extent or tag table (offsets %" PRIu64
				    "..%" PRIu64 ")",
				    h->extent_table_off, meta_end);
		return false;
	default:
		break;
	}
	return true;
}

/*
 * Report the size verdicts (check_headers decided them) and whether the
 * tables can be read: false when they cannot (the reason recorded).
 */
bool check_header_geometry(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	uint64_t meta_end = layout_tables_end(h->tag_table_off, h->tag_count);
	bool split = layout_header_split(h);

	if (!report_size_refusal(c, meta_end, split))
		return false;
	/* Whatever the verdict, the tables are listed when they can be read. */
	if (!layout_geometry_matches(h) || h->tag_count > LAYOUT_MAX_TAGS ||
	    h->data_off + h->extent_count * h->extent_size > h->region_size) {
		check_report_unusable(c,
				      "header geometry is inconsistent: size %" PRIu64
				      ", extent size %" PRIu64 ", count %" PRIu64
				      ", data at %" PRIu64,
				      h->region_size, h->extent_size, h->extent_count, h->data_off);
		return false;
	}
	if (meta_end > c->size) {
		check_report_unusable(c,
				      "image ends at %" PRIu64
				      ", inside the extent or tag table (ends at %" PRIu64
				      "): not read",
				      c->size, meta_end);
		return false;
	}
	if (layout_range_bad(c->bbs, c->n_bbs, h->extent_table_off,
			     meta_end - h->extent_table_off)) {
		check_report_unusable(c,
				      "bad blocks in the extent or tag table (offsets %" PRIu64
				      "..%" PRIu64 "): not read",
				      h->extent_table_off, meta_end);
		return false;
	}
	return true;
}
