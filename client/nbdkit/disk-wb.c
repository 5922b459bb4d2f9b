/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: write-back of fresh chunks.
 *
 * A fresh chunk's extent must be committed before a byte is written into
 * it (disk-chunk.c, disk_commit_chunk, says why), and a commit is a round trip to
 * pmemzerod.  A write smaller than half a chunk does not wait for it: the lease
 * is taken at once (so ENOSPC still fails the write), the data goes to a
 * chunk-sized buffer in DRAM, and the write is acknowledged.  Workers
 * commit the extent, copy the written pages into it under the stripe
 * write lock and publish it; FLUSH, and FUA writes, wait for the
 * write-backs queued before them.  So the commit's latency is off the
 * write path, as the NBD protocol allows: a write is durable only once a
 * FLUSH or its FUA says so.  A write-back that fails loses data that was
 * never reported durable; the next FLUSH of every connection reports it.
 *
 * Buffers come from a fixed pool (writeback= bytes of them): a write that
 * finds none free waits for a worker, which bounds the memory and the
 * work behind the acknowledgements.  A buffer's pages that were not
 * written read as zeros (the dirty bitmap), so buffers are never cleared.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/queue.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"

#define PAGE 4096u
#define WB_MAX_WORKERS 16u

struct wb_pending {
	uint64_t idx, seq;
	struct pmemz_alloc *lease;
	char *buf;		      /* chunk_size bytes */
	uint64_t *dirty;	      /* one bit per page of buf that was written */
	TAILQ_ENTRY(wb_pending) all;  /* queued or being written back, by seq */
	TAILQ_ENTRY(wb_pending) todo; /* waiting for a worker */
	struct wb_pending *next_free;
};

TAILQ_HEAD(wb_pending_list, wb_pending);

struct disk_wb {
	struct disk *d;
	bool on;	      /* atomic: workers run, writes may stage */
	pthread_mutex_t lock; /* all below */
	pthread_cond_t work;  /* todo has entries, or stop */
	pthread_cond_t done;  /* a write-back finished: a buffer is free */
	bool stop;
	struct wb_pending_list all, todo;
	struct wb_pending *free, *pool;
	uint64_t n_pool, next_seq;
	pthread_t workers[WB_MAX_WORKERS];
	unsigned n_workers;
	uint64_t errors; /* atomic: failed write-backs so far */
	int last_error;	 /* atomic */
};

static bool test_bit(const uint64_t *b, uint64_t i)
{
	return b[i / 64] & (1ull << (i % 64));
}

static void set_bit(uint64_t *b, uint64_t i)
{
	b[i / 64] |= 1ull << (i % 64);
}

/* The dirty bitmap's bytes (one bit per page, a word of slack). */
static size_t bitmap_bytes(const struct disk_wb *wb)
{
	return wb->d->chunk_size / PAGE / 8 + 8;
}

void wb_stage(struct wb_pending *pd, uint64_t off, const void *src, uint64_t len)
{
	const char *s = src;

	while (len) {
		uint64_t page = off / PAGE, in = off % PAGE;
		uint64_t n = PAGE - in < len ? PAGE - in : len;
		char *p = pd->buf + page * PAGE;

		if (!test_bit(pd->dirty, page)) {
			if (n != PAGE)
				memset(p, 0, PAGE);
			set_bit(pd->dirty, page);
		}
		if (s)
			memcpy(p + in, s, n);
		else
			memset(p + in, 0, n);
		if (s)
			s += n;
		off += n;
		len -= n;
	}
}

void wb_read(const struct wb_pending *pd, uint64_t off, void *dst, uint64_t len)
{
	char *o = dst;

	while (len) {
		uint64_t page = off / PAGE, in = off % PAGE;
		uint64_t n = PAGE - in < len ? PAGE - in : len;

		if (test_bit(pd->dirty, page))
			memcpy(o, pd->buf + page * PAGE + in, n);
		else
			memset(o, 0, n);
		o += n;
		off += n;
		len -= n;
	}
}

void wb_discard(struct disk_wb *wb, struct wb_pending *pd)
{
	/* the chunk still gets committed, with zeros: reads are right, space comes back on TRIM */
	memset(pd->dirty, 0, bitmap_bytes(wb));
}

uint64_t wb_seq(const struct wb_pending *pd)
{
	return pd->seq;
}

bool wb_on(struct disk_wb *wb)
{
	return __atomic_load_n(&wb->on, __ATOMIC_ACQUIRE);
}

struct wb_pending *wb_get(struct disk_wb *wb)
{
	struct wb_pending *pd;

