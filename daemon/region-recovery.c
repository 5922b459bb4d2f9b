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
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "region-internal.h"

enum slot_kind { SK_FREE, SK_WRITTEN, SK_VALID, SK_DAMAGED };

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
	uint64_t commits_rolled = 0, empty_tags = 0, damaged_tags = 0, bad_marked = 0;
	uint64_t first_damaged = UINT64_MAX;
	bool stored = false;
	int ret;

	kind = calloc((size_t)r->tag_count + 1, 1);
	if (!kind)
		return -ENOMEM;

	/* 1. Classify the slots (read only). */
	for (uint32_t id = 1; id <= r->tag_count; id++)
		kind[id] = (uint8_t)classify_slot(&r->slots[id - 1]);

	/* 2. Extents. */
	for (uint64_t i = 0; i < r->extent_count; i++) {
		uint64_t rec = region_rec_load(r, i);
		unsigned s = layout_rec_state(rec);
		uint32_t tag = layout_rec_tag(rec), gen = layout_rec_gen(rec);

		if (s >= EXT_NSTATES || (s == EXT_COMMITTED && (tag == 0 || tag > r->tag_count)) ||
		    (s != EXT_COMMITTED && tag != 0)) {
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
			if (slot->n_extents != t->n_extents)
				log_warning(
				    "region '%s': tag '%s' (uid %u) was committed with %" PRIu64
				    " extents but %" PRIu64 " are still its own",
				    r->name, slot->name, slot->uid, slot->n_extents, t->n_extents);
			(void)region_tag_install(r, id, slot->uid, slot->name);
			break;
		case SK_DAMAGED:
			break;
		}
		if (kind[id] == SK_DAMAGED) {
			free(t->runs);
			memset(t, 0, sizeof(*t));
			t->state = VT_DAMAGED;
			if (slot->state != TAG_FREE)
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
