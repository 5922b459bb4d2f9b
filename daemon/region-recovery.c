/* SPDX-License-Identifier: MIT */
/*
 * Recovery at open: bring the tables to a consistent state and build the
 * volatile index from them, with one drain at the end.
 *
 *   LEASED                             -> DIRTY  (the connection is gone)
 *   COMMITTED, slot WRITTEN            -> DIRTY  (half-made commit: rolled back)
 *   COMMITTED, slot FREE               -> DIRTY  (half-done free: completed)
 *   slot WRITTEN                       -> FREE
 *   slot VALID without extents         -> FREE
 *   DIRTY / ZEROED / BAD               kept
 *   free extent under a bad block      -> BAD    (persisted)
 *
 * Damage (a record with an unknown state or an impossible tag id, a VALID
 * slot whose checksum or name is wrong, a duplicate tag): never guessed
 * at.  The record or slot is left as it is on the media for an operator or
 * a verify tool to inspect, and the affected extents are quarantined as BAD
 * in memory only, so they are neither handed out (their content and owner
 * are unknown) nor freed (they may hold someone's committed data).
 *
 * A VALID slot records how many extents were committed under it, and no
 * crash changes that number before the slot stops being VALID (commit:
 * records durable before VALID; free: FREE durable before the records
 * change).  So a VALID slot named by a different number of records is
 * damage too: the tag is hidden and its extents quarantined.  When records
 * are missing (fewer than committed), the lost ones must be among the
 * damaged records, the extents of damaged slots or the surplus of other
 * tags; if those do not account for them, the records under FREE or
 * WRITTEN slots (normally released) are held back as well, and if even
 * they do not, the missing extents look free (DIRTY, ZEROED: a zeroed block
 * of the table) and would be zeroed and handed out: the region is refused,
 * untouched, with -EUCLEAN.  Everything up to that decision only reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "region-internal.h"

/*
 * SK_HELD: a FREE or WRITTEN slot whose COMMITTED records may be another
 * tag's lost extents: the records are quarantined, the slot is left as it
 * is and never reused (a new tag in it would adopt the records).
 */
enum slot_kind { SK_FREE, SK_WRITTEN, SK_VALID, SK_DAMAGED, SK_HELD };

struct flush_window {
	uint64_t first, end; /* records [first, end) stored, not yet flushed */
	bool open;
};

static void window_add(struct region *r, struct flush_window *w, uint64_t i)
{
	/* Coalesce nearby records (flushing a few untouched ones is harmless). */
	if (w->open && i >= w->first && i <= w->end + 64) {
		w->end = MAX(w->end, i + 1);
		return;
	}
	if (w->open)
		region_rec_flush(r, w->first, w->end - w->first);
	w->first = i;
	w->end = i + 1;
	w->open = true;
}

static void window_close(struct region *r, struct flush_window *w)
{
	if (w->open)
		region_rec_flush(r, w->first, w->end - w->first);
	w->open = false;
}

static void quarantine(struct region *r, uint64_t i)
{
	r->vflags[i] |= VF_QUARANTINE;
	region_vset(r, i, EXT_BAD);
	r->n_quarantined++;
}

static bool rec_damaged(const struct region *r, uint64_t rec)
{
	unsigned s = layout_rec_state(rec);
	uint32_t tag = layout_rec_tag(rec);

	return s >= EXT_NSTATES || (s == EXT_COMMITTED && (tag == 0 || tag > r->tag_count)) ||
	       (s != EXT_COMMITTED && tag != 0);
}

/*
 * Read only: compare each VALID slot with the records naming it, mark the
 * mismatches damaged and decide what happens to records under FREE and
 * WRITTEN slots.  -EUCLEAN (logged) when committed extents are missing
 * and nothing damaged accounts for them.
 */
