/* SPDX-License-Identifier: MIT */
/*
 * The volatile extent index, the bottom of a region: per-extent state and
 * flags, the ZEROED and ready bitmaps, the counts (I3: they add up), the
 * records' loads and stores, the zeroer's batches taken out and given
 * back, and the search for ZEROED runs.  It calls nothing above it.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "region-internal.h"
#include "vector.h"

/* ---- bitmaps ---- */

static inline bool bm_test(const uint64_t *bm, uint64_t i)
{
	return (bm[i >> 6] >> (i & 63)) & 1;
}
static inline void bm_set(uint64_t *bm, uint64_t i)
{
	bm[i >> 6] |= 1ull << (i & 63);
}
static inline void bm_clr(uint64_t *bm, uint64_t i)
{
	bm[i >> 6] &= ~(1ull << (i & 63));
}

/* First set bit at or after from, or nbits. */
static uint64_t bm_next_set(const uint64_t *bm, uint64_t nbits, uint64_t from)
{
	uint64_t w, i = from >> 6;

	if (from >= nbits)
		return nbits;
	w = bm[i] & (~0ull << (from & 63));
	for (;;) {
		if (w)
			return MIN(nbits, (i << 6) + (uint64_t)__builtin_ctzll(w));
		if (++i >= DIV_ROUND_UP(nbits, 64))
			return nbits;
		w = bm[i];
	}
}

/* First clear bit at or after from, or nbits. */
static uint64_t bm_next_clear(const uint64_t *bm, uint64_t nbits, uint64_t from)
{
	uint64_t w, i = from >> 6;

	if (from >= nbits)
		return nbits;
	w = ~bm[i] & (~0ull << (from & 63));
	for (;;) {
		if (w)
			return MIN(nbits, (i << 6) + (uint64_t)__builtin_ctzll(w));
		if (++i >= DIV_ROUND_UP(nbits, 64))
			return nbits;
		w = ~bm[i];
	}
}

/* ---- vectors ---- */

int region_index_runvec_push(struct runvec *v, uint64_t first, uint64_t count)
{
	if (v->n && v->v[v->n - 1].first + v->v[v->n - 1].count == first) {
		v->v[v->n - 1].count += count;
		return 0;
	}
	int r = PMEMZ_GROW(v->v, &v->cap, v->n + 1);

	if (r < 0)
		return r;
	v->v[v->n++] = (struct run){first, count};
	return 0;
}

int region_index_idvec_push(struct idvec *v, uint32_t id)
{
	int r = PMEMZ_GROW(v->v, &v->cap, v->n + 1);

	if (r < 0)
		return r;
	v->v[v->n++] = id;
	return 0;
}

