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
 */
#ifndef PMEMZ_NBD_DISK_H
#define PMEMZ_NBD_DISK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

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

enum disk_zeroing {
	DISK_ZEROING_SERVICE, /* extents come zeroed from pmemzerod */
	DISK_ZEROING_INLINE,  /* and are zeroed again here (the benchmark's baseline) */
};

struct wb_pending;

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

/* A pool tag: nbd/D/pool/SEQ, committed, of up to DISK_AHEAD_BATCH extents. */
struct ahead_pool {
	struct pmemz_alloc *a;
	unsigned refs; /* its extents not moved to a chunk yet (under ahead.lock) */
};

/* An extent owned ahead: zeroed while it is in the stack, then a chunk's until moved. */
struct ahead_ext {
	char *addr;
	struct ahead_pool *pool;
};

/* A chunk written into an extent owned ahead: its move at the next fold. */
struct fold_entry {
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
	enum disk_zeroing zeroing;
	unsigned reconnect_seconds;
	unsigned spares; /* lost races' leases kept for the next fresh chunk; 0: none */
	uint64_t ahead;	 /* bytes of extents owned ahead at most; 0: none (disk-ahead.c) */
	unsigned sync_interval_ms; /* mappings durable this often at least; 0: FLUSH, FUA only */
	bool prefault; /* MADV_POPULATE_WRITE a fresh chunk's extent before a large copy */
	int warm;      /* extents owned ahead touched by the refill thread: DISK_WARM_* */
	int prewarm;   /* the whole mapping faulted in at start: DISK_PREWARM_* */
};

/*
 * A lease left over by a lost race, kept for the next fresh chunk instead
 * of being freed (and re-zeroed by the daemon).  gen: the connection it
 * was leased on; one of an older connection is dropped, never used (it
 * died with its connection and may be zeroed and leased to someone else).
 */
struct disk_spare {
	struct pmemz_alloc *a;
	uint64_t gen;
};

TAILQ_HEAD(wb_pending_list, wb_pending);

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
	char *super; /* its extent in the mapping */
	char *data;  /* extent 0 of the region in the mapping (journal records count from it) */

	/* Reconnection: one thread at a time; gen counts connections. */
	pthread_mutex_t reconnect_lock;
	uint64_t gen;	    /* atomic */
	int failed;	    /* atomic: 0, or why every request fails (-errno) */
	uint64_t allocated; /* chunks present (atomic), for debug output */

	/* disk-prewarm.c: the thread that faults the mapping in at start */
	struct {
		pthread_t thread;
		bool running;
		bool stop; /* atomic */
	} prewarm;

	struct {
		pthread_mutex_t lock; /* all below */
		struct disk_spare *v; /* cfg.spares entries */
		unsigned n;
		uint64_t kept, used, dropped; /* for the debug line at close */
	} spares;

	/* disk-ahead.c: zeroed extents owned ahead, and the thread that refills them */
	struct {
		pthread_mutex_t lock;  /* all below */
		pthread_cond_t wake;   /* below target, or stop */
		pthread_cond_t filled; /* a refill ended */
		struct ahead_ext *v;   /* the zeroed ones, a stack */
		size_t n, cap_v;
		struct ahead_pool **pools; /* every pool with refs (for close) */
		size_t n_pools, cap_pools;
		uint64_t next_seq;
		size_t floor, target, cap, ceiling; /* extents; ceiling: after a refusal */
		uint64_t taken, empty, fallbacks, refills, refused;
		uint64_t refill_ns, refill_max_ns;	/* the refills' time: in all, the longest */
		uint64_t lat_ns, rate_t_ns, rate_taken; /* refill latency; rate's last sample */
		double rate;				/* extents taken per second, smoothed */
		uint64_t backoff_until_ns;
		pthread_t threads[DISK_AHEAD_THREADS];
		unsigned n_threads;
		bool initialised, stop;
		unsigned refilling; /* threads between wanting and getting extents */
		size_t inflight;    /* the extents they asked for */
		int warm; /* disk-warm.c's (atomic: the refill threads decide it): DISK_WARM_* */
	} ahead;

	/*
	 * disk-journal.c, disk-fold.c: the journal, and the mappings it holds
	 * that wait for their fold into chunk tags
	 */
	struct {
		pthread_mutex_t lock; /* all below */
		pthread_cond_t done;  /* a fold finished */
		pthread_cond_t tick;  /* stop, or half the journal waiting */
		struct fold_entry *v;
		size_t n, cap;
		uint64_t made, folded; /* mappings made, and folded (counts) */
		bool running;	       /* a fold is moving extents now */
		int last_error;
		uint64_t folds, moves, requests, full;
		uint64_t attempts; /* MOVE requests tried (refuse_moves_after; one at a time) */
		bool refused; /* the last fold was refused (tag limit): fresh chunks fall back */
		uint64_t idle_made; /* made, at the fold thread's last tick */
		unsigned idle_ticks;
		pthread_t timer;
		bool initialised, timer_on, stop;
		/* the journal (disk-format.h); slots 0: none, no extents owned ahead */
		char *recs;
		uint64_t *base_p;
		size_t slots;
		uint64_t base, next; /* records below base are folded; next: the next's seq */
		uint8_t uuid[16];
	} fold;

	struct {
		bool initialised;
		bool on; /* atomic: workers run, writes may stage */
		bool stop;
		pthread_mutex_t lock; /* all below */
		pthread_cond_t work;  /* todo has entries, or stop */
		pthread_cond_t done;  /* a write-back finished: a buffer is free */
		struct wb_pending_list all, todo;
		struct wb_pending *free, *pool;
		uint64_t n_pool, next_seq;
		pthread_t workers[16];
		unsigned n_workers;
		uint64_t errors; /* atomic: failed write-backs so far */
		int last_error;	 /* atomic */
	} wb;
};

