/* SPDX-License-Identifier: MIT */
/*
 * Recovery at open: bring the tables to a consistent state and build the
 * volatile index from them.  Record stores are drained before any slot
 * store (two drains at most), so a crash during recovery never leaves a
 * FREE slot that COMMITTED records still name.
 *
 *   LEASED                             -> DIRTY  (the connection is gone)
 *   COMMITTED, slot WRITTEN            -> DIRTY  (half-made commit: rolled back)
 *   COMMITTED, slot FREEING            -> DIRTY  (half-done free: completed)
 *   slot WRITTEN or FREEING            -> FREE   (after the records above)
 *   slot VALID without extents         -> FREE
 *   DIRTY / ZEROED / BAD               kept
 *   free extent under a bad block      -> BAD    (persisted)
 *
 * The commit and free protocols (region-tag.c) make a WRITTEN or FREEING
 * slot's body durable before any record that names it can be COMMITTED on
 * media, and keep a slot WRITTEN, VALID or FREEING while a COMMITTED record
 * names it.  So a COMMITTED record under a FREE slot is never a crash: it
 * is damage (typically a zeroed block of the tag table), and so is one
 * under a WRITTEN or FREEING slot whose checksum is wrong or that names
 * fewer extents than the records do.
 *
 * Damage (those, a record with an unknown state code or an impossible tag
 * id, a VALID slot whose checksum or name is wrong, a duplicate tag): never
 * guessed at.  The record or slot is left as it is on the media for an
 * operator or a verify tool to inspect, and the affected extents are
 * quarantined as BAD in memory only, so they are neither handed out (their
 * content and owner are unknown) nor freed (they may hold someone's
 * committed data).  A slot that damaged records name is never reused.
 *
 * A VALID slot records how many extents were committed under it, and no
 * crash changes that number before the slot stops being VALID (commit:
 * records durable before VALID; free: FREEING durable before the records
 * change).  So a VALID slot named by a different number of records is
 * damage too: the tag is hidden and its extents quarantined.  When records
 * are missing (fewer than committed), the lost ones must be among the
 * damaged records, the records under FREE or damaged slots or the surplus
 * of other tags; if those do not account for them, the records under
 * WRITTEN or FREEING slots (normally released) are held back as well, and
 * if even they do not, the missing extents look free (DIRTY, ZEROED: a
 * zeroed block of the table) and would be zeroed and handed out: the
 * region is refused, untouched, with -EUCLEAN.  Everything up to that
 * decision only reads.
 *
 * What is damage, and what the records naming a slot say about it, are the
 * media module's rules (media.h: media_rec_check, media_slot_classify,
 * media_named_slot, media_missing_extents), which the offline checker
 * reports too; this file applies their verdicts through pstore and logs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "region-internal.h"

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
		region_index_rec_flush(r, w->first, w->end - w->first);
	w->first = i;
	w->end = i + 1;
	w->open = true;
}

static void window_close(struct region *r, struct flush_window *w)
{
	if (w->open)
		region_index_rec_flush(r, w->first, w->end - w->first);
	w->open = false;
}

static void quarantine(struct region *r, uint64_t i)
{
	r->vflags[i] |= VF_QUARANTINE;
	region_index_set(r, i, EXT_BAD);
	r->n_quarantined++;
}

static bool rec_damaged(const struct region *r, uint64_t rec)
{
	return media_rec_check(rec, r->tag_count) != REC_INTACT;
}

static uint64_t slot_off(const struct region *r, uint32_t id)
{
	return r->hdr.tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE;
}

/* The extents whose (intact) COMMITTED records name tag id, as runs: "3-5, 9, ...". */
static void tag_extents_str(const struct region *r, uint32_t id, char *buf, size_t len)
{
	uint64_t first = UINT64_MAX, last = 0;
	unsigned runs = 0;
	size_t o = 0;

	buf[0] = '\0';
	for (uint64_t i = 0; i <= r->extent_count; i++) {
		bool named = false;

		if (i < r->extent_count) {
			uint64_t rec = region_index_rec_load(r, i);

			named = !rec_damaged(r, rec) && layout_rec_state(rec) == EXT_COMMITTED &&
				layout_rec_tag(rec) == id;
		}
		if (named && first != UINT64_MAX && i == last + 1) {
			last = i;
			continue;
		}
		if (first != UINT64_MAX && o < len) {
			int k;

			if (runs++ == 8) {
				(void)snprintf(buf + o, len - o, ", ...");
				return;
			}
			if (first == last)
				k = snprintf(buf + o, len - o, "%s%" PRIu64, o ? ", " : "", first);
			else
				k = snprintf(buf + o, len - o, "%s%" PRIu64 "-%" PRIu64,
					     o ? ", " : "", first, last);
			o += k > 0 ? (size_t)k : 0;
		}
		first = named ? i : UINT64_MAX;
		last = i;
	}
}

