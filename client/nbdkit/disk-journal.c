/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the mapping journal (disk-format.h has its bytes),
 * and the mappings it holds until they are folded into chunk tags.
 *
 * A fresh chunk written into an extent of a pool tag is mapped by a
 * 32-byte record in the superblock's extent, stored with the data and
 * drained with it before the write is acknowledged: the mapping is durable
 * when the write returns, with no round trip and no wait for a sync point
 * (NBD asks for less: a FLUSH or FUA).  A crash before the drain leaves the
 * record torn or absent, and the chunk reads zero: its extent was zeroed,
 * and owned by this disk, before the first byte went into it.
 *
 * disk-fold.c moves the journal's chunks to their own tags in the
 * background (disk_journal_take, one fold at a time) and then moves the
 * base past their records (disk_journal_rewrite), so the journal is a
 * ring: a record goes into slot seq % slots, over one below the base.
 * Only this file writes the journal's bytes.
 *
 * At open, the journal is trusted only as far as the daemon vouches for
 * it: a record counts when its extent is in one of this disk's pool tags
 * (a tenant may write anything into its superblock's extent, but cannot
 * make the daemon list another owner's extent under its tag), the latest
 * record of a chunk wins, and of two chunks naming one extent, the later.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzadmin.h"
#include "libpmemzclient.h"
#include "vector.h"

struct disk_journal {
	struct disk *d;
	char *recs;	  /* the records, in the superblock's extent */
	uint64_t *base_p; /* the base, there */
	char *data;	  /* extent 0 of the region in the mapping: records count from it */
	size_t slots;	  /* 0: no journal (no extents owned ahead) */
	uint8_t uuid[16];

	pthread_mutex_t lock;	 /* all below */
	pthread_cond_t tick;	 /* stop, half the journal in use, or a fresh chunk found it full */
	pthread_cond_t done;	 /* a fold settled */
	uint64_t base, next;	 /* records below base are folded; next: the next's seq */
	struct journal_entry *v; /* the mappings not folded yet, oldest first */
	size_t n, cap;
	uint64_t made, folded; /* mappings made, and folded (counts; also read atomically) */
	bool folding;	       /* a fold took mappings and has not settled yet */
	bool refused;	       /* the last fold was refused (tag limit): fresh chunks fall back */
	bool stop;
	uint64_t full; /* fresh chunks that found it full (atomic) */
};

static uint64_t extent_of(const struct disk_journal *j, const char *addr)
{
	return (uint64_t)(addr - j->data) / j->d->chunk_size;
}

static char *extent_addr(const struct disk_journal *j, uint64_t e)
{
	return j->data + e * j->d->chunk_size;
}

int disk_journal_new(struct disk *d, struct disk_journal **out)
{
	struct disk_journal *j = calloc(1, sizeof(*j));
	struct pmemz_disk_features f;
	int r;

	if (!j) {
		nbdkit_error("pmemz: out of memory");
		return -ENOMEM;
	}
	pmemz_disk_super_features(&d->sb, &f);
	j->d = d;
	j->data = d->base + pmemz_region_data_offset(d->r);
	j->slots = f.journal_slots; /* checked: it fits the extent */
	memcpy(j->uuid, d->sb.uuid, sizeof(j->uuid));
	j->recs = d->super + PMEMZ_DISK_JOURNAL_RECORDS;
	j->base_p = (uint64_t *)(d->super + PMEMZ_DISK_JOURNAL_OFFSET);
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->tick, NULL);
	pthread_cond_init(&j->done, NULL);
	*out = j;
	r = disk_load(d, &j->base, (const char *)j->base_p, sizeof(j->base));
	if (r < 0) {
		nbdkit_error("pmemz: cannot read the journal of disk '%s'", d->cfg.name);
		return r;
	}
	j->next = j->base;
	if (!j->slots && d->cfg.ahead)
		nbdkit_debug("pmemz: extents of %" PRIu64 " bytes hold no journal: no extents "
			     "owned ahead",
			     d->chunk_size);
	return 0;
}

uint64_t disk_journal_slots_new(const struct disk *d)
{
	uint64_t slots = pmemz_disk_journal_slots(d->chunk_size);

	/* a test build's journal-slots=: a journal that wraps and fills up in a few writes */
	if (slots && d->cfg.journal_slots && d->cfg.journal_slots < slots)
		slots = d->cfg.journal_slots < PMEMZ_DISK_JOURNAL_SLOTS_MIN
			    ? PMEMZ_DISK_JOURNAL_SLOTS_MIN
			    : d->cfg.journal_slots;
	return slots;
}

