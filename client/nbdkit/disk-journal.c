/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the mapping journal (disk-format.h has its bytes).
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
 * background and then moves the base past their records, so the journal
 * is a ring: a record goes into slot seq % slots, over one below the base.
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

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzadmin.h"
#include "libpmemzclient.h"
#include "vector.h"

/*
 * nbdkit -D pmemz.journal_slots=N: a journal of N slots at most (at least
 * 4), so that the tests see it wrap and fill up (tests only).
 */
NBDKIT_DLL_PUBLIC int pmemz_debug_journal_slots;
/*
 * nbdkit -D pmemz.refuse_moves=1: every MOVE refused as by the tag limit;
 * -D pmemz.refuse_moves_after=K: of every K + 1, the last; -D
 * pmemz.fold_moves_max=N: at most N moves in one.  The last two make
 * folds and recoveries that move some chunks and not the rest (tests only).
 */
NBDKIT_DLL_PUBLIC int pmemz_debug_refuse_moves;
NBDKIT_DLL_PUBLIC int pmemz_debug_refuse_moves_after;
NBDKIT_DLL_PUBLIC int pmemz_debug_fold_moves_max;

size_t disk_journal_moves_max(void)
{
	if (pmemz_debug_fold_moves_max > 0 && pmemz_debug_fold_moves_max < PMEMZ_BATCH_MOVES_MAX)
		return (size_t)pmemz_debug_fold_moves_max;
	return PMEMZ_BATCH_MOVES_MAX;
}

bool disk_journal_refuse_move(struct disk *d)
{
	uint64_t k = (uint64_t)pmemz_debug_refuse_moves_after;

	if (pmemz_debug_refuse_moves)
		return true;
	return pmemz_debug_refuse_moves_after > 0 && d->fold.attempts++ % (k + 1) == k;
}

static uint64_t extent_of(const struct disk *d, const char *addr)
{
	return (uint64_t)(addr - d->data) / d->chunk_size;
}

static char *extent_addr(const struct disk *d, uint64_t e)
{
	return d->data + e * d->chunk_size;
}

int disk_journal_init(struct disk *d)
{
	struct pmemz_disk_super sb;
	int r;

	d->data = d->base + pmemz_region_data_offset(d->r);
	d->fold.slots = pmemz_disk_journal_slots(d->chunk_size);
	if (pmemz_debug_journal_slots >= 4 && (size_t)pmemz_debug_journal_slots < d->fold.slots)
		d->fold.slots = (size_t)pmemz_debug_journal_slots;
	d->fold.recs = d->super + PMEMZ_DISK_JOURNAL_RECORDS;
	d->fold.base_p = (uint64_t *)(d->super + PMEMZ_DISK_JOURNAL_OFFSET);
	r = disk_load(d, &sb, d->super, sizeof(sb));
	if (r == 0)
		r = disk_load(d, &d->fold.base, (const char *)d->fold.base_p, sizeof(d->fold.base));
	if (r < 0) {
		nbdkit_error("pmemz: cannot read the journal of disk '%s'", d->cfg.name);
		return r;
	}
	memcpy(d->fold.uuid, sb.uuid, sizeof(d->fold.uuid));
	d->fold.next = d->fold.base;
	if (!d->fold.slots && d->cfg.ahead) {
		nbdkit_debug("pmemz: extents of %" PRIu64 " bytes hold no journal: no extents "
			     "owned ahead",
			     d->chunk_size);
		d->cfg.ahead = 0; /* they could never be mapped */
	}
	return 0;
}

int disk_journal_write(struct disk *d, uint64_t seq, uint64_t idx, const char *addr)
{
	struct pmemz_disk_jrec rec;

	pmemz_disk_jrec_make(&rec, d->fold.uuid, seq, idx, extent_of(d, addr));
	return disk_store(d, d->fold.recs + (seq % d->fold.slots) * sizeof(rec), &rec,
			  sizeof(rec));
}

struct base_store {
	struct disk *d;
	uint64_t base;
};

static int store_base(void *arg)
{
	struct base_store *b = arg;

	__atomic_store_n(b->d->fold.base_p, b->base, __ATOMIC_RELEASE);
	return pmemz_persist(b->d->r, b->d->fold.base_p, sizeof(uint64_t));
}

int disk_journal_set_base(struct disk *d, uint64_t base)
{
	struct base_store b = {.d = d, .base = base};
	int r = disk_guard(d, store_base, &b);

	if (r < 0)
		nbdkit_error("pmemz: cannot move the journal's base of disk '%s'", d->cfg.name);
	return r < 0 ? -EIO : 0;
}

