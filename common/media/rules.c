/* SPDX-License-Identifier: MIT */
/*
 * The rules recovery and the offline checker share (media.h): which header
 * is used, what a record or a slot is, what the records naming a slot say
 * about it, whether committed extents are missing.  Verdicts only: the
 * caller applies (daemon/storage) or reports (common/check/check.c) them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media-internal.h"
#include "util.h"

/* ---- header blocks ---- */

static enum layout_hdr_status header_at(const uint8_t *base, uint64_t off,
					const struct media_badblock *bbs, size_t n_bbs,
					struct layout_header *h, char *why, size_t why_len)
{
	if (layout_range_bad(bbs, n_bbs, off, LAYOUT_BLOCK)) {
		(void)snprintf(why, why_len, "bad block in the header block");
		return HDR_UNREADABLE;
	}
	return layout_header_check(base + off, h, why, why_len);
}

/* Every non-zero 8-byte word of block equals good's: an interrupted write of good. */
static bool torn_copy_of(const uint8_t *block, const uint8_t *good)
{
	for (size_t off = 0; off < LAYOUT_BLOCK; off += 8) {
		uint64_t w, g;

		memcpy(&w, block + off, 8);
		memcpy(&g, good + off, 8);
		if (w != 0 && w != g)
			return false;
	}
	return true;
}

/*
 * A newer build's header, primary or backup, is never used nor rewritten:
 * with the other copy, this build would undo what the newer one wrote.
 */
static enum media_hdr_choice choose(const struct media_headers *m)
{
	if (m->primary == HDR_BLANK && m->backup == HDR_BLANK)
		return HDRS_BLANK;
	if (m->primary == HDR_FOREIGN)
		return HDRS_FOREIGN;
	if (m->primary == HDR_UNSUPPORTED || m->backup == HDR_UNSUPPORTED)
		return HDRS_UNSUPPORTED;
	if (m->primary == HDR_OK)
		return HDRS_PRIMARY;
	return m->backup == HDR_OK ? HDRS_BACKUP : HDRS_NONE;
}

/* What a newer build wrote into the intact headers: features, and a layout version. */
static void newer_parts(struct media_headers *m)
{
	const struct layout_header *hs[2] = {&m->hp, &m->hb};
	const enum layout_hdr_status st[2] = {m->primary, m->backup};

	for (size_t k = 0; k < 2; k++) {
		struct layout_features u;

		if (st[k] != HDR_OK && st[k] != HDR_UNSUPPORTED)
			continue;
		if (hs[k]->version < LAYOUT_VERSION_MIN || hs[k]->version > LAYOUT_VERSION) {
			m->newer_version = MAX(m->newer_version, hs[k]->version);
			continue;
		}
		layout_header_unknown(hs[k], &u);
		m->unknown.compat |= u.compat;
		m->unknown.ro_compat |= u.ro_compat;
		m->unknown.incompat |= u.incompat;
	}
}

void media_headers_read(const void *base, const struct media_badblock *bbs, size_t n_bbs,
			struct media_headers *m)
{
	const uint8_t *b = base;

	memset(m, 0, sizeof(*m));
	m->primary = header_at(b, LAYOUT_PRIMARY_OFF, bbs, n_bbs, &m->hp, m->primary_why,
			       sizeof(m->primary_why));
	m->backup = header_at(b, LAYOUT_BACKUP_OFF, bbs, n_bbs, &m->hb, m->backup_why,
			      sizeof(m->backup_why));
	if (m->primary == HDR_FOREIGN && (m->backup == HDR_OK || m->backup == HDR_UNSUPPORTED) &&
	    torn_copy_of(b + LAYOUT_PRIMARY_OFF, b + LAYOUT_BACKUP_OFF)) {
		m->primary = HDR_CORRUPT;
		(void)snprintf(m->primary_why, sizeof(m->primary_why),
			       "a torn copy of the backup: an interrupted write");
	}
	m->differ = m->primary == HDR_OK && m->backup == HDR_OK &&
		    memcmp(&m->hp, &m->hb, sizeof(m->hp)) != 0;
	newer_parts(m);
	m->choice = choose(m);
	/* An unreadable block is not rewritten: the store could not fix a media error. */
	m->repair_backup = m->choice == HDRS_PRIMARY &&
			   (m->differ || (m->backup != HDR_OK && m->backup != HDR_UNREADABLE));
	m->repair_primary = m->choice == HDRS_BACKUP && m->primary != HDR_UNREADABLE;
}

