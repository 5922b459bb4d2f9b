/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the data path (disk.h has the locking rules).
 *
 * A write into a present chunk is NT stores into the mapping under the
 * chunk's stripe read lock and one drain at the end: no daemon, no global
 * lock.  The first write into a chunk takes a zeroed extent (from the
 * client reserve, so usually without a round trip) before any lock, then,
 * under the stripe write lock, either queues it for write-back with the
 * data in a buffer (disk-wb.c), or commits it under the chunk's tag -- the
 * durable chunk-map update --, writes the data and publishes it.  A
 * request that lost the race for the same chunk finds it published (or
 * queued) under the write lock, writes there instead and gives its spare
 * extent back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))

static const char zeroes[64 * 1024];

#define TAKE_LEASE(a)                                                                              \
	({                                                                                         \
		struct pmemz_alloc *_a = (a);                                                      \
		(a) = NULL;                                                                        \
		_a;                                                                                \
	})

static char *chunk_addr(struct disk *d, uint64_t idx)
{
	return __atomic_load_n(&d->map[idx].addr, __ATOMIC_ACQUIRE);
}

static struct wb_pending *chunk_pend(struct disk *d, uint64_t idx)
{
	return __atomic_load_n(&d->map[idx].pend, __ATOMIC_ACQUIRE);
}

static int failed(struct disk *d)
{
	return __atomic_load_n(&d->failed, __ATOMIC_ACQUIRE);
}

/*
 * Requests are split at chunk boundaries: the piece of [pos, end) in pos's
 * chunk is chunk *idx, from *off in it, *len bytes.
 */
static void chunk_piece(const struct disk *d, uint64_t pos, uint64_t end, uint64_t *idx,
			uint64_t *off, uint64_t *len)
{
	*idx = pos / d->chunk_size;
	*off = pos % d->chunk_size;
	*len = d->chunk_size - *off < end - pos ? d->chunk_size - *off : end - pos;
}

int disk_read(struct disk *d, void *buf, uint32_t count, uint64_t offset)
{
	char *out = buf;

	for (uint64_t pos = offset, end = offset + count, idx, off, len; pos < end; pos += len) {
		chunk_piece(d, pos, end, &idx, &off, &len);
		pthread_rwlock_t *l = disk_stripe(d, idx);
		struct wb_pending *pd;
		int r = 0;
		char *p;

		pthread_rwlock_rdlock(l);
		p = chunk_addr(d, idx);
		if (p)
			r = disk_load(d, out, p + off, len);
		else if ((pd = chunk_pend(d, idx)))
			wb_read(pd, off, out, len);
		else
			memset(out, 0, len); /* never written: no pmem touched */
		pthread_rwlock_unlock(l);
		if (r < 0)
			return r;
		out += len;
	}
	return 0;
}

static bool all_zero(const void *buf, uint64_t len)
{
	const unsigned char *p = buf;

	/* the first bytes decide for almost every write that is not zeros */
	for (uint64_t i = 0; i < len && i < 64; i++)
		if (p[i])
			return false;
	return len <= 64 || memcmp(p, p + 64, len - 64) == 0;
}

/*
 * What the write into a fresh chunk holds while write_slow finds out how
 * it goes in: an extent owned ahead (have: e), a lease of a zeroed extent
 * (lease, leased on connection gen), a write-back buffer (buf).  What it
 * still holds at the end goes back (fresh_release).
 */
struct fresh {
	bool tried; /* an extent owned ahead was asked for */
	bool have;
	struct ahead_ext e;
	struct pmemz_alloc *lease;
	uint64_t gen;
	struct wb_pending *buf;
};

/*
 * Present: the copy into the chunk's extent.  Locking: the chunk's stripe
 * lock, read or write, held by the caller (it keeps the extent from being
 * given back under the copy).
 */
static int write_present(struct disk *d, char *p, const void *buf, uint64_t off, uint64_t len)
{
	return disk_store(d, p + off, buf, len);
}

