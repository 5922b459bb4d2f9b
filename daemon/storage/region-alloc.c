/* SPDX-License-Identifier: MIT */
/*
 * The volatile free-space index and the extent state transitions of the
 * main loop: lease (ZEROED -> LEASED), unlease (LEASED -> DIRTY), flush.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "region-internal.h"

/* ---- lease ---- */

int region_lease(struct region *r, uint64_t n, struct run **runs, size_t *n_runs)
{
	struct runvec v = {0};
	int ret;

	if (n == 0)
		return -EINVAL;
	if (n > region_count_free(r))
		return -ENOSPC;
	if (n > r->count[EXT_ZEROED])
		return -EAGAIN;
	ret = region_index_find_zeroed(r, n, &v);
	if (ret < 0) {
		free(v.v);
		return ret;
	}
	for (size_t k = 0; k < v.n; k++) {
		const struct run *ru = &v.v[k];
		for (uint64_t i = ru->first; i < ru->first + ru->count; i++) {
			uint64_t rec = region_index_rec_load(r, i);
			assert(r->vstate[i] == EXT_ZEROED);
			region_index_rec_store(r, i, EXT_LEASED, 0, layout_rec_gen(rec) + 1);
			region_index_set(r, i, EXT_LEASED);
		}
		region_index_rec_flush(r, ru->first, ru->count);
	}
	r->pending = true;
	*runs = v.v;
	*n_runs = v.n;
	region_zeroer_note_lease(r, n);
	return 0;
}

void region_unlease(struct region *r, const struct run *runs, size_t n_runs)
{
	uint64_t skipped = 0, done = 0;

	for (size_t k = 0; k < n_runs; k++) {
		uint64_t first = runs[k].first, end, seg = UINT64_MAX;

		if (first >= r->extent_count || runs[k].count > r->extent_count - first) {
			skipped += runs[k].count;
			continue;
		}
		end = first + runs[k].count;
		for (uint64_t i = first; i <= end; i++) {
			bool leased = i < end && r->vstate[i] == EXT_LEASED;
			if (leased) {
				uint64_t rec = region_index_rec_load(r, i);
				region_index_rec_store(r, i, EXT_DIRTY, 0, layout_rec_gen(rec));
				region_index_set(r, i, EXT_DIRTY);
				done++;
				if (seg == UINT64_MAX)
					seg = i;
				continue;
			}
			if (i < end)
				skipped++;
			if (seg != UINT64_MAX) {
				region_index_rec_flush(r, seg, i - seg);
				region_index_defer_dirty(r, seg, i - seg);
				seg = UINT64_MAX;
			}
		}
	}
	if (done)
		r->pending = true;
	if (skipped)
		log_warning("region '%s': unlease: %" PRIu64 " extents were not leased; ignored",
			    r->name, skipped);
}

/* ---- flush ---- */

static int data_range(const struct region *r, uint64_t off, uint64_t len)
{
	if (off < r->data_off || off > r->size || len > r->size - off)
		return -ERANGE;
	return 0;
}

int region_flush(struct region *r, uint64_t off, uint64_t len)
{
	int ret = data_range(r, off, len);

	if (ret < 0 || len == 0)
		return ret;
	pstore_flush(r->ps, r->base + off, len);
	r->pending = true; /* the drain comes with region_sync */
	return 0;
}

int region_deep_flush(struct region *r, uint64_t off, uint64_t len)
{
	int ret = data_range(r, off, len);

	if (ret < 0 || len == 0)
		return ret;
	return pstore_deep_flush(r->ps, r->base + off, len);
}