void disk_journal_free(struct disk_journal *j)
{
	if (!j)
		return;
	free(j->v);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->tick);
	pthread_cond_destroy(&j->done);
	free(j);
}

bool disk_journal_on(const struct disk_journal *j)
{
	return j->slots > 0;
}

/* Record seq: chunk idx in the extent at addr (lock held, or at open; not drained). */
static int write_record(struct disk_journal *j, uint64_t seq, uint64_t idx, const char *addr)
{
	struct pmemz_disk_jrec rec;

	pmemz_disk_jrec_make(&rec, j->uuid, seq, idx, extent_of(j, addr));
	return disk_store(j->d, j->recs + (seq % j->slots) * sizeof(rec), &rec, sizeof(rec));
}

static int grow(struct disk_journal *j, size_t more)
{
	size_t need;
	int r = pmemz_add_size(j->n, more, &need);

	return r < 0 ? r : PMEMZ_GROW(j->v, &j->cap, need);
}

int disk_journal_add(struct disk_journal *j, uint64_t idx, const struct ahead_ext *e)
{
	int r;

	pthread_mutex_lock(&j->lock);
	if (!j->slots || j->refused || j->next - j->base >= j->slots) {
		/*
		 * Full until the fold that is coming (half full told the
		 * thread), or folds are refused (the uid's tag limit): the
		 * fallback's COMMIT fails the write that would go over it.
		 */
		__atomic_add_fetch(&j->full, 1, __ATOMIC_RELAXED);
		pthread_cond_signal(&j->tick);
		pthread_mutex_unlock(&j->lock);
		return -ENOSPC;
	}
	r = grow(j, 1);
	if (r == 0)
		r = write_record(j, j->next, idx, e->addr);
	if (r == 0) {
		j->next++;
		j->v[j->n++] = (struct journal_entry){.idx = idx, .e = *e};
		__atomic_store_n(&j->made, j->made + 1, __ATOMIC_RELEASE);
		if (j->next - j->base == j->slots / 2)
			pthread_cond_signal(&j->tick);
	}
	pthread_mutex_unlock(&j->lock);
	return r;
}

uint64_t disk_journal_made(struct disk_journal *j)
{
	return __atomic_load_n(&j->made, __ATOMIC_ACQUIRE);
}

bool disk_journal_pending(struct disk_journal *j)
{
	return __atomic_load_n(&j->made, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&j->folded, __ATOMIC_ACQUIRE);
}

uint64_t disk_journal_full(struct disk_journal *j)
{
	return __atomic_load_n(&j->full, __ATOMIC_RELAXED);
}

int disk_journal_wait(struct disk_journal *j, unsigned ms)
{
	struct timespec until;
	uint64_t ns;
	int r;

	clock_gettime(CLOCK_REALTIME, &until);
	ns = (uint64_t)until.tv_nsec + (uint64_t)ms * 1000000u;
	until.tv_sec += (time_t)(ns / 1000000000u);
	until.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&j->lock);
	if (!j->stop)
		(void)pthread_cond_timedwait(&j->tick, &j->lock, &until);
	if (j->stop)
		r = -ESHUTDOWN;
	else
		r = j->n && j->next - j->base >= j->slots / 2;
	pthread_mutex_unlock(&j->lock);
	return r;
}

void disk_journal_stop(struct disk_journal *j)
{
	pthread_mutex_lock(&j->lock);
	j->stop = true;
	pthread_cond_broadcast(&j->tick);
	pthread_mutex_unlock(&j->lock);
}

int disk_journal_take(struct disk_journal *j, uint64_t want, struct journal_fold *f)
{
	pthread_mutex_lock(&j->lock);
	for (;;) {
		if (j->folded >= want) {
			pthread_mutex_unlock(&j->lock);
			return 0;
		}
		if (!j->folding)
			break;
		pthread_cond_wait(&j->done, &j->lock);
	}
	*f = (struct journal_fold){.v = j->v, .n = j->n, .upto = j->made, .cut = j->next};
	j->v = NULL;
	j->n = j->cap = 0;
	j->folding = true;
	pthread_mutex_unlock(&j->lock);
	return 1;
}

