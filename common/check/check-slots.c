/* SPDX-License-Identifier: MIT */
/*
 * The tag table: each slot classified (media_slot_classify), duplicates,
 * and each slot against the COMMITTED records that name it
 * (media_named_slot, media_missing_extents), as the daemon decides.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-internal.h"

void check_slots_load(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;

	memcpy(c->slots, c->base + h->tag_table_off, h->tag_count * sizeof(*c->slots));
}

/*
 * MOVE batches in flight (media_moves_resolve), as recovery finishes
 * them: not damage in a crash image, only a bad link is.
 */
void check_slots_moves(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	struct media_moves mv;
	int ret;

	ret = media_moves_resolve(c->slots, (uint32_t)h->tag_count, c->base + h->extent_table_off,
				  h->extent_count, c->cnt, c->role, &mv);
	if (ret < 0) {
		c->err = ret;
		return;
	}
	for (uint32_t id = 1; id <= h->tag_count; id++) {
		struct layout_link l;

		layout_tag_link(&c->slots[id - 1], &l);
		if ((c->role[id] & MOVE_ROLE_FWD_REC) && c->cnt[id] == 1)
			c->first[id] = l.arg;
	}
	if (mv.bad)
		check_report_problem(c,
				     "%" PRIu64 " MOVE member slots (first: slot %u) of a decided "
				     "batch have a bad link; the daemon takes them as damaged",
				     mv.bad, mv.first_bad);
	if (!mv.markers)
		return;
	/* A batch kept for its damaged members is counted with them (above). */
	if (c->flags & CHECK_RECOVERED) {
		if (mv.markers > mv.held)
			check_report_problem(c,
					     "%" PRIu64
					     " MOVE batches in flight in a recovered image",
					     mv.markers - mv.held);
	} else
		check_report_note(c,
				  "%" PRIu64 " MOVE batches in flight: %" PRIu64
				  " decided, recovery rolls %" PRIu64 " moves forward (%" PRIu64
				  " emptied tags removed) and %" PRIu64 " back",
				  mv.markers, mv.decided, mv.forward, mv.emptied, mv.back);
}

void check_slots_classify(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	for (uint32_t id = 1; id <= h->tag_count; id++) {
		const struct layout_tag *t = &c->slots[id - 1];
		uint64_t off = h->tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE;
		enum media_slot_damage why;

		c->kind[id] = (uint8_t)media_moves_kind(media_slot_classify(t, &why), c->role[id]);
		/* A marker is never a tag: reported with its batch (check_slots_moves). */
		if (c->kind[id] == SLOT_FREE || (c->role[id] & MOVE_ROLE_MARKER))
			continue;
		switch (why) {
		case SLOT_UNDAMAGED:
			break;
		case SLOT_BAD_SUM:
			check_report_problem(
			    c,
			    "tag slot %u (offset %" PRIu64 ", '%s', uid %u): VALID but "
			    "its checksum is wrong (stored 0x%08x, computed 0x%08x)",
			    id, off, check_report_safe_name(t->name, nm), t->uid, t->checksum,
			    layout_tag_checksum(t));
			break;
		case SLOT_NAME_NO_NUL:
			check_report_problem(c,
					     "tag slot %u (offset %" PRIu64
					     "): VALID but its name is not "
					     "NUL-terminated",
					     id, off);
			break;
		case SLOT_NAME_INVALID:
			check_report_problem(c,
					     "tag slot %u (offset %" PRIu64
					     ", '%s', uid %u): VALID but "
					     "its name is invalid",
					     id, off, check_report_safe_name(t->name, nm), t->uid);
			break;
		case SLOT_BAD_STATE:
			check_report_problem(
			    c, "tag slot %u (offset %" PRIu64 "): unknown state word 0x%016" PRIx64,
			    id, off, t->state);
			break;
		}
		check_report_add_tag(c, id, t);
	}
}