	pthread_mutex_lock(&wb->lock);
	while (!wb->free)
		pthread_cond_wait(&wb->done, &wb->lock);
	pd = wb->free;
	wb->free = pd->next_free;
	pthread_mutex_unlock(&wb->lock);
	return pd;
}

/* pd back in the free list (lock held): a writer waiting for a buffer may take it. */
static void put_locked(struct disk_wb *wb, struct wb_pending *pd)
{
	pd->next_free = wb->free;
	wb->free = pd;
	pthread_cond_broadcast(&wb->done);
}

void wb_put(struct disk_wb *wb, struct wb_pending *pd)
{
	wb_discard(wb, pd);
	pthread_mutex_lock(&wb->lock);
	put_locked(wb, pd);
	pthread_mutex_unlock(&wb->lock);
}

uint64_t wb_submit(struct disk_wb *wb, struct wb_pending *pd, uint64_t idx,
		   struct pmemz_alloc *lease)
{
	pthread_mutex_lock(&wb->lock);
	pd->idx = idx;
	pd->lease = lease;
	pd->seq = ++wb->next_seq;
	TAILQ_INSERT_TAIL(&wb->all, pd, all);
	TAILQ_INSERT_TAIL(&wb->todo, pd, todo);
	pthread_cond_signal(&wb->work);
	pthread_mutex_unlock(&wb->lock);
	return pd->seq;
}

void wb_wait(struct disk_wb *wb, uint64_t seq)
{
	pthread_mutex_lock(&wb->lock);
	if (seq == UINT64_MAX)
		seq = wb->next_seq;
	while (!TAILQ_EMPTY(&wb->all) && TAILQ_FIRST(&wb->all)->seq <= seq)
		pthread_cond_wait(&wb->done, &wb->lock);
	pthread_mutex_unlock(&wb->lock);
}

uint64_t wb_errors(struct disk_wb *wb)
{
	return __atomic_load_n(&wb->errors, __ATOMIC_ACQUIRE);
}

int wb_durable(struct disk_wb *wb, uint64_t seq, uint64_t *seen)
{
	uint64_t n;

	if (seq)
		wb_wait(wb, seq);
	n = wb_errors(wb);
	if (n == *seen)
		return 0;
	*seen = n;
	nbdkit_error("pmemz: data written earlier was lost (see the write-back error above)");
	return __atomic_load_n(&wb->last_error, __ATOMIC_ACQUIRE);
}

struct wb_copy {
	struct disk *d;
	struct wb_pending *pd;
	char *p;
};

/* The written pages of a buffer into its extent, under one guard (disk_guard). */
static int copy_pages(void *arg)
{
	struct wb_copy *c = arg;
	struct disk *d = c->d;
	struct wb_pending *pd = c->pd;
	char *p = c->p;
	uint64_t pages = d->chunk_size / PAGE;
	int r = 0;

	for (uint64_t i = 0; i < pages && r == 0;) {
		uint64_t j;

		if (!test_bit(pd->dirty, i)) {
			i++;
			continue;
		}
		for (j = i; j < pages && test_bit(pd->dirty, j); j++)
			;
		r = pmemz_memcpy(d->r, p + i * PAGE, pd->buf + i * PAGE, (j - i) * PAGE,
				 PMEMZ_MEM_NODRAIN);
		i = j;
	}
	return r;
}

/* Copy the written pages of pd into the committed extent p (NT stores, no drain). */
static int wb_copy(struct disk *d, struct wb_pending *pd, char *p)
{
	struct wb_copy c = {.d = d, .pd = pd, .p = p};
	int r = disk_guard(d, copy_pages, &c);

	/* -EIO: a fault, logged by the guard; pmemz_memcpy's own errors are others */
	if (r < 0 && r != -EIO)
		nbdkit_error("pmemz: copy into the region failed: %s", pmemz_errormsg());
	return r;
}