/* Put what a failed fold did not move back in front of what was made since (lock held). */
static void requeue(struct disk_journal *j, const struct journal_entry *v, size_t n)
{
	if (grow(j, n) < 0) {
		/* their records map them still: the next open moves them */
		__atomic_store_n(&j->d->failed, -EIO, __ATOMIC_RELEASE);
		nbdkit_error("pmemz: out of memory keeping %zu chunk mappings", n);
		return;
	}
	memmove(j->v + n, j->v, j->n * sizeof(*v));
	memcpy(j->v, v, n * sizeof(*v));
	j->n += n;
}

void disk_journal_settle(struct disk_journal *j, struct journal_fold *f, size_t left, bool refused)
{
	pthread_mutex_lock(&j->lock);
	j->refused = refused;
	j->folding = false;
	if (left)
		requeue(j, f->v, left);
	else
		__atomic_store_n(&j->folded, f->upto, __ATOMIC_RELEASE);
	free(f->v);
	f->v = NULL;
	f->n = 0;
	pthread_cond_broadcast(&j->done);
	pthread_mutex_unlock(&j->lock);
}

struct base_store {
	struct disk_journal *j;
	uint64_t base;
};

static int store_base(void *arg)
{
	struct base_store *b = arg;

	__atomic_store_n(b->j->base_p, b->base, __ATOMIC_RELEASE);
	return pmemz_persist(b->j->d->r, b->j->base_p, sizeof(uint64_t));
}

/* Records below base are folded: one 8-byte store, persisted. */
static int set_base(struct disk_journal *j, uint64_t base)
{
	struct base_store b = {.j = j, .base = base};
	int r = disk_guard(j->d, store_base, &b);

	if (r < 0)
		nbdkit_error("pmemz: cannot move the journal's base of disk '%s'", j->d->cfg.name);
	return r < 0 ? -EIO : 0;
}

/* disk_journal_rewrite of v[0..n) (lock held, or at open). */
static int rewrite(struct disk_journal *j, const struct journal_entry *v, size_t n, uint64_t cut)
{
	size_t left = 0;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		left += v[i].out == NULL;
	if (j->next - j->base + left > j->slots) {
		nbdkit_debug("pmemz: no room to record %zu unmoved chunk(s) again: the journal's "
			     "base stays until a fold moves everything",
			     left);
		return 1;
	}
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!v[i].out) {
			r = write_record(j, j->next, v[i].idx, v[i].e.addr);
			if (r == 0)
				j->next++;
		}
	if (r < 0)
		return r;
	/* the new records durable before the base passes the old ones */
	pmemz_drain(j->d->r);
	r = set_base(j, cut);
	if (r < 0)
		return r;
	j->base = cut;
	if (left)
		nbdkit_debug("pmemz: %zu unmoved chunk(s) recorded again: the journal's base "
			     "passes the moved ones' records",
			     left);
	return 0;
}

int disk_journal_rewrite(struct disk_journal *j, const struct journal_fold *f)
{
	int r;

	pthread_mutex_lock(&j->lock);
	r = rewrite(j, f->v, f->n, f->cut);
	pthread_mutex_unlock(&j->lock);
	return r;
}

/* ---- open ---- */

struct pool_ext {
	uint64_t extent;
	size_t pool;
};

static int by_extent(const void *a, const void *b)
{
	const struct pool_ext *x = a, *y = b;

	return x->extent < y->extent ? -1 : x->extent > y->extent;
}

