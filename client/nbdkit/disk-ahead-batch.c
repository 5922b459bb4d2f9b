/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: a refill of many extents owned ahead in two round
 * trips, whatever their number.
 *
 * A refill out of the client reserve takes what the reserve has answered
 * already, and in a burst of fresh chunks that is two or three extents:
 * a refill a few chunks, with one ALLOCATE and one COMMIT per extent for
 * pmemzerod to serve, on the CPUs the writes want.  This one asks for all
 * of them at once:
 *   1. one ALLOCATE of n extents (a lease, never written before step 2;
 *      PMEMZ_ALLOC_DIRECT: the client reserve keeps its one-extent leases
 *      for the fallback, instead of giving them back to move to n);
 *   2. one COMMIT of the lease under a pool tag (nbd/D/pool/SEQ).
 * Fresh chunks then take its extents one by one, each mapped by a journal
 * record (disk-journal.c): no request per extent until the fold.  A
 * refusal (-ENOSPC, -EDQUOT: the uid's quota or tag limit) gives back what
 * was taken and returns it, and the caller asks again one extent at a
 * time, so that a limit near reach still yields what fits.
 */
#include <errno.h>
#include <inttypes.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"

/* Whole extents of the region's size, at least two: what a batch must be. */
static bool whole_extents(const struct disk *d, struct pmemz_alloc *a)
{
	size_t n = pmemz_alloc_count(a), total = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = 0;

		if (!pmemz_alloc_range(a, i, &len) || len % d->chunk_size)
			return false;
		total += len / d->chunk_size;
	}
	return total >= 2;
}

int disk_ahead_batch(struct disk *d, size_t n, uint64_t seq, struct pmemz_alloc **out)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	struct pmemz_alloc *a = NULL;
	uint64_t gen = disk_gen(d);
	int r;

	if (n > DISK_AHEAD_BATCH)
		n = DISK_AHEAD_BATCH;
	r = pmemz_alloc_new(d->r, n * d->chunk_size, PMEMZ_ALLOC_DIRECT, &a);
	if (r < 0) {
		if (disk_conn_lost(r) && disk_reconnect(d, gen) == 0)
			return -EAGAIN;
		return r;
	}
	if (!whole_extents(d, a)) {
		pmemz_alloc_close(a); /* not what was asked for: the one-by-one path does it */
		return -EINVAL;
	}
	r = pmemz_disk_pool_tag(tag, sizeof(tag), d->cfg.name, seq);
	if (r == 0)
		r = pmemz_alloc_commit(a, tag, 0);
	if (r == 0) {
		*out = a;
		return 0;
	}
	pmemz_alloc_close(a); /* a lease: it goes back (or died with the connection) */
	if (!disk_conn_lost(r))
		return r;
	if (disk_reconnect(d, gen) < 0)
		return -EAGAIN;
	/* committed or not, the answer was lost: the tag tells, and it is never written */
	a = NULL;
	if (pmemz_alloc_open(d->r, tag, &a) == 0 && pmemz_alloc_release(a) < 0)
		nbdkit_debug("pmemz: pool tag '%s' stays until the next start: %s", tag,
			     pmemz_errormsg());
	return -EAGAIN;
}