/*
 * Read only, after the records are counted: the named-slot rule
 * (media_named_slot), logged.
 */
static void check_named_slots(struct region *r, const struct layout_tag *slots, uint8_t *kind,
			      const uint64_t *cnt)
{
	uint32_t logged = 0, orphans = 0;
	uint64_t orphan_recs = 0;
	char ext[160];

	for (uint32_t id = 1; id <= r->tag_count; id++) {
		const struct layout_tag *slot = &slots[id - 1];
		enum media_slot_kind was = kind[id], now = media_named_slot(slot, was, cnt[id]);

		if (now == was)
			continue;
		kind[id] = (uint8_t)now;
		if (now == SLOT_DAMAGED && logged++ < 8) {
			tag_extents_str(r, id, ext, sizeof(ext));
			log_error("region '%s': tag slot %u (offset %" PRIu64 ") is %s but %s"
				  "; its %" PRIu64 " COMMITTED extents (%s) are quarantined, "
				  "left as they are",
				  r->name, id, slot_off(r, id),
				  was == SLOT_WRITTEN ? "WRITTEN (a commit in progress)"
						      : "FREEING (a free in progress)",
				  media_slot_sum_ok(slot)
				      ? "more records name it than it was committed with"
				      : "its checksum is wrong",
				  cnt[id], ext);
		} else if (now == SLOT_ORPHANED) {
			/* No crash leaves this: a wiped slot (a zeroed block of the table?). */
			if (orphans++ < 8) {
				tag_extents_str(r, id, ext, sizeof(ext));
				log_error("region '%s': tag id %u (slot at offset %" PRIu64
					  ") is %s, "
					  "but %" PRIu64 " COMMITTED records name it (extents %s): "
					  "media damage; quarantining those extents (not zeroed, "
					  "never handed out) and leaving them as they are",
					  r->name, id, slot_off(r, id),
					  media_slot_blank(slot)
					      ? "blank (a zeroed block of the tag table?)"
					      : "FREE",
					  cnt[id], ext);
			}
			orphan_recs += cnt[id];
		}
	}
	if (orphans > 8)
		log_error("region '%s': %u free tag slots in all are named by %" PRIu64
			  " COMMITTED records; all quarantined",
			  r->name, orphans, orphan_recs);
}

/*
 * Read only: count the records naming each slot, apply the named-slot rule
 * and the missing-extent accounting (media_missing_extents): VALID slots
 * named by a different number of records become damaged, and the records
 * under WRITTEN and FREEING slots are held back when only they can account
 * for missing extents.  -EUCLEAN (logged) when nothing does.
 */
static int check_tag_counts(struct region *r, const struct layout_tag *slots, uint8_t *kind,
			    const uint64_t *cnt, uint64_t damaged_recs)
{
	struct media_missing m;

	check_named_slots(r, slots, kind, cnt);
	media_missing_extents(slots, r->tag_count, kind, cnt, damaged_recs, &m);

	for (uint32_t id = 1; id <= r->tag_count; id++) {
		const struct layout_tag *slot = &slots[id - 1];
		uint64_t n = slot->n_extents;

		if (kind[id] != SLOT_VALID || cnt[id] == n)
			continue;
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
		kind[id] = SLOT_DAMAGED;
	}
	if (m.verdict == MISSING_NONE)
		return 0;

	/* Not accounted for: keep what recovery would release, too. */
	for (uint32_t id = 1; id <= r->tag_count; id++)
		if ((kind[id] == SLOT_WRITTEN || kind[id] == SLOT_FREEING) && cnt[id])
			kind[id] = SLOT_HELD;
	if (m.held)
		log_error("region '%s': %" PRIu64
			  " committed extents are missing; holding back the %" PRIu64
			  " COMMITTED records of half-made commits and half-done frees instead of "
			  "releasing them",
			  r->name, m.deficit, m.held);
	if (m.verdict == MISSING_HOLD)
		return 0;
	return log_error_errno(
	    EUCLEAN,
	    "region '%s': %" PRIu64 " committed extents of %u tags (first: '%s', slot %u) are "
	    "missing from the extent table and no damaged record accounts for them: they would "
	    "look free and be zeroed; refusing to open the region (inspect it with 'pmemzctl "
	    "check %s'); refused: %s",
	    r->name, m.deficit, m.n_short, slots[m.first_short - 1].name, m.first_short,
	    r->rc->path, media_refusal_str(REFUSE_MISSING));
}