uint64_t media_wiped_records(const void *base, uint64_t size, uint64_t extent_size, uint64_t align,
			     const struct media_badblock *bbs, size_t n_bbs, uint64_t *first)
{
	const uint8_t *b = base;
	struct layout_geometry g;
	uint64_t ok = 0, bad = 0;

	if (layout_compute(size, extent_size, align, &g) < 0 ||
	    layout_range_bad(bbs, n_bbs, g.extent_table_off, g.extent_count * 8))
		return 0;
	for (uint64_t i = 0; i < g.extent_count; i++) {
		uint64_t rec;

		memcpy(&rec, b + g.extent_table_off + i * 8, sizeof(rec));
		if (rec == 0)
			continue;
		if (media_rec_check(rec, LAYOUT_MAX_TAGS) == REC_INTACT) {
			if (ok++ == 0)
				*first = i;
		} else {
			bad++;
		}
	}
	return ok >= bad ? ok : 0;
}

bool media_meta_tables_blank(const void *meta, uint64_t meta_size)
{
	return meta_size >= 2 * LAYOUT_BLOCK &&
	       layout_all_zero((const uint8_t *)meta + 2 * LAYOUT_BLOCK,
			       meta_size - 2 * LAYOUT_BLOCK);
}

bool media_interrupted_format(const void *base, uint64_t size, uint64_t extent_size, uint64_t align,
			      const struct media_badblock *bbs, size_t n_bbs)
{
	const uint8_t *b = (const uint8_t *)base + LAYOUT_BACKUP_OFF;
	struct layout_header want;
	struct layout_geometry g;
	uint64_t w, v;

	if (layout_compute(size, extent_size, align, &g) < 0 ||
	    layout_range_bad(bbs, n_bbs, LAYOUT_BACKUP_OFF, g.data_off - LAYOUT_BACKUP_OFF))
		return false;
	/* The words whose value a format of this region knows. */
	memset(&want, 0, sizeof(want));
	memcpy(want.magic, LAYOUT_MAGIC, sizeof(want.magic));
	want.version = LAYOUT_VERSION;
	want.header_size = sizeof(want);
	want.region_size = size;
	want.extent_table_off = LAYOUT_EXTENT_TABLE_OFF;
	want.backup_off = LAYOUT_BACKUP_OFF;
	want.tag_slot_size = LAYOUT_TAG_SLOT_SIZE;
	want.incompat = LAYOUT_INCOMPAT_MOVE;
	for (size_t off = 0; off < LAYOUT_BLOCK; off += 8) {
		memcpy(&w, b + off, 8);
		/* A version 1 format's version word too (then the masks are zero). */
		if (w == 0 || (off == 8 && w == ((uint64_t)sizeof(want) << 32 | 1u)))
			continue;
		switch (off) {
		case 0:
		case 8:
		case 32:
		case 56:
		case 88:
		case 112:
		case 120: /* the masks */
		case 128:
		case 136:
			memcpy(&v, (const uint8_t *)&want + off, 8);
			if (w != v)
				return false;
			break;
		case 16: /* uuid */
		case 24:
		case 40: /* extent_size ... data_off */
		case 48:
		case 64:
		case 72:
		case 80:
		case 96:  /* format_time */
		case 104: /* data_align */
			break;
		case 248: /* reserved (zero) and the checksum */
			if (w & 0xffffffffu)
				return false;
			break;
		default: /* reserved, and the rest of the block */
			return false;
		}
	}
	/* What the format zeroed first (the padding up to data_off is never written). */
	return layout_all_zero((const uint8_t *)base + g.extent_table_off,
			       layout_tables_end(g.tag_table_off, g.tag_count) -
				   g.extent_table_off);
}