/*
 * Being written back: the bytes go into its buffer, and the write waits
 * for that write-back at its sync point (*staged).  Locking: the stripe
 * write lock held by the caller (the buffer's pages change).
 */
static void write_pending(struct wb_pending *pd, const void *buf, uint64_t off, uint64_t len,
			  uint64_t *staged)
{
	wb_stage(pd, off, buf, len);
	*staged = MAX(*staged, wb_seq(pd));
}

/*
 * Extent owned ahead plus the journal: chunk idx, absent, is mapped to
 * f->e by a journal record (drained with the data by disk_write), written
 * and published, with no round trip.  1: not mapped (the journal is full
 * until the next fold, or no memory): f->e is untouched and still held,
 * and the caller falls back.  Locking: the stripe write lock held by the
 * caller, the chunk absent; the journal's lock is taken inside.
 */
static int write_ahead(struct disk *d, uint64_t idx, struct fresh *f, const void *buf, uint64_t off,
		       uint64_t len)
{
	int r = disk_journal_add(d->journal, idx, &f->e);

	if (r == -ENOSPC || r == -ENOMEM)
		return 1;
	f->have = false;
	if (r < 0)
		return r; /* the record faulted: e stays in its pool, unused, until close */
	r = disk_store(d, f->e.addr + off, buf, len);
	/* published even if the copy failed: the record maps it */
	disk_publish(d, idx, NULL, f->e.addr);
	return r;
}

/*
 * Lease plus write-back: chunk idx, absent, becomes pending: the bytes
 * go into f->buf, and a worker commits f->lease under the chunk's tag,
 * copies them in and publishes it (disk-wb.c); the write waits for that
 * at its sync point (*staged).  Consumes f->lease and f->buf.  Locking:
 * the stripe write lock held by the caller, the chunk absent (the pending
 * buffer is published under it); write-back's lock is taken inside.
 */
static void write_back(struct disk *d, uint64_t idx, struct fresh *f, const void *buf, uint64_t off,
		       uint64_t len, uint64_t *staged)
{
	uint64_t seq;

	wb_stage(f->buf, off, buf, len);
	__atomic_store_n(&d->map[idx].pend, f->buf, __ATOMIC_RELEASE);
	seq = wb_submit(d->wb, f->buf, idx, TAKE_LEASE(f->lease));
	*staged = MAX(*staged, seq);
	f->buf = NULL;
}

/*
 * Lease plus commit: f->lease is committed under chunk idx's tag (a round
 * trip), then written and published; a benchmark build's own zeroing of
 * the extent (cfg.zero_fresh) comes between.  Consumes f->lease.  Locking: the stripe write lock
 * held by the caller, the chunk absent (nobody else commits its tag meanwhile); the reconnect lock
 * may be taken inside.
 */
static int write_commit(struct disk *d, uint64_t idx, struct fresh *f, const void *buf,
			uint64_t off, uint64_t len)
{
	struct pmemz_alloc *a = NULL;
	char *p = NULL;
	int r = disk_commit_chunk(d, idx, TAKE_LEASE(f->lease), &a, &p);

	if (r < 0)
		return r;
	if (d->cfg.zero_fresh)
		r = d->cfg.zero_fresh(d, p, d->chunk_size);
	if (r == 0)
		r = disk_store(d, p + off, buf, len);
	/* published even if the copy failed: the tag is committed */
	disk_publish(d, idx, a, p);
	return r;
}

/*
 * An extent owned ahead for an absent chunk, stripe write lock l held:
 * f->have with f->e.  When none is left, a refill on its way is waited
 * for without the lock (it may wait for the daemon: the stripe's present
 * chunks are read and written meanwhile): true then, the lock taken
 * again, and the caller looks at the chunk again.
 */
static bool fresh_ahead(struct disk *d, pthread_rwlock_t *l, struct fresh *f)
{
	f->tried = true;
	if (!disk_ahead_on(d->ahead))
		return false;
	f->have = disk_ahead_take(d->ahead, &f->e, false);
	if (f->have)
		return false;
	pthread_rwlock_unlock(l);
	f->have = disk_ahead_take(d->ahead, &f->e, true);
	pthread_rwlock_wrlock(l);
	return true;
}