int disk_journal_rewrite(struct disk *d, const struct fold_entry *v, size_t n, uint64_t cut)
{
	size_t left = 0;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		left += v[i].out == NULL;
	if (d->fold.next - d->fold.base + left > d->fold.slots) {
		nbdkit_debug("pmemz: no room to record %zu unmoved chunk(s) again: the journal's "
			     "base stays until a fold moves everything",
			     left);
		return 1;
	}
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!v[i].out) {
			r = disk_journal_write(d, d->fold.next, v[i].idx, v[i].e.addr);
			if (r == 0)
				d->fold.next++;
		}
	if (r < 0)
		return r;
	/* the new records durable before the base passes the old ones */
	pmemz_drain(d->r);
	r = disk_journal_set_base(d, cut);
	if (r < 0)
		return r;
	d->fold.base = cut;
	if (left)
		nbdkit_debug("pmemz: %zu unmoved chunk(s) recorded again: the journal's base "
			     "passes the moved ones' records",
			     left);
	return 0;
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
static int pool_extents(struct disk *d, struct pmemz_alloc **pools, size_t n_pools,
			struct pool_ext **out, size_t *n_out)
{
	struct pool_ext *v = NULL;
	size_t n = 0, cap = 0;
	char *end = d->base + d->region_size;

	for (size_t p = 0; p < n_pools; p++)
		for (size_t i = 0; i < pmemz_alloc_count(pools[p]); i++) {
			size_t len = 0;
			char *a = pmemz_alloc_range(pools[p], i, &len);

			if (!a || a < d->data || (size_t)(a - d->data) % d->chunk_size ||
			    a > end || (size_t)(end - a) < len || len % d->chunk_size) {
				nbdkit_error("pmemz: pool tag '%s' of disk '%s' is not whole extents "
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
				v[n++] = (struct pool_ext){extent_of(d, a + off), p};
			}
		}
	if (n)
		qsort(v, n, sizeof(*v), by_extent);
	*out = v;
	*n_out = n;
	return 0;
}

/* The valid records, latest per chunk and extent; 0 with *n of them, or -errno. */
static int read_records(struct disk *d, struct pmemz_disk_jrec **out, size_t *n, uint64_t *top)
{
	size_t slots = d->fold.slots, k = 0;
	uint64_t nchunks = pmemz_disk_chunks(d->size, d->chunk_size);
	struct pmemz_disk_jrec *v = calloc(slots ? slots : 1, sizeof(*v));
	int r;

	*top = 0;
	if (!v)
		return -ENOMEM;
	r = disk_load(d, v, d->fold.recs, slots * sizeof(*v));
	if (r < 0) {
		free(v);
		return r;
	}
	for (size_t i = 0; i < slots; i++)
		if (pmemz_disk_jrec_valid(&v[i], d->fold.uuid, d->fold.base, i, slots, nchunks)) {
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
static int move_some(struct disk *d, struct recover_move *m, size_t n)
{
	struct pmemz_batch *b = NULL;
	int r = disk_journal_refuse_move(d) ? -EDQUOT : pmemz_batch_new(d->r, &b);

	for (size_t i = 0; r == 0 && i < n; i++) {
		char tag[PMEMZ_DISK_TAG_MAX];

		(void)pmemz_disk_chunk_tag(tag, sizeof(tag), d->cfg.name, m[i].idx);
		r = pmemz_batch_move(b, m[i].from, m[i].addr, tag, &m[i].out);
	}
	if (r == 0)
		r = pmemz_batch_wait(b);
	pmemz_batch_free(b);
	return r;
}

/* All of m[0..n), halving the requests in a nearly full tag table. */
static int move_all(struct disk *d, struct recover_move *m, size_t n)
{
	size_t per = disk_journal_moves_max();

	for (size_t i = 0; i < n;) {
		size_t k = n - i < per ? n - i : per;
		int r = move_some(d, m + i, k);

		if (r == -ENOSPC && per > 1) {
			per /= 2;
			continue;
		}
		if (r < 0) {
			nbdkit_error("pmemz: disk '%s': cannot move %zu journal mapping(s) to "
				     "their chunks' tags: %s",
				     d->cfg.name, k, pmemz_errormsg());
			return r;
		}
		i += k;
	}
	return 0;
}

/* The pools, with what is left in them (held ahead, maybe written): zeroed again. */
static int free_pools(struct disk *d, struct pmemz_alloc **pools, size_t n_pools)
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
				     d->cfg.name, pmemz_errormsg());
			first = r;
		}
	}
	return first;
}

/*
 * The moves were refused (the uid's tag limit, a full tag table): the
 * journal keeps mapping m[0..n_m), as it did before, and the fold takes
 * them up when it can.  A pool holding any of them stays, its other
 * extents unused (maybe written) until it is freed after its last fold;
 * the others are freed now.  The chunks join *found without a tag.
 */