/* ---- records ---- */

enum media_rec_verdict media_rec_check(uint64_t rec, uint64_t tag_count)
{
	unsigned s = layout_rec_state(rec);
	uint32_t tag = layout_rec_tag(rec);

	if (s >= EXT_NSTATES)
		return REC_UNKNOWN_STATE;
	if (s == EXT_COMMITTED && (tag == 0 || tag > tag_count))
		return REC_TAG_RANGE;
	if (s != EXT_COMMITTED && tag != 0)
		return REC_STRAY_TAG;
	return REC_INTACT;
}

/* ---- slots ---- */

bool media_slot_sum_ok(const struct layout_tag *s)
{
	return layout_tag_checksum(s) == s->checksum;
}

bool media_slot_blank(const struct layout_tag *s)
{
	return layout_all_zero(s, sizeof(*s));
}

/* The kind of a slot's MOVE link; LINK_NONE unless its checksum is right (it covers the link). */
static uint64_t slot_link_kind(const struct layout_tag *s)
{
	struct layout_link l;

	layout_tag_link(s, &l);
	if (l.kind != LINK_MEMBER && l.kind != LINK_MARKER)
		return LINK_NONE;
	return media_slot_sum_ok(s) ? l.kind : LINK_NONE;
}

static enum media_slot_kind damaged(enum media_slot_damage d, enum media_slot_damage *why)
{
	if (why)
		*why = d;
	return SLOT_DAMAGED;
}

enum media_slot_kind media_slot_classify(const struct layout_tag *s, enum media_slot_damage *why)
{
	if (why)
		*why = SLOT_UNDAMAGED;
	/* A MOVE batch marker is never a tag: in flight until it ends FREE. */
	if ((s->state == TAG_WRITTEN || s->state == TAG_VALID) && slot_link_kind(s) == LINK_MARKER)
		return SLOT_WRITTEN;
	switch (s->state) {
	case TAG_FREE:
		return SLOT_FREE;
	case TAG_WRITTEN:
		/* A torn body is legal while no record names it (media_named_slot). */
		return SLOT_WRITTEN;
	case TAG_FREEING:
		return SLOT_FREEING;
	case TAG_VALID:
		if (!media_slot_sum_ok(s))
			return damaged(SLOT_BAD_SUM, why);
		if (!memchr(s->name, '\0', sizeof(s->name)))
			return damaged(SLOT_NAME_NO_NUL, why);
		if (layout_tag_name_valid(s->name) < 0)
			return damaged(SLOT_NAME_INVALID, why);
		return SLOT_VALID;
	default:
		return damaged(SLOT_BAD_STATE, why);
	}
}

enum media_slot_kind media_named_slot(const struct layout_tag *s, enum media_slot_kind kind,
				      uint64_t cnt)
{
	if (!cnt)
		return kind;
	/*
	 * A WRITTEN MOVE member is named by no record before its batch is
	 * decided, and a decided one is VALID in media_moves_resolve's view.
	 */
	if (kind == SLOT_WRITTEN && slot_link_kind(s) == LINK_MEMBER)
		return SLOT_DAMAGED;
	if (kind == SLOT_WRITTEN || kind == SLOT_FREEING)
		return media_slot_sum_ok(s) && cnt <= s->n_extents ? kind : SLOT_DAMAGED;
	if (kind == SLOT_FREE)
		return SLOT_ORPHANED;
	return kind;
}

/* ---- MOVE batches ---- */

/*
 * Pass 1: the markers.  A marker is never a tag, so no record names one:
 * a slot shaped like a marker that COMMITTED records name is damage
 * (media_named_slot says which), which recovery leaves as it is -- not a
 * batch.  Taken for one, the checker would find it still in flight in
 * the image recovery closed (fuzz-media, crash-39d5d809).
 */