/*
 * A lease (usually from the reserve) and, for a write of less than half a
 * chunk, a write-back buffer, taken without the stripe write lock l; it is
 * held again on return, and the caller looks at the chunk again.  Half a
 * chunk or more gains little from a buffer (the round trip is short next
 * to the copy, and the buffer adds a copy): it is committed, then written.
 */
static int fresh_lease(struct disk *d, pthread_rwlock_t *l, struct fresh *f, uint64_t len)
{
	bool stage = wb_on(d->wb) && len < d->chunk_size / 2;
	int r;

	pthread_rwlock_unlock(l);
	r = disk_chunk_lease(d, &f->lease, &f->gen);
	if (r == 0 && stage)
		f->buf = wb_get(d->wb);
	pthread_rwlock_wrlock(l);
	return r;
}

/* What a fresh chunk's write did not use: another request made the chunk meanwhile. */
static void fresh_release(struct disk *d, uint64_t idx, struct fresh *f)
{
	if (f->have)
		disk_ahead_put(d->ahead, &f->e);
	if (f->lease) {
		/* kept for the next fresh chunk */
		nbdkit_debug("pmemz: chunk %" PRIu64 ": lost the race for it", idx);
		disk_spare_put(d->spares, f->lease, f->gen);
	}
	if (f->buf)
		wb_put(d->wb, f->buf);
}

/*
 * The write into chunk idx when the caller found it absent: under the
 * stripe write lock, it chooses how the bytes go in, and looks at the
 * chunk again each time it had to let the lock go.  *staged: the
 * write-back sequence the data went behind, when it went into a buffer.
 * A write of zeros into an absent chunk leaves it a hole: it reads zero
 * already (the kernel's nbd driver sends a file system's zeroing as such
 * writes, not as WRITE_ZEROES).
 */
static int write_slow(struct disk *d, uint64_t idx, const void *buf, uint64_t off, uint64_t len,
		      uint64_t *staged)
{
	pthread_rwlock_t *l = disk_stripe(d, idx);
	struct fresh f = {.tried = false};
	int r = 0;

	pthread_rwlock_wrlock(l);
	for (;;) {
		char *p = chunk_addr(d, idx);
		struct wb_pending *pd = chunk_pend(d, idx);

		if (p) {
			r = write_present(d, p, buf, off, len);
			break;
		}
		if (pd) {
			write_pending(pd, buf, off, len, staged);
			break;
		}
		if (!f.tried && all_zero(buf, len))
			break;
		if (!f.tried && fresh_ahead(d, l, &f))
			continue;
		if (f.have) {
			r = write_ahead(d, idx, &f, buf, off, len);
			if (r <= 0)
				break;
			r = 0; /* the journal is full: fall back, f.e goes back */
		}
		if (!f.lease) {
			r = fresh_lease(d, l, &f, len);
			if (r < 0)
				break;
			continue;
		}
		if (f.buf)
			write_back(d, idx, &f, buf, off, len, staged);
		else
			r = write_commit(d, idx, &f, buf, off, len);
		break;
	}
	pthread_rwlock_unlock(l);
	fresh_release(d, idx, &f);
	return r;
}

int disk_write(struct disk *d, const void *buf, uint32_t count, uint64_t offset, uint64_t *staged)
{
	const char *in = buf;
	int r = failed(d);

	*staged = 0;
	if (r == 0 && d->readonly)
		r = -EROFS; /* nbdkit exports it read-only: never asked */
	if (r < 0)
		return r;
	for (uint64_t pos = offset, end = offset + count, idx, off, len; pos < end; pos += len) {
		chunk_piece(d, pos, end, &idx, &off, &len);
		pthread_rwlock_t *l = disk_stripe(d, idx);
		char *p;

		pthread_rwlock_rdlock(l);
		p = chunk_addr(d, idx);
		if (p)
			r = write_present(d, p, in, off, len);
		pthread_rwlock_unlock(l);
		if (!p)
			r = write_slow(d, idx, in, off, len, staged);
		if (r < 0)
			break;
		in += len;
	}
	/* what went to pmem is durable on return: FLUSH finds nothing of this thread's left */
	pmemz_drain(d->r);
	return r;
}