/* Connect, claim the disk, create or check its superblock, load the chunk map. */
int disk_open(struct disk *d, const struct disk_config *cfg);
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
 * none); wb_wait() on it makes the write durable (FUA).
 */
int disk_write(struct disk *d, const void *buf, uint32_t count, uint64_t offset, uint64_t *staged);
/*
 * Whole chunks are given back; a partial chunk is zeroed (zero) or left
 * (trim).  fast: -ENOTSUP, and nothing done, when zeros would be written.
 */
int disk_zero(struct disk *d, uint32_t count, uint64_t offset, bool write_zeroes, bool fast);
struct nbdkit_extents;
int disk_extents(struct disk *d, uint32_t count, uint64_t offset, bool req_one,
		 struct nbdkit_extents *e);

/* ---- disk-ahead-batch.c: a refill of n extents in two round trips ---- */
/*
 * *out: a pool tag of up to n extents; 0, -EAGAIN (reconnected: ask
 * again), or -errno with nothing taken (-ENOSPC, -EDQUOT: refused whole).
 */
int disk_ahead_batch(struct disk *d, size_t n, struct pmemz_alloc **out);

/* ---- disk-warm.c: first touch of extents owned ahead, by the refill thread ---- */
/* PROBE: warm=auto, deciding; ON: every 4 KiB page (warm=true); HUGE: one store per 2 MiB */
enum { DISK_WARM_PROBE, DISK_WARM_ON, DISK_WARM_HUGE, DISK_WARM_OFF };
/* Store into each page of a (committed, not yet offered), where that is cheap. */
void disk_warm(struct disk *d, struct pmemz_alloc *a);

/* ---- disk-prewarm.c: the region's mapping faulted in once, by a thread at SCHED_IDLE ---- */
enum { DISK_PREWARM_AUTO, DISK_PREWARM_ON, DISK_PREWARM_OFF };
int disk_prewarm_start(struct disk *d); /* after the fork; 0 also when it could not start */
void disk_prewarm_stop(struct disk *d); /* before the region is unmapped */

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
int disk_spares_init(struct disk *d);
/* Keep lease a of connection gen, or close it (pool full, gen not current). */
void disk_spare_put(struct disk *d, struct pmemz_alloc *a, uint64_t gen);
/* A kept lease of the current connection, or NULL; older ones are dropped. */
struct pmemz_alloc *disk_spare_take(struct disk *d);
void disk_spares_fini(struct disk *d); /* close them all (before the region) */

