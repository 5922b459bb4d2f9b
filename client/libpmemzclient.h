/* SPDX-License-Identifier: MIT */
/*
 * libpmemzclient — get pre-zeroed, durable persistent-memory extents from
 * pmemzerod.
 *
 * Every function returning int returns 0 or a negative errno value;
 * pmemz_errormsg() then describes the last failure of the calling thread.
 * Handles are opaque.  One struct pmemz_client may be used from several
 * threads at once; the region and allocation handles derived from it share
 * its lock.
 *
 *   struct pmemz_client *c;  struct pmemz_region *r;  struct pmemz_alloc *a;
 *   pmemz_client_new(NULL, &c);
 *   pmemz_region_open(c, "default", &r);
 *   pmemz_alloc_new(r, 8 << 20, 0, &a);          // already zero and durable
 *   void *p = pmemz_alloc_range(a, 0, &len);     // write into it ...
 *   pmemz_persist(r, p, len);
 *   pmemz_alloc_commit(a, "mydata", 0);          // survives crashes/restarts
 *   pmemz_alloc_close(a);
 *   ...after a restart: pmemz_alloc_open(r, "mydata", &a);
 */
#ifndef LIBPMEMZCLIENT_H
#define LIBPMEMZCLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PMEMZ_CLIENT_MAJOR, _MINOR, _PATCH and the string PMEMZ_CLIENT_VERSION */
#include "libpmemzclient-version.h"

/* Environment variable naming the daemon socket when the path is NULL. */
#define PMEMZ_SOCKET_ENV "PMEMZ_SOCKET"

struct pmemz_client;
struct pmemz_region;
struct pmemz_alloc;

/* pmemz_alloc_new flags */
#define PMEMZ_ALLOC_NOWAIT (1u << 0) /* fail with -EAGAIN instead of waiting for zeroing */
/*
 * Since 1.6 (earlier libraries refuse it with -EINVAL): an ALLOCATE of its
 * own, neither served by the reserve nor taken as a sign of the size the
 * reserve should hold (pmemz_region_set_reserve): for an occasional large
 * allocation next to a reserve of small ones.
 */
#define PMEMZ_ALLOC_DIRECT (1u << 1)

/* pmemz_alloc_commit flags */
#define PMEMZ_COMMIT_FLUSH (1u << 0) /* daemon flushes the data before committing */

/* pmemz_flush flags */
#define PMEMZ_FLUSH_DEEP (1u << 0) /* also drain the memory controller queues */

/* pmemz_memcpy flags (since 1.3) */
#define PMEMZ_MEM_NODRAIN (1u << 0) /* leave the drain to a later pmemz_drain() */

/* Last error message of this thread ("" when none). */
const char *pmemz_errormsg(void);

/*
 * The library that is loaded, which may not be the one the program was
 * built against (since 1.7).  pmemz_check_version: NULL when it serves a
 * program built against major_required.minor_required (the same major, at
 * least that minor); else why not, a message that is also the thread's
 * pmemz_errormsg().  Call it with PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR,
 * or the oldest version whose features the program uses.
 * pmemz_library_version: "MAJOR.MINOR.PATCH".
 */
const char *pmemz_check_version(unsigned major_required, unsigned minor_required);
const char *pmemz_library_version(void);

/*
 * Connect to the daemon.  socket_path NULL: $PMEMZ_SOCKET, then
 * /run/pmemzerod/pmemzerod.sock when it exists (the system daemon), then the
 * per-user daemon's $XDG_RUNTIME_DIR/pmemzerod/pmemzerod.sock
 * (/tmp/pmemzerod-UID/pmemzerod.sock without XDG_RUNTIME_DIR).
 */
int pmemz_client_new(const char *socket_path, struct pmemz_client **out);
/* Closes the connection; the daemon releases uncommitted leases. */
void pmemz_client_free(struct pmemz_client *c);

/*
 * Connect again (since 1.2), after the daemon restarted or the connection
 * broke: calls then fail with -ECONNRESET (those under way, or the first
 * to find the socket closed) and then -ENOTCONN, until this is called.
 * Connects to the same socket as before and re-opens every region of the
 * client in place: region handles, their mappings and the addresses of
 * committed allocations stay valid.  What the daemon had not committed is
 * gone: the leases of the old connection were released (their handles'
 * pmemz_alloc_commit fails with -ESTALE, pmemz_alloc_release and _close
 * just drop them) and the allocation reserve refills.  Committed tags are
 * found again with pmemz_alloc_open.  A region the daemon no longer serves
 * under its name, or serves with another uuid (re-formatted), turns stale:
 * its calls fail with -ESTALE and it keeps its old mapping until it is
 * closed.  Returns 0; -ESTALE when the connection is back but a region
 * turned stale (the message names it); a connection error (e.g.
 * -ECONNREFUSED, -ENOENT while the daemon is not back yet) when it is not,
 * and the call may be repeated.  Calls of other threads that are under way
 * fail with -ECONNRESET.
 */
