/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the region*.c files (and the unit tests).  The files
 * are in layers: each calls only the ones after its arrow, never one that
 * calls it (tests/lint/call-cycles.py):
 *
 *   region.c           -> region-recovery.c, region-move.c, region-tag.c, region-zeroer.c,
 *                         region-index.c, format.c
 *   region-recovery.c  -> region-tag.c, region-index.c
 *   region-alloc.c     -> region-zeroer.c, region-index.c
 *   region-move.c      -> region-tag.c, region-index.c
 *   region-tag.c       -> region-index.c
 *   region-zeroer.c    -> zeroer.c (the worker pool), zeroer-policy.c, region-index.c
 *   region-index.c     -> pstore.c
 *
 * Volatile index: per extent a state (the logical one: what region_get_stats
 * counts) and flags, a bitmap of ZEROED extents (what region_lease picks
 * from) and a bitmap of "ready" extents (DIRTY, record durable, not in a
 * batch: what the zeroer gets).  The media record may lag the volatile state
 * only while r->pending is set: region_sync() makes them equal again.
 */
#ifndef PMEMZ_REGION_INTERNAL_H
#define PMEMZ_REGION_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"
#include "hashtab.h"
#include "media.h"
#include "pstore.h"
#include "region.h"
#include "zeroer-policy.h"
#include "zeroer.h"

/* vflags */
#define VF_IN_BATCH 0x01u   /* DIRTY, inside a zeroer batch */
#define VF_PENDING 0x02u    /* DIRTY, not handed to the zeroer before region_sync */
#define VF_QUARANTINE 0x04u /* BAD in memory only: damaged record, left as is on media */

enum vtag_state {
	VT_FREE = 0,
	VT_COMMITTING, /* slot body + WRITTEN stored; records and VALID at the next region_sync */
	VT_VALID,
	VT_FREEING, /* slot FREEING stored; records DIRTY, then slot FREE at the next region_sync */
	VT_DAMAGED, /* slot unreadable (bad checksum/state): hidden, never reused */
	VT_MARKER,  /* a MOVE batch marker (region-move.c): hidden, reused once its FREE is durable */
};

struct vtag {
	uint8_t state;
	uid_t uid;
	struct htab_node hnode; /* in r->tag_index while COMMITTING or VALID */
	char name[LAYOUT_TAG_NAME_MAX + 1];
	struct run *runs; /* sorted, merged */
	size_t n_runs, cap_runs;
	uint64_t n_extents;
	/* region-move.c: a member of a MOVE of this iteration (its source), or a source of one */
	uint32_t move_src;
	bool move_busy;
};

/* One move of this iteration (region-move.c): extent e from slot p to the new slot c. */
struct pend_move {
	uint64_t e;
	uint32_t c, p;
};

struct runvec {
	struct run *v;
	size_t n, cap;
};

struct idvec {
	uint32_t *v;
	size_t n, cap;
};

struct region {
	const struct region_conf *rc; /* owned by the caller, outlives the region */
	const char *name;
	int fd;
	int lock_fd; /* flock()ed lock file: one daemon per region (region.c) */
	bool devdax;
	bool created; /* the file was created by this region_open (undone on failure) */
	uint64_t size;
	uint64_t alignment;
	const char *persistence; /* device-DAX: dax_persistence_name(); NULL for files */
	struct pstore *ps;	 /* the data (and, without metadata = PATH, everything) */
	uint8_t *base;
	/*
	 * metadata = PATH: headers and tables in a mapping of their own; else
	 * mps == ps and mbase == base.  Records and slots are stored through
	 * mps, data through ps.
	 */
	struct pstore *mps;
	uint8_t *mbase;
	int mfd;
	int mlock_fd;
	uint64_t msize;
	bool mdevdax;
	bool meta_created; /* created by this region_open (undone on failure) */
	struct layout_header hdr;
	/* Header repairs, written once recovery accepts the region. */
	struct format_loaded loaded;
	uint64_t *recs;		  /* extent table (pmem) */
	struct layout_tag *slots; /* tag table (pmem); id n is slots[n - 1] */
	uint64_t extent_count;
	uint64_t extent_size;
	uint64_t data_off;
	uint32_t tag_count;