static int by_index(const void *a, const void *b)
{
	const struct disk_found *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

/* Every extent of the pools, sorted; -EUCLEAN when one lies outside the region. */
static int pool_extents(struct disk_journal *j, struct pmemz_alloc **pools, size_t n_pools,
			struct pool_ext **out, size_t *n_out)
{
	struct disk *d = j->d;
	struct pool_ext *v = NULL;
	size_t n = 0, cap = 0;
	char *end = d->base + d->region_size;

	for (size_t p = 0; p < n_pools; p++)
		for (size_t i = 0; i < pmemz_alloc_count(pools[p]); i++) {
			size_t len = 0;
			char *a = pmemz_alloc_range(pools[p], i, &len);

			if (!a || a < j->data || (size_t)(a - j->data) % d->chunk_size || a > end ||
			    (size_t)(end - a) < len || len % d->chunk_size) {
				nbdkit_error(
				    "pmemz: pool tag '%s' of disk '%s' is not whole extents "
				    "of the region",
				    pmemz_alloc_tag(pools[p]), d->cfg.name);
				free(v);
				return -EUCLEAN;
			}
			for (size_t off = 0; off < len; off += d->chunk_size) {
				int r = PMEMZ_GROW(v, &cap, n + 1);

				if (r < 0) {
					free(v);
					return r;
				}
				v[n++] = (struct pool_ext){extent_of(j, a + off), p};
			}
		}
	if (n)
		qsort(v, n, sizeof(*v), by_extent);
	*out = v;
	*n_out = n;
	return 0;
}

/* The valid records, latest per chunk and extent; 0 with *n of them, or -errno. */
static int read_records(struct disk_journal *j, struct pmemz_disk_jrec **out, size_t *n,
			uint64_t *top)
{
	size_t slots = j->slots, k = 0;
	uint64_t nchunks = pmemz_disk_chunks(j->d->size, j->d->chunk_size);
	struct pmemz_disk_jrec *v = calloc(slots ? slots : 1, sizeof(*v));
	int r;

	*top = 0;
	if (!v)
		return -ENOMEM;
	r = disk_load(j->d, v, j->recs, slots * sizeof(*v));
	if (r < 0) {
		free(v);
		return r;
	}
	for (size_t i = 0; i < slots; i++)
		if (pmemz_disk_jrec_valid(&v[i], j->uuid, j->base, i, slots, nchunks)) {
			if (v[i].seq >= *top)
				*top = v[i].seq + 1;
			v[k++] = v[i];
		}
	*n = pmemz_disk_journal_latest(v, k);
	*out = v;
	return 0;
}

struct recover_move {
	uint64_t idx;
	struct pmemz_alloc *from;
	char *addr;
	struct pmemz_alloc *out;
};

/* One MOVE of m[0..n) (a fresh connection: no reconnecting here); 0 or -errno. */
static int move_some(struct disk_journal *j, struct recover_move *m, size_t n)
{
	struct pmemz_batch *b = NULL;
	int r = pmemz_batch_new(j->d->r, &b);

	for (size_t i = 0; r == 0 && i < n; i++) {
		char tag[PMEMZ_DISK_TAG_MAX];

		(void)pmemz_disk_chunk_tag(tag, sizeof(tag), j->d->cfg.name, m[i].idx);
		r = pmemz_batch_move(b, m[i].from, m[i].addr, tag, &m[i].out);
	}
	if (r == 0)
		r = pmemz_batch_wait(b);
	pmemz_batch_free(b);
	return r;
}

/* All of m[0..n), halving the requests in a nearly full tag table. */
static int move_all(struct disk_journal *j, struct recover_move *m, size_t n)
{
	size_t per = PMEMZ_BATCH_MOVES_MAX;

	for (size_t i = 0; i < n;) {
		size_t k = n - i < per ? n - i : per;
		int r = move_some(j, m + i, k);

		if (r == -ENOSPC && per > 1) {
			per /= 2;
			continue;
		}
		if (r < 0) {
			nbdkit_error("pmemz: disk '%s': cannot move %zu journal mapping(s) to "
				     "their chunks' tags: %s",
				     j->d->cfg.name, k, pmemz_errormsg());
			return r;
		}
		i += k;
	}
	return 0;
}

/* The pools, with what is left in them (held ahead, maybe written): zeroed again. */
static int free_pools(struct disk_journal *j, struct pmemz_alloc **pools, size_t n_pools)
{
	int first = 0;

	for (size_t p = 0; p < n_pools; p++) {
		char tag[PMEMZ_DISK_TAG_MAX];
		int r;

		(void)snprintf(tag, sizeof(tag), "%s", pmemz_alloc_tag(pools[p]));
		r = pmemz_alloc_release(pools[p]);
		pools[p] = NULL;
		/* emptied by the moves: the daemon freed it with its last extent */
		if (r < 0 && r != -ENOENT && !first) {
			nbdkit_error("pmemz: cannot free pool tag '%s' of disk '%s': %s", tag,
				     j->d->cfg.name, pmemz_errormsg());
			first = r;
		}
	}
	return first;
}

static size_t pool_index(struct pmemz_alloc *const *pools, const struct pmemz_alloc *a)
{
	size_t p = 0;

	while (pools[p] != a)
		p++;
	return p;
}

/* The pools that m[0..n_m) lie in: adopted (disk-ahead.c), into ap[]; the others freed. */
static int adopt_pools(struct disk_journal *j, struct pmemz_alloc **pools, size_t n_pools,
		       const struct recover_move *m, size_t n_m, struct ahead_pool **ap)
{
	unsigned *refs = calloc(n_pools ? n_pools : 1, sizeof(*refs));
	int r = refs ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < n_m; i++)
		refs[pool_index(pools, m[i].from)]++;
	for (size_t p = 0; r == 0 && p < n_pools; p++) {
		if (refs[p]) {
			r = disk_ahead_adopt(j->d->ahead, pools[p], refs[p], &ap[p]);
			if (r == 0)
				pools[p] = NULL;
		} else if (free_pools(j, &pools[p], 1) < 0) {
			r = -EIO;
		}
	}
	free(refs);
	return r;
}