static int run_cmp_first(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

int region_index_normalize_runs(const struct region *r, struct run *runs, size_t *n_runs)
{
	size_t n = *n_runs, out = 0;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (runs[i].count == 0 || runs[i].first >= r->extent_count ||
		    runs[i].count > r->extent_count - runs[i].first)
			return -EINVAL;
	qsort(runs, n, sizeof(*runs), run_cmp_first);
	for (size_t i = 1; i < n; i++) {
		struct run *p = &runs[out];
		if (runs[i].first < p->first + p->count)
			return -EINVAL; /* overlap: an extent named twice */
		if (runs[i].first == p->first + p->count)
			p->count += runs[i].count;
		else
			runs[++out] = runs[i];
	}
	*n_runs = out + 1;
	return 0;
}

/* ---- the index ---- */

int region_index_init(struct region *r)
{
	uint64_t n = r->extent_count;

	r->bm_words = DIV_ROUND_UP(n, 64);
	r->vstate = calloc(n, 1);
	r->vflags = calloc(n, 1);
	r->zeroed_bm = calloc(r->bm_words, sizeof(uint64_t));
	r->ready_bm = calloc(r->bm_words, sizeof(uint64_t));
	if (!r->vstate || !r->vflags || !r->zeroed_bm || !r->ready_bm)
		return -ENOMEM;
	memset(r->count, 0, sizeof(r->count));
	r->count[EXT_DIRTY] = n; /* vstate is all EXT_DIRTY == 0 */
	return 0;
}

void region_index_free(struct region *r)
{
	free(r->vstate);
	free(r->vflags);
	free(r->zeroed_bm);
	free(r->ready_bm);
	free(r->pend_dirty.v);
	r->vstate = r->vflags = NULL;
	r->zeroed_bm = r->ready_bm = NULL;
	r->pend_dirty = (struct runvec){0};
}

void region_index_set(struct region *r, uint64_t i, unsigned state)
{
	unsigned old = r->vstate[i];

	assert(state < EXT_NSTATES);
	r->count[old]--;
	r->count[state]++;
	r->vstate[i] = (uint8_t)state;
	if (old == EXT_ZEROED)
		bm_clr(r->zeroed_bm, i);
	if (state == EXT_ZEROED)
		bm_set(r->zeroed_bm, i);
	if (state != EXT_DIRTY && bm_test(r->ready_bm, i)) {
		bm_clr(r->ready_bm, i);
		r->n_ready--;
	}
}

uint64_t region_index_rec_load(const struct region *r, uint64_t i)
{
	return __atomic_load_n(&r->recs[i], __ATOMIC_RELAXED);
}

void region_index_rec_store(struct region *r, uint64_t i, unsigned state, uint32_t tag,
			    uint32_t gen)
{
	pstore_store64(r->mps, &r->recs[i], layout_rec(state, tag, gen));
}

void region_index_rec_flush(struct region *r, uint64_t first, uint64_t count)
{
	pstore_flush(r->mps, &r->recs[first], count * sizeof(uint64_t));
}

void region_index_make_ready(struct region *r, uint64_t i)
{
	assert(r->vstate[i] == EXT_DIRTY);
	r->vflags[i] &= (uint8_t)~VF_PENDING;
	if (r->vflags[i] & VF_IN_BATCH)
		return;
	if (!bm_test(r->ready_bm, i)) {
		bm_set(r->ready_bm, i);
		r->n_ready++;
	}
}

void region_index_defer_dirty(struct region *r, uint64_t first, uint64_t count)
{
	for (uint64_t i = first; i < first + count; i++)
		r->vflags[i] |= VF_PENDING;
	/* The flags are set either way; without the run list, sync scans for them. */
	if (region_index_runvec_push(&r->pend_dirty, first, count) < 0)
		r->pend_scan = true;
}

uint64_t region_index_ready(const struct region *r)
{
	return r->n_ready;
}

uint64_t region_index_take_batch(struct region *r, uint64_t *ext, uint64_t max)
{
	uint64_t k = 0;

	/* Round robin from the cursor, so no part of the region waits behind another. */
	while (k < max && r->n_ready) {
		uint64_t i = bm_next_set(r->ready_bm, r->extent_count, r->zero_cursor);

		if (i >= r->extent_count) {
			r->zero_cursor = 0;
			continue; /* n_ready > 0: there is one from the start */
		}
		bm_clr(r->ready_bm, i);
		r->n_ready--;
		r->vflags[i] |= VF_IN_BATCH;
		r->n_in_batch++;
		ext[k++] = i;
		r->zero_cursor = i + 1;
	}
	return k;
}

void region_index_return_batch(struct region *r, const uint64_t *ext, uint64_t n, uint64_t done)
{
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = ext[k];

		r->vflags[i] &= (uint8_t)~VF_IN_BATCH;
		r->n_in_batch--;
		if (k >= done)
			region_index_make_ready(r, i); /* not zeroed (stopped): again later */
	}
}

/*
 * Extents whose pending run could not be recorded (out of memory) keep
 * VF_PENDING; find them the slow way.
 */
static void release_pending_scan(struct region *r)
{
	for (uint64_t i = 0; i < r->extent_count; i++)
		if ((r->vflags[i] & VF_PENDING) && r->vstate[i] == EXT_DIRTY)
			region_index_make_ready(r, i);
}

void region_index_release_pending(struct region *r)
{
	for (size_t k = 0; k < r->pend_dirty.n; k++) {
		const struct run *ru = &r->pend_dirty.v[k];
		for (uint64_t i = ru->first; i < ru->first + ru->count; i++)
			if ((r->vflags[i] & VF_PENDING) && r->vstate[i] == EXT_DIRTY)
				region_index_make_ready(r, i);
	}
	r->pend_dirty.n = 0;
	if (r->pend_scan) {
		release_pending_scan(r);
		r->pend_scan = false;
	}
}