static void moves_markers(const struct layout_tag *slots, uint32_t tag_count, const uint64_t *cnt,
			  uint8_t *role, struct media_moves *sum)
{
	for (uint32_t id = 1; id <= tag_count; id++) {
		const struct layout_tag *s = &slots[id - 1];

		if ((s->state != TAG_WRITTEN && s->state != TAG_VALID) ||
		    slot_link_kind(s) != LINK_MARKER || cnt[id])
			continue;
		role[id] |= MOVE_ROLE_MARKER;
		sum->markers++;
		if (s->state == TAG_VALID)
			sum->decided++;
	}
}

/* Is member id's batch decided: its marker VALID, intact, with the member's nonce? */
static bool moves_decided(const struct layout_tag *slots, uint32_t tag_count, const uint8_t *role,
			  uint32_t id, const struct layout_link *l)
{
	struct layout_link ml;

	if (l->batch == 0 || l->batch > tag_count || l->batch == id ||
	    !(role[l->batch] & MOVE_ROLE_MARKER) || slots[l->batch - 1].state != TAG_VALID)
		return false;
	layout_tag_link(&slots[l->batch - 1], &ml);
	return ml.nonce == l->nonce;
}

/* Pass 2: one member of a decided batch: forward (its extent's record says where) or bad. */
static uint8_t moves_member(const struct layout_tag *slots, uint32_t tag_count, const void *recs,
			    uint64_t extent_count, const uint8_t *role, uint32_t id,
			    const struct layout_link *l)
{
	uint64_t rec;
	uint32_t tag;

	if (l->source == 0 || l->source > tag_count || l->source == id || l->source == l->batch ||
	    l->arg >= extent_count || slots[id - 1].n_extents != 1)
		return MOVE_ROLE_BAD;
	memcpy(&rec, (const uint8_t *)recs + l->arg * 8, sizeof(rec));
	if (media_rec_check(rec, tag_count) != REC_INTACT || layout_rec_state(rec) != EXT_COMMITTED)
		return MOVE_ROLE_BAD;
	tag = layout_rec_tag(rec);
	/*
	 * Its record was moved before the crash: done, whatever the source
	 * slot is now (an emptied source is reused at once, a marker too).
	 */
	if (tag == id)
		return MOVE_ROLE_FORWARD;
	/* The source is FREE once emptied, possibly before the record's store was durable. */
	if (tag == l->source && !(role[l->source] & MOVE_ROLE_MARKER) &&
	    (slots[l->source - 1].state == TAG_VALID || slots[l->source - 1].state == TAG_FREE))
		return MOVE_ROLE_FORWARD | MOVE_ROLE_FWD_REC;
	return MOVE_ROLE_BAD;
}

struct moves_ext {
	uint64_t extent;
	uint32_t id;
};

