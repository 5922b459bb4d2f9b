/* SPDX-License-Identifier: MIT */
/*
 * pmsim: a simulated persistence domain for the crash tests.
 *
 * Installed as the pstore tracer of a region's mapping, it keeps a shadow
 * "durable image" of the region next to the live mapping:
 *
 *   store   the bytes written are captured (from the live mapping, right
 *           after the store; all-zero stores keep no copy) and recorded as
 *           pending, tagged with the storing thread;
 *   flush   every pending store overlapping the flushed range (widened to
 *           whole 64-byte cache lines) is marked flushed *by the calling
 *           thread* (a store partly inside is split);
 *   drain   the calling thread's flushed stores are applied to the durable
 *           image in program order and forgotten (libpmem2's contract: a
 *           drain fences only the calling thread's flushes).
 *
 * Stores never flushed, or flushed but not yet drained, are not guaranteed
 * durable, but may be (cache eviction, write-combining buffers draining).
 * Cutting power at drain N (before it takes effect) therefore leaves the
 * durable image plus, for every pending store in program order and every
 * aligned 8-byte unit it covers, that unit kept or dropped independently:
 * pmsim_image() builds one such media image per seed.
 *
 * Thread-safe: callbacks come from the main thread and zeroer threads.
 */
#ifndef PMEMZ_TEST_PMSIM_H
#define PMEMZ_TEST_PMSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pstore.h"

struct pmsim;

/* A simulator for a mapping of size bytes; the durable image starts all zero. */
struct pmsim *pmsim_new(uint64_t size);
void pmsim_free(struct pmsim *s);

/*
 * Forget everything: durable image = initial (size bytes) or all zero when
 * NULL, nothing pending, no cut armed, counters zero.  The traced mapping
 * is forgotten without being touched (it may be unmapped already): a
 * mapping still alive must be pmsim_detach()ed first.
 */
void pmsim_reset(struct pmsim *s, const void *initial);

/*
 * Trace a mapping (its size must be the simulator's) / stop tracing it
 * (before the mapping is unmapped; after a cut, events are ignored anyway).
 */
void pmsim_attach(struct pmsim *s, struct pstore *ps);
void pmsim_detach(struct pmsim *s);

/*
 * Cut power when the cut_at-th drain (1-based) is issued, before it takes
 * effect; later events are ignored.  0 = never.  With only_tid, only that
 * thread's drains are counted (the others still take effect).
 */
void pmsim_arm(struct pmsim *s, uint64_t cut_at, pid_t only_tid);
bool pmsim_cut(const struct pmsim *s);
/* Drains counted so far (including the cut one). */
uint64_t pmsim_drains(const struct pmsim *s);
/*
 * Fingerprint of the event sequence so far (offsets, lengths, kinds and
 * whether the main thread issued them): equal in two runs that did the
 * same thing.  main_tid: the thread called "main" in it.
 */
uint64_t pmsim_fingerprint(const struct pmsim *s);
void pmsim_set_main(struct pmsim *s, pid_t main_tid);
/*
 * Fingerprints at every counted drain, recorded into log[0..cap) (log[k] is
 * the one at drain k+1, taken before it took effect).  NULL stops logging.
 */
void pmsim_log_fingerprints(struct pmsim *s, uint64_t *log, size_t cap);

/* Stores pending now (un-drained), and their bytes. */
size_t pmsim_pending(const struct pmsim *s, uint64_t *bytes);

/*
 * The media after the cut (or now, when no cut happened): durable image plus
 * each pending 8-byte unit kept or dropped.  seed 0: all dropped, seed 1:
 * all kept, other seeds: random (probability of keeping 1/2, 1/8 or 7/8 by
 * seed).  out: size bytes.
 */
void pmsim_image(const struct pmsim *s, uint64_t seed, void *out);

/* The durable image (what is certain to survive). */
const uint8_t *pmsim_durable(const struct pmsim *s);
/*
 * Would [off, off+len) read zero after a power failure now, whatever the
 * cache did?  (Durable image zero there, and no pending non-zero store.)
 */
bool pmsim_surely_zero(const struct pmsim *s, uint64_t off, uint64_t len);

/*
 * The test wrote [p, p+len) of the traced mapping directly (as a client does
 * through its own mapping): record it as a store of the calling thread.
 */
void pmsim_note_store(struct pmsim *s, const void *p, size_t len);

/* The Linux thread id of the caller. */
pid_t pmsim_gettid(void);

/*
 * Trace every mapping pstore_open() creates from now on (the test program
 * links with -Wl,--wrap=pstore_open), e.g. to see region_open()'s format and
 * recovery.  NULL stops it.
 */
void pmsim_trace_next_opens(struct pmsim *s);

#endif