int pmemz_client_reconnect(struct pmemz_client *c);

/* Open a region by name and map it read-write (libpmem2). */
int pmemz_region_open(struct pmemz_client *c, const char *name, struct pmemz_region **out);
void pmemz_region_close(struct pmemz_region *r);
size_t pmemz_region_extent_size(const struct pmemz_region *r);
size_t pmemz_region_size(const struct pmemz_region *r);
/* Base address of the whole region mapping. */
void *pmemz_region_address(const struct pmemz_region *r);

/*
 * Allocation reserve (since 1.1; off by default).  Keep zeroed extents
 * leased ahead of need for this region handle: pipelined ALLOCATE requests
 * are sent ahead and the ones pmemz_alloc_new() takes are replaced
 * asynchronously, in batches, so an allocation of the reserve's size waits
 * for no daemon round trip.  The reserve is made of leases of one
 * allocation size: one extent at first, then the size of two allocations
 * in a row that it could not serve (other sizes go to the daemon as
 * before).
 *
 * Depth (adaptive since 1.3): `bytes` is the floor, DIV_ROUND_UP(bytes,
 * that size) leases (at most 128).  When the daemon answers slower than
 * the caller allocates (an allocation had to wait for a refill, or answers
 * take longer than the reserve covers), the reserve deepens itself to
 * about twice the leases the caller uses up while a refill is answered --
 * doubling each time it runs dry -- up to a hard cap: 8 x the floor,
 * 256 MiB, an eighth of the region and 128 leases, whichever is least
 * (never below the floor).  It sinks back to the floor slowly once the
 * answers are prompt again.  A refill refused for the uid's quota
 * (-EDQUOT) or the region's space (-ENOSPC) halves the grown depth and
 * keeps it at most that until the next pmemz_region_set_reserve(); refills
 * stop until an allocation the caller makes itself succeeds, and that
 * allocation reports the error.  Cost: up to the cap (plus one allocation)
 * held by this client, out of others' reach, counted as leased and against
 * the uid's quota.  Setting it again (also after 0) starts the depth over
 * at the new floor, or deeper if the latency seen so far asks for it.
 * 0 turns it off and gives every lease back (grown ones too), as
 * pmemz_region_close() does; after pmemz_client_free() the daemon releases
 * them with the connection.  Threads allocating on one handle share it.
 * -EINVAL when bytes exceed the region.
 */
int pmemz_region_set_reserve(struct pmemz_region *r, size_t bytes);

/*
 * Lease at least `bytes` (rounded up to whole extents) of zeroed, durable
 * space.  Waits for background zeroing unless PMEMZ_ALLOC_NOWAIT (-EAGAIN);
 * -ENOSPC when the region cannot hold it.
 */
int pmemz_alloc_new(struct pmemz_region *r, size_t bytes, unsigned flags,
		    struct pmemz_alloc **out);
/* The allocation is a list of contiguous ranges. */
size_t pmemz_alloc_count(const struct pmemz_alloc *a);
void *pmemz_alloc_range(const struct pmemz_alloc *a, size_t i, size_t *len);
size_t pmemz_alloc_size(const struct pmemz_alloc *a);

/* Turn the lease into a named, durable allocation owned by the caller's uid. */
int pmemz_alloc_commit(struct pmemz_alloc *a, const char *tag, unsigned flags);
/* Find a committed tag of the caller's uid (e.g. after the application restarted). */
int pmemz_alloc_open(struct pmemz_region *r, const char *tag, struct pmemz_alloc **out);
/* Free the space (lease or tag) and the handle; the handle is gone even on error. */
int pmemz_alloc_release(struct pmemz_alloc *a);
/* Drop the handle only; an uncommitted lease is released, a committed tag stays. */
void pmemz_alloc_close(struct pmemz_alloc *a);

/* Make [addr, addr+len) of the caller's mapping durable (local, no RPC). */
int pmemz_persist(struct pmemz_region *r, const void *addr, size_t len);
/*
 * Ask the daemon to flush [addr, addr+len) (PMEMZ_FLUSH_DEEP: deep flush);
 * only the caller's own extents (its leases, its uid's tags): else -EPERM.
 */
int pmemz_flush(struct pmemz_region *r, const void *addr, size_t len, unsigned flags);

/*
 * Exclusive named claims (since 1.3).  Claim `name` in region r for this
 * connection: the daemon keeps one holder per (region, uid, name), and
 * releases the claim when the holder calls pmemz_region_unclaim, closes
 * the region handle, or its connection closes (exit, crash, kill -9), so
 * a claim never outlives its process.  Claims are volatile: a restarted
 * daemon holds none, and pmemz_client_reconnect takes the region's claims
 * again (failing with -EBUSY when another connection took one meanwhile).
 * Returns 0 (also when this connection already holds it); -EBUSY when
 * another connection holds it (the message names the holder's pid);
 * -EINVAL for an empty name or one longer than 63 bytes; -EMFILE past the
 * daemon's limit of claims per connection.
 */