static int adopt(struct disk *d, struct pmemz_alloc **pools, size_t n_pools,
		 struct recover_move *m, size_t n_m, uint64_t top, struct disk_found **found,
		 size_t *n, size_t *cap)
{
	struct ahead_pool **ap = calloc(n_pools ? n_pools : 1, sizeof(*ap));
	int r = ap ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < n_m; i++) {
		size_t p = 0;

		while (pools[p] != m[i].from)
			p++;
		if (!ap[p]) {
			ap[p] = calloc(1, sizeof(**ap));
			if (!ap[p]) {
				r = -ENOMEM;
				break;
			}
			ap[p]->a = pools[p];
		}
		ap[p]->refs++;
		r = PMEMZ_GROW(d->fold.v, &d->fold.cap, d->fold.n + 1);
		if (r == 0)
			r = PMEMZ_GROW(*found, cap, *n + 1);
		if (r < 0)
			break;
		d->fold.v[d->fold.n++] =
		    (struct fold_entry){.idx = m[i].idx, .e = {m[i].addr, ap[p]}};
		(*found)[(*n)++] = (struct disk_found){m[i].idx, m[i].addr, NULL};
	}
	for (size_t p = 0; r == 0 && p < n_pools; p++) {
		if (ap[p]) {
			r = disk_ahead_adopt(d, ap[p]);
			if (r == 0)
				pools[p] = NULL;
		} else if (free_pools(d, &pools[p], 1) < 0) {
			r = -EIO;
		}
	}
	if (r < 0) {
		for (size_t p = 0; ap && p < n_pools; p++)
			if (pools[p])
				free(ap[p]);
		free(ap);
		return r;
	}
	free(ap);
	d->fold.made = d->fold.n;
	d->fold.next = top;
	nbdkit_debug("pmemz: disk '%s': %zu chunk(s) stay in the journal for now", d->cfg.name,
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
static int recover_refused(struct disk *d, struct pmemz_alloc **pools, size_t n_pools,
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
	r = adopt(d, pools, n_pools, m, k, top, found, n, cap);
	if (r == 0 && moved)
		(void)disk_journal_rewrite(d, d->fold.v, d->fold.n, top);
	return r;
}

int disk_journal_recover(struct disk *d, struct pmemz_alloc **pools, size_t n_pools,
			 struct disk_found **found, size_t *n, size_t *cap)
{
	struct pmemz_disk_jrec *rec = NULL;
	struct pool_ext *ext = NULL;
	struct recover_move *m = NULL;
	size_t n_rec = 0, n_ext = 0, n_m = 0, present = *n;
	uint64_t top = 0;
	int r = 0;

	if (d->fold.slots)
		r = read_records(d, &rec, &n_rec, &top);
	if (r == 0)
		r = pool_extents(d, pools, n_pools, &ext, &n_ext);
	if (r == 0 && n_rec)
		m = calloc(n_rec, sizeof(*m));
	if (r == 0 && n_rec && !m)
		r = -ENOMEM;
	if (r < 0)
		goto out;
	if (present)
		qsort(*found, present, sizeof(**found), by_index);
	for (size_t i = 0; i < n_rec; i++) {
		struct pool_ext key = {.extent = rec[i].extent}, *pe;
		struct disk_found fk = {.index = rec[i].chunk};

		pe = n_ext ? bsearch(&key, ext, n_ext, sizeof(*ext), by_extent) : NULL;
		/*
		 * Not in a pool: folded already (under its chunk's tag now), or
		 * not this disk's.  A chunk with its own tag keeps it (a fold
		 * moves a journal's extent there; nothing maps it again).
		 */
		if (!pe || (present && bsearch(&fk, *found, present, sizeof(**found), by_index)))
			continue;
		m[n_m++] = (struct recover_move){rec[i].chunk, pools[pe->pool],
						 extent_addr(d, rec[i].extent), NULL};
	}
	r = move_all(d, m, n_m);
	if (r == -EDQUOT || r == -ENOSPC) {
		r = recover_refused(d, pools, n_pools, m, n_m, top, found, n, cap);
		if (r == 0)
			n_m = 0;
		goto out;
	}
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n_m; i++) {
		r = PMEMZ_GROW(*found, cap, *n + 1);
		if (r < 0)
			goto out;
		(*found)[(*n)++] = (struct disk_found){m[i].idx, m[i].addr, m[i].out};
		m[i].out = NULL;
	}
	r = free_pools(d, pools, n_pools);
	/* after the frees: a record must not outlive the pool that vouched for it */
	if (r == 0 && top > d->fold.base) {
		r = disk_journal_set_base(d, top);
		if (r == 0)
			d->fold.base = d->fold.next = top;
	}
	if (r == 0 && (n_m || n_pools))
		nbdkit_debug("pmemz: disk '%s': %zu chunk(s) of the journal moved to their tags, "
			     "%zu pool tag(s) freed",
			     d->cfg.name, n_m, n_pools);
out:
	for (size_t i = 0; i < n_m; i++)
		if (m[i].out)
			pmemz_alloc_close(m[i].out);
	for (size_t p = 0; p < n_pools; p++)
		if (pools[p])
			pmemz_alloc_close(pools[p]);
	if (r < 0 && r != -EIO && r != -ENOMEM)
		nbdkit_error("pmemz: disk '%s': the journal was not recovered", d->cfg.name);
	else if (r == -ENOMEM)
		nbdkit_error("pmemz: disk '%s': out of memory reading the journal", d->cfg.name);
	free(rec);
	free(ext);
	free(m);
	return r;
}