	/* region-alloc.c */
	uint8_t *vstate;
	uint8_t *vflags;
	uint64_t *zeroed_bm;
	uint64_t *ready_bm;
	size_t bm_words;
	uint64_t count[EXT_NSTATES];
	uint64_t n_ready;
	uint64_t n_in_batch;
	uint64_t n_quarantined;
	uint64_t zero_cursor;
	struct runvec pend_dirty; /* VF_PENDING extents, released by region_sync */
	bool pend_scan;		  /* pend_dirty is incomplete (ENOMEM): scan */

	/* region-tag.c */
	struct vtag *tags; /* [0] unused */
	uint32_t *free_ids;
	uint32_t n_free_ids;
	struct htab tag_index; /* (name, uid) -> tag: visible tags only */
	uint32_t n_tags; /* COMMITTING + VALID */
	struct idvec pend_commit;
	struct idvec pend_free;

	/* region-move.c */
	struct pend_move *pend_moves; /* this iteration's moves, every batch */
	size_t n_pend_moves, cap_pend_moves;
	struct idvec pend_markers;  /* this iteration's batch markers */
	struct idvec pend_sources;  /* their sources, each once */
	struct idvec markers_done;  /* FREE stored, reused after the next drain */
	uint64_t move_nonce;

	bool pending;		/* stores since the last region_sync */
	struct region_stats st; /* bytes_zeroed, zero_batches, zero_busy_ns, drains */

	/* zeroer.c */
	struct zeroer *z;
	unsigned zeroer_threads;
	unsigned batch_extents;
	unsigned zeroer_outstanding; /* batches submitted, not yet collected */
	struct zbatch *zb_live;	     /* those batches, by live_next: for their hand-backs */
	int numa_node;		     /* the zeroer's node (region_zeroer_start); -1: unknown */
	region_zeroed_fn zeroed_fn;  /* region_zeroer_set_hook */
	void *zeroed_ctx;
	struct zpolicy pol; /* zero_policy = adaptive: the reserve's watermarks */
};

static inline uint8_t *region_extent_addr(const struct region *r, uint64_t i)
{
	return r->base + r->data_off + i * r->extent_size;
}

/*
 * A fault in the data mapping or the metadata one (*meta), at *off
 * (UINT64_MAX: a store outside the mapping was refused); off and meta
 * may be NULL.  Inline so that
 * every layer asks the same question without calling up into region.c.
 */
static inline bool region_mapping_failed(const struct region *r, uint64_t *off, bool *meta)
{
	bool in_meta = false;

	if (!pstore_failed(r->ps, off)) {
		if (r->mps == r->ps || !pstore_failed(r->mps, off))
			return false;
		in_meta = true;
	}
	if (meta)
		*meta = in_meta;
	return true;
}

/* ---- region-index.c ---- */
int region_index_init(struct region *r);
void region_index_free(struct region *r);
/* Volatile state change, keeping counts and the ZEROED bitmap. */
void region_index_set(struct region *r, uint64_t i, unsigned state);
uint64_t region_index_rec_load(const struct region *r, uint64_t i);
/* One 8-byte store of the record; not flushed. */
void region_index_rec_store(struct region *r, uint64_t i, unsigned state, uint32_t tag,
			    uint32_t gen);
void region_index_rec_flush(struct region *r, uint64_t first, uint64_t count);
/* DIRTY extent, record durable: hand to the zeroer. */
void region_index_make_ready(struct region *r, uint64_t i);
/*
 * DIRTY extents whose record is not durable yet: held back until
 * region_sync (out of memory for the run list: region_sync scans for them).
 */
void region_index_defer_dirty(struct region *r, uint64_t first, uint64_t count);
/*
 * The zeroer's door to the index (main loop only): how many extents are
 * ready, take up to max of them into a batch (VF_IN_BATCH, out of the ready
 * set; returns how many, written to ext), and give a finished batch back:
 * ext[0..done) leave the batch for the caller to store ZEROED, the rest
 * are ready again.
 */