/*
 * The moves were refused (the uid's tag limit, a full tag table): the
 * journal keeps mapping m[0..n_m), as it did before, and the fold takes
 * them up when it can.  A pool holding any of them stays, its other
 * extents unused (maybe written) until it is freed after its last fold;
 * the others are freed now.  The chunks join *found without a tag.
 */
static int adopt(struct disk_journal *j, struct pmemz_alloc **pools, size_t n_pools,
		 struct recover_move *m, size_t n_m, uint64_t top, struct disk_found **found,
		 size_t *n, size_t *cap)
{
	struct ahead_pool **ap = calloc(n_pools ? n_pools : 1, sizeof(*ap));
	size_t *which = calloc(n_m ? n_m : 1, sizeof(*which));
	int r = ap && which ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < n_m; i++)
		which[i] = pool_index(pools, m[i].from);
	if (r == 0)
		r = adopt_pools(j, pools, n_pools, m, n_m, ap);
	for (size_t i = 0; r == 0 && i < n_m; i++) {
		r = grow(j, 1);
		if (r == 0)
			r = PMEMZ_GROW(*found, cap, *n + 1);
		if (r < 0)
			break;
		j->v[j->n++] =
		    (struct journal_entry){.idx = m[i].idx, .e = {m[i].addr, ap[which[i]]}};
		(*found)[(*n)++] = (struct disk_found){m[i].idx, m[i].addr, NULL};
	}
	free(ap);
	free(which);
	if (r < 0)
		return r;
	j->made = j->n;
	j->next = top;
	nbdkit_debug("pmemz: disk '%s': %zu chunk(s) stay in the journal for now", j->d->cfg.name,
		     n_m);
	return 0;
}

/*
 * The moves were refused partway (the tag limit, a full tag table): the
 * moved ones join *found under their tags, the rest stay in the journal
 * (adopt), recorded again when some moved, so that the moved ones'
 * records are spent before anything can give their extents back.  Failing
 * that, the journal maps every chunk as it did, and the next fold that
 * moves everything spends them.  0 (m's handles all taken), or -errno
 * (those of m not taken yet still in m).
 */
static int recover_refused(struct disk_journal *j, struct pmemz_alloc **pools, size_t n_pools,
			   struct recover_move *m, size_t n_m, uint64_t top,
			   struct disk_found **found, size_t *n, size_t *cap)
{
	size_t k = 0, moved = 0;
	int r;

	for (size_t i = 0; i < n_m; i++) {
		if (!m[i].out) {
			m[k++] = m[i];
			continue;
		}
		r = PMEMZ_GROW(*found, cap, *n + 1);
		if (r < 0)
			return r;
		(*found)[(*n)++] = (struct disk_found){m[i].idx, m[i].addr, m[i].out};
		m[i].out = NULL;
		moved++;
	}
	r = adopt(j, pools, n_pools, m, k, top, found, n, cap);
	if (r == 0 && moved)
		(void)rewrite(j, j->v, j->n, top);
	return r;
}

/* The chunks the records rec[0..n_rec) map into pool extents ext[0..n_ext), into m. */
static size_t mapped_chunks(struct disk_journal *j, const struct pmemz_disk_jrec *rec, size_t n_rec,
			    const struct pool_ext *ext, size_t n_ext, struct pmemz_alloc **pools,
			    const struct disk_found *found, size_t present, struct recover_move *m)
{
	size_t n_m = 0;

	for (size_t i = 0; i < n_rec; i++) {
		struct pool_ext key = {.extent = rec[i].extent};
		struct disk_found fk = {.index = rec[i].chunk};
		const struct pool_ext *pe;

		pe = n_ext ? bsearch(&key, ext, n_ext, sizeof(*ext), by_extent) : NULL;
		/*
		 * Not in a pool: folded already (under its chunk's tag now), or
		 * not this disk's.  A chunk with its own tag keeps it (a fold
		 * moves a journal's extent there; nothing maps it again).
		 */
		if (!pe || (present && bsearch(&fk, found, present, sizeof(*found), by_index)))
			continue;
		m[n_m++] = (struct recover_move){rec[i].chunk, pools[pe->pool],
						 extent_addr(j, rec[i].extent), NULL};
	}
	return n_m;
}