uint64_t region_count_free(const struct region *r)
{
	return r->count[EXT_ZEROED] + r->count[EXT_DIRTY];
}

uint64_t region_count_zeroed(const struct region *r)
{
	return r->count[EXT_ZEROED];
}

/* ---- search (lease) ---- */

static int run_cmp_len_desc(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * Choose n ZEROED extents: the first run long enough (first fit, so the
 * cost is bounded by how far it is, not by the whole bitmap), else the
 * longest runs, handed out in address order.
 */
int region_index_find_zeroed(const struct region *r, uint64_t n, struct runvec *out)
{
	_cleanup_free_ struct run *all = NULL;
	size_t n_all = 0, cap = 0;
	uint64_t need = n, i = 0, nbits = r->extent_count;

	for (;;) {
		uint64_t s = bm_next_set(r->zeroed_bm, nbits, i), e;
		if (s >= nbits)
			break;
		e = bm_next_clear(r->zeroed_bm, nbits, s);
		if (e - s >= n)
			return region_index_runvec_push(out, s, n);
		int ret = PMEMZ_GROW(all, &cap, n_all + 1);

		if (ret < 0)
			return ret;
		all[n_all++] = (struct run){s, e - s};
		i = e;
	}

	/* qsort's array must not be NULL, even when empty. */
	if (n_all > 1)
		qsort(all, n_all, sizeof(*all), run_cmp_len_desc);
	for (size_t k = 0; k < n_all && need; k++) {
		uint64_t take = MIN(need, all[k].count);
		int ret = region_index_runvec_push(out, all[k].first, take);
		if (ret < 0)
			return ret;
		need -= take;
	}
	assert(need == 0);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), run_cmp_first);
	return 0;
}

/* ---- verification (tests, debugging) ---- */

#define BAD_INDEX(...)                                                                             \
	do {                                                                                       \
		log_error(__VA_ARGS__);                                                            \
		return -EUCLEAN;                                                                   \
	} while (0)

/* One extent: its bitmaps and flags against its state, and its record (when not pending). */
static int verify_extent(const struct region *r, uint64_t i)
{
	unsigned s = r->vstate[i];
	uint8_t f = r->vflags[i];

	if (s >= EXT_NSTATES)
		BAD_INDEX("verify: extent %" PRIu64 " volatile state %u", i, s);
	if (bm_test(r->zeroed_bm, i) != (s == EXT_ZEROED))
		BAD_INDEX("verify: extent %" PRIu64 " zeroed bit vs state %u", i, s);
	if (bm_test(r->ready_bm, i) && (s != EXT_DIRTY || (f & (VF_IN_BATCH | VF_PENDING))))
		BAD_INDEX("verify: extent %" PRIu64 " ready but state %u flags %#x", i, s, f);
	if ((f & VF_IN_BATCH) && s != EXT_DIRTY)
		BAD_INDEX("verify: extent %" PRIu64 " in a batch but state %u", i, s);
	if ((f & VF_QUARANTINE) && s != EXT_BAD)
		BAD_INDEX("verify: extent %" PRIu64 " quarantined but state %u", i, s);
	if (!r->pending && !(f & VF_QUARANTINE)) {
		uint64_t rec = region_index_rec_load(r, i);
		if (layout_rec_state(rec) != s)
			BAD_INDEX("verify: extent %" PRIu64 " media state %u, volatile %u", i,
				  layout_rec_state(rec), s);
		if (s != EXT_COMMITTED && layout_rec_tag(rec) != 0)
			BAD_INDEX("verify: extent %" PRIu64 " state %u with tag %u", i, s,
				  layout_rec_tag(rec));
	}
	return 0;
}