static int cmp_tag_owner(const void *a, const void *b, void *arg)
{
	const struct layout_tag *slots = arg;
	const struct layout_tag *x = &slots[*(const uint32_t *)a - 1];
	const struct layout_tag *y = &slots[*(const uint32_t *)b - 1];
	int r;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	r = strcmp(x->name, y->name);
	if (r)
		return r;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Two intact VALID slots with the same (name, uid): recovery hides the second. */
void check_slots_duplicates(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	_cleanup_free_ uint32_t *ids = malloc(MAX(h->tag_count, (uint64_t)1) * sizeof(*ids));
	size_t n = 0;
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	if (!ids) {
		c->err = -ENOMEM;
		return;
	}
	/*
	 * A VALID slot no record names is freed by recovery before the
	 * duplicate rule runs (a source a decided MOVE emptied, whose name a
	 * MOVE of the same pass gave a new tag): no duplicate to the daemon.
	 */
	for (uint32_t id = 1; id <= h->tag_count; id++)
		if (c->kind[id] == SLOT_VALID && c->cnt[id] > 0)
			ids[n++] = id;
	qsort_r(ids, n, sizeof(*ids), cmp_tag_owner, c->slots);
	for (size_t k = 1; k < n; k++) {
		const struct layout_tag *a = &c->slots[ids[k - 1] - 1], *b = &c->slots[ids[k] - 1];

		if (a->uid == b->uid && strcmp(a->name, b->name) == 0)
			check_report_problem(
			    c,
			    "tag '%s' of uid %u is in slots %u and %u; the daemon hides slot %u "
			    "and quarantines its extents",
			    check_report_safe_name(b->name, nm), b->uid, ids[k - 1], ids[k],
			    ids[k]);
	}
}

/*
 * The named-slot rule (media_named_slot): a WRITTEN or FREEING slot named
 * by COMMITTED records with a body that is not intact or names fewer
 * extents is damage, as the daemon sees it; a FREE slot named is orphaned
 * (reported by check_slots_use).
 */
void check_slots_named(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	for (uint32_t id = 1; id <= h->tag_count; id++) {
		const struct layout_tag *t = &c->slots[id - 1];
		enum media_slot_kind was = c->kind[id], now = media_named_slot(t, was, c->cnt[id]);

		c->kind[id] = (uint8_t)now;
		if (now != SLOT_DAMAGED || was == SLOT_DAMAGED)
			continue;
		check_report_problem(
		    c,
		    "tag slot %u (offset %" PRIu64 ", '%s', uid %u): %s with %" PRIu64
		    " COMMITTED extents (first: extent %" PRIu64 "), but %s; the daemon "
		    "quarantines them",
		    id, h->tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE,
		    check_report_safe_name(t->name, nm), t->uid,
		    was == SLOT_WRITTEN ? "WRITTEN (a half-made commit)"
					: "FREEING (a half-done free)",
		    c->cnt[id], c->first[id],
		    media_slot_sum_ok(t) ? "it was committed with fewer extents"
					 : "its checksum is wrong");
	}
}

/* Committed extents missing from the table (media_missing_extents), as the daemon decides. */
void check_slots_missing(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	struct media_missing m;

	media_missing_extents(c->slots, (uint32_t)h->tag_count, c->kind, c->cnt,
			      c->rep->invalid_records, &m);
	if (m.verdict == MISSING_NONE)
		return;
	c->hold = true;
	if (m.verdict == MISSING_HOLD)
		check_report_problem(
		    c,
		    "%" PRIu64 " committed extents are missing and only the %" PRIu64
		    " COMMITTED records under WRITTEN or FREEING slots can account for them: "
		    "the daemon quarantines those instead of releasing them",
		    m.deficit, m.held);
	else
		check_report_refuse(
		    c, REFUSE_MISSING,
		    "%" PRIu64 " committed extents are missing from the extent table and no "
		    "damaged record accounts for them (a zeroed block of the table?): they "
		    "would look free and be zeroed",
		    m.deficit);
}

static void use_valid(struct checker *c, uint32_t id, uint64_t cnt, uint64_t first)
{
	const struct layout_tag *t = &c->slots[id - 1];
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	c->rep->valid_tags++;
	if (cnt == 0 && (c->role[id] & MOVE_ROLE_SOURCE) && !(c->flags & CHECK_RECOVERED))
		check_report_note(c,
				  "tag '%s' (uid %u, slot %u) is emptied by a decided MOVE; "
				  "recovery removes it",
				  check_report_safe_name(t->name, nm), t->uid, id);
	else if (cnt == 0)
		check_report_problem(c,
				     "tag '%s' (uid %u, slot %u) is VALID but no extent record "
				     "names it (committed with %" PRIu64 " extents)",
				     check_report_safe_name(t->name, nm), t->uid, id, t->n_extents);
	else if (cnt != t->n_extents)
		check_report_problem(
		    c,
		    "tag '%s' (uid %u, slot %u) was committed with %" PRIu64 " extents but %" PRIu64
		    " records name it (first: extent %" PRIu64 ")",
		    check_report_safe_name(t->name, nm), t->uid, id, t->n_extents, cnt, first);
}

static void use_written(struct checker *c, uint32_t id, uint64_t cnt, uint64_t first)
{
	bool recovered = c->flags & CHECK_RECOVERED;

	if (c->hold && cnt && !recovered)
		check_report_problem(c,
				     "tag slot %u: half-made commit (WRITTEN) with %" PRIu64
				     " COMMITTED extents (first: extent %" PRIu64
				     "); held back, not rolled back, while extents are missing",
				     id, cnt, first);
	else if (recovered)
		check_report_problem(c,
				     "tag slot %u is WRITTEN (a half-made commit) in a recovered "
				     "image; %" PRIu64 " COMMITTED extents name it",
				     id, cnt);
	else {
		c->rep->rollback_extents += cnt;
		check_report_note(c,
				  "tag slot %u: half-made commit (WRITTEN); recovery rolls back "
				  "its "
				  "%" PRIu64 " extents and frees the slot",
				  id, cnt);
	}
}

static void use_freeing(struct checker *c, uint32_t id, uint64_t cnt, uint64_t first)
{
	bool recovered = c->flags & CHECK_RECOVERED;

	if (c->hold && cnt && !recovered)
		check_report_problem(c,
				     "tag slot %u: half-done free (FREEING) with %" PRIu64
				     " COMMITTED extents (first: extent %" PRIu64
				     "); held back, not released, while extents are missing",
				     id, cnt, first);
	else if (recovered)
		check_report_problem(c,
				     "tag slot %u is FREEING (a half-done free) in a recovered "
				     "image; %" PRIu64 " COMMITTED extents name it",
				     id, cnt);
	else {
		c->rep->release_extents += cnt;
		check_report_note(c,
				  "tag slot %u: half-done free (FREEING); recovery releases its "
				  "%" PRIu64 " remaining extents and frees the slot",
				  id, cnt);
	}
}

/* Each slot against the records that name it. */
void check_slots_use(struct checker *c)
{
	struct check_report *rep = c->rep;
	const struct layout_header *h = &rep->hdr;
	size_t k = 0;

	for (uint32_t id = 1; id <= h->tag_count; id++) {
		const struct layout_tag *t = &c->slots[id - 1];
		uint64_t cnt = c->cnt[id], first = c->first[id];

		if (c->kind[id] != SLOT_FREE && c->kind[id] != SLOT_ORPHANED) {
			/* rep->tags holds the non-FREE slots in id order */
			while (k < rep->n_tags && rep->tags[k].id < id)
				k++;
			if (k < rep->n_tags && rep->tags[k].id == id)
				rep->tags[k].n_extents = cnt;
		}
		if (c->role[id] & MOVE_ROLE_MARKER)
			continue; /* its batch is reported by check_slots_moves */
		switch ((enum media_slot_kind)c->kind[id]) {
		case SLOT_VALID:
			use_valid(c, id, cnt, first);
			break;
		case SLOT_WRITTEN:
			use_written(c, id, cnt, first);
			break;
		case SLOT_FREEING:
			use_freeing(c, id, cnt, first);
			break;
		case SLOT_FREE:
			break;
		case SLOT_ORPHANED:
			/* No crash leaves this: the daemon quarantines them (never zeroed). */
			check_report_problem(
			    c,
			    "%" PRIu64 " COMMITTED extents (first: extent %" PRIu64
			    ") name tag slot %u, which is %s: media damage (no crash "
			    "leaves that); the daemon quarantines them",
			    cnt, first, id,
			    media_slot_blank(t) ? "blank (a zeroed block of the tag table?)"
						: "FREE");
			break;
		case SLOT_HELD: /* not set here: c->hold marks WRITTEN / FREEING records held */
		case SLOT_DAMAGED:
			if (cnt)
				check_report_problem(c,
						     "%" PRIu64
						     " COMMITTED extents (first: extent %" PRIu64
						     ") belong to damaged tag slot %u; the daemon "
						     "quarantines them",
						     cnt, first, id);
			break;
		}
	}
}
