/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: one chunk's extent, below the files that write a
 * fresh chunk or fold one (disk-io.c, disk-wb.c, disk-fold.c), and calling
 * none of them: lease a zeroed extent, commit it under the chunk's tag,
 * publish it in the chunk map, record the tag a fold moved it to.
 */
#include <errno.h>
#include <inttypes.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"

/*
 * A zeroed extent of one chunk, leased on connection *gen_out (when not
 * NULL): not written before it is committed.  A lost race's spare first
 * (disk-spare.c), then the client reserve.
 */
int disk_chunk_lease(struct disk *d, struct pmemz_alloc **out, uint64_t *gen_out)
{
	struct pmemz_alloc *a = NULL;
	size_t len = 0;
	uint64_t gen = disk_gen(d);
	int r;

	a = disk_spare_take(d->spares);
	if (a) {
		*out = a;
		if (gen_out)
			*gen_out = gen;
		return 0;
	}
	for (;;) {
		gen = disk_gen(d);
		r = pmemz_alloc_new(d->r, d->chunk_size, 0, &a);
		if (r == 0 || !disk_conn_lost(r))
			break;
		r = disk_reconnect(d, gen);
		if (r < 0)
			return r;
	}
	if (r < 0) {
		if (r == -ENOSPC || r == -EDQUOT)
			nbdkit_debug("pmemz: no space for a fresh chunk: %s", pmemz_errormsg());
		else
			nbdkit_error("pmemz: cannot allocate a chunk: %s", pmemz_errormsg());
		return r;
	}
	if (pmemz_alloc_count(a) != 1 || !pmemz_alloc_range(a, 0, &len) || len != d->chunk_size) {
		pmemz_alloc_close(a);
		nbdkit_error("pmemz: the daemon returned an allocation that is not one extent");
		return -EPROTO;
	}
	*out = a;
	if (gen_out)
		*gen_out = gen;
	return 0;
}

/*
 * Commit lease a under chunk idx's tag.  The caller owns the chunk's tag:
 * it holds the stripe write lock with the chunk absent, or it is the
 * chunk's write-back (nobody else commits or frees a chunk being written
 * back).  0 with *out, *addr: the committed extent.
 *
 * Committed before a byte is written into it: a lease can die under us
 * (the daemon restarts, and the reserve may even hand out a lease of the
 * connection that just broke), and the restarted daemon zeroes it and
 * hands it to someone else -- a store that lands there after the zeroing
 * would be stale data in another tenant's fresh extent.  A committed tag
 * survives restarts, so stores into it are always safe.  A crash between
 * the commit and the copy leaves the chunk present and zero, or partly
 * written by a write that was never reported durable: never stale.
 *
 * A connection lost on the way leaves the commit done or not: the tag
 * tells.  Not done, the lease died with the connection: take another.
 */
int disk_commit_chunk(struct disk *d, uint64_t idx, struct pmemz_alloc *a, struct pmemz_alloc **out,
		      char **addr)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	size_t len = 0;
	uint64_t gen;
	int r;

	(void)pmemz_disk_chunk_tag(tag, sizeof(tag), d->cfg.name, idx);
	for (;;) {
		gen = disk_gen(d);
		r = pmemz_alloc_commit(a, tag, 0);
		if (r == 0)
			break;
		if (!disk_conn_lost(r) && r != -ESTALE) {
			pmemz_alloc_close(a);
			if (r == -EDQUOT || r == -ENOSPC)
				nbdkit_debug("pmemz: chunk %" PRIu64 ": %s", idx, pmemz_errormsg());
			else
				nbdkit_error("pmemz: cannot commit chunk %" PRIu64 ": %s", idx,
					     pmemz_errormsg());
			return r;
		}
		pmemz_alloc_close(a);
		a = NULL;
		if (r != -ESTALE) {
			r = disk_reconnect(d, gen);
			if (r < 0)
				return r;
		}
		r = pmemz_alloc_open(d->r, tag, &a);
		if (r == 0) {
			/* the commit happened; its answer was lost */
			if (pmemz_alloc_count(a) != 1 || !pmemz_alloc_range(a, 0, &len) ||
			    len != d->chunk_size) {
				pmemz_alloc_close(a);
				nbdkit_error("pmemz: tag '%s' is not one extent", tag);
				return -EUCLEAN;
			}
			break;
		}
		if (r != -ENOENT) {
			nbdkit_error("pmemz: chunk %" PRIu64 ": %s", idx, pmemz_errormsg());
			return disk_conn_lost(r) ? -EIO : r;
		}
		r = disk_chunk_lease(d, &a, NULL);
		if (r < 0)
			return r;
	}
	*out = a;
	*addr = pmemz_alloc_range(a, 0, &len);
	return 0;
}

void disk_publish(struct disk *d, uint64_t idx, struct pmemz_alloc *a, char *p)
{
	d->map[idx].a = a;
	__atomic_store_n(&d->map[idx].addr, p, __ATOMIC_RELEASE);
	__atomic_add_fetch(&d->allocated, 1, __ATOMIC_RELAXED);
}

void disk_chunk_tagged(struct disk *d, uint64_t idx, struct pmemz_alloc *a)
{
	pthread_rwlock_t *l = disk_stripe(d, idx);

	pthread_rwlock_wrlock(l);
	d->map[idx].a = a;
	pthread_rwlock_unlock(l);
}