static int cmp_moves_ext(const void *a, const void *b)
{
	const struct moves_ext *x = a, *y = b;

	if (x->extent != y->extent)
		return x->extent < y->extent ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Pass 3: two forward members naming one extent are both bad (no crash makes that). */
static int moves_duplicates(const struct layout_tag *slots, uint32_t tag_count, uint8_t *role)
{
	struct moves_ext *v;
	size_t n = 0;

	v = malloc((size_t)MAX(tag_count, 1u) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t id = 1; id <= tag_count; id++) {
		struct layout_link l;

		if (!(role[id] & MOVE_ROLE_FORWARD))
			continue;
		layout_tag_link(&slots[id - 1], &l);
		v[n++] = (struct moves_ext){l.arg, id};
	}
	qsort(v, n, sizeof(*v), cmp_moves_ext);
	for (size_t k = 1; k < n; k++)
		if (v[k].extent == v[k - 1].extent) {
			role[v[k].id] = (uint8_t)((role[v[k].id] & ~(MOVE_ROLE_FORWARD |
								     MOVE_ROLE_FWD_REC)) |
						  MOVE_ROLE_BAD);
			role[v[k - 1].id] = (uint8_t)((role[v[k - 1].id] &
						       ~(MOVE_ROLE_FORWARD | MOVE_ROLE_FWD_REC)) |
						      MOVE_ROLE_BAD);
		}
	free(v);
	return 0;
}

/* Pass 4: the view once the decided batches finished: members VALID, sources recounted. */
static void moves_apply(struct layout_tag *slots, uint32_t tag_count, uint64_t *cnt, uint8_t *role,
			struct media_moves *sum)
{
	for (uint32_t id = 1; id <= tag_count; id++) {
		struct layout_link l;

		if (!(role[id] & (MOVE_ROLE_BAD | MOVE_ROLE_FORWARD)))
			continue;
		layout_tag_link(&slots[id - 1], &l);
		if (role[id] & MOVE_ROLE_BAD) {
			sum->bad++;
			if (!sum->first_bad)
				sum->first_bad = id;
			/*
			 * Its marker stays VALID, as damage stays as it is: FREE,
			 * it would turn the damaged member into one to roll back.
			 */
			if (!(role[l.batch] & MOVE_ROLE_BAD))
				sum->held++;
			role[l.batch] |= MOVE_ROLE_BAD;
			continue;
		}
		sum->forward++;
		slots[id - 1].state = TAG_VALID;
		if (role[id] & MOVE_ROLE_FWD_REC) {
			cnt[l.source] -= cnt[l.source] > 0;
			cnt[id]++;
			sum->records++;
		}
		if (slots[l.source - 1].state == TAG_VALID)
			role[l.source] |= MOVE_ROLE_SOURCE;
	}
	for (uint32_t id = 1; id <= tag_count; id++) {
		struct layout_tag *s = &slots[id - 1];

		if (!(role[id] & MOVE_ROLE_SOURCE))
			continue;
		s->n_extents = cnt[id];
		s->checksum = layout_tag_checksum(s);
		sum->emptied += cnt[id] == 0;
	}
}

int media_moves_resolve(struct layout_tag *slots, uint32_t tag_count, const void *recs,
			uint64_t extent_count, uint64_t *cnt, uint8_t *role, struct media_moves *sum)
{
	memset(sum, 0, sizeof(*sum));
	memset(role, 0, (size_t)tag_count + 1);
	moves_markers(slots, tag_count, cnt, role, sum);
	if (!sum->markers)
		return 0; /* no batch: no member can be decided, and no WRITTEN member is named */
	for (uint32_t id = 1; id <= tag_count; id++) {
		const struct layout_tag *s = &slots[id - 1];
		struct layout_link l;

		if ((s->state != TAG_WRITTEN && s->state != TAG_VALID) ||
		    slot_link_kind(s) != LINK_MEMBER)
			continue;
		layout_tag_link(s, &l);
		if (moves_decided(slots, tag_count, role, id, &l))
			role[id] |= moves_member(slots, tag_count, recs, extent_count, role, id, &l);
		else if (s->state == TAG_WRITTEN)
			role[id] |= MOVE_ROLE_BACK;
	}
	for (uint32_t id = 1; id <= tag_count; id++)
		sum->back += !!(role[id] & MOVE_ROLE_BACK);
	if (moves_duplicates(slots, tag_count, role) < 0)
		return -ENOMEM;
	moves_apply(slots, tag_count, cnt, role, sum);
	return 0;
}

enum media_slot_kind media_moves_kind(enum media_slot_kind kind, uint8_t role)
{
	return (role & MOVE_ROLE_BAD) ? SLOT_DAMAGED : kind;
}

/* ---- missing committed extents ---- */

void media_missing_extents(const struct layout_tag *slots, uint32_t tag_count, const uint8_t *kind,
			   const uint64_t *cnt, uint64_t damaged_recs, struct media_missing *m)
{
	memset(m, 0, sizeof(*m));
	m->candidates = damaged_recs;
	for (uint32_t id = 1; id <= tag_count; id++) {
		const struct layout_tag *s = &slots[id - 1];
		uint64_t n = s->n_extents;

		switch (kind[id]) {
		case SLOT_VALID:
			if (cnt[id] < n) {
				m->deficit += n - cnt[id];
				if (m->n_short++ == 0)
					m->first_short = id;
			} else {
				m->candidates += cnt[id] - n;
			}
			break;
		case SLOT_DAMAGED:
			/* Its count is not trustworthy when the checksum is wrong. */
			if (!media_slot_sum_ok(s))
				m->candidates += cnt[id];
			else if (cnt[id] > n)
				m->candidates += cnt[id] - n;
			break;
		case SLOT_ORPHANED:
			m->candidates += cnt[id];
			break;
		case SLOT_WRITTEN:
		case SLOT_FREEING:
		case SLOT_HELD:
			m->held += cnt[id];
			break;
		default:
			break;
		}
	}
	if (m->deficit <= m->candidates)
		m->verdict = MISSING_NONE;
	else if (m->deficit <= m->candidates + m->held)
		m->verdict = MISSING_HOLD;
	else
		m->verdict = MISSING_REFUSE;
}

/* ---- is the region usable? ---- */

const char *media_refusal_str(enum media_refusal r)
{
	switch (r) {
	case REFUSE_NONE:
		return "usable";
	case REFUSE_TOO_SMALL:
		return "too small for the two header blocks";
	case REFUSE_BLANK:
		return "not a region: no header, the primary blank";
	case REFUSE_NO_HEADER:
		return "neither header is usable";
	case REFUSE_FOREIGN:
		return "foreign primary header";
	case REFUSE_UNSUPPORTED:
		return "unsupported layout version";
	case REFUSE_INCOMPAT:
		return "unknown incompat features";
	case REFUSE_RO_COMPAT:
		return "unknown ro_compat features (read-only)";
	case REFUSE_LAYOUT_KIND:
		return "split header on an inline region, or the reverse";
	case REFUSE_SIZE:
		return "size differs from the header's region size";
	case REFUSE_META_SIZE:
		return "metadata size differs from its tables'";
	case REFUSE_TABLES_BAD:
		return "bad blocks in the extent or tag table";
	case REFUSE_MISSING:
		return "committed extents missing from the extent table";
	}
	return "?";
}

bool media_refusal_unsupported(enum media_refusal r)
{
	return r == REFUSE_UNSUPPORTED || r == REFUSE_INCOMPAT || r == REFUSE_RO_COMPAT;
}

enum media_refusal media_region_refusal(const struct media_image *img, struct media_headers *m)
{
	const struct layout_header *h = NULL;
	uint64_t end;

	memset(m, 0, sizeof(*m));
	if (img->size < 2 * LAYOUT_BLOCK)
		return REFUSE_TOO_SMALL;
	media_headers_read(img->base, img->bbs, img->n_bbs, m);
	switch (m->choice) {
	case HDRS_BLANK:
		return REFUSE_BLANK;
	case HDRS_NONE:
		return m->primary == HDR_BLANK ? REFUSE_BLANK : REFUSE_NO_HEADER;
	case HDRS_FOREIGN:
		return REFUSE_FOREIGN;
	case HDRS_UNSUPPORTED:
		return m->newer_version ? REFUSE_UNSUPPORTED : REFUSE_INCOMPAT;
	case HDRS_PRIMARY:
		h = &m->hp;
		break;
	case HDRS_BACKUP:
		h = &m->hb;
		break;
	}
	if (layout_header_split(h) != img->split)
		return REFUSE_LAYOUT_KIND;
	/* Never resized: a grown or truncated image is refused, not adopted. */
	if (h->region_size != img->data_size || img->data_size % LAYOUT_BLOCK)
		return REFUSE_SIZE;
	end = layout_tables_end(h->tag_table_off, h->tag_count);
	if (end > img->size || (img->split && img->meta_exact && end != img->size))
		return REFUSE_META_SIZE;
	if (layout_range_bad(img->bbs, img->n_bbs, h->extent_table_off, end - h->extent_table_off))
		return REFUSE_TABLES_BAD;
	/*
	 * Last: the tables are readable as this build reads them, and only a
	 * reader that writes nothing may use them (docs/on-media-format.md).
	 */
	if (m->unknown.ro_compat)
		return REFUSE_RO_COMPAT;
	return REFUSE_NONE;
}
