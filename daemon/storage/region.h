/* SPDX-License-Identifier: MIT */
/*
 * A region: one device-DAX device or file, its on-media metadata, the
 * volatile free-space index and its zeroer threads.
 *
 * Everything here except the zeroer threads' own work runs on the main
 * loop, the single writer of extent state.  State-changing calls store and
 * flush the new records but do not drain; region_sync() is called once per
 * loop iteration (group commit) and makes every change of that iteration
 * durable, in the order invariant I5 requires (docs/DESIGN.md), before any
 * reply is sent.
 */
#ifndef PMEMZ_REGION_H
#define PMEMZ_REGION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "media.h" /* enum extent_state, struct run */

struct region_info {
	const char *name;
	const char *path;
	uint64_t size;	      /* bytes of the whole region (what a client maps) */
	uint64_t extent_size;
	uint64_t extent_count;
	uint64_t data_offset; /* byte offset of extent 0 */
	uint8_t uuid[16];
	bool devdax;
	uint64_t alignment;
	const char *granularity; /* "byte", "cache_line", "page" */
	/* device-DAX: "cpu_cache", "memory_controller", "none", "unknown"; NULL for files */
	const char *persistence_domain;
};

struct region_stats {
	uint64_t count[EXT_NSTATES]; /* sums to extent_count (I3) */
	uint64_t zeroing;	     /* DIRTY extents inside a zeroer batch now */
	uint64_t bytes_zeroed;
	uint64_t zero_batches;
	uint64_t zero_busy_ns;	     /* zeroer thread time spent storing + draining */
	uint64_t drains;	     /* drains issued by region_sync */
	uint64_t tags;
	uint64_t zero_fences; /* drains the zeroer threads issued (one per batch and hand-back) */
	int numa_node;	      /* of the region's memory, where its zeroer runs; -1: unknown */
};

struct region;

/*
 * Open (creating a file region at its configured size if missing), map with
 * libpmem2, load the header or format a blank region, run recovery
 * (LEASED -> DIRTY, half-made commits rolled back, half-done frees
 * completed, damage quarantined),
 * start the zeroer threads.  Logs the reason of a failure itself, naming the
 * region; a foreign or corrupt header is refused and left untouched.
 */
int region_open(const struct region_conf *rc, struct region **out);
/* Stops and joins the zeroer threads, drains, unmaps. */
void region_close(struct region *r);

const struct region_conf *region_get_conf(const struct region *r);
/*
 * Reload: the same region's new configuration (rc outlives the region, or
 * the next region_set_conf).  Its name, path, size, extent_size and
 * metadata must be the running ones (the caller keeps those); takes
 * batch_extents.  zeroer_threads and zero_rate are applied by their own
 * calls.  Strings of region_get_info() point into rc from now on.
 */
void region_set_conf(struct region *r, const struct region_conf *rc);
void region_get_info(const struct region *r, struct region_info *info);
void region_get_stats(const struct region *r, struct region_stats *st);
/* The daemon's own read-write fd of the region: never hand it out. */
int region_get_fd(const struct region *r);
/*
 * A new read-write fd of the region's file or device (a new open file
 * description, so nothing a holder does to it reaches the daemon's), for
 * SCM_RIGHTS; the caller closes it.  -errno, -ESTALE when it is no longer
 * the same file.
 */
int region_open_fd(const struct region *r);
/*
 * Has the region failed (a fault in its mapping: a truncated or
 * hole-punched file, a media error)?  Then nothing stored in it is durable
 * any more and the region must be taken offline; region_sync() returns -EIO.
 * why (may be NULL) gets the reason.
 */
bool region_failed(const struct region *r, char *why, size_t len);

/* Extents free in any state: ZEROED + DIRTY (including those being zeroed). */
uint64_t region_count_free(const struct region *r);
uint64_t region_count_zeroed(const struct region *r);

/*
 * ZEROED -> LEASED for n extents, preferring contiguous runs.  *runs is
 * malloc'ed.  -EAGAIN when fewer than n are ZEROED now, -ENOSPC when fewer
 * than n are free at all, -EINVAL for n == 0.
 */
int region_lease(struct region *r, uint64_t n, struct run **runs, size_t *n_runs);
/* LEASED -> DIRTY (lease freed, or its connection went away). */
void region_unlease(struct region *r, const struct run *runs, size_t n_runs);

/*
 * LEASED -> COMMITTED under a new tag owned by uid.  With flush_data the
 * runs' data is flushed first, so it is durable before any record names
 * the tag.  The slot (body, WRITTEN) is stored now, the records and VALID
 * by region_sync().
 * -EEXIST if uid already has the tag, -ENAMETOOLONG / -EINVAL for a bad
 * name, -ENOSPC when the tag table is full.  The commit is atomic across
 * a crash: before region_sync() returns, recovery rolls it back whole.
 */
int region_commit(struct region *r, const struct run *runs, size_t n_runs, const char *tag,
		  uid_t uid, bool flush_data);

/* Valid tags, ids >= 1.  region_tag_next(r, 0) is the first; 0 ends. */
uint32_t region_tag_next(const struct region *r, uint32_t after);
int region_tag_get(const struct region *r, uint32_t id, const char **name, uid_t *uid);
int region_tag_lookup(const struct region *r, const char *name, uid_t uid, uint32_t *id);
/* The tag's extents as runs (malloc'ed), and their count. */
int region_tag_runs(const struct region *r, uint32_t id, struct run **runs, size_t *n_runs,
		    uint64_t *n_extents);