/* Chunk idx's extent, published again (the tag is still committed). */
static int chunk_keep(struct disk *d, uint64_t idx, const char *tag, struct pmemz_alloc *a)
{
	size_t l = 0;
	char *p;

	if (!a && pmemz_alloc_open(d->r, tag, &a) < 0) {
		/* committed or not, we cannot tell: stop rather than serve wrong data */
		nbdkit_error("pmemz: chunk %" PRIu64 " in an unknown state: %s", idx,
			     pmemz_errormsg());
		__atomic_store_n(&d->failed, -EIO, __ATOMIC_RELEASE);
		return -EIO;
	}
	p = pmemz_alloc_range(a, 0, &l);
	d->map[idx].a = a;
	__atomic_store_n(&d->map[idx].addr, p, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Give chunk idx back to the daemon, which re-zeroes it; the caller holds
 * the stripe write lock, so no copy is using the extent, and nobody can
 * commit the chunk's tag again before the FREE is done.
 */
static int chunk_free(struct disk *d, uint64_t idx)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	struct pmemz_alloc *a = d->map[idx].a;
	uint64_t gen;
	int r;

	(void)pmemz_disk_chunk_tag(tag, sizeof(tag), d->cfg.name, idx);
	__atomic_store_n(&d->map[idx].addr, NULL, __ATOMIC_RELEASE);
	d->map[idx].a = NULL;
	for (int tries = 0;; tries++) {
		gen = disk_gen(d);
		r = pmemz_alloc_release(a); /* the handle is gone even on error */
		a = NULL;
		if (r == 0)
			break;
		if (!disk_conn_lost(r) || tries == 2) {
			nbdkit_error("pmemz: cannot give chunk %" PRIu64 " back: %s", idx,
				     pmemz_errormsg());
			(void)chunk_keep(d, idx, tag, NULL);
			return r;
		}
		if (disk_reconnect(d, gen) < 0) {
			(void)chunk_keep(d, idx, tag, NULL);
			return -EIO;
		}
		/* the FREE's answer was lost: freed or not, the tag tells */
		r = pmemz_alloc_open(d->r, tag, &a);
		if (r == -ENOENT)
			break;
		if (r < 0) {
			nbdkit_error("pmemz: chunk %" PRIu64 ": %s", idx, pmemz_errormsg());
			(void)chunk_keep(d, idx, tag, NULL);
			return -EIO;
		}
	}
	__atomic_sub_fetch(&d->allocated, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Zero [off, off + len) of chunk idx, present or being written back (stripe write lock held). */
static int zero_part(struct disk *d, uint64_t idx, uint64_t off, uint64_t len)
{
	struct wb_pending *pd = chunk_pend(d, idx);
	char *p = chunk_addr(d, idx);
	int r = 0;

	if (pd) {
		wb_stage(pd, off, NULL, len);
		return 0;
	}
	for (uint64_t done = 0; p && r == 0 && done < len; done += sizeof(zeroes)) {
		uint64_t n = len - done < sizeof(zeroes) ? len - done : sizeof(zeroes);

		r = disk_store(d, p + off + done, zeroes, n);
	}
	return r;
}

/*
 * Give whole chunk idx back; one being written back is waited for first.
 * write_zeroes: the chunk must read zero after, even if it cannot be
 * given back (else a TRIM, advisory, may leave it).
 */
static int zero_whole(struct disk *d, uint64_t idx, bool write_zeroes)
{
	pthread_rwlock_t *l = disk_stripe(d, idx);
	struct wb_pending *pd;
	int r = 0;

	pthread_rwlock_wrlock(l);
	while (chunk_addr(d, idx) && !d->map[idx].a) {
		/* mapped by the journal: fold it into its tag (its record out), then free that */
		pthread_rwlock_unlock(l);
		r = disk_fold(d->fold);
		if (r == -EDQUOT || r == -ENOSPC) {
			/* the fold is refused (the tag limit): the chunk stays in the journal */
			if (!write_zeroes)
				return 0;
			pthread_rwlock_wrlock(l);
			r = zero_part(d, idx, 0, d->chunk_size);
			pthread_rwlock_unlock(l);
			return r;
		}
		if (r < 0)
			return r;
		pthread_rwlock_wrlock(l);
	}
	for (int tries = 0; (pd = chunk_pend(d, idx)); tries++) {
		uint64_t seq = wb_seq(pd);

		if (tries == 2) {
			/* written again and again meanwhile: let it read zero, allocated */
			wb_discard(d->wb, pd);
			break;
		}
		pthread_rwlock_unlock(l);
		wb_wait(d->wb, seq);
		pthread_rwlock_wrlock(l);
	}
	if (!pd && chunk_addr(d, idx))
		r = chunk_free(d, idx);
	pthread_rwlock_unlock(l);
	return r;
}

/* Would zeroing [offset, offset + count) write zeros into a present chunk? */
static bool zero_writes(struct disk *d, uint32_t count, uint64_t offset, bool may_trim)
{
	for (uint64_t pos = offset, end = offset + count, idx, off, len; pos < end; pos += len) {
		chunk_piece(d, pos, end, &idx, &off, &len);
		if (may_trim && off == 0 && (len == d->chunk_size || end == d->size))
			continue; /* a whole chunk: given back */
		if (chunk_addr(d, idx) || chunk_pend(d, idx))
			return true;
	}
	return false;
}

int disk_zero(struct disk *d, uint32_t count, uint64_t offset, bool write_zeroes, bool may_trim,
	      bool fast)
{
	int r = failed(d);

	if (r == 0 && d->readonly)
		r = -EROFS; /* nbdkit exports it read-only: never asked */
	if (r < 0)
		return r;
	/* nbdkit's rule: a fast zero that would be no faster than a write fails at once */
	if (write_zeroes && fast && zero_writes(d, count, offset, may_trim))
		return -ENOTSUP;
	for (uint64_t pos = offset, end = offset + count, idx, off, len; pos < end; pos += len) {
		chunk_piece(d, pos, end, &idx, &off, &len);
		pthread_rwlock_t *l = disk_stripe(d, idx);
		/* without MAY_TRIM the client asked for allocated zeros: never a hole */
		bool whole = (may_trim || !write_zeroes) && off == 0 &&
			     (len == d->chunk_size || offset + count == d->size);

		if (!chunk_addr(d, idx) && !chunk_pend(d, idx))
			continue; /* reads zero already */
		if (whole) {
			r = zero_whole(d, idx, write_zeroes);
		} else if (write_zeroes) {
			pthread_rwlock_wrlock(l);
			r = zero_part(d, idx, off, len);
			pthread_rwlock_unlock(l);
		}
		/* a partial TRIM is advisory: the data stays */
		if (r < 0)
			break;
	}
	pmemz_drain(d->r);
	return r;
}

int disk_extents(struct disk *d, uint32_t count, uint64_t offset, bool req_one,
		 struct nbdkit_extents *e)
{
	uint64_t run_start = offset, run_len = 0;
	uint32_t run_type = 0;

	for (uint64_t pos = offset, end = offset + count, idx, off, len; pos < end; pos += len) {
		chunk_piece(d, pos, end, &idx, &off, &len);
		bool data = chunk_addr(d, idx) || chunk_pend(d, idx);
		uint32_t type = data ? 0 : NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO;

		if (run_len && type != run_type) {
			if (nbdkit_add_extent(e, run_start, run_len, run_type) < 0)
				return -errno;
			if (req_one)
				return 0;
			run_start += run_len;
			run_len = 0;
		}
		run_type = type;
		run_len += len;
		(void)off;
	}
	if (run_len && nbdkit_add_extent(e, run_start, run_len, run_type) < 0)
		return -errno;
	return 0;
}
