/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: one thin-provisioned disk on pmemzerod, served by
 * one nbdkit process (disk-format.h has its bytes on pmem).
 *
 * The chunk map: map[i] is chunk i's extent (address in the region's
 * mapping and its committed allocation), or none (reads zero).  Lookups
 * are lock-free loads; what keeps an extent alive under a copy is the
 * stripe lock of its chunk: every copy from or into a chunk holds its
 * stripe's read lock, and only publishing a fresh chunk or giving one back
 * (TRIM, ZERO) takes the write lock.  So a TRIM never frees an extent a
 * copy is still using (a late store there would leak into the next
 * tenant's extent, a late load would read it), and a write that finds its
 * chunk present needs no daemon and no global lock.
 *
 * struct disk holds the configuration, the connection, the mapping, the
 * chunk map and its stripes, the superblock, and one object per module,
 * each defined (and its state kept) in its own file, reached only through
 * the functions below:
 *   struct disk_journal  disk-journal.c  the mapping journal, and the
 *                                        mappings waiting for their fold
 *   struct disk_fold     disk-fold.c     the thread and the MOVEs that fold
 *                                        them into chunk tags
 *   struct disk_ahead    disk-ahead.c    extents owned ahead, their pool
 *                                        tags and refill threads
 *   struct disk_wb       disk-wb.c       write-back of fresh chunks
 *   struct disk_spares   disk-spare.c    lost races' leases
 *   struct disk_prewarm  disk-prewarm.c  the walk that faults the mapping in
 *
 * Locks, six kinds, and their one order: a thread may hold one stripe
 * lock (never two), and while it holds it take any one of the five
 * others; those five are leaves: code that holds one takes no other lock
 * (a stripe lock included), so no two of them are ever nested.
 *   - stripe locks (pthread_rwlock_t, d->stripes): the chunk map, above;
 *   - the journal's (disk-journal.c): its records, base, and mappings;
 *   - the ahead pool's (disk-ahead.c): its stack, pools and depth;
 *   - write-back's (disk-wb.c): its buffers and queue;
 *   - the spares' (disk-spare.c): the kept leases;
 *   - the reconnect lock (disk-conn.c, d->reconnect_lock): one reconnection
 *     at a time.
 */
#ifndef PMEMZ_NBD_DISK_H
#define PMEMZ_NBD_DISK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk-format.h"

struct pmemz_client;
struct pmemz_region;
struct pmemz_alloc;

#define DISK_STRIPES 1024u	    /* stripe locks, chunk i uses i % DISK_STRIPES */
#define DISK_RECONNECT_SECONDS 60   /* how long a request waits for the daemon to come back */
#define DISK_SPARES_MAX 64	    /* bound of spares= */
#define DISK_AHEAD_BATCH 128u	    /* extents one refill takes at most (disk-ahead-batch.c) */
#define DISK_AHEAD_FLOOR 32u	    /* extents held ahead at least (when the cap allows) */
#define DISK_AHEAD_THREADS 2u	    /* refills under way at once (each two round trips) */
#define DISK_SYNC_INTERVAL_MS 1000u /* sync-interval= default, as dm-thin's COMMIT_PERIOD */
#define DISK_FOLD_IDLE_TICKS 10u    /* sync intervals without a fresh mapping before a fold */

struct disk;
struct wb_pending;
struct ahead_pool;
struct disk_journal;
struct disk_fold;
struct disk_ahead;
struct disk_wb;
struct disk_spares;
struct disk_prewarm;

/*
 * A chunk is absent (all NULL), being written back (pend: its data is in
 * DRAM until its extent is committed, disk-wb.c), present under its own
 * tag (addr and a), or present in an extent of a pool tag, mapped by a
 * journal record, its move to the chunk's tag waiting for the next fold
 * (addr, a NULL; disk-journal.c, disk-fold.c).
 */
struct disk_chunk {
	char *addr;		 /* the extent in the mapping, NULL when absent (atomic) */
	struct pmemz_alloc *a;	 /* its chunk tag (under the stripe write lock); NULL: not yet */
	struct wb_pending *pend; /* atomic; set and cleared under the stripe write lock */
};

/* An extent owned ahead: zeroed while it is held, then a chunk's until moved. */
struct ahead_ext {
	char *addr;
	struct ahead_pool *pool; /* the pool tag holding it (disk-ahead.c) */
};

/* A chunk mapped by the journal into an extent owned ahead: its move at a fold. */
struct journal_entry {
	uint64_t idx;
	struct ahead_ext e;
	struct pmemz_alloc *out; /* the chunk tag's handle, once moved */
};

struct disk_stripe {
	pthread_rwlock_t lock;
} __attribute__((aligned(64)));

struct disk_config {
	const char *region; /* required */
	const char *name;   /* default "disk0" */
	const char *socket; /* NULL: the library's default */
	uint64_t size;	    /* 0: the size recorded in the superblock */
	uint64_t reserve;   /* client reserve in bytes; 0: none */
	uint64_t writeback; /* write-back buffers in bytes; less than two chunks: none */
	unsigned reconnect_seconds;
	unsigned spares; /* lost races' leases kept for the next fresh chunk; 0: none */
	uint64_t ahead;	 /* bytes of extents owned ahead at most; 0: none (disk-ahead.c) */
	unsigned sync_interval_ms; /* the fold thread's tick (0: the default) */
	int prewarm;		   /* the whole mapping faulted in at start: DISK_PREWARM_* */
	/* a new disk's journal records at most (0: as many as its extent holds) */
	uint64_t journal_slots;
	/*
	 * Each fresh chunk's extent zeroed again before its first write (NULL:
	 * it comes zeroed from pmemzerod): only nbdkit-pmemz-plugin-bench sets
	 * it, for its baseline, and then no extents are owned ahead.
	 */
	int (*zero_fresh)(struct disk *d, char *p, size_t len);
};

struct disk {
	struct disk_config cfg;
	struct pmemz_client *c;
	struct pmemz_region *r;
	char *base; /* the region's mapping */
	size_t region_size;
	uint64_t chunk_size;
	uint64_t size; /* virtual size (the superblock's) */
	uint64_t nchunks;
	struct disk_chunk *map; /* nchunks entries, anonymous memory: touched where written */
	size_t map_bytes;
	struct disk_stripe *stripes;
	struct pmemz_alloc *super_a;
	char *super;		    /* its extent in the mapping */
	struct pmemz_disk_super sb; /* as checked at open (size aside: d->size) */
	bool readonly;		    /* features of a later plugin allow no write (disk-open.c) */

	/* Reconnection: one thread at a time; gen counts connections. */
	pthread_mutex_t reconnect_lock;
	uint64_t gen;	    /* atomic */
	int failed;	    /* atomic: 0, or why every request fails (-errno) */
	uint64_t allocated; /* chunks present (atomic), for debug output */

	/* the modules (NULL until disk_open made them) */
	struct disk_journal *journal;
	struct disk_fold *fold;
	struct disk_ahead *ahead;
	struct disk_wb *wb;
	struct disk_spares *spares;
	struct disk_prewarm *prewarm;
};

static inline pthread_rwlock_t *disk_stripe(struct disk *d, uint64_t idx)
{
	return &d->stripes[idx % DISK_STRIPES].lock;
}

/* Connect, claim the disk, create or check its superblock, load the chunk map. */
int disk_open(struct disk *d, const struct disk_config *cfg);
/* A line on stderr that the user sees, before nbdkit forks (no nbdkit call prints one). */
void disk_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The threads, after nbdkit forked (threads do not survive a fork). */
int disk_start(struct disk *d);
/* Give everything back (the claim, the reserve) and free. */
void disk_close(struct disk *d);

/*
 * The data path; each returns 0 or a negative errno, and calls
 * nbdkit_error() itself.  A write into a present chunk is durable on
 * return (NT stores and a drain of the calling thread); a write into a
 * fresh chunk may be staged for write-back (disk-wb.c), and FLUSH waits
 * for those.
 */
int disk_read(struct disk *d, void *buf, uint32_t count, uint64_t offset);
/*
 * *staged: the last write-back sequence this write queued data behind (0
 * none); wb_durable() on it makes the write durable (FUA).
 */
int disk_write(struct disk *d, const void *buf, uint32_t count, uint64_t offset, uint64_t *staged);
/*
 * TRIM (write_zeroes false): whole chunks are given back, partial ones
 * left (a TRIM is advisory).  ZERO: the range reads zero after; whole
 * chunks are given back when may_trim (NBD_CMD_FLAG_NO_HOLE unset), else
 * every present chunk stays allocated and gets zeros written, as a
 * partial one always does; a hole stays a hole (it reads zero).  fast:
 * -ENOTSUP, and nothing done, when zeros would be written.
 */
int disk_zero(struct disk *d, uint32_t count, uint64_t offset, bool write_zeroes, bool may_trim,
	      bool fast);
struct nbdkit_extents;
int disk_extents(struct disk *d, uint32_t count, uint64_t offset, bool req_one,
		 struct nbdkit_extents *e);

/* ---- disk-ahead-batch.c: a refill of n extents in two round trips ---- */
/*
 * *out: pool tag nbd/D/pool/seq of up to n extents; 0, -EAGAIN
 * (reconnected: ask again), or -errno with nothing taken (-ENOSPC,
 * -EDQUOT: refused whole).
 */
int disk_ahead_batch(struct disk *d, size_t n, uint64_t seq, struct pmemz_alloc **out);

/* ---- disk-prewarm.c: the region's mapping faulted in once, by a thread at SCHED_IDLE ---- */
enum { DISK_PREWARM_AUTO, DISK_PREWARM_ON, DISK_PREWARM_OFF };
int disk_prewarm_new(struct disk *d, int mode, struct disk_prewarm **out);
int disk_prewarm_start(struct disk_prewarm *p); /* after the fork; 0 also when it could not start */
void disk_prewarm_free(struct disk_prewarm *p); /* stops it: before the region is unmapped */

/* ---- disk-guard.c: loads and stores into the mapping, which may fault ---- */
/*
 * A tenant can truncate the region's file under the mapping (SIGBUS): each
 * of these is -EIO then, logged, and the request fails alone.
 * disk_guard_init installs the handler (once, before the first access).
 */
void disk_guard_init(void);
/* fn(arg) (no lock taken, nothing owned in it): its result, or -EIO on a fault. */
int disk_guard(struct disk *d, int (*fn)(void *arg), void *arg);
/* memcpy from the mapping. */
int disk_load(struct disk *d, void *dst, const char *src, size_t len);
/* NT stores into the mapping, not drained; a failure is logged. */
int disk_store(struct disk *d, char *dst, const void *src, size_t len);

/* ---- disk-spare.c: the pool of lost races' leases ---- */
int disk_spares_new(struct disk *d, unsigned max, struct disk_spares **out);
/* Keep lease a of connection gen, or close it (pool full, gen not current). */
void disk_spare_put(struct disk_spares *s, struct pmemz_alloc *a, uint64_t gen);
/* A kept lease of the current connection, or NULL; older ones are dropped. */
struct pmemz_alloc *disk_spare_take(struct disk_spares *s);
void disk_spares_free(struct disk_spares *s); /* close them all (before the region) */

/* ---- disk-chunk.c: a fresh chunk's extent, for disk-io.c, disk-wb.c and disk-fold.c ---- */
/*
 * A zeroed extent of one chunk (a lost race's spare first, then the
 * client reserve), leased on connection *gen_out when not NULL; not
 * written before it is committed.  0, or -errno after nbdkit_error().
 */
int disk_chunk_lease(struct disk *d, struct pmemz_alloc **out, uint64_t *gen_out);
int disk_commit_chunk(struct disk *d, uint64_t idx, struct pmemz_alloc *lease,
		      struct pmemz_alloc **out, char **addr);
void disk_publish(struct disk *d, uint64_t idx, struct pmemz_alloc *a, char *p);
/* Chunk idx, mapped by the journal, is its tag a's now (takes the stripe write lock). */
void disk_chunk_tagged(struct disk *d, uint64_t idx, struct pmemz_alloc *a);

/* ---- disk-inline.c (nbdkit-pmemz-plugin-bench only): zeroing on the write path ---- */
int disk_zero_inline(struct disk *d, char *p, size_t len);

/* ---- disk-ahead.c: extents owned ahead (ahead=) ---- */
/*
 * on: extents are owned ahead (else the object only names pool tags and
 * frees an earlier plugin's ahead tags).  disk_ahead_open frees the ahead
 * tags of a plugin before the journal (they may hold writes whose mapping
 * never became durable; disk-journal.c empties and frees the pool tags)
 * and takes the first extents; disk_ahead_start starts the refill threads
 * (after nbdkit forked).
 */
int disk_ahead_new(struct disk *d, bool on, struct disk_ahead **out);
/* A pool tag nbd/D/pool/seq exists: later ones are named above it. */
void disk_ahead_seen(struct disk_ahead *ah, uint64_t seq);
int disk_ahead_open(struct disk_ahead *ah);
int disk_ahead_start(struct disk_ahead *ah);
/* Stop the threads; give every extent still held back (after the last fold); free. */
void disk_ahead_free(struct disk_ahead *ah);
bool disk_ahead_on(const struct disk_ahead *ah);
/*
 * A zeroed extent owned ahead into *e; false when none is left (the caller
 * falls back).  wait: when none is left, wait for a refill on its way.
 */
bool disk_ahead_take(struct disk_ahead *ah, struct ahead_ext *e, bool wait);
/* Give back an extent taken but not written (another request made the chunk). */
void disk_ahead_put(struct disk_ahead *ah, const struct ahead_ext *e);
/* Extent e is now its chunk's for good (moved): the pool lets go of it. */
void disk_ahead_moved(struct disk_ahead *ah, const struct ahead_ext *e);
/* The pool tag's handle, for a MOVE out of it. */
struct pmemz_alloc *disk_ahead_pool_alloc(const struct ahead_pool *p);
/* Forget every pool without freeing its tag (a fold failed: the next open recovers them). */
void disk_ahead_keep_pools(struct disk_ahead *ah);
/*
 * At open (no thread yet): pool tag a, whose refs extents the journal
 * still maps, is held until they are folded; its others are never used.
 * *out: the pool; a is its own from then on.
 */
int disk_ahead_adopt(struct disk_ahead *ah, struct pmemz_alloc *a, unsigned refs,
		     struct ahead_pool **out);

/* ---- disk-journal.c: the mapping journal ---- */
struct disk_found { /* a chunk present at open: under its own tag, or mapped by the journal */
	uint64_t index;
	char *addr;
	struct pmemz_alloc *a; /* NULL: mapped by the journal */
};
/* The journal of the superblock d->sb (uuid, slots) at d->super (base); 0 or -errno, logged. */
int disk_journal_new(struct disk *d, struct disk_journal **out);
/* The slots of a new disk's journal (0: its extents are too small to hold one). */
uint64_t disk_journal_slots_new(const struct disk *d);
void disk_journal_free(struct disk_journal *j);
/* Has the disk a journal (its extents hold one)? */
bool disk_journal_on(const struct disk_journal *j);
/*
 * At open, before anything else uses the disk: every chunk the journal
 * maps into one of pools[0..n_pools) moves to its chunk's tag (joining
 * *found), the pools are freed with what is left in them, and the base
 * moves past every record.  Moves refused (the tag limit) leave the rest
 * in the journal, recorded again, and their pools adopted (disk-ahead.c).
 * A read-only disk (d->readonly) writes nothing: its journal's chunks
 * join *found where they are, without a tag.  Consumes the pool handles.
 * 0 or -errno, logged.
 */
int disk_journal_recover(struct disk_journal *j, struct pmemz_alloc **pools, size_t n_pools,
			 struct disk_found **found, size_t *n, size_t *cap);
/*
 * Chunk idx now lives in e (stripe write lock held): its record goes into
 * the journal, durable at the caller's drain; its move to the chunk's tag
 * waits for the next fold.  -ENOSPC: the journal is full until that fold,
 * or folds are refused (the caller falls back and e stays unwritten).
 */
int disk_journal_add(struct disk_journal *j, uint64_t idx, const struct ahead_ext *e);
/* Mappings made so far, and are some not folded yet? */
uint64_t disk_journal_made(struct disk_journal *j);
bool disk_journal_pending(struct disk_journal *j);
/*
 * The fold thread's wait: up to ms, or until half the journal is in use
 * or a fresh chunk found it full.  1: a fold is due (half in use); 0: not
 * (yet); -ESHUTDOWN: disk_journal_stop was called.
 */
int disk_journal_wait(struct disk_journal *j, unsigned ms);
void disk_journal_stop(struct disk_journal *j);
/*
 * What one fold moves (disk-fold.c): the mappings v[0..n) taken out of the
 * journal, made up to `upto`; every record below `cut` is one of theirs.
 */
struct journal_fold {
	struct journal_entry *v;
	size_t n;
	uint64_t upto, cut;
};
/*
 * Take every mapping made so far, when some made before `want` are not
 * folded yet: 1 with *f (one fold at a time: a caller that finds one
 * under way waits for it); 0 when those are all folded.
 */
int disk_journal_take(struct disk_journal *j, uint64_t want, struct journal_fold *f);
/*
 * After f's moves (each moved entry has its out): the unmoved ones
 * recorded again from the journal's next sequence number on, then the
 * base to f->cut, so that no record of a moved chunk outlives the move.
 * 0; 1 when they do not fit beside the records at and above the base
 * (nothing changed); or -errno.
 */
int disk_journal_rewrite(struct disk_journal *j, const struct journal_fold *f);
/*
 * The end of fold f: its first `left` entries (not moved) go back in front
 * of what was made since, or the fold is complete; refused: folds are
 * refused (the tag limit) and fresh chunks fall back until one succeeds.
 * Frees f->v.
 */
void disk_journal_settle(struct disk_journal *j, struct journal_fold *f, size_t left, bool refused);
/* Fresh chunks that found the journal full (or folds refused) so far. */
uint64_t disk_journal_full(struct disk_journal *j);

/* ---- disk-fold.c: the journal's mappings into chunk tags ---- */
int disk_fold_new(struct disk *d, struct disk_fold **out);
int disk_fold_start(struct disk_fold *f); /* the fold thread (after nbdkit forked) */
/* Stop the thread, fold every mapping, and free (disk_close). */
void disk_fold_free(struct disk_fold *f);
/*
 * Move every chunk recorded before the call to its chunk's tag: one MOVE
 * request per PMEMZ_BATCH_MOVES_MAX of them, all sent before any answer is
 * waited for; then the journal's base past them.  0, or -errno after
 * nbdkit_error() (the mappings stay in the journal and queued).
 */
int disk_fold(struct disk_fold *f);

/* ---- disk-wb.c: write-back of fresh chunks ---- */
int wb_new(struct disk *d, struct disk_wb **out); /* the buffers (disk_open) */
int wb_start(struct disk_wb *wb);		  /* the workers (after nbdkit forked) */
void wb_free(struct disk_wb *wb);		  /* finish the queue, stop the workers, free */
bool wb_on(struct disk_wb *wb);
/* A free buffer; waits for one. */
struct wb_pending *wb_get(struct disk_wb *wb);
void wb_put(struct disk_wb *wb, struct wb_pending *pd);
/* Queue pd as chunk idx's write-back of lease (stripe write lock held): its seq. */
uint64_t wb_submit(struct disk_wb *wb, struct wb_pending *pd, uint64_t idx,
		   struct pmemz_alloc *lease);
uint64_t wb_seq(const struct wb_pending *pd);
/* Wait for the write-backs queued up to seq (UINT64_MAX: all queued now). */
void wb_wait(struct disk_wb *wb, uint64_t seq);
/*
 * A sync point of one NBD connection: wait for the write-backs up to seq
 * (0: none); then, when one failed since *seen (the count this connection
 * was told about), its error, once.
 */
int wb_durable(struct disk_wb *wb, uint64_t seq, uint64_t *seen);
/* Write-backs failed so far (a new connection's *seen). */
uint64_t wb_errors(struct disk_wb *wb);
/* Bytes of a chunk being written back (stage: stripe write lock; read: read lock). */
void wb_stage(struct wb_pending *pd, uint64_t off, const void *src, uint64_t len);
void wb_read(const struct wb_pending *pd, uint64_t off, void *dst, uint64_t len);
/* Forget what was staged: the chunk reads zero (stripe write lock held). */
void wb_discard(struct disk_wb *wb, struct wb_pending *pd);

/* ---- disk-conn.c: the daemon, and coming back after it went away ---- */

/* Is r a broken connection (the daemon restarted, or went away)? */
bool disk_conn_lost(int r);
/*
 * Reconnect after a call made on connection gen failed with a broken
 * connection: once for all threads that saw the same break, retrying for
 * cfg.reconnect_seconds.  0 when the caller may retry its call; else the
 * disk has failed (every request then fails: its claim was lost, the
 * region turned stale) or the daemon did not come back.
 */
int disk_reconnect(struct disk *d, uint64_t gen);
static inline uint64_t disk_gen(struct disk *d)
{
	return __atomic_load_n(&d->gen, __ATOMIC_ACQUIRE);
}
/* NBD's errno for a libpmemzclient error (ENOSPC for quota, else EIO...). */
int disk_nbd_errno(int r);

#endif
