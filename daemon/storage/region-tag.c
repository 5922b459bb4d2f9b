/* SPDX-License-Identifier: MIT */
/*
 * Tags: LEASED -> COMMITTED under a named slot, and back to DIRTY.  Each
 * step is ordered by the drains of the group commit (region_sync) so that
 * every state a crash can leave is one recovery resolves, and none of them
 * looks like damage (nor damage like one of them):
 *
 *   commit  (region_commit):   [data flushed], slot body, slot WRITTEN,
 *                              flushed; the records stay LEASED on media
 *           -- drain 1 --       the body is durable before any record names it
 *           phase 1 (sync):    records COMMITTED(id), flushed
 *           -- drain 2 --
 *           phase 2 (sync):    slot VALID, flushed
 *           -- drain 3 --       the commit is durable; the reply goes out
 *   free    (region_tag_free): slot FREEING (body kept), flushed
 *           -- drain 1 --       the tag is gone for good
 *           phase 1 (sync):    records DIRTY, flushed
 *           -- drain 2 --       the extents go to the zeroer
 *           phase 2 (sync):    slot FREE, flushed; durable with the next
 *                              drain (drain 3 when the pass has commits)
 *
 * All commits and frees of one loop iteration share these drains: 1 drain
 * when the iteration has neither, 2 with frees only, 3 with commits.
 *
 * So a COMMITTED record is only ever found under a WRITTEN slot with a
 * valid body (a commit to roll back), a VALID slot, or a FREEING slot with
 * a valid body (a free to complete); under a FREE slot it is damage (a
 * wiped tag table), which recovery quarantines (region-recovery.c).
 *
 * A freed slot goes back to the free list after its iteration's
 * region_sync, possibly before its FREE store is durable.  Reusing it then
 * is safe: its records are durably DIRTY, and the next commit's records
 * are stored only after that commit's body and WRITTEN are durable.  A tag
 * committed and freed in the same iteration never has COMMITTED records on
 * media: its records go from LEASED to DIRTY.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "region-internal.h"
#include "vector.h"

/* ---- (name, uid) -> id, on common/hashtab ---- */

/* FNV-1a over the name, the uid mixed in: the table keeps colliding keys apart. */
static uint64_t tag_key(const char *name, uid_t uid)
{
	uint64_t h = 14695981039346656037ull;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h ^ ((uint64_t)uid * 0x9e3779b97f4a7c15ull);
}

void region_tag_hash_insert(struct region *r, uint32_t id)
{
	struct vtag *t = &r->tags[id];

	htab_insert(&r->tag_index, &t->hnode, tag_key(t->name, t->uid));
}

void region_tag_hash_remove(struct region *r, uint32_t id)
{
	(void)htab_remove(&r->tag_index, &r->tags[id].hnode);
}

uint32_t region_tag_hash_find(const struct region *r, const char *name, uid_t uid)
{
	for (struct htab_node *n = htab_find(&r->tag_index, tag_key(name, uid)); n;
	     n = htab_find_next(n)) {
		const struct vtag *t = htab_entry(n, struct vtag, hnode);

		if (t->uid == uid && strcmp(t->name, name) == 0)
			return (uint32_t)(t - r->tags);
	}
	return 0;
}

static bool visible(const struct vtag *t)
{
	return t->state == VT_VALID || t->state == VT_COMMITTING;
}

/* ---- setup ---- */

int region_tags_init(struct region *r)
{
	r->tags = calloc((size_t)r->tag_count + 1, sizeof(*r->tags));
	r->free_ids = calloc(r->tag_count ? r->tag_count : 1, sizeof(*r->free_ids));
	/*
	 * A bucket for every slot and one more: the index never grows, so an
	 * insert in the middle of a commit or a MOVE never allocates.
	 */
	if (!r->tags || !r->free_ids || htab_init(&r->tag_index, (size_t)r->tag_count + 1) < 0)
		return -ENOMEM;
	r->n_free_ids = 0;
	r->n_tags = 0;
	return 0;
}

void region_tags_free(struct region *r)
{
	if (r->tags)
		for (uint32_t id = 1; id <= r->tag_count; id++)
			free(r->tags[id].runs);
	free(r->tags);
	free(r->free_ids);
	htab_free(&r->tag_index);
	free(r->pend_commit.v);
	free(r->pend_free.v);
	r->tags = NULL;
	r->free_ids = NULL;
	r->pend_commit = (struct idvec){0};
	r->pend_free = (struct idvec){0};
}

int region_tag_add_extent(struct vtag *t, uint64_t i)
{
	if (t->n_runs && t->runs[t->n_runs - 1].first + t->runs[t->n_runs - 1].count == i) {
		t->runs[t->n_runs - 1].count++;
	} else {
		int r = PMEMZ_GROW(t->runs, &t->cap_runs, t->n_runs + 1);

		if (r < 0)
			return r;
		t->runs[t->n_runs++] = (struct run){i, 1};
	}
	t->n_extents++;
	return 0;
}

