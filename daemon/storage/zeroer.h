/* SPDX-License-Identifier: MIT */
/*
 * The zeroer worker pool of one region.  The main loop submits batches of
 * DIRTY extents; a worker zeroes each extent with non-temporal stores
 * (pstore_zero_nt, no drain), issues ONE pstore_drain() for the batch, puts
 * it on the done queue and makes the eventfd readable.  Workers touch only
 * the data ranges of their batch (through pstore) and the queues; every
 * state change is the main loop's (region_zeroer_collect in region-zeroer.c).
 *
 * Hand-back: while an allocation waits (urgent), a worker fences
 * each extent as soon as it is zeroed, publishes it in the batch's
 * `durable` count and makes the eventfd readable, so the main loop can
 * store it ZEROED and serve the waiter at once instead of after the whole
 * batch (Xen's scrubber hands a chunk back after any page).  One fence per
 * extent while someone waits, one per batch otherwise.
 *
 * Workers run at SCHED_IDLE (else nice 19), pinned to the region's NUMA
 * node when known, and share one token bucket of `rate` bytes/s.  Urgent
 * (allocations wait): no rate limit, and normal priority where the process
 * may raise it (from the next batch on).  Pausing hands every unfinished batch back promptly:
 * queued ones untouched, running ones after the current chunk (done < n, still drained).
 */
#ifndef PMEMZ_ZEROER_H
#define PMEMZ_ZEROER_H

#include <stdbool.h>
#include <stdint.h>

#include "pstore.h"

struct zbatch {
	struct zbatch *next; /* the pool's queues */
	uint32_t n;	     /* extents in ext[] */
	uint32_t done;	     /* finished batch: ext[0..done) are zero and drained */
	/*
	 * ext[0..durable) are zero and fenced while the batch still runs:
	 * written by the worker (release) after its drain, read by the main
	 * loop (acquire); never more than done once finished.
	 */
	uint32_t durable;
	bool ran;	  /* a worker took it (and drained once) */
	uint32_t fences;  /* drains the worker issued for it */
	uint64_t busy_ns; /* time spent storing + draining */
	/* The submitter's (main loop) own, untouched by the pool: */
	uint32_t taken;		  /* ext[0..taken) already collected */
	struct zbatch *live_next; /* the submitter's list of batches out */
	uint64_t ext[];		  /* extent indices */
};

struct zeroer_params {
	const char *name; /* region name, for messages */
	struct pstore *ps;
	uint8_t *data; /* address of extent 0 */
	uint64_t extent_size;
	uint64_t extent_count;
	unsigned threads;
	uint64_t rate; /* bytes per second, 0 = unlimited */
	int numa_node; /* -1: unknown */
	/*
	 * Map each chunk's pages in one madvise(MADV_POPULATE_WRITE) before
	 * storing to it: on a file region of small pages the first stores
	 * otherwise take one fault per 4 KiB page (most of a cold extent's
	 * time).  Only the first time an extent is zeroed through this
	 * mapping: on tmpfs the madvise walks every page even when mapped (a
	 * warm 4 GiB pass took 0.52-0.68 s with it, against 0.30-0.38 s of
	 * plain NT stores).  Off for device-DAX (huge pages, no such madvise).
	 */
	bool prefault;
};

struct zeroer;

/* Starts the threads.  Logs its failures. */
int zeroer_new(const struct zeroer_params *p, struct zeroer **out);
/* Stops (abandoning queued work: it stays DIRTY), joins, frees every batch. */
void zeroer_free(struct zeroer *z);

int zeroer_fd(const struct zeroer *z);
void zeroer_submit(struct zeroer *z, struct zbatch *b);
/*
 * Reads the eventfd and returns the finished batches (a list), or NULL.
 * The eventfd is also made readable when a running batch's `durable`
 * grows (hand-back): the caller then reads `durable` of the batches it
 * has out, which stay valid until they come back through this call.
 */
struct zbatch *zeroer_take_done(struct zeroer *z);

void zeroer_set_paused(struct zeroer *z, bool paused);
/* The only record of the pause: workers read it under the pool's lock. */
bool zeroer_paused(struct zeroer *z);
void zeroer_set_urgent(struct zeroer *z, bool urgent);
/* The adaptive policy: pace (bytes/s, 0 = none) and rest (IDLE), both lifted while urgent. */
void zeroer_set_policy(struct zeroer *z, uint64_t pace_rate, bool resting);
bool zeroer_urgent(struct zeroer *z);
/* Extents the first waiter still lacks (0: unknown): the hand-back group is n / threads, >= 1. */
void zeroer_set_need(struct zeroer *z, uint64_t n);
void zeroer_set_rate(struct zeroer *z, uint64_t bytes_per_sec);
/*
 * Run n workers (1..CONF_MAX_ZEROER_THREADS): start more, or stop and join
 * the extra ones (a batch one was zeroing comes back unfinished, as on a
 * pause).  On failure the count is unchanged and the error logged.
 */
int zeroer_set_threads(struct zeroer *z, unsigned n);

#endif