/* Every mapping of m[0..n_m) moved: the chunks join *found, the pools go, the base passes. */
static int recover_moved(struct disk_journal *j, struct pmemz_alloc **pools, size_t n_pools,
			 struct recover_move *m, size_t n_m, uint64_t top,
			 struct disk_found **found, size_t *n, size_t *cap)
{
	int r;

	for (size_t i = 0; i < n_m; i++) {
		r = PMEMZ_GROW(*found, cap, *n + 1);
		if (r < 0)
			return r;
		(*found)[(*n)++] = (struct disk_found){m[i].idx, m[i].addr, m[i].out};
		m[i].out = NULL;
	}
	r = free_pools(j, pools, n_pools);
	/* after the frees: a record must not outlive the pool that vouched for it */
	if (r == 0 && top > j->base) {
		r = set_base(j, top);
		if (r == 0)
			j->base = j->next = top;
	}
	if (r == 0 && (n_m || n_pools))
		nbdkit_debug("pmemz: disk '%s': %zu chunk(s) of the journal moved to their tags, "
			     "%zu pool tag(s) freed",
			     j->d->cfg.name, n_m, n_pools);
	return r;
}

/*
 * A read-only disk: the chunks of m[0..n_m) are read where the journal
 * maps them, and stay there (no move, no free, the base where it is).
 */
static int recover_readonly(struct disk_journal *j, const struct recover_move *m, size_t n_m,
			    struct disk_found **found, size_t *n, size_t *cap)
{
	for (size_t i = 0; i < n_m; i++) {
		int r = PMEMZ_GROW(*found, cap, *n + 1);

		if (r < 0)
			return r;
		(*found)[(*n)++] = (struct disk_found){m[i].idx, m[i].addr, NULL};
	}
	if (n_m)
		nbdkit_debug("pmemz: disk '%s': %zu chunk(s) read through the journal, left there",
			     j->d->cfg.name, n_m);
	return 0;
}

int disk_journal_recover(struct disk_journal *j, struct pmemz_alloc **pools, size_t n_pools,
			 struct disk_found **found, size_t *n, size_t *cap)
{
	struct pmemz_disk_jrec *rec = NULL;
	struct pool_ext *ext = NULL;
	struct recover_move *m = NULL;
	size_t n_rec = 0, n_ext = 0, n_m = 0, present = *n;
	uint64_t top = 0;
	int r = 0;

	if (j->slots)
		r = read_records(j, &rec, &n_rec, &top);
	if (r == 0)
		r = pool_extents(j, pools, n_pools, &ext, &n_ext);
	if (r == 0 && n_rec)
		m = calloc(n_rec, sizeof(*m));
	if (r == 0 && n_rec && !m)
		r = -ENOMEM;
	if (r < 0)
		goto out;
	if (present)
		qsort(*found, present, sizeof(**found), by_index);
	n_m = mapped_chunks(j, rec, n_rec, ext, n_ext, pools, *found, present, m);
	if (j->d->readonly) {
		r = recover_readonly(j, m, n_m, found, n, cap);
		n_m = 0;
		goto out;
	}
	r = move_all(j, m, n_m);
	if (r == -EDQUOT || r == -ENOSPC) {
		r = recover_refused(j, pools, n_pools, m, n_m, top, found, n, cap);
		if (r == 0)
			n_m = 0;
	} else if (r == 0) {
		r = recover_moved(j, pools, n_pools, m, n_m, top, found, n, cap);
	}
out:
	for (size_t i = 0; i < n_m; i++)
		if (m[i].out)
			pmemz_alloc_close(m[i].out);
	for (size_t p = 0; p < n_pools; p++)
		if (pools[p])
			pmemz_alloc_close(pools[p]);
	if (r < 0 && r != -EIO && r != -ENOMEM)
		nbdkit_error("pmemz: disk '%s': the journal was not recovered", j->d->cfg.name);
	else if (r == -ENOMEM)
		nbdkit_error("pmemz: disk '%s': out of memory reading the journal", j->d->cfg.name);
	free(rec);
	free(ext);
	free(m);
	return r;
}