int region_tag_install(struct region *r, uint32_t id, uid_t uid, const char *name)
{
	struct vtag *t = &r->tags[id];

	if (layout_tag_name_valid(name) < 0)
		return -EINVAL;
	t->state = VT_VALID;
	t->uid = uid;
	strcpy(t->name, name);
	region_tag_hash_insert(r, id);
	r->n_tags++;
	return 0;
}

/* ---- queries ---- */

uint32_t region_tag_next(const struct region *r, uint32_t after)
{
	for (uint64_t id = (uint64_t)after + 1; id <= r->tag_count; id++)
		if (visible(&r->tags[id]))
			return (uint32_t)id;
	return 0;
}

int region_tag_get(const struct region *r, uint32_t id, const char **name, uid_t *uid)
{
	if (id == 0 || id > r->tag_count || !visible(&r->tags[id]))
		return -ENOENT;
	if (name)
		*name = r->tags[id].name;
	if (uid)
		*uid = r->tags[id].uid;
	return 0;
}

int region_tag_lookup(const struct region *r, const char *name, uid_t uid, uint32_t *id)
{
	uint32_t found;
	int ret = layout_tag_name_valid(name);

	if (ret < 0)
		return ret;
	found = region_tag_hash_find(r, name, uid);
	if (!found)
		return -ENOENT;
	*id = found;
	return 0;
}