/* Extents committed under tag id (the tag's owner is region_tag_get's); 0 if no such tag. */
uint64_t region_tag_extents(const struct region *r, uint32_t id);
/*
 * COMMITTED -> DIRTY for the tag's extents; the tag goes first (atomic):
 * slot FREEING now, records DIRTY and slot FREE by region_sync().
 * -EBUSY when a MOVE of this iteration creates the tag or takes from it.
 */
int region_tag_free(struct region *r, uint32_t id, uint64_t *n_extents);

/*
 * MOVE (docs/on-media-format.md, "Move"): each of the n moves (1..256)
 * takes extent mv[k].extent out of uid's VALID tag mv[k].from_tag into a
 * new tag mv[k].to_tag of uid holding that extent alone; a from_tag left
 * with no extent is removed.  All or nothing across a crash: a batch
 * marker slot decides it in region_sync (one 8-byte store).  The new
 * tags are visible at once (like a commit's); new_ids[k] gets mv[k]'s new
 * tag id.  Nothing changes on an error, and *bad (may be NULL) gets the
 * index of the move it is about (n: the request):
 * -EINVAL  n out of range, a bad name, to_tags repeated, an extent out
 *          of range, not of its from_tag, or named twice;
 * -ENOENT  from_tag is no tag of uid;
 * -EEXIST  uid has a tag named to_tag;
 * -EBUSY   from_tag is committed, freed or moved into in this iteration;
 * -ENOSPC  fewer than n + 1 free tag slots;  -ENOMEM.
 */
struct region_move {
	const char *from_tag;
	uint64_t extent;
	const char *to_tag;
};
int region_move(struct region *r, const struct region_move *mv, size_t n, uid_t uid,
		uint32_t *new_ids, size_t *bad);

/* Flush byte ranges of the mapping (offsets from the region start).  -ERANGE. */
int region_flush(struct region *r, uint64_t off, uint64_t len);
/* pmem2_deep_flush: the write-pending queues too (privileged on device-DAX). */
int region_deep_flush(struct region *r, uint64_t off, uint64_t len);

/*
 * Group commit, one pass for all of this iteration's changes: drain (data,
 * leases, unleases, ZEROED, new tags' slot bodies WRITTEN, freed tags'
 * slots FREEING); when there are commits or tag frees, their records
 * (COMMITTED, DIRTY) and a second drain; when there are commits, their
 * slots VALID and a third drain (freed slots go FREE here too, durable with
 * the next drain); then hand newly DIRTY extents to the zeroer.  Returns the
 * number of drains issued: 0 when nothing was pending, 1 without commits or
 * frees, 2 with frees only, 3 with commits.  -EIO when the region has
 * failed (region_failed): then nothing this pass attests is durable.
 */
int region_sync(struct region *r);

/*
 * Zeroer plumbing.  The fd becomes readable when a batch is done; the main
 * loop then calls region_zeroer_collect(), which stores ZEROED for every
 * finished batch (durable at the next region_sync()) and submits more work.
 * Returns the number of extents that became ZEROED.
 */
int region_zeroer_fd(const struct region *r);
uint64_t region_zeroer_collect(struct region *r);
/*
 * Called by region_zeroer_collect(), on the main loop, for each range of
 * extents it just stored ZEROED, so that the server can charge the zeroing
 * to whoever freed the space (DESIGN.md 6).  fn NULL removes the hook.
 */
typedef void (*region_zeroed_fn)(void *ctx, uint64_t first, uint64_t count);
void region_zeroer_set_hook(struct region *r, region_zeroed_fn fn, void *ctx);
/* Allocations are waiting: ignore the rate limit until cleared. */
void region_zeroer_set_urgent(struct region *r, bool urgent);
/*
 * While urgent: the first waiter still lacks n extents (0: unknown, as 1).
 * The zeroer hands extents back in groups of about n / threads, so a
 * waiter of one extent gets it as soon as it is fenced, and one waiting
 * for the whole region does not pay a fence and a wake-up per extent.
 */
void region_zeroer_set_need(struct region *r, uint64_t n);
/* Admin: pause/resume background zeroing, change the byte rate (0 = unlimited). */
void region_zeroer_pause(struct region *r, bool paused);
/* The pause's only record (the server's STAT asks here, it keeps no copy). */
bool region_zeroer_paused(const struct region *r);
void region_zeroer_set_rate(struct region *r, uint64_t bytes_per_sec);
/*
 * Run n zeroer threads (clamped to 1..CONF_MAX_ZEROER_THREADS): start more,
 * or stop the extra ones (their unfinished batches stay DIRTY and are
 * zeroed by the others).  -errno (logged) and the count unchanged when a
 * thread cannot start.
 */
int region_zeroer_set_threads(struct region *r, unsigned n);

/* The zeroing policy's state (STAT, pmemzctl status). */
struct region_policy_state {
	const char *policy; /* "full" or "adaptive" */
	const char *zone;   /* "fast", "paced" or "idle" */
	uint64_t low, high; /* watermarks, extents (adaptive) */
	double alloc_rate;  /* extents leased per second, smoothed */
	uint64_t changes;   /* zone changes since start */
};
void region_zeroer_policy_state(const struct region *r, struct region_policy_state *out);

/*
 * Per-extent states for a map (MAP, pmemzctl map): out[k] = state of extent
 * first + k, an enum extent_state value, or EXT_MAP_ZEROING for a DIRTY
 * extent inside a zeroer batch now.  -ERANGE when the range is outside the
 * region.
 */
#define EXT_MAP_ZEROING 5
int region_get_states(const struct region *r, uint8_t *out, uint64_t first, uint64_t count);

#endif
