/* SPDX-License-Identifier: MIT */
/*
 * MOVE: extents of committed tags, each to a new tag of the same uid, all
 * or nothing across a crash (docs/on-media-format.md, "Move").  One batch
 * per request: a marker slot B and one member slot C_i per move, whose
 * reserved bytes link them (struct layout_link: B, the source P_i, a
 * nonce, the extent e_i).  The steps ride the group commit's drains:
 *
 *   request (region_move): B's body + WRITTEN, each C_i's body + WRITTEN,
 *                          flushed; the records still name P_i
 *   -- drain 1 --          the bodies are durable before the decision
 *   phase 1:               B VALID: THE decision, one 8-byte store
 *   -- drain 2 --          recovery rolls the batch forward from here on
 *   phase 2:               records e_i COMMITTED(C_i), C_i VALID, P_i FREE
 *                          when emptied, else its count (body) rewritten
 *   -- drain 3 --          the moves are durable; the reply goes out
 *   synced:                B FREE, durable at the next drain; B is reused
 *                          only after it (region_moves_release)
 *
 * Why B waits: reused before its FREE is durable, a new body with a new
 * nonce could be durable under the old VALID word, deciding a batch whose
 * members are half written.  An emptied P_i is reused at once: its FREE
 * is durable (drain 3) and its records name C_i, so an old VALID B (same
 * nonce) only finds its members done.  The nonce keeps an old VALID member
 * from being taken for a member of a later batch in a reused slot B.
 *
 * The volatile index moves at once (e_i joins C_i, visible like a
 * committing tag); its states do not change, so the counts (I3) stay.  A
 * tag that takes part is busy until the pass ends: FREE and MOVE from it
 * get -EBUSY, so a crash cannot complete a later free and roll back the
 * move it followed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "log.h"
#include "region-internal.h"
#include "vector.h"

void region_moves_free(struct region *r)
{
	free(r->pend_moves);
	free(r->pend_markers.v);
	free(r->pend_sources.v);
	free(r->markers_done.v);
	r->pend_moves = NULL;
	r->n_pend_moves = r->cap_pend_moves = 0;
	r->pend_markers = r->pend_sources = r->markers_done = (struct idvec){0};
}

/* Is extent e one of t's? (runs sorted, merged) */
static bool tag_has(const struct vtag *t, uint64_t e)
{
	size_t lo = 0, hi = t->n_runs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (e < t->runs[mid].first)
			hi = mid;
		else if (e >= t->runs[mid].first + t->runs[mid].count)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* Is a tag (name, uid) being freed in this iteration? */
static bool freeing_now(const struct region *r, const char *name, uid_t uid)
{
	for (size_t k = 0; k < r->pend_free.n; k++) {
		const struct vtag *t = &r->tags[r->pend_free.v[k]];

		if (t->state == VT_FREEING && t->uid == uid && strcmp(t->name, name) == 0)
			return true;
	}
	return false;
}

/* One move on its own: names, extent, from_tag, to_tag; *from gets from_tag's id. */
static int check_one(const struct region *r, const struct region_move *m, uid_t uid,
		     uint32_t *from)
{
	const struct vtag *t;

	if (!m->from_tag || !m->to_tag || layout_tag_name_valid(m->from_tag) < 0 ||
	    layout_tag_name_new_valid(m->to_tag) < 0 || m->extent >= r->extent_count)
		return -EINVAL;
	*from = region_tag_hash_find(r, m->from_tag, uid);
	if (!*from)
		return freeing_now(r, m->from_tag, uid) ? -EBUSY : -ENOENT;
	t = &r->tags[*from];
	/* Committed, or made by a MOVE, in this iteration: its records are not there yet. */
	if (t->state != VT_VALID || t->move_src)
		return -EBUSY;
	if (region_tag_hash_find(r, m->to_tag, uid))
		return -EEXIST;
	if (r->vstate[m->extent] != EXT_COMMITTED || !tag_has(t, m->extent))
		return -EINVAL;
	return 0;
}

static int by_to_tag(const void *a, const void *b, void *arg)
{
	const struct region_move *mv = arg;
	uint16_t i = *(const uint16_t *)a, j = *(const uint16_t *)b;
	int c = strcmp(mv[i].to_tag, mv[j].to_tag);

	return c ? c : i - j;
}

static int by_extent(const void *a, const void *b, void *arg)
{
	const struct region_move *mv = arg;
	uint16_t i = *(const uint16_t *)a, j = *(const uint16_t *)b;

	return mv[i].extent < mv[j].extent ? -1 : mv[i].extent > mv[j].extent ? 1 : i - j;
}

/*
 * A to_tag or an extent named twice: the later of the pair in *bad.
 * Sorted (n log n), not compared by pairs: 256 moves were 32 640 strcmp,
 * 15% of the daemon's time under the nbdkit disk's fresh writes.
 */
static int repeated(const struct region_move *mv, size_t n, size_t *bad)
{
	int (*const cmp[2])(const void *, const void *, void *) = {by_to_tag, by_extent};
	uint16_t ix[LAYOUT_MOVE_MAX];

	for (int c = 0; c < 2; c++) {
		for (size_t k = 0; k < n; k++)
			ix[k] = (uint16_t)k;
		qsort_r(ix, n, sizeof(ix[0]), cmp[c], (void *)(uintptr_t)mv);
		for (size_t k = 1; k < n; k++) {
			const struct region_move *x = &mv[ix[k - 1]], *y = &mv[ix[k]];

			if (c == 0 ? strcmp(x->to_tag, y->to_tag) == 0 : x->extent == y->extent) {
				*bad = ix[k] > ix[k - 1] ? ix[k] : ix[k - 1];
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* The whole request, read only: 0 or the error of move *bad. */
static int check_moves(const struct region *r, const struct region_move *mv, size_t n, uid_t uid,
		       uint32_t *from, size_t *bad)
{
	int ret;

	*bad = n;
	if (n == 0 || n > LAYOUT_MOVE_MAX)
		return -EINVAL;
	for (size_t k = 0; k < n; k++) {
		*bad = k;
		ret = check_one(r, &mv[k], uid, &from[k]);
		if (ret < 0)
			return ret;
	}
	ret = repeated(mv, n, bad);
	if (ret < 0)
		return ret;
	*bad = n;
	return r->n_free_ids >= n + 1 ? 0 : -ENOSPC;
}

/* Room for k more ids in v. */
static int idvec_room(struct idvec *v, size_t k)
{
	size_t need;
	int ret = pmemz_add_size(v->n, k, &need);

	return ret < 0 ? ret : PMEMZ_GROW(v->v, &v->cap, need);
}

/* Room for everything the stores need, so that nothing fails after the first one. */
static int reserve(struct region *r, const uint32_t *from, size_t n, struct run **runs)
{
	int ret = PMEMZ_GROW(r->pend_moves, &r->cap_pend_moves, r->n_pend_moves + n);

	if (ret < 0)
		return ret;
	/* Sources: n at most; markers: this one, and every marker of the pass done. */
	ret = idvec_room(&r->pend_sources, n);
	if (ret == 0)
		ret = idvec_room(&r->pend_markers, 1);
	if (ret == 0)
		ret = idvec_room(&r->markers_done, r->pend_markers.n + 1);
	if (ret < 0)
		return ret;
	for (size_t k = 0; k < n; k++) {
		struct vtag *t = &r->tags[from[k]];

		/*
		 * Taking an extent out of a run may split it: one more run per
		 * move, but never more runs than extents.  Without that bound a
		 * MOVE of 256 one-extent tags grew each to 257 runs: 1 MiB of
		 * realloc per request, half the daemon's time under the nbd
		 * disk's fresh writes.
		 */
		size_t most = t->n_runs + n;

		ret = PMEMZ_GROW(t->runs, &t->cap_runs, most < t->n_extents ? most : t->n_extents);
		if (ret < 0)
			return ret;
		runs[k] = malloc(sizeof(**runs));
		if (!runs[k])
			return -ENOMEM;
	}
	return 0;
}

/* Extent e out of t's runs (it is one of them; room for a split is reserved). */
static void tag_take(struct vtag *t, uint64_t e)
{
	for (size_t k = 0; k < t->n_runs; k++) {
		struct run *ru = &t->runs[k];
		uint64_t end = ru->first + ru->count;

		if (e < ru->first || e >= end)
			continue;
		if (ru->count == 1) {
			memmove(ru, ru + 1, (t->n_runs - k - 1) * sizeof(*ru));
			t->n_runs--;
		} else if (e == ru->first) {
			ru->first++;
			ru->count--;
		} else if (e == end - 1) {
			ru->count--;
		} else {
			memmove(ru + 2, ru + 1, (t->n_runs - k - 1) * sizeof(*ru));
			ru->count = e - ru->first;
			ru[1] = (struct run){e + 1, end - e - 1};
			t->n_runs++;
		}
		t->n_extents--;
		return;
	}
}

static uint64_t next_nonce(struct region *r)
{
	if (r->move_nonce == 0 &&
	    getrandom(&r->move_nonce, sizeof(r->move_nonce), GRND_NONBLOCK) !=
		(ssize_t)sizeof(r->move_nonce))
		r->move_nonce = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15u;
	return ++r->move_nonce ? r->move_nonce : ++r->move_nonce;
}

/* The stores and the index, once everything is checked and reserved. */
static void apply_moves(struct region *r, const struct region_move *mv, size_t n, uid_t uid,
			const uint32_t *from, struct run **runs, uint32_t *new_ids)
{
	struct layout_link link = {.kind = LINK_MARKER, .nonce = next_nonce(r), .arg = n};
	uint32_t b = r->free_ids[--r->n_free_ids];

	/* The marker: never a tag (empty name, uid 0), never visible. */
	region_tag_store_written(r, b, "", 0, 0, &link);
	r->tags[b].state = VT_MARKER;
	r->pend_markers.v[r->pend_markers.n++] = b;
	link.kind = LINK_MEMBER;
	link.batch = b;
	for (size_t k = 0; k < n; k++) {
		uint32_t c = r->free_ids[--r->n_free_ids];
		struct vtag *t = &r->tags[c], *p = &r->tags[from[k]];

		link.source = from[k];
		link.arg = mv[k].extent;
		region_tag_store_written(r, c, mv[k].to_tag, uid, 1, &link);
		t->state = VT_COMMITTING;
		t->uid = uid;
		strcpy(t->name, mv[k].to_tag);
		t->runs = runs[k];
		t->runs[0] = (struct run){mv[k].extent, 1};
		t->n_runs = t->cap_runs = 1;
		t->n_extents = 1;
		t->move_src = from[k];
		t->move_busy = true;
		region_tag_hash_insert(r, c);
		r->n_tags++;
		new_ids[k] = c;

		tag_take(p, mv[k].extent);
		if (!p->move_busy) {
			p->move_busy = true;
			r->pend_sources.v[r->pend_sources.n++] = from[k];
		}
		if (p->n_extents == 0) { /* removed: its slot goes FREE in phase 2 */
			region_tag_hash_remove(r, from[k]);
			r->n_tags--;
			p->state = VT_FREEING;
		}
		r->pend_moves[r->n_pend_moves++] = (struct pend_move){mv[k].extent, c, from[k]};
	}
	r->pending = true;
}

int region_move(struct region *r, const struct region_move *mv, size_t n, uid_t uid,
		uint32_t *new_ids, size_t *bad)
{
	_cleanup_free_ uint32_t *from = NULL;
	_cleanup_free_ struct run **runs = NULL;
	size_t dummy;
	int ret;

	if (!bad)
		bad = &dummy;
	*bad = n;
	if (n == 0 || n > LAYOUT_MOVE_MAX)
		return -EINVAL;
	from = calloc(n, sizeof(*from));
	runs = calloc(n, sizeof(*runs));
	if (!from || !runs)
		return -ENOMEM;
	ret = check_moves(r, mv, n, uid, from, bad);
	if (ret == 0)
		ret = reserve(r, from, n, runs);
	if (ret < 0) {
		for (size_t k = 0; k < n; k++)
			free(runs[k]);
		return ret;
	}
	apply_moves(r, mv, n, uid, from, runs, new_ids);
	return 0;
}

/* ---- region_sync's part ---- */

void region_moves_release(struct region *r)
{
	for (size_t k = 0; k < r->markers_done.n; k++) {
		uint32_t b = r->markers_done.v[k];

		memset(&r->tags[b], 0, sizeof(r->tags[b]));
		r->tags[b].state = VT_FREE;
		r->free_ids[r->n_free_ids++] = b;
	}
	r->markers_done.n = 0;
}

static void store_state(struct region *r, uint32_t id, uint64_t state)
{
	struct layout_tag *slot = &r->slots[id - 1];

	pstore_store64(r->mps, &slot->state, state);
	pstore_flush(r->mps, &slot->state, sizeof(slot->state));
}

bool region_moves_phase1(struct region *r)
{
	for (size_t k = 0; k < r->pend_markers.n; k++)
		store_state(r, r->pend_markers.v[k], TAG_VALID);
	return r->pend_markers.n > 0;
}

/* A source that keeps extents: its count and checksum, in its body (state untouched). */
static void store_source_count(struct region *r, uint32_t id)
{
	struct layout_tag *slot = &r->slots[id - 1];
	struct layout_tag body = *slot;

	body.n_extents = r->tags[id].n_extents;
	body.checksum = layout_tag_checksum(&body);
	/* Torn, it is recounted by recovery while the marker is VALID. */
	pstore_memcpy(r->mps, (uint8_t *)slot + sizeof(slot->state),
		      (const uint8_t *)&body + sizeof(body.state), sizeof(body) - sizeof(body.state));
}

bool region_moves_phase2(struct region *r)
{
	for (size_t k = 0; k < r->n_pend_moves; k++) {
		const struct pend_move *m = &r->pend_moves[k];
		uint64_t rec = region_index_rec_load(r, m->e);

		region_index_rec_store(r, m->e, EXT_COMMITTED, m->c, layout_rec_gen(rec));
		region_index_rec_flush(r, m->e, 1);
		store_state(r, m->c, TAG_VALID);
		r->tags[m->c].state = VT_VALID;
		r->tags[m->c].move_src = 0;
		r->tags[m->c].move_busy = false;
	}
	for (size_t k = 0; k < r->pend_sources.n; k++) {
		uint32_t p = r->pend_sources.v[k];

		if (r->tags[p].state == VT_FREEING)
			store_state(r, p, TAG_FREE);
		else
			store_source_count(r, p);
		r->tags[p].move_busy = false;
	}
	return r->n_pend_moves > 0;
}

void region_moves_synced(struct region *r)
{
	for (size_t k = 0; k < r->pend_markers.n; k++) {
		uint32_t b = r->pend_markers.v[k];

		store_state(r, b, TAG_FREE);
		r->markers_done.v[r->markers_done.n++] = b;
	}
	for (size_t k = 0; k < r->pend_sources.n; k++) {
		uint32_t p = r->pend_sources.v[k];
		struct vtag *t = &r->tags[p];

		if (t->state != VT_FREEING)
			continue;
		free(t->runs);
		memset(t, 0, sizeof(*t));
		t->state = VT_FREE;
		r->free_ids[r->n_free_ids++] = p;
	}
	r->pend_markers.n = 0;
	r->pend_sources.n = 0;
	r->n_pend_moves = 0;
}