/* ---- disk-chunk.c: a fresh chunk's extent, for disk-io.c and disk-wb.c ---- */
/*
 * disk-chunk.c: a zeroed extent of one chunk (a lost race's spare first,
 * then the client reserve), leased on connection *gen_out when not NULL;
 * not written before it is committed.  0, or -errno after nbdkit_error().
 */
int disk_chunk_lease(struct disk *d, struct pmemz_alloc **out, uint64_t *gen_out);
int disk_commit_chunk(struct disk *d, uint64_t idx, struct pmemz_alloc *lease,
		      struct pmemz_alloc **out, char **addr);
void disk_publish(struct disk *d, uint64_t idx, struct pmemz_alloc *a, char *p);
int disk_zero_inline(struct disk *d, char *p, size_t len);

/* ---- disk-ahead.c: extents owned ahead (ahead=) ---- */
/*
 * disk_ahead_open frees the ahead tags of a plugin before the journal (they
 * may hold writes whose mapping never became durable; disk-journal.c
 * empties and frees the pool tags) and takes the first extents;
 * disk_ahead_start starts the refill thread (after nbdkit forked).
 */
int disk_ahead_open(struct disk *d);
int disk_ahead_start(struct disk *d);
/* Stop the thread; give every extent still held back (after the last fold). */
void disk_ahead_close(struct disk *d);
static inline bool disk_ahead_on(const struct disk *d)
{
	return d->cfg.ahead >= d->chunk_size && d->cfg.zeroing == DISK_ZEROING_SERVICE;
}
/*
 * A zeroed extent owned ahead into *e; false when none is left (the caller
 * falls back).  wait: when none is left, wait for a refill on its way.
 */
bool disk_ahead_take(struct disk *d, struct ahead_ext *e, bool wait);
/* Give back an extent taken but not written (another request made the chunk). */
void disk_ahead_put(struct disk *d, const struct ahead_ext *e);
/* Extent e is now its chunk's for good (moved): the pool lets go of it. */
void disk_ahead_moved(struct disk *d, const struct ahead_ext *e);
/* Fresh chunks that took an extent owned ahead, and that fell back (none left), so far. */
void disk_ahead_counts(struct disk *d, uint64_t *taken, uint64_t *fallbacks);
/* Bytes owned ahead now: zeroed and waiting, and mapped but not yet moved. */
uint64_t disk_ahead_held(struct disk *d);
/* Forget every pool without freeing its tag (a fold failed: the next open recovers them). */
void disk_ahead_keep_pools(struct disk *d);
/*
 * At open (no thread yet): pool p, whose refs extents the journal still
 * maps, is held until they are folded; its others are never used.
 */
int disk_ahead_adopt(struct disk *d, struct ahead_pool *p);

/* ---- disk-journal.c: the mapping journal ---- */
struct disk_found { /* a chunk present at open, under its own tag */
	uint64_t index;
	char *addr;
	struct pmemz_alloc *a;
};
/* The journal of the superblock at d->super (uuid, slots, base); 0 or -errno, logged. */
int disk_journal_init(struct disk *d);
/*
 * At open, before anything else uses the disk: every chunk the journal
 * maps into one of pools[0..n_pools) moves to its chunk's tag (joining
 * *found), the pools are freed with what is left in them, and the base
 * moves past every record.  Moves refused (the tag limit) leave the rest
 * in the journal, recorded again (disk_journal_rewrite), and their pools
 * adopted.  Consumes the pool handles.  0 or -errno, logged.
 */
int disk_journal_recover(struct disk *d, struct pmemz_alloc **pools, size_t n_pools,
			 struct disk_found **found, size_t *n, size_t *cap);