static int check_tag_counts(struct region *r, uint8_t *kind)
{
	_cleanup_free_ uint64_t *cnt = calloc((size_t)r->tag_count + 1, sizeof(*cnt));
	uint64_t damaged_recs = 0, deficit = 0, held = 0, candidates = 0;
	uint32_t n_short = 0, first_short = 0;

	if (!cnt)
		return -ENOMEM;
	for (uint64_t i = 0; i < r->extent_count; i++) {
		uint64_t rec = region_rec_load(r, i);

		if (rec_damaged(r, rec))
			damaged_recs++;
		else if (layout_rec_state(rec) == EXT_COMMITTED)
			cnt[layout_rec_tag(rec)]++;
	}
	/*
	 * Where lost extents may be: damaged records; under a damaged slot, its
	 * records beyond its own count (all of them when the count is not
	 * trustworthy: bad checksum); the surplus of other tags (below).
	 */
	candidates = damaged_recs;
	for (uint32_t id = 1; id <= r->tag_count; id++) {
		const struct layout_tag *slot = &r->slots[id - 1];

		if (kind[id] != SK_DAMAGED)
			continue;
		if (layout_tag_checksum(slot) != slot->checksum)
			candidates += cnt[id];
		else if (cnt[id] > slot->n_extents)
			candidates += cnt[id] - slot->n_extents;
	}

	for (uint32_t id = 1; id <= r->tag_count; id++) {
		const struct layout_tag *slot = &r->slots[id - 1];
		uint64_t n = slot->n_extents;

		if (kind[id] != SK_VALID || cnt[id] == n)
			continue;
		if (cnt[id] < n) {
			deficit += n - cnt[id];
			if (n_short++ == 0)
				first_short = id;
		} else {
			candidates += cnt[id] - n;
		}
		if (cnt[id] == 0) {
			/* Nothing to quarantine: recovery frees it ("VALID without extents"). */
			log_error(
			    "region '%s': tag '%s' (uid %u, slot %u) was committed with %" PRIu64
			    " extents but no record names it any more",
			    r->name, slot->name, slot->uid, id, n);
			continue;
		}
		log_error("region '%s': tag '%s' (uid %u, slot %u) was committed with %" PRIu64
			  " extents but %" PRIu64
			  " records name it; hiding the tag and quarantining its extents",
			  r->name, slot->name, slot->uid, id, n, cnt[id]);
		kind[id] = SK_DAMAGED;
	}
	if (deficit <= candidates)
		return 0;

	/* Not accounted for: keep what recovery would release, too. */
	for (uint32_t id = 1; id <= r->tag_count; id++)
		if ((kind[id] == SK_FREE || kind[id] == SK_WRITTEN) && cnt[id]) {
			kind[id] = SK_HELD;
			held += cnt[id];
		}
	candidates += held;
	if (held)
		log_error("region '%s': %" PRIu64
			  " committed extents are missing; holding back the %" PRIu64
			  " COMMITTED records of free or half-made tags instead of releasing them",
			  r->name, deficit, held);
	if (deficit <= candidates)
		return 0;
	return log_error_errno(
	    EUCLEAN,
	    "region '%s': %" PRIu64 " committed extents of %u tags (first: '%s', slot %u) are "
	    "missing from the extent table and no damaged record accounts for them: they would "
	    "look free and be zeroed; refusing to open the region (inspect it with 'pmemzctl "
	    "check %s')",
	    r->name, deficit, n_short, r->slots[first_short - 1].name, first_short, r->rc->path);
}

static enum slot_kind classify_slot(const struct layout_tag *s)
{
	switch (s->state) {
	case TAG_FREE:
		return SK_FREE;
	case TAG_WRITTEN:
		return SK_WRITTEN;
	case TAG_VALID:
		if (layout_tag_checksum(s) != s->checksum ||
		    memchr(s->name, '\0', sizeof(s->name)) == NULL ||
		    layout_tag_name_valid(s->name) < 0)
			return SK_DAMAGED;
		return SK_VALID;
	default:
		return SK_DAMAGED;
	}
}