static void slot_store_free(struct region *r, uint32_t id)
{
	struct layout_tag *slot = &r->slots[id - 1];

	pstore_store64(r->mps, &slot->state, TAG_FREE);
	pstore_flush(r->mps, &slot->state, sizeof(slot->state));
}

/* What recovery found and did: every phase adds to it, the last one reports it. */
struct tally {
	uint8_t *kind; /* [id]: enum media_slot_kind, [0] unused */
	uint8_t *role; /* [id]: MOVE_ROLE_* (media_moves_resolve) */
	struct layout_tag *eff; /* the tag table once decided MOVE batches finished */
	uint64_t *cnt;		/* [id]: COMMITTED records naming id, in that view */
	uint64_t damaged_cnt;	/* records that are not intact */
	struct media_moves mv;
	struct flush_window w;
	uint64_t leases, rolled_ext, freed_ext, damaged_recs, damaged_ext;
	uint64_t commits_rolled, frees_done, empty_tags, damaged_tags;
	uint64_t bad_marked, held_ext, orphan_ext, orphan_tags;
	uint64_t first_damaged;
	bool recs_stored, slots_stored;
};

/*
 * Phase 0 (read only): the records per slot, and the MOVE batches'
 * verdicts: every later rule reads the tag table as it is once the
 * decided batches have finished (t->eff, t->cnt).
 */
static int resolve_moves(struct region *r, struct tally *t)
{
	int ret;

	memcpy(t->eff, r->slots, (size_t)r->tag_count * sizeof(*t->eff));
	for (uint64_t i = 0; i < r->extent_count; i++) {
		uint64_t rec = region_index_rec_load(r, i);

		if (rec_damaged(r, rec))
			t->damaged_cnt++;
		else if (layout_rec_state(rec) == EXT_COMMITTED)
			t->cnt[layout_rec_tag(rec)]++;
	}
	ret = media_moves_resolve(t->eff, r->tag_count, r->recs, r->extent_count, t->cnt, t->role,
				  &t->mv);
	if (ret < 0)
		return ret;
	if (t->mv.bad)
		log_error("region '%s': %" PRIu64 " MOVE member slots (first: slot %u) of a decided "
			  "batch have a bad link; treated as damaged slots",
			  r->name, t->mv.bad, t->mv.first_bad);
	return 0;
}

/* Phase 1: classify the slots (read only). */
static void classify_slots(struct region *r, struct tally *t)
{
	for (uint32_t id = 1, logged = 0; id <= r->tag_count; id++) {
		const struct layout_tag *slot = &t->eff[id - 1];

		enum media_slot_damage why;

		t->kind[id] = (uint8_t)media_moves_kind(media_slot_classify(slot, &why), t->role[id]);
		if (t->kind[id] == SLOT_DAMAGED && logged++ < 8)
			log_error("region '%s': tag slot %u (offset %" PRIu64
				  ", uid %u) is damaged: %s",
				  r->name, id, slot_off(r, id), slot->uid,
				  why == SLOT_BAD_STATE ? "unknown state word"
				  : why == SLOT_BAD_SUM ? "checksum mismatch"
							: "invalid name");
	}
}

/* A COMMITTED record: its slot's kind says whether it stays, goes DIRTY or is held. */
static int recover_committed(struct region *r, struct tally *t, uint64_t i, uint32_t tag,
			     uint32_t gen)
{
	int ret;

	switch (t->kind[tag]) {
	case SLOT_VALID:
		ret = region_tag_add_extent(&r->tags[tag], i);
		if (ret < 0)
			return ret;
		region_index_set(r, i, EXT_COMMITTED);
		break;
	case SLOT_WRITTEN:
	case SLOT_FREEING:
		region_index_rec_store(r, i, EXT_DIRTY, 0, gen);
		window_add(r, &t->w, i);
		if (t->kind[tag] == SLOT_WRITTEN)
			t->rolled_ext++;
		else
			t->freed_ext++;
		break;
	case SLOT_HELD:
		t->held_ext++;
		quarantine(r, i);
		break;
	case SLOT_ORPHANED:
		t->orphan_ext++;
		quarantine(r, i);
		break;
	default: /* SLOT_DAMAGED (a FREE slot named is SLOT_ORPHANED) */
		t->damaged_ext++;
		quarantine(r, i);
		break;
	}
	return 0;
}