int region_tag_runs(const struct region *r, uint32_t id, struct run **runs, size_t *n_runs,
		    uint64_t *n_extents)
{
	const struct vtag *t;
	struct run *v;

	if (id == 0 || id > r->tag_count || !visible(&r->tags[id]))
		return -ENOENT;
	t = &r->tags[id];
	v = malloc(MAX(t->n_runs, (size_t)1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, t->runs, t->n_runs * sizeof(*v));
	*runs = v;
	*n_runs = t->n_runs;
	if (n_extents)
		*n_extents = t->n_extents;
	return 0;
}

/* ---- commit ---- */

/* A sorted, merged copy of runs, every extent LEASED; *n: how many extents. */
static int leased_runs(const struct region *r, const struct run *runs, size_t *n_runs,
		       struct run **out, uint64_t *n)
{
	_cleanup_free_ struct run *v = NULL;
	int ret;

	if (*n_runs == 0 || !runs)
		return -EINVAL;
	v = malloc(*n_runs * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, runs, *n_runs * sizeof(*v));
	ret = region_index_normalize_runs(r, v, n_runs);
	if (ret < 0)
		return ret;
	*n = 0;
	for (size_t k = 0; k < *n_runs; k++)
		for (uint64_t i = v[k].first; i < v[k].first + v[k].count; i++) {
			if (r->vstate[i] != EXT_LEASED)
				return -EINVAL;
			(*n)++;
		}
	*out = TAKE_PTR(v);
	return 0;
}

/* The slot's body, then WRITTEN: a half-made commit until its records and VALID follow. */
void region_tag_store_written(struct region *r, uint32_t id, const char *tag, uid_t uid, uint64_t n,
			      const struct layout_link *link)
{
	struct layout_tag *slot = &r->slots[id - 1];
	struct layout_tag body;

	memset(&body, 0, sizeof(body));
	body.uid = (uint32_t)uid;
	body.ctime = (uint64_t)time(NULL);
	body.n_extents = n;
	strcpy(body.name, tag);
	if (link)
		layout_tag_set_link(&body, link);
	body.checksum = layout_tag_checksum(&body);
	pstore_memcpy(r->mps, (uint8_t *)slot + sizeof(slot->state),
		      (const uint8_t *)&body + sizeof(body.state),
		      sizeof(body) - sizeof(body.state));
	pstore_store64(r->mps, &slot->state, TAG_WRITTEN);
	pstore_flush(r->mps, &slot->state, sizeof(slot->state));
}

int region_commit(struct region *r, const struct run *runs, size_t n_runs, const char *tag,
		  uid_t uid, bool flush_data)
{
	_cleanup_free_ struct run *v = NULL;
	struct vtag *t;
	uint64_t n = 0;
	uint32_t id;
	int ret;

	ret = layout_tag_name_new_valid(tag);
	if (ret < 0)
		return ret;
	ret = leased_runs(r, runs, &n_runs, &v, &n);
	if (ret < 0)
		return ret;
	if (region_tag_hash_find(r, tag, uid))
		return -EEXIST;
	if (r->n_free_ids == 0)
		return -ENOSPC;
	/* Room in pend_commit now: nothing may fail after the stores. */
	ret = region_index_idvec_push(&r->pend_commit, 0);
	if (ret < 0)
		return ret;
	r->pend_commit.n--;
	id = r->free_ids[--r->n_free_ids];
	t = &r->tags[id];
	assert(t->state == VT_FREE);

	/* The data first: durable at the first drain, before any record is COMMITTED. */
	if (flush_data)
		for (size_t k = 0; k < n_runs; k++)
			pstore_flush(r->ps, region_extent_addr(r, v[k].first),
				     v[k].count * r->extent_size);
	region_tag_store_written(r, id, tag, uid, n, NULL);

	/* The records go COMMITTED in region_sync, once the body is durable. */
	for (size_t k = 0; k < n_runs; k++)
		for (uint64_t i = v[k].first; i < v[k].first + v[k].count; i++)
			region_index_set(r, i, EXT_COMMITTED);

	t->state = VT_COMMITTING;
	t->uid = uid;
	strcpy(t->name, tag);
	t->runs = TAKE_PTR(v);
	t->n_runs = t->cap_runs = n_runs;
	t->n_extents = n;
	region_tag_hash_insert(r, id);
	r->n_tags++;
	r->pend_commit.v[r->pend_commit.n++] = id;
	r->pending = true;
	return 0;
}

/* ---- free ---- */

uint64_t region_tag_extents(const struct region *r, uint32_t id)
{
	if (id == 0 || id > r->tag_count || !visible(&r->tags[id]))
		return 0;
	return r->tags[id].n_extents;
}

int region_tag_free(struct region *r, uint32_t id, uint64_t *n_extents)
{
	struct vtag *t;
	struct layout_tag *slot;
	int ret;

	if (id == 0 || id > r->tag_count || !visible(&r->tags[id]))
		return -ENOENT;
	t = &r->tags[id];
	slot = &r->slots[id - 1];
	/*
	 * A tag that a MOVE of this iteration creates or takes from: freeing it
	 * now would let a crash complete the free and roll the move back.
	 */
	if (t->move_busy)
		return -EBUSY;
	ret = region_index_idvec_push(&r->pend_free, id);
	if (ret < 0)
		return ret;

	/* The body stays: a crash before the records are DIRTY completes the free. */
	pstore_store64(r->mps, &slot->state, TAG_FREEING);
	pstore_flush(r->mps, &slot->state, sizeof(slot->state));

	region_tag_hash_remove(r, id);
	r->n_tags--;
	t->state = VT_FREEING;
	for (size_t k = 0; k < t->n_runs; k++) {
		for (uint64_t i = t->runs[k].first; i < t->runs[k].first + t->runs[k].count; i++)
			region_index_set(r, i, EXT_DIRTY);
		region_index_defer_dirty(r, t->runs[k].first, t->runs[k].count);
	}
	if (n_extents)
		*n_extents = t->n_extents;
	r->pending = true;
	return 0;
}

/* ---- region_sync's part ---- */

/* Store state on every record of t's runs, keeping the generations; flushed. */
static void store_runs(struct region *r, const struct vtag *t, unsigned state, uint32_t id)
{
	for (size_t j = 0; j < t->n_runs; j++) {
		const struct run *ru = &t->runs[j];

		for (uint64_t i = ru->first; i < ru->first + ru->count; i++) {
			uint64_t rec = region_index_rec_load(r, i);
			region_index_rec_store(r, i, state, id, layout_rec_gen(rec));
		}
		region_index_rec_flush(r, ru->first, ru->count);
	}
}

bool region_tags_phase1(struct region *r)
{
	bool any = false;

	for (size_t k = 0; k < r->pend_commit.n; k++) {
		uint32_t id = r->pend_commit.v[k];

		if (r->tags[id].state != VT_COMMITTING)
			continue; /* freed in the same iteration: its records go DIRTY below */
		store_runs(r, &r->tags[id], EXT_COMMITTED, id);
		any = true;
	}
	for (size_t k = 0; k < r->pend_free.n; k++) {
		const struct vtag *t = &r->tags[r->pend_free.v[k]];

		if (t->state != VT_FREEING)
			continue;
		store_runs(r, t, EXT_DIRTY, 0);
		any = true;
	}
	return any;
}

bool region_tags_phase2(struct region *r)
{
	bool any = false;

	for (size_t k = 0; k < r->pend_commit.n; k++) {
		uint32_t id = r->pend_commit.v[k];
		struct layout_tag *slot = &r->slots[id - 1];

		if (r->tags[id].state != VT_COMMITTING)
			continue; /* freed in the same iteration */
		pstore_store64(r->mps, &slot->state, TAG_VALID);
		pstore_flush(r->mps, &slot->state, sizeof(slot->state));
		r->tags[id].state = VT_VALID;
		any = true;
	}
	r->pend_commit.n = 0;

	/* Its records are durably DIRTY: FREE needs no drain of its own. */
	for (size_t k = 0; k < r->pend_free.n; k++) {
		uint32_t id = r->pend_free.v[k];
		struct layout_tag *slot = &r->slots[id - 1];

		if (r->tags[id].state != VT_FREEING)
			continue;
		pstore_store64(r->mps, &slot->state, TAG_FREE);
		pstore_flush(r->mps, &slot->state, sizeof(slot->state));
	}
	return any;
}

void region_tags_synced(struct region *r)
{
	for (size_t k = 0; k < r->pend_free.n; k++) {
		uint32_t id = r->pend_free.v[k];
		struct vtag *t = &r->tags[id];

		if (t->state != VT_FREEING)
			continue;
		free(t->runs);
		memset(t, 0, sizeof(*t));
		t->state = VT_FREE;
		r->free_ids[r->n_free_ids++] = id;
	}
	r->pend_free.n = 0;
}