int region_recover(struct region *r, const struct pstore_badblock *bbs, size_t n_bbs)
{
	_cleanup_free_ uint8_t *kind = NULL;
	struct flush_window w = {0};
	uint64_t leases = 0, rolled_ext = 0, freed_ext = 0, damaged_recs = 0, damaged_ext = 0;
	uint64_t commits_rolled = 0, empty_tags = 0, damaged_tags = 0, bad_marked = 0, held_ext = 0;
	uint64_t first_damaged = UINT64_MAX;
	bool stored = false;
	int ret;

	kind = calloc((size_t)r->tag_count + 1, 1);
	if (!kind)
		return -ENOMEM;

	/* 1. Classify the slots and check them against the records (read only). */
	for (uint32_t id = 1, logged = 0; id <= r->tag_count; id++) {
		const struct layout_tag *slot = &r->slots[id - 1];

		kind[id] = (uint8_t)classify_slot(slot);
		if (kind[id] == SK_DAMAGED && logged++ < 8)
			log_error(
			    "region '%s': tag slot %u (offset %" PRIu64 ", uid %u) is damaged: %s",
			    r->name, id,
			    r->hdr.tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE,
			    slot->uid,
			    slot->state != TAG_VALID			  ? "unknown state word"
			    : layout_tag_checksum(slot) != slot->checksum ? "checksum mismatch"
									  : "invalid name");
	}
	ret = check_tag_counts(r, kind);
	if (ret < 0)
		return ret;

	/* 2. Extents. */
	for (uint64_t i = 0; i < r->extent_count; i++) {
		uint64_t rec = region_rec_load(r, i);
		unsigned s = layout_rec_state(rec);
		uint32_t tag = layout_rec_tag(rec), gen = layout_rec_gen(rec);

		if (rec_damaged(r, rec)) {
			if (first_damaged == UINT64_MAX)
				first_damaged = i;
			damaged_recs++;
			quarantine(r, i);
			continue;
		}
		switch (s) {
		case EXT_DIRTY:
			break;
		case EXT_ZEROED:
		case EXT_BAD:
			region_vset(r, i, s);
			break;
		case EXT_LEASED:
			region_rec_store(r, i, EXT_DIRTY, 0, gen);
			window_add(r, &w, i);
			leases++;
			break;
		case EXT_COMMITTED:
			switch (kind[tag]) {
			case SK_VALID:
				ret = region_vtag_add_extent(&r->tags[tag], i);
				if (ret < 0)
					return ret;
				region_vset(r, i, EXT_COMMITTED);
				break;
			case SK_DAMAGED:
				damaged_ext++;
				quarantine(r, i);
				break;
			case SK_HELD:
				held_ext++;
				quarantine(r, i);
				break;
			case SK_WRITTEN:
			case SK_FREE:
				region_rec_store(r, i, EXT_DIRTY, 0, gen);
				window_add(r, &w, i);
				if (kind[tag] == SK_WRITTEN)
					rolled_ext++;
				else
					freed_ext++;
				break;
			}
			break;
		}
	}
	window_close(r, &w);
	stored = leases || rolled_ext || freed_ext;

	/* 3. Slots. */
	for (uint32_t id = 1; id <= r->tag_count; id++) {
		struct layout_tag *slot = &r->slots[id - 1];
		struct vtag *t = &r->tags[id];

		switch (kind[id]) {
		case SK_FREE:
			break;
		case SK_WRITTEN:
			commits_rolled++;
			pstore_store64(r->ps, &slot->state, TAG_FREE);
			pstore_flush(r->ps, &slot->state, sizeof(slot->state));
			stored = true;
			/* Reusable: its records are DIRTY, durable before any commit. */
			kind[id] = SK_FREE;
			break;
		case SK_VALID:
			if (t->n_extents == 0) {
				empty_tags++;
				pstore_store64(r->ps, &slot->state, TAG_FREE);
				pstore_flush(r->ps, &slot->state, sizeof(slot->state));
				stored = true;
				kind[id] = SK_FREE;
				break;
			}
			{
				uint32_t dup;
				if (region_tag_lookup(r, slot->name, slot->uid, &dup) == 0) {
					log_error(
					    "region '%s': tag '%s' of uid %u is in slots %u and "
					    "%u; hiding slot %u and quarantining its extents",
					    r->name, slot->name, slot->uid, dup, id, id);
					for (size_t k = 0; k < t->n_runs; k++)
						for (uint64_t i = t->runs[k].first;
						     i < t->runs[k].first + t->runs[k].count; i++)
							quarantine(r, i);
					damaged_ext += t->n_extents;
					kind[id] = SK_DAMAGED;
					break;
				}
			}
			(void)region_tag_install(r, id, slot->uid, slot->name);
			break;
		case SK_DAMAGED:
		case SK_HELD:
			break;
		}
		if (kind[id] == SK_DAMAGED || kind[id] == SK_HELD) {
			free(t->runs);
			memset(t, 0, sizeof(*t));
			t->state = VT_DAMAGED;
			if (kind[id] == SK_DAMAGED && slot->state != TAG_FREE)
				damaged_tags++;
		}
	}
	/* Lowest ids first. */
	for (uint32_t id = r->tag_count; id >= 1; id--)
		if (kind[id] == SK_FREE)
			r->free_ids[r->n_free_ids++] = id;

	/* 4. Bad blocks in the data area: quarantine free extents for good. */
	for (size_t k = 0; k < n_bbs; k++) {
		uint64_t s = bbs[k].off, e = bbs[k].off + bbs[k].len, data_end;

		data_end = r->data_off + r->extent_count * r->extent_size;
		if (e <= r->data_off || s >= data_end)
			continue;
		s = MAX(s, r->data_off);
		e = MIN(e, data_end);
		for (uint64_t i = (s - r->data_off) / r->extent_size;
		     i <= (e - 1 - r->data_off) / r->extent_size; i++) {
			unsigned st = r->vstate[i];
			if (st == EXT_DIRTY || st == EXT_ZEROED) {
				uint64_t rec = region_rec_load(r, i);
				region_rec_store(r, i, EXT_BAD, 0, layout_rec_gen(rec));
				region_rec_flush(r, i, 1);
				region_vset(r, i, EXT_BAD);
				bad_marked++;
				stored = true;
			} else if (st == EXT_COMMITTED) {
				log_warning("region '%s': committed extent %" PRIu64
					    " (tag '%s') has "
					    "media errors",
					    r->name, i,
					    r->tags[layout_rec_tag(region_rec_load(r, i))].name);
			}
		}
	}

	if (stored)
		pstore_drain(r->ps);

	/* Every DIRTY record is durable now: work for the zeroer. */
	for (uint64_t i = 0; i < r->extent_count; i++)
		if (r->vstate[i] == EXT_DIRTY)
			region_make_ready(r, i);

	if (damaged_recs)
		log_error("region '%s': %" PRIu64
			  " extent records are damaged (first: extent %" PRIu64
			  ", record 0x%016" PRIx64 "); quarantined in memory, left as they are",
			  r->name, damaged_recs, first_damaged, region_rec_load(r, first_damaged));
	if (held_ext)
		log_error("region '%s': %" PRIu64 " COMMITTED extents of free or half-made tags "
			  "quarantined in memory, left as they are",
			  r->name, held_ext);
	if (damaged_tags)
		log_error("region '%s': %" PRIu64 " tag slots are damaged; their %" PRIu64
			  " extents are quarantined in memory, left as they are",
			  r->name, damaged_tags, damaged_ext);
	if (bad_marked)
		log_warning("region '%s': %" PRIu64 " free extents have media errors: marked BAD",
			    r->name, bad_marked);
	log_info("region '%s': recovered: %" PRIu64 " leases released, %" PRIu64
		 " half-made commits rolled back (%" PRIu64 " extents), %" PRIu64
		 " extents of half-done frees released, %" PRIu64 " empty tags removed; "
		 "%" PRIu64 " zeroed, %" PRIu64 " dirty, %" PRIu64 " committed in %u tags, %" PRIu64
		 " bad",
		 r->name, leases, commits_rolled, rolled_ext, freed_ext, empty_tags,
		 r->count[EXT_ZEROED], r->count[EXT_DIRTY], r->count[EXT_COMMITTED], r->n_tags,
		 r->count[EXT_BAD]);
	return 0;
}