uint64_t region_index_ready(const struct region *r);
uint64_t region_index_take_batch(struct region *r, uint64_t *ext, uint64_t max);
void region_index_return_batch(struct region *r, const uint64_t *ext, uint64_t n, uint64_t done);
void region_index_release_pending(struct region *r);
int region_index_runvec_push(struct runvec *v, uint64_t first, uint64_t count);
int region_index_idvec_push(struct idvec *v, uint32_t id);
/* Sort and merge runs in place; -EINVAL for empty, overlapping or out of range runs. */
int region_index_normalize_runs(const struct region *r, struct run *runs, size_t *n_runs);
/*
 * Append to out n ZEROED extents as runs in address order: the first run
 * long enough, else the longest ones.  Changes nothing in the index.
 */
int region_index_find_zeroed(const struct region *r, uint64_t n, struct runvec *out);

/* ---- region-tag.c ---- */
int region_tags_init(struct region *r);
void region_tags_free(struct region *r);
/* Recovery: register slot id as a visible tag. */
int region_tag_install(struct region *r, uint32_t id, uid_t uid, const char *name);
int region_tag_add_extent(struct vtag *t, uint64_t i);
/*
 * Sync, after the first drain: phase-1 stores (COMMITTED records of new
 * tags, DIRTY records of freed ones); true when it stored anything.
 */
bool region_tags_phase1(struct region *r);
/*
 * Sync, after the phase-1 drain: phase-2 stores (VALID slots of new tags,
 * FREE slots of freed ones); true when a VALID was stored (it needs a drain
 * before the reply; a FREE does not).
 */
bool region_tags_phase2(struct region *r);
/* Sync: after the last drain. */
void region_tags_synced(struct region *r);

/* The hash of (name, uid) -> id of the visible tags (region-move.c shares it). */
uint32_t region_tag_hash_find(const struct region *r, const char *name, uid_t uid);
void region_tag_hash_insert(struct region *r, uint32_t id);
void region_tag_hash_remove(struct region *r, uint32_t id);
/* A slot's body (name, uid, n extents, the MOVE link or NULL), then WRITTEN; flushed. */
void region_tag_store_written(struct region *r, uint32_t id, const char *name, uid_t uid,
			      uint64_t n, const struct layout_link *link);

/* ---- region-move.c ---- */
void region_moves_free(struct region *r);
/* Sync, after drain 1: markers whose FREE the drain made durable go back to the free list. */
void region_moves_release(struct region *r);
/* Sync, after drain 1: the batches' markers VALID (the decision); true when any. */
bool region_moves_phase1(struct region *r);
/* Sync, after drain 2: records moved, members VALID, sources recounted or FREE; true when any. */
bool region_moves_phase2(struct region *r);
/* Sync, after the last drain: markers FREE (durable at the next drain), emptied sources free. */
void region_moves_synced(struct region *r);

/* ---- region-recovery.c ---- */
int region_recover(struct region *r, const struct pstore_badblock *bbs, size_t n_bbs);

/* ---- region-zeroer.c ---- */
int region_zeroer_start(struct region *r);
void region_zeroer_stop(struct region *r);
/* Submit batches while DIRTY extents are ready and workers are short of work. */
void region_zeroer_kick(struct region *r);
/* n extents were leased: the policy's rate, and its zone for the smaller reserve. */
void region_zeroer_note_lease(struct region *r, uint64_t n);

/* ---- test hooks ---- */
/*
 * Close as a crash would: stop the zeroer and unmap without region_sync,
 * so this iteration's second phases never happen and nothing more is drained.
 */
void region_close_abandon(struct region *r);
struct pstore *region_get_pstore(const struct region *r);
/*
 * Cross-check the volatile index: counts against the per-extent states and
 * bitmaps, and (when nothing is pending) every record on media against the
 * volatile state.  0, or -EUCLEAN with the first mismatch logged.
 */
int region_index_verify(const struct region *r);

#endif