/* Every extent, then the counts (I3) against a recount. */
static int verify_extents(const struct region *r)
{
	uint64_t cnt[EXT_NSTATES] = {0}, ready = 0, in_batch = 0, sum = 0;

	for (uint64_t i = 0; i < r->extent_count; i++) {
		int ret = verify_extent(r, i);

		if (ret < 0)
			return ret;
		cnt[r->vstate[i]]++;
		ready += bm_test(r->ready_bm, i);
		in_batch += !!(r->vflags[i] & VF_IN_BATCH);
	}
	for (unsigned s = 0; s < EXT_NSTATES; s++) {
		if (cnt[s] != r->count[s])
			BAD_INDEX("verify: count[%u] is %" PRIu64 ", recount %" PRIu64, s,
				  r->count[s], cnt[s]);
		sum += r->count[s];
	}
	if (sum != r->extent_count)
		BAD_INDEX("verify: states sum to %" PRIu64 " of %" PRIu64, sum, r->extent_count);
	if (ready != r->n_ready || in_batch != r->n_in_batch)
		BAD_INDEX("verify: ready %" PRIu64 "/%" PRIu64 ", in batch %" PRIu64 "/%" PRIu64,
			  ready, r->n_ready, in_batch, r->n_in_batch);
	return 0;
}

/* A live tag's extents: COMMITTED, their records naming it; *n: how many. */
static int verify_tag_extents(const struct region *r, uint32_t id, uint64_t *n)
{
	const struct vtag *t = &r->tags[id];

	*n = 0;
	for (size_t k = 0; k < t->n_runs; k++)
		for (uint64_t i = t->runs[k].first; i < t->runs[k].first + t->runs[k].count; i++) {
			if (r->vstate[i] != EXT_COMMITTED)
				BAD_INDEX("verify: tag %u extent %" PRIu64 " state %u", id, i,
					  r->vstate[i]);
			uint64_t rec = region_index_rec_load(r, i);
			/* A new tag's records are stored COMMITTED by region_sync. */
			bool lags = t->state == VT_COMMITTING &&
				    rec == layout_rec(EXT_LEASED, 0, layout_rec_gen(rec));

			/* A MOVE's new tag: its record names the source until region_sync. */
			lags |= t->move_src && layout_rec_tag(rec) == t->move_src;

			if (layout_rec_tag(rec) != id && !lags)
				BAD_INDEX("verify: tag %u extent %" PRIu64 " has tag %u", id, i,
					  layout_rec_tag(rec));
			(*n)++;
		}
	return 0;
}

/* The tags against their slots and extents, and the COMMITTED count against the tags. */
static int verify_tags(const struct region *r)
{
	uint64_t committed_in_tags = 0;

	for (uint32_t id = 1; id <= r->tag_count; id++) {
		const struct vtag *t = &r->tags[id];
		uint64_t n;
		int ret;

		if (t->state == VT_FREE && !r->pending && r->slots[id - 1].state != TAG_FREE)
			BAD_INDEX("verify: free tag id %u slot state 0x%016" PRIx64, id,
				  r->slots[id - 1].state);
		if (t->state != VT_VALID && t->state != VT_COMMITTING)
			continue;
		ret = verify_tag_extents(r, id, &n);
		if (ret < 0)
			return ret;
		if (n != t->n_extents)
			BAD_INDEX("verify: tag %u has %" PRIu64 " extents, counted %" PRIu64, id,
				  t->n_extents, n);
		committed_in_tags += n;
		if (!r->pending && r->slots[id - 1].state != TAG_VALID)
			BAD_INDEX("verify: tag %u slot state %" PRIu64, id, r->slots[id - 1].state);
	}
	if (committed_in_tags != r->count[EXT_COMMITTED])
		BAD_INDEX("verify: %" PRIu64 " committed extents, %" PRIu64 " in tags",
			  r->count[EXT_COMMITTED], committed_in_tags);
	return 0;
}

int region_index_verify(const struct region *r)
{
	int ret = verify_extents(r);

	return ret < 0 ? ret : verify_tags(r);
}

/* ---- map (MAP) ---- */

int region_get_states(const struct region *r, uint8_t *out, uint64_t first, uint64_t count)
{
	if (first > r->extent_count || count > r->extent_count - first)
		return -ERANGE;
	for (uint64_t k = 0; k < count; k++) {
		uint64_t i = first + k;

		out[k] = r->vstate[i] == EXT_DIRTY && (r->vflags[i] & VF_IN_BATCH) ? EXT_MAP_ZEROING
										   : r->vstate[i];
	}
	return 0;
}