/*
 * The records of decided MOVE batches that still name their source: now
 * their member's, when the member is a tag after all the rules.
 */
static void forward_records(struct region *r, struct tally *t)
{
	for (uint32_t id = 1; id <= r->tag_count; id++) {
		struct layout_link l;
		uint64_t rec;

		if (!(t->role[id] & MOVE_ROLE_FWD_REC) || t->kind[id] != SLOT_VALID)
			continue;
		layout_tag_link(&t->eff[id - 1], &l);
		rec = region_index_rec_load(r, l.arg);
		region_index_rec_store(r, l.arg, EXT_COMMITTED, id, layout_rec_gen(rec));
		window_add(r, &t->w, l.arg);
		t->recs_stored = true;
	}
}

/* Phase 2: every extent record, into the index; leases and half-done work back to DIRTY. */
static int recover_extents(struct region *r, struct tally *t)
{
	int ret;

	forward_records(r, t);
	for (uint64_t i = 0; i < r->extent_count; i++) {
		uint64_t rec = region_index_rec_load(r, i);
		unsigned s = layout_rec_state(rec);
		uint32_t gen = layout_rec_gen(rec);

		if (rec_damaged(r, rec)) {
			if (t->first_damaged == UINT64_MAX)
				t->first_damaged = i;
			t->damaged_recs++;
			quarantine(r, i);
			continue;
		}
		switch (s) {
		case EXT_DIRTY:
			break;
		case EXT_ZEROED:
		case EXT_BAD:
			region_index_set(r, i, s);
			break;
		case EXT_LEASED:
			region_index_rec_store(r, i, EXT_DIRTY, 0, gen);
			window_add(r, &t->w, i);
			t->leases++;
			break;
		case EXT_COMMITTED:
			ret = recover_committed(r, t, i, layout_rec_tag(rec), gen);
			if (ret < 0)
				return ret;
			break;
		}
	}
	window_close(r, &t->w);
	t->recs_stored |= t->leases || t->rolled_ext || t->freed_ext;
	return 0;
}

/* Phase 3: bad blocks in the data area: quarantine free extents for good. */
static void mark_bad_blocks(struct region *r, struct tally *t, const struct pstore_badblock *bbs,
			    size_t n_bbs)
{
	uint64_t data_end = r->data_off + r->extent_count * r->extent_size;

	for (size_t k = 0; k < n_bbs; k++) {
		uint64_t s = bbs[k].off, e = bbs[k].off + bbs[k].len;

		if (e <= r->data_off || s >= data_end)
			continue;
		s = MAX(s, r->data_off);
		e = MIN(e, data_end);
		for (uint64_t i = (s - r->data_off) / r->extent_size;
		     i <= (e - 1 - r->data_off) / r->extent_size; i++) {
			unsigned st = r->vstate[i];
			if (st == EXT_DIRTY || st == EXT_ZEROED) {
				uint64_t rec = region_index_rec_load(r, i);
				region_index_rec_store(r, i, EXT_BAD, 0, layout_rec_gen(rec));
				region_index_rec_flush(r, i, 1);
				region_index_set(r, i, EXT_BAD);
				t->bad_marked++;
				t->recs_stored = true;
			} else if (st == EXT_COMMITTED) {
				log_warning(
				    "region '%s': committed extent %" PRIu64
				    " (tag '%s') has media errors",
				    r->name, i,
				    r->slots[layout_rec_tag(region_index_rec_load(r, i)) - 1].name);
			}
		}
	}
}

/* A VALID slot whose name another one already has: hidden, its extents quarantined. */
static bool hide_duplicate(struct region *r, struct tally *t, uint32_t id)
{
	const struct layout_tag *slot = &r->slots[id - 1];
	const struct vtag *vt = &r->tags[id];
	uint32_t dup;

	if (region_tag_lookup(r, slot->name, slot->uid, &dup) != 0)
		return false;
	log_error("region '%s': tag '%s' of uid %u is in slots %u and "
		  "%u; hiding slot %u and quarantining its extents",
		  r->name, slot->name, slot->uid, dup, id, id);
	for (size_t k = 0; k < vt->n_runs; k++)
		for (uint64_t i = vt->runs[k].first; i < vt->runs[k].first + vt->runs[k].count; i++)
			quarantine(r, i);
	t->damaged_ext += vt->n_extents;
	t->kind[id] = SLOT_DAMAGED;
	return true;
}

