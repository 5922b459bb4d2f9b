/* SPDX-License-Identifier: MIT */
/*
 * pstore: the one module through which every store to a region's pmem goes.
 *
 * It wraps a libpmem2 mapping and offers exactly the primitives the daemon
 * needs: an 8-byte failure-atomic store, a copy (stores + flush), a
 * non-temporal zero (stores that bypass the cache, no drain), flush, drain
 * and deep flush.  Nothing else in the daemon writes to the mapping.
 *
 * Ordering contract (libpmem2's): a store is durable once it has been
 * flushed (pstore_flush, or implicitly by pstore_memcpy / pstore_zero_nt) and
 * a later pstore_drain() *on the same thread* has returned.  A drain only
 * fences the calling thread's flushes: the zeroer threads drain their own
 * batches.
 *
 * Tracing: a test build may install a tracer (pstore_set_tracer) that sees
 * every store, flush and drain after it happened, e.g. to keep a shadow
 * "durable image" and simulate a power failure by discarding what was not
 * drained.  In production the tracer is NULL and costs one predictable
 * branch per call.  Tracer callbacks are invoked from the main loop *and*
 * from zeroer threads, so they must be thread-safe.
 */
#ifndef PMEMZ_PSTORE_H
#define PMEMZ_PSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpmem2.h>

#include "media.h"

struct pstore;

struct pstore_tracer {
	/* [dst, dst+len) was written (cached, or non-temporal when nt). */
	void (*store)(void *ctx, const void *dst, size_t len, bool nt);
	/* [p, p+len) was flushed (not yet fenced). */
	void (*flush)(void *ctx, const void *p, size_t len);
	/* The calling thread's flushed stores are now durable. */
	void (*drain)(void *ctx);
	void *ctx;
};

/*
 * A bad range of the mapping (bytes from its start) is the media module's
 * struct media_badblock: the rules that skip bad ranges live there.
 */
#define pstore_badblock media_badblock

/*
 * Map [0, size) of fd with libpmem2 (shared, read-write, granularity PAGE
 * required, so any file works).  name is used in log messages; failures are
 * logged here (with pmem2_errormsg()).
 */
int pstore_open(int fd, uint64_t size, const char *name, struct pstore **out);
void pstore_close(struct pstore *ps);

void *pstore_base(const struct pstore *ps);
uint64_t pstore_size(const struct pstore *ps);
const char *pstore_granularity_name(const struct pstore *ps); /* "byte", "cache_line", "page" */
/* libpmem2's alignment for the source (page size for files); 0 if unknown. */
uint64_t pstore_source_alignment(const struct pstore *ps);
/* NUMA node of the source, or -1 when libpmem2 cannot tell (files). */
int pstore_numa_node(const struct pstore *ps);

/*
 * Has the mapping failed?  A SIGBUS inside it (the file was truncated or
 * hole-punched under the daemon, or a media error) or a refused store
 * (outside the mapping, misaligned) fails it for good: from then on loads
 * read zeroes, stores land in anonymous memory, and nothing is durable.  The
 * owner must check this before it persists a state that attests earlier
 * stores (I5) and take the region offline.  *off (may be NULL): offset of
 * the first fault, UINT64_MAX when outside the mapping.
 */
bool pstore_failed(const struct pstore *ps, uint64_t *off);

/* Install (or with NULL remove) a tracer; may be called while zeroer threads run. */
void pstore_set_tracer(struct pstore *ps, const struct pstore_tracer *t);

/* One aligned 8-byte store: the failure-atomic unit.  Not flushed. */
void pstore_store64(struct pstore *ps, uint64_t *dst, uint64_t v);
/* Copy to pmem and flush; no drain. */
void pstore_memcpy(struct pstore *ps, void *dst, const void *src, size_t len);
/* Zero with non-temporal stores (flushed, never PMEM2_F_MEM_NOFLUSH); no drain. */
void pstore_zero_nt(struct pstore *ps, void *dst, size_t len);
void pstore_flush(struct pstore *ps, const void *p, size_t len);
void pstore_drain(struct pstore *ps);
/* pmem2_deep_flush(): also the memory controller's write-pending queues. */
int pstore_deep_flush(struct pstore *ps, void *p, size_t len);

/*
 * Bad blocks libpmem2 reports for the source (sorted as reported).
 * -ENOTSUP when the source cannot tell (e.g. a file on a non-pmem fs).
 * *out is malloc'ed (NULL when there are none).
 */
int pstore_badblocks(struct pstore *ps, struct pstore_badblock **out, size_t *n);

/* A libpmem2 return code as a negative errno. */
int pstore_errno(int pmem2_ret);

#endif