int pmemz_region_claim(struct pmemz_region *r, const char *name);
/* Give a claim back; -ENOENT when this connection does not hold it. */
int pmemz_region_unclaim(struct pmemz_region *r, const char *name);

/*
 * Walk the caller's committed tags in r whose names start with prefix
 * ("" or NULL: all of them), any number of them (since 1.3).  fn gets
 * each as an allocation handle, as pmemz_alloc_open() would return it,
 * and owns it (pmemz_alloc_close() it, or keep it).  A non-zero return of
 * fn stops the walk and is returned.  Tags committed or freed during the
 * walk may or may not be seen; every tag that exists throughout is seen
 * exactly once.
 */
int pmemz_tag_foreach(struct pmemz_region *r, const char *prefix,
		      int (*fn)(struct pmemz_alloc *a, const char *tag, void *arg), void *arg);

/* The tag of a committed allocation; NULL for a lease (since 1.3). */
const char *pmemz_alloc_tag(const struct pmemz_alloc *a);

/*
 * Copy len bytes from src into r's mapping at dst with libpmem2 (since
 * 1.3): non-temporal stores where the mapping is pmem, then a drain, so
 * the bytes are durable on return; PMEMZ_MEM_NODRAIN skips the drain
 * (call pmemz_drain() before relying on them: it orders only the calling
 * thread's stores).  -EFAULT when [dst, dst+len) is outside the mapping.
 */
int pmemz_memcpy(struct pmemz_region *r, void *dst, const void *src, size_t len, unsigned flags);
/* Wait for the calling thread's earlier pmemz_memcpy(NODRAIN) stores to be durable. */
void pmemz_drain(struct pmemz_region *r);

/*
 * Batches (since 1.4): commits and moves sent together, without blocking.
 * Queue entries with pmemz_batch_commit and pmemz_batch_move, send them
 * all in one write with pmemz_batch_submit (which returns at once), then
 * pmemz_batch_wait for the answers or pmemz_batch_poll for them.  The
 * daemon handles the whole batch in one loop iteration, so every entry
 * shares one group commit (one set of drains) and one round trip.
 *
 * What is atomic:
 *  - the moves of one batch are one MOVE request: after a crash at any
 *    instant, either all of them happened or none did;
 *  - each commit succeeds or fails on its own, as pmemz_alloc_commit
 *    would (a batch's commits are pipelined COMMIT requests).
 *
 * A batch is used once: entries may be queued until it is submitted.
 * Its handles (the leases and allocations named in it) must stay open
 * until it is answered.  Not thread-safe per batch; batches of different
 * threads may run at once on one region.
 */
struct pmemz_batch;

#define PMEMZ_BATCH_MOVES_MAX 256 /* moves in one batch (one MOVE request) */

int pmemz_batch_new(struct pmemz_region *r, struct pmemz_batch **out);
/*
 * Queue a commit of lease a under tag (flags as pmemz_alloc_commit).  Once
 * the batch is answered, a is the committed allocation when the entry
 * succeeded (pmemz_batch_status), and still a lease otherwise.
 */
int pmemz_batch_commit(struct pmemz_batch *b, struct pmemz_alloc *a, const char *tag,
		       unsigned flags);
/*
 * Queue a move of one extent, the one that starts at addr, of the
 * committed allocation from, to the new tag `tag` of the caller's uid.
 * When the batch succeeds, *out (if not NULL) is set to a handle for the
 * new tag (one extent), and the extent leaves from's ranges; a from left
 * with no extent is a handle of nothing (its tag is gone).  -EINVAL when
 * addr is not the start of one of from's extents, or from is a lease;
 * -E2BIG past PMEMZ_BATCH_MOVES_MAX moves.
 */
int pmemz_batch_move(struct pmemz_batch *b, struct pmemz_alloc *from, void *addr, const char *tag,
		     struct pmemz_alloc **out);
/* Entries queued so far. */
size_t pmemz_batch_count(const struct pmemz_batch *b);
/* Send every queued entry in one write, without waiting; -EALREADY when submitted before. */
int pmemz_batch_submit(struct pmemz_batch *b);
/*
 * Wait for every answer: 0 when every entry succeeded, else the first
 * failure (-errno, message set).  A batch that was not submitted yet is
 * submitted first.
 */
int pmemz_batch_wait(struct pmemz_batch *b);
/* Never blocks: -EINPROGRESS while answers are missing, else as pmemz_batch_wait. */
int pmemz_batch_poll(struct pmemz_batch *b);
/* Entry i's own result (in the order queued): 0, -errno, or -EINPROGRESS. */
int pmemz_batch_status(const struct pmemz_batch *b, size_t i);
/* Waits for a submitted batch's answers first, then frees it (not its handles). */
void pmemz_batch_free(struct pmemz_batch *b);

#ifdef __cplusplus
}
#endif
#endif