/*
 * A VALID slot of a decided MOVE batch, its records durable: a member
 * VALID, a source's recounted body (a torn rewrite too), as t->eff says.
 */
static void finish_moved_slot(struct region *r, struct tally *t, uint32_t id)
{
	struct layout_tag *slot = &r->slots[id - 1];
	const struct layout_tag *e = &t->eff[id - 1];

	if ((t->role[id] & MOVE_ROLE_SOURCE) &&
	    memcmp((const uint8_t *)slot + 8, (const uint8_t *)e + 8, sizeof(*e) - 8) != 0) {
		pstore_memcpy(r->mps, (uint8_t *)slot + 8, (const uint8_t *)e + 8, sizeof(*e) - 8);
		t->slots_stored = true;
	}
	if (slot->state != TAG_VALID) {
		pstore_store64(r->mps, &slot->state, TAG_VALID);
		pstore_flush(r->mps, &slot->state, sizeof(slot->state));
		t->slots_stored = true;
	}
}

/* One slot, after its records are durable: FREE, installed as a tag, or hidden. */
static void recover_slot(struct region *r, struct tally *t, uint32_t id)
{
	struct vtag *vt = &r->tags[id];
	uint8_t *kind = &t->kind[id];

	if ((t->role[id] & MOVE_ROLE_MARKER) && *kind == SLOT_WRITTEN)
		return; /* FREE last (recover_markers): the decision outlives its effects */
	if (*kind == SLOT_VALID && vt->n_extents &&
	    (t->role[id] & (MOVE_ROLE_FORWARD | MOVE_ROLE_SOURCE)))
		finish_moved_slot(r, t, id);
	switch (*kind) {
	case SLOT_WRITTEN:
	case SLOT_FREEING:
		if (*kind == SLOT_WRITTEN)
			t->commits_rolled++;
		else
			t->frees_done++;
		slot_store_free(r, id);
		t->slots_stored = true;
		/* Reusable: its records are durably DIRTY. */
		*kind = SLOT_FREE;
		break;
	case SLOT_VALID:
		if (vt->n_extents == 0) {
			t->empty_tags++;
			slot_store_free(r, id);
			t->slots_stored = true;
			*kind = SLOT_FREE;
			break;
		}
		if (!hide_duplicate(r, t, id))
			(void)region_tag_install(r, id, r->slots[id - 1].uid,
						 r->slots[id - 1].name);
		break;
	default: /* FREE, DAMAGED, HELD, ORPHANED */
		break;
	}
	if (*kind == SLOT_DAMAGED || *kind == SLOT_HELD || *kind == SLOT_ORPHANED) {
		free(vt->runs);
		memset(vt, 0, sizeof(*vt));
		vt->state = VT_DAMAGED;
		if (*kind == SLOT_DAMAGED)
			t->damaged_tags++;
		else if (*kind == SLOT_ORPHANED)
			t->orphan_tags++;
	}
}

/*
 * Phase 4b, after the slots are durable: the MOVE markers FREE, so that a
 * crash before leaves the decision to be taken again.
 */
static void recover_markers(struct region *r, struct tally *t)
{
	bool stored = false;

	for (uint32_t id = 1; id <= r->tag_count; id++) {
		if (!(t->role[id] & MOVE_ROLE_MARKER))
			continue;
		if (t->kind[id] == SLOT_WRITTEN) {
			slot_store_free(r, id);
			stored = true;
			t->kind[id] = SLOT_FREE;
		}
	}
	if (stored)
		pstore_drain(r->mps);
	for (uint32_t id = r->tag_count; id >= 1; id--)
		if ((t->role[id] & MOVE_ROLE_MARKER) && t->kind[id] == SLOT_FREE)
			r->free_ids[r->n_free_ids++] = id;
}

/* Phase 4: the slots, then the free ids (lowest first; markers after recover_markers). */
static void recover_slots(struct region *r, struct tally *t)
{
	for (uint32_t id = 1; id <= r->tag_count; id++)
		recover_slot(r, t, id);
	for (uint32_t id = r->tag_count; id >= 1; id--)
		if (t->kind[id] == SLOT_FREE && !(t->role[id] & MOVE_ROLE_MARKER))
			r->free_ids[r->n_free_ids++] = id;
}