/* Record seq: chunk idx in the extent at addr (fold.lock held; not drained). */
int disk_journal_write(struct disk *d, uint64_t seq, uint64_t idx, const char *addr);
/* Records below base are folded: one 8-byte store, persisted. */
int disk_journal_set_base(struct disk *d, uint64_t base);
/*
 * After a fold or recovery moved chunks of v[0..n) to their tags: the
 * unmoved ones (out NULL; none when all moved) recorded again from
 * fold.next on, then the base to cut, so that no record of a moved chunk
 * outlives the move (fold.lock held while a fold thread may run).  0; 1
 * when they do not fit beside the records at and above the base (nothing
 * changed); or -errno.
 */
int disk_journal_rewrite(struct disk *d, const struct fold_entry *v, size_t n, uint64_t cut);
/* Moves in one MOVE request at most (PMEMZ_BATCH_MOVES_MAX, or fewer in tests). */
size_t disk_journal_moves_max(void);
/* Is the next MOVE request to be refused as by the tag limit (tests only)? */
bool disk_journal_refuse_move(struct disk *d);

/* ---- disk-fold.c: the journal's mappings into chunk tags ---- */
int disk_fold_init(struct disk *d);
int disk_fold_start(struct disk *d); /* the fold thread (after nbdkit forked) */
/* Stop the thread and fold every mapping (disk_close). */
void disk_fold_stop(struct disk *d);
/*
 * Chunk idx now lives in e (stripe write lock held): its record goes into
 * the journal, durable at the caller's drain; its move to the chunk's tag
 * waits for the next fold.  -ENOSPC: the journal is full until that fold
 * (the caller falls back and e stays unwritten).
 */
int disk_map_add(struct disk *d, uint64_t idx, const struct ahead_ext *e);
/*
 * Move every chunk recorded before the call to its chunk's tag: one MOVE
 * request per PMEMZ_BATCH_MOVES_MAX of them, all sent before any answer is
 * waited for; then the journal's base past them.  0, or -errno after
 * nbdkit_error() (the mappings stay in the journal and queued).
 */
int disk_fold(struct disk *d);
/* The totals line (nbdkit -v) after what: scripts/bench-disk reads it at each FLUSH. */
void disk_fold_debug(struct disk *d, const char *what);
static inline bool disk_fold_pending(struct disk *d)
{
	return __atomic_load_n(&d->fold.made, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&d->fold.folded, __ATOMIC_ACQUIRE);
}

/* ---- disk-wb.c: write-back of fresh chunks ---- */
int wb_init(struct disk *d);  /* the buffers (disk_open) */
int wb_start(struct disk *d); /* the workers (after nbdkit forked) */
void wb_stop(struct disk *d); /* finish the queue, stop the workers, free */
static inline bool wb_on(struct disk *d)
{
	return __atomic_load_n(&d->wb.on, __ATOMIC_ACQUIRE);
}
/* A free buffer; waits for one. */
struct wb_pending *wb_get(struct disk *d);
void wb_put(struct disk *d, struct wb_pending *pd);
/* Queue pd as chunk idx's write-back of lease (stripe write lock held): its seq. */
uint64_t wb_submit(struct disk *d, struct wb_pending *pd, uint64_t idx, struct pmemz_alloc *lease);
uint64_t wb_seq(const struct wb_pending *pd);
/* Wait for the write-backs queued up to seq (UINT64_MAX: all queued now). */
void wb_wait(struct disk *d, uint64_t seq);
/* Bytes of a chunk being written back (stage: stripe write lock; read: read lock). */
void wb_stage(struct disk *d, struct wb_pending *pd, uint64_t off, const void *src, uint64_t len);
void wb_read(struct disk *d, const struct wb_pending *pd, uint64_t off, void *dst, uint64_t len);
/* Forget what was staged: the chunk reads zero (stripe write lock held). */
void wb_discard(struct disk *d, struct wb_pending *pd);

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
