/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: a refill of many extents owned ahead in three
 * round trips, whatever their number.
 *
 * A refill out of the client reserve takes what the reserve has answered
 * already, and in a burst of fresh chunks that is two or three extents:
 * a refill a few chunks, with one ALLOCATE and one COMMIT per extent for
 * pmemzerod to serve, on the CPUs the writes want.  This one asks for all
 * of them at once:
 *   1. one ALLOCATE of n extents (a lease, never written before step 2;
 *      PMEMZ_ALLOC_DIRECT: the client reserve keeps its one-extent leases
 *      for the fallback, instead of giving them back to move to n);
 *   2. one COMMIT of the lease under the first ahead tag (nbd/D/ahead/SEQ);
 *   3. one MOVE of the other n - 1 extents, each to its own ahead tag
 *      (SEQ+1 ...), so that each extent has its own tag as before
 *      (disk-ahead.c says why: the uid's tag limit is met here, never at
 *      a sync point).
 * A crash between 2 and 3 leaves one ahead tag of n extents, never
 * written: the next open frees it, as every ahead tag it finds.  The MOVE
 * is all or nothing.  A refusal (-ENOSPC, -EDQUOT: the uid's quota or tag
 * limit) gives back what was taken and returns it, and the caller asks
 * again one extent at a time, so that a limit near reach still yields what
 * fits.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"

/* The extents of lease a, in chunk_size steps: their number, at most max. */
static size_t extents_of(const struct disk *d, struct pmemz_alloc *a, char **addr, size_t max)
{
	size_t n = pmemz_alloc_count(a), k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		char *base = pmemz_alloc_range(a, i, &len);

		for (size_t off = 0; off + d->chunk_size <= len && k < max; off += d->chunk_size)
			addr[k++] = base + off;
	}
	return k;
}

/* Free ahead tag `tag` if it exists (after a lost answer); the connection is new. */
static void drop_tag(struct disk *d, const char *tag)
{
	struct pmemz_alloc *a = NULL;

	if (pmemz_alloc_open(d->r, tag, &a) == 0 && pmemz_alloc_release(a) < 0)
		nbdkit_debug("pmemz: ahead tag '%s' stays until the next start: %s", tag,
			     pmemz_errormsg());
}

/*
 * The MOVE's answer was lost with the connection: it happened whole or
 * not at all, and tag 1 tells which.  Whole: v[] gets every tag again.
 */
static int settle_moves(struct disk *d, char (*tags)[PMEMZ_DISK_TAG_MAX], size_t k,
			struct pmemz_alloc **v, size_t *got)
{
	struct pmemz_alloc *probe = NULL;

	if (pmemz_alloc_open(d->r, tags[1], &probe) < 0) {
		drop_tag(d, tags[0]); /* not moved: the lot goes back */
		return -EAGAIN;
	}
	pmemz_alloc_close(probe);
	for (size_t i = 0; i < k; i++)
		if (pmemz_alloc_open(d->r, tags[i], &v[*got]) == 0)
			(*got)++;
	return *got ? 0 : -EAGAIN;
}

/* Steps 2 and 3 for lease a of k extents at addr[] (k >= 2). */
static int commit_split(struct disk *d, struct pmemz_alloc *a, char **addr, size_t k,
			char (*tags)[PMEMZ_DISK_TAG_MAX], struct pmemz_alloc **v, size_t *got)
{
	struct pmemz_batch *b = NULL;
	uint64_t gen = disk_gen(d);
	int r = pmemz_alloc_commit(a, tags[0], 0);

	if (r < 0) {
		pmemz_alloc_close(a); /* a lease: it goes back (or died with the connection) */
		if (!disk_conn_lost(r))
			return r;
		if (disk_reconnect(d, gen) == 0)
			drop_tag(d, tags[0]); /* committed or not, the answer was lost */
		return -EAGAIN;
	}
	r = pmemz_batch_new(d->r, &b);
	for (size_t i = 1; r == 0 && i < k; i++)
		r = pmemz_batch_move(b, a, addr[i], tags[i], &v[i]);
	if (r == 0)
		r = pmemz_batch_wait(b);
	pmemz_batch_free(b);
	if (r == 0) {
		v[0] = a;
		*got = k;
		return 0;
	}
	for (size_t i = 1; i < k; i++)
		v[i] = NULL;
	if (disk_conn_lost(r)) {
		pmemz_alloc_close(a);
		if (disk_reconnect(d, gen) < 0)
			return -EAGAIN; /* the next open frees what is left */
		return settle_moves(d, tags, k, v, got);
	}
	if (pmemz_alloc_release(a) < 0) /* a refusal: none moved, all of it goes back */
		nbdkit_debug("pmemz: ahead tag '%s' stays until the next start: %s", tags[0],
			     pmemz_errormsg());
	return r;
}

int disk_ahead_split(struct disk *d, size_t n, struct pmemz_alloc **v, size_t *got)
{
	char tags[DISK_AHEAD_BATCH][PMEMZ_DISK_TAG_MAX];
	char *addr[DISK_AHEAD_BATCH];
	struct pmemz_alloc *a = NULL;
	uint64_t gen = disk_gen(d), seq;
	size_t k;
	int r;

	*got = 0;
	if (n > DISK_AHEAD_BATCH)
		n = DISK_AHEAD_BATCH;
	r = pmemz_alloc_new(d->r, n * d->chunk_size, PMEMZ_ALLOC_DIRECT, &a);
	if (r < 0) {
		if (disk_conn_lost(r) && disk_reconnect(d, gen) == 0)
			return -EAGAIN;
		return r;
	}
	k = extents_of(d, a, addr, n);
	if (k < 2) {
		pmemz_alloc_close(a); /* not what was asked for: the one-by-one path does it */
		return -EINVAL;
	}
	pthread_mutex_lock(&d->ahead.lock);
	seq = d->ahead.next_seq;
	d->ahead.next_seq += k;
	pthread_mutex_unlock(&d->ahead.lock);
	for (size_t i = 0; i < k; i++) {
		r = pmemz_disk_ahead_tag(tags[i], sizeof(tags[i]), d->cfg.name, seq + i);
		if (r < 0) {
			pmemz_alloc_close(a);
			return r;
		}
	}
	return commit_split(d, a, addr, k, tags, v, got);
}