/* Phase 5: what was found, once. */
static void report(const struct region *r, const struct tally *t)
{
	if (t->damaged_recs)
		log_error("region '%s': %" PRIu64
			  " extent records are damaged (first: extent %" PRIu64
			  ", record 0x%016" PRIx64 "); quarantined in memory, left as they are",
			  r->name, t->damaged_recs, t->first_damaged,
			  region_index_rec_load(r, t->first_damaged));
	if (t->held_ext)
		log_error("region '%s': %" PRIu64 " COMMITTED extents of half-made commits or "
			  "half-done frees quarantined in memory, left as they are",
			  r->name, t->held_ext);
	if (t->orphan_ext)
		log_error("region '%s': %" PRIu64 " COMMITTED extents of %" PRIu64
			  " free tag slots quarantined in memory, left as they are",
			  r->name, t->orphan_ext, t->orphan_tags);
	if (t->damaged_tags)
		log_error("region '%s': %" PRIu64 " tag slots are damaged; their %" PRIu64
			  " extents are quarantined in memory, left as they are",
			  r->name, t->damaged_tags, t->damaged_ext);
	if (t->bad_marked)
		log_warning("region '%s': %" PRIu64 " free extents have media errors: marked BAD",
			    r->name, t->bad_marked);
	if (t->mv.markers)
		log_info("region '%s': %" PRIu64 " MOVE batches in flight: %" PRIu64
			 " decided, rolled forward (%" PRIu64 " moves, %" PRIu64
			 " emptied tags removed), %" PRIu64 " moves rolled back",
			 r->name, t->mv.markers, t->mv.decided, t->mv.forward, t->mv.emptied,
			 t->mv.back);
	log_info("region '%s': recovered: %" PRIu64 " leases released, %" PRIu64
		 " half-made commits rolled back (%" PRIu64 " extents), %" PRIu64
		 " half-done frees completed (%" PRIu64 " extents), %" PRIu64
		 " empty tags removed; %" PRIu64 " zeroed, %" PRIu64 " dirty, %" PRIu64
		 " committed in %u tags, %" PRIu64 " bad",
		 r->name, t->leases, t->commits_rolled, t->rolled_ext, t->frees_done, t->freed_ext,
		 t->empty_tags, r->count[EXT_ZEROED], r->count[EXT_DIRTY], r->count[EXT_COMMITTED],
		 r->n_tags, r->count[EXT_BAD]);
}

int region_recover(struct region *r, const struct pstore_badblock *bbs, size_t n_bbs)
{
	_cleanup_free_ uint8_t *kind = calloc((size_t)r->tag_count + 1, 1);
	_cleanup_free_ uint8_t *role = calloc((size_t)r->tag_count + 1, 1);
	_cleanup_free_ uint64_t *cnt = calloc((size_t)r->tag_count + 1, sizeof(*cnt));
	_cleanup_free_ struct layout_tag *eff = calloc(MAX(r->tag_count, 1u), sizeof(*eff));
	struct tally t = {.kind = kind, .role = role, .eff = eff, .cnt = cnt,
			  .first_damaged = UINT64_MAX};
	int ret;

	if (!kind || !role || !cnt || !eff)
		return -ENOMEM;
	ret = resolve_moves(r, &t);
	if (ret < 0)
		return ret;
	classify_slots(r, &t);
	/* Everything up to here only reads: a region it refuses is left untouched. */
	ret = check_tag_counts(r, eff, kind, cnt, t.damaged_cnt);
	if (ret < 0)
		return ret;
	ret = recover_extents(r, &t);
	if (ret < 0)
		return ret;
	mark_bad_blocks(r, &t, bbs, n_bbs);
	/* The records first: no slot goes FREE while a COMMITTED record may name it. */
	if (t.recs_stored)
		pstore_drain(r->mps);
	recover_slots(r, &t);
	if (t.slots_stored)
		pstore_drain(r->mps);
	recover_markers(r, &t);
	/* Every DIRTY record is durable now: work for the zeroer. */
	for (uint64_t i = 0; i < r->extent_count; i++)
		if (r->vstate[i] == EXT_DIRTY)
			region_index_make_ready(r, i);
	report(r, &t);
	return 0;
}