static void wb_one(struct disk_wb *wb, struct wb_pending *pd)
{
	struct disk *d = wb->d;
	pthread_rwlock_t *l = disk_stripe(d, pd->idx);
	struct pmemz_alloc *a = NULL;
	char *p = NULL;
	int r;

	r = disk_commit_chunk(d, pd->idx, pd->lease, &a, &p);
	pd->lease = NULL;
	pthread_rwlock_wrlock(l);
	if (r == 0) {
		if (d->cfg.zero_fresh)
			r = d->cfg.zero_fresh(d, p, d->chunk_size);
		if (r == 0)
			r = wb_copy(d, pd, p);
		/* published even if the copy failed: the tag is committed */
		disk_publish(d, pd->idx, a, p);
	}
	__atomic_store_n(&d->map[pd->idx].pend, NULL, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(l);
	pmemz_drain(d->r);
	if (r < 0) {
		/* acknowledged, never reported durable, and now lost: FLUSH says so */
		nbdkit_error("pmemz: write-back of chunk %" PRIu64 " failed: the data written "
			     "into it since it was fresh is lost",
			     pd->idx);
		__atomic_store_n(&wb->last_error, r, __ATOMIC_RELEASE);
		__atomic_add_fetch(&wb->errors, 1, __ATOMIC_ACQ_REL);
	}
	wb_discard(wb, pd);
	pthread_mutex_lock(&wb->lock);
	TAILQ_REMOVE(&wb->all, pd, all);
	put_locked(wb, pd);
	pthread_mutex_unlock(&wb->lock);
}

static void *wb_worker(void *arg)
{
	struct disk_wb *wb = arg;

	pthread_mutex_lock(&wb->lock);
	for (;;) {
		struct wb_pending *pd = TAILQ_FIRST(&wb->todo);

		if (!pd) {
			if (wb->stop)
				break;
			pthread_cond_wait(&wb->work, &wb->lock);
			continue;
		}
		TAILQ_REMOVE(&wb->todo, pd, todo);
		pthread_mutex_unlock(&wb->lock);
		wb_one(wb, pd);
		pthread_mutex_lock(&wb->lock);
	}
	pthread_mutex_unlock(&wb->lock);
	return NULL;
}

/* Buffers for n chunks, in the free list; 0 or -ENOMEM (wb_free frees those made). */
static int make_buffers(struct disk_wb *wb, uint64_t n)
{
	wb->pool = calloc(n, sizeof(*wb->pool));
	if (!wb->pool)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		struct wb_pending *pd = &wb->pool[i];

		wb->n_pool = i + 1;
		pd->buf = mmap(NULL, wb->d->chunk_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (pd->buf == MAP_FAILED)
			pd->buf = NULL;
		pd->dirty = calloc(1, bitmap_bytes(wb));
		if (!pd->buf || !pd->dirty)
			return -ENOMEM;
		pd->next_free = wb->free;
		wb->free = pd;
	}
	return 0;
}

int wb_new(struct disk *d, struct disk_wb **out)
{
	struct disk_wb *wb = calloc(1, sizeof(*wb));
	uint64_t n = d->cfg.writeback / d->chunk_size;
	int r = 0;

	if (!wb) {
		nbdkit_error("pmemz: out of memory");
		return -ENOMEM;
	}
	wb->d = d;
	pthread_mutex_init(&wb->lock, NULL);
	pthread_cond_init(&wb->work, NULL);
	pthread_cond_init(&wb->done, NULL);
	TAILQ_INIT(&wb->all);
	TAILQ_INIT(&wb->todo);
	*out = wb;
	if (n >= 2)
		r = make_buffers(wb, n);
	else if (d->cfg.writeback)
		nbdkit_debug("pmemz: writeback=%" PRIu64 " holds less than two chunks: off",
			     d->cfg.writeback);
	if (r < 0)
		nbdkit_error("pmemz: no memory for %" PRIu64 " bytes of write-back buffers",
			     d->cfg.writeback);
	return r;
}

int wb_start(struct disk_wb *wb)
{
	unsigned n = wb->n_pool < WB_MAX_WORKERS ? (unsigned)wb->n_pool : WB_MAX_WORKERS;

	for (unsigned i = 0; i < n; i++) {
		int r = pthread_create(&wb->workers[i], NULL, wb_worker, wb);

		if (r) {
			nbdkit_error("pmemz: cannot start a write-back thread: %s", strerror(r));
			return -r;
		}
		wb->n_workers = i + 1;
	}
	/* only now: writes stage into buffers only when someone writes them back */
	__atomic_store_n(&wb->on, wb->n_workers > 0, __ATOMIC_RELEASE);
	return 0;
}

void wb_free(struct disk_wb *wb)
{
	if (!wb)
		return;
	__atomic_store_n(&wb->on, false, __ATOMIC_RELEASE);
	pthread_mutex_lock(&wb->lock);
	wb->stop = true;
	pthread_cond_broadcast(&wb->work);
	pthread_mutex_unlock(&wb->lock);
	/* the workers finish the queue first: a clean shutdown loses nothing */
	for (unsigned i = 0; i < wb->n_workers; i++)
		pthread_join(wb->workers[i], NULL);
	for (uint64_t i = 0; i < wb->n_pool; i++) {
		if (wb->pool[i].buf)
			munmap(wb->pool[i].buf, wb->d->chunk_size);
		free(wb->pool[i].dirty);
	}
	free(wb->pool);
	pthread_cond_destroy(&wb->work);
	pthread_cond_destroy(&wb->done);
	pthread_mutex_destroy(&wb->lock);
	free(wb);
}
