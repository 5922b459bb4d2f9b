/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: opening a disk.  Connect, claim nbd/DISK (one
 * process per disk), find or create its superblock, settle its size, and
 * build the chunk map from the disk's chunk tags.  Everything is checked
 * before the first request: a refusal names its reason.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "feature-mask.h"
#include "libpmemzclient.h"
#include "vector.h"

struct walk {
	struct disk *d;
	struct disk_found *v;
	size_t n, cap;
	struct pmemz_alloc **pools; /* the pool tags: disk-journal.c empties and frees them */
	size_t n_pools, cap_pools;
	int bad;
	char why[200];
};

/* One extent of the region, whole: what every tag of the disk must be. */
static char *one_extent(struct disk *d, struct pmemz_alloc *a)
{
	size_t len = 0;
	char *p;

	if (pmemz_alloc_count(a) != 1)
		return NULL;
	p = pmemz_alloc_range(a, 0, &len);
	if (!p || len != d->chunk_size || p < d->base || (size_t)(p - d->base) > d->region_size ||
	    d->region_size - (size_t)(p - d->base) < len)
		return NULL;
	return p;
}

static int walk_one(struct pmemz_alloc *a, const char *tag, void *arg)
{
	struct walk *w = arg;
	char name[PMEMZ_DISK_NAME_MAX + 1];
	uint64_t idx = 0;
	char *p;
	int r;

	int kind = pmemz_disk_tag_parse(tag, name, &idx);

	if (kind == PMEMZ_DISK_TAG_AHEAD && strcmp(name, w->d->cfg.name) == 0) {
		pmemz_alloc_close(a); /* an earlier process's: disk_ahead_open frees it */
		return 0;
	}
	if (kind == PMEMZ_DISK_TAG_POOL && strcmp(name, w->d->cfg.name) == 0) {
		r = PMEMZ_GROW(w->pools, &w->cap_pools, w->n_pools + 1);
		if (r < 0) {
			pmemz_alloc_close(a);
			return r;
		}
		w->pools[w->n_pools++] = a;
		disk_ahead_seen(w->d->ahead, idx);
		return 0;
	}
	if (kind != PMEMZ_DISK_TAG_CHUNK || strcmp(name, w->d->cfg.name) != 0) {
		(void)snprintf(w->why, sizeof(w->why), "tag '%s' is not a chunk of the disk", tag);
		goto bad;
	}
	p = one_extent(w->d, a);
	if (!p) {
		(void)snprintf(w->why, sizeof(w->why),
			       "tag '%s' is not one extent of the region's extent size", tag);
		goto bad;
	}
	r = PMEMZ_GROW(w->v, &w->cap, w->n + 1);
	if (r < 0) {
		pmemz_alloc_close(a);
		return r;
	}
	w->v[w->n++] = (struct disk_found){.index = idx, .addr = p, .a = a};
	return 0;
bad:
	pmemz_alloc_close(a);
	w->bad = -EUCLEAN;
	return -EUCLEAN;
}

static int disk_connect(struct disk *d)
{
	char claim[PMEMZ_DISK_TAG_MAX];
	int r;

	r = pmemz_client_new(d->cfg.socket, &d->c);
	if (r < 0) {
		nbdkit_error("pmemz: cannot connect to pmemzerod: %s", pmemz_errormsg());
		return r;
	}
	r = pmemz_region_open(d->c, d->cfg.region, &d->r);
	if (r < 0) {
		nbdkit_error("pmemz: cannot open region '%s': %s", d->cfg.region, pmemz_errormsg());
		return r;
	}
	d->base = pmemz_region_address(d->r);
	d->region_size = pmemz_region_size(d->r);
	d->chunk_size = pmemz_region_extent_size(d->r);
	(void)pmemz_disk_super_tag(claim, sizeof(claim), d->cfg.name);
	r = pmemz_region_claim(d->r, claim);
	if (r == -EBUSY) {
		nbdkit_error(
		    "pmemz: disk '%s' of region '%s' is served by another process already: %s",
		    d->cfg.name, d->cfg.region, pmemz_errormsg());
		return r;
	}
	if (r < 0) {
		nbdkit_error("pmemz: cannot claim disk '%s' of region '%s': %s", d->cfg.name,
			     d->cfg.region, pmemz_errormsg());
		return r;
	}
	return 0;
}

static int found_one(struct pmemz_alloc *a, const char *tag, void *arg)
{
	pmemz_alloc_close(a);
	return 1;
}

/* A disk may be made only where no chunk tag is: those of an earlier disk would show. */
static int no_chunk_tags(struct disk *d)
{
	char prefix[PMEMZ_DISK_TAG_MAX];
	int r;

	(void)pmemz_disk_chunk_prefix(prefix, sizeof(prefix), d->cfg.name);
	r = pmemz_tag_foreach(d->r, prefix, found_one, NULL);
	if (r > 0) {
		nbdkit_error("pmemz: disk '%s' has no superblock but chunk tags (%s*): refusing to "
			     "make a new disk over an earlier one's data",
			     d->cfg.name, prefix);
		return -EEXIST;
	}
	if (r < 0)
		nbdkit_error("pmemz: cannot list the tags of disk '%s': %s", d->cfg.name,
			     pmemz_errormsg());
	return r;
}

/* Write a new superblock of size= into the committed extent p, durably. */
static int super_write(struct disk *d, char *p)
{
	struct pmemz_disk_super sb;
	uint8_t uuid[16];
	const char *why;
	int r;

	if (d->cfg.size == 0) {
		nbdkit_error(
		    "pmemz: disk '%s' does not exist in region '%s': give size= to create it",
		    d->cfg.name, d->cfg.region);
		return -ENOENT;
	}
	if (pmemz_disk_size_valid(d->cfg.size, d->chunk_size, &why) < 0) {
		nbdkit_error("pmemz: size=%" PRIu64 " refused: %s", d->cfg.size, why);
		return -EFBIG;
	}
	if (getrandom(uuid, sizeof(uuid), 0) != (ssize_t)sizeof(uuid)) {
		nbdkit_error("pmemz: getrandom: %m");
		return -EIO;
	}
	pmemz_disk_super_init(&sb, d->cfg.name, d->cfg.size, d->chunk_size, (uint64_t)time(NULL),
			      uuid, disk_journal_slots_new(d));
	r = disk_store(d, p, &sb, sizeof(sb));
	pmemz_drain(d->r);
	if (r < 0) {
		nbdkit_error("pmemz: cannot write the superblock of disk '%s'", d->cfg.name);
		return r;
	}
	nbdkit_debug("pmemz: created disk '%s' of %" PRIu64 " bytes in region '%s', its journal "
		     "%" PRIu64 " records",
		     d->cfg.name, d->cfg.size, d->cfg.region, sb.journal_slots);
	d->sb = sb;
	d->size = d->cfg.size;
	return 0;
}

/*
 * A new disk.  Its superblock's extent is committed first and written
 * after (as every chunk is, disk-io.c says why): a crash in between
 * leaves a zero superblock, which the next open completes.
 */
static int super_create(struct disk *d, const char *tag)
{
	struct pmemz_alloc *a = NULL;
	const char *why;
	char *p;
	int r;

	if (d->cfg.size == 0)
		return super_write(d, NULL); /* refuses, with the reason */
	if (pmemz_disk_size_valid(d->cfg.size, d->chunk_size, &why) < 0)
		return super_write(d, NULL);
	r = no_chunk_tags(d);
	if (r < 0)
		return r;
	r = pmemz_alloc_new(d->r, d->chunk_size, 0, &a);
	if (r == 0 && !one_extent(d, a)) {
		pmemz_alloc_close(a);
		nbdkit_error("pmemz: the daemon returned an allocation that is not one extent");
		return -EPROTO;
	}
	if (r == 0)
		r = pmemz_alloc_commit(a, tag, 0);
	if (r < 0) {
		nbdkit_error("pmemz: cannot allocate the superblock of disk '%s': %s", d->cfg.name,
			     pmemz_errormsg());
		if (a)
			pmemz_alloc_close(a);
		return r;
	}
	d->super_a = a;
	p = one_extent(d, a);
	d->super = p;
	return super_write(d, p);
}

static bool all_zero(const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

void disk_warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)fputs("nbdkit: pmemz: warning: ", stderr);
	(void)vfprintf(stderr, fmt, ap);
	(void)fputc('\n', stderr);
	va_end(ap);
}

/*
 * A superblock of a later version, or with incompat features this plugin
 * does not know: it cannot tell what a write would break, so it refuses
 * the disk before it writes anything (superblock, journal, tags).
 */
static int refuse_later(struct disk *d, const struct pmemz_disk_super *sb)
{
	struct pmemz_disk_features f, unknown;
	char bits[320];

	if (sb->version != PMEMZ_DISK_VERSION) {
		nbdkit_error("pmemz: disk '%s' refused: its superblock is version %" PRIu32
			     ", made by a later version of nbdkit-pmemz-plugin (this one reads "
			     "versions 1 to %u); nothing was written",
			     d->cfg.name, sb->version, PMEMZ_DISK_VERSION);
		return -EPROTO;
	}
	pmemz_disk_super_features(sb, &f);
	pmemz_disk_super_unknown(&f, &unknown);
	(void)pmemz_mask_str(unknown.incompat, bits, sizeof(bits));
	nbdkit_error(
	    "pmemz: disk '%s' refused: it uses incompat features %s that this plugin does "
	    "not know (a later version of nbdkit-pmemz-plugin made it); nothing was written",
	    d->cfg.name, bits);
	return -EPROTO;
}

/*
 * Features of a later plugin that this one may ignore: ro_compat ones
 * allow reading the disk but not writing it (nothing is written: no
 * write, no fold, no free, no journal record, no size change); compat
 * ones change nothing here.
 */
static void unknown_features(struct disk *d)
{
	struct pmemz_disk_features f, unknown;
	char bits[320];

	pmemz_disk_super_features(&d->sb, &f);
	pmemz_disk_super_unknown(&f, &unknown);
	if (unknown.ro_compat) {
		(void)pmemz_mask_str(unknown.ro_compat, bits, sizeof(bits));
		disk_warning("disk '%s' uses ro_compat features %s that this plugin does not know "
			     "(a later version of nbdkit-pmemz-plugin made it): served read-only",
			     d->cfg.name, bits);
		d->readonly = true;
	}
	if (unknown.compat) {
		(void)pmemz_mask_str(unknown.compat, bits, sizeof(bits));
		nbdkit_debug("pmemz: disk '%s' uses compat features %s that this plugin does not "
			     "know: served as usual",
			     d->cfg.name, bits);
	}
}

static int super_load(struct disk *d)
{
	char tag[PMEMZ_DISK_TAG_MAX];
	struct pmemz_disk_super sb;
	const char *why;
	char *p;
	int r;

	(void)pmemz_disk_super_tag(tag, sizeof(tag), d->cfg.name);
	r = pmemz_alloc_open(d->r, tag, &d->super_a);
	if (r == -ENOENT)
		return super_create(d, tag);
	if (r < 0) {
		nbdkit_error("pmemz: cannot open disk '%s': %s", d->cfg.name, pmemz_errormsg());
		return r;
	}
	p = one_extent(d, d->super_a);
	if (!p) {
		nbdkit_error("pmemz: disk '%s': its superblock tag '%s' is not one extent of the "
			     "region's extent size",
			     d->cfg.name, tag);
		return -EUCLEAN;
	}
	d->super = p;
	/* a copy: the checks must see what the rest of the code uses */
	r = disk_load(d, &sb, p, sizeof(sb));
	if (r < 0) {
		nbdkit_error("pmemz: cannot read the superblock of disk '%s'", d->cfg.name);
		return r;
	}
	if (all_zero(&sb, sizeof(sb))) {
		/* the creation was cut short after the commit: complete it */
		nbdkit_debug("pmemz: disk '%s': completing an interrupted creation", d->cfg.name);
		r = no_chunk_tags(d);
		return r < 0 ? r : super_write(d, p);
	}
	r = pmemz_disk_super_check(&sb, d->cfg.name, d->chunk_size, &why);
	if (r == -EPROTO)
		return refuse_later(d, &sb);
	if (r < 0) {
		nbdkit_error("pmemz: disk '%s' refused: %s", d->cfg.name, why);
		return r;
	}
	d->sb = sb;
	d->size = sb.size;
	unknown_features(d);
	return 0;
}

struct tail {
	const char *p;
	uint64_t from, to;
};

static int tail_zero(void *arg)
{
	const struct tail *t = arg;

	for (uint64_t i = t->from; i < t->to; i++)
		if (t->p[i] != 0)
			return 0;
	return 1;
}

/* Are the bytes [from, to) of chunk c (absent: zero) all zero?  1, 0, or -EIO. */
static int chunk_tail_zero(struct disk *d, const struct disk_found *c, uint64_t from, uint64_t to)
{
	struct tail t = {.p = c->addr, .from = from, .to = to};

	return disk_guard(d, tail_zero, &t);
}

struct new_size {
	struct disk *d;
	struct pmemz_disk_super *sb;
	uint64_t size;
};

static int store_size(void *arg)
{
	struct new_size *n = arg;

	__atomic_store_n(&n->sb->size, n->size, __ATOMIC_RELEASE);
	return pmemz_persist(n->d->r, &n->sb->size, sizeof(n->sb->size));
}

/*
 * size= other than the recorded size.  Bytes beyond the size are zero
 * (nbdkit refuses requests past it), so growing is one 8-byte store of the
 * new size: failure-atomic, a crash leaves the old size or the new one.
 * Shrinking would drop data, and growing back would show it again: it is
 * allowed only when every byte past the new size reads zero.
 */
static int settle_size(struct disk *d, const struct disk_found *v, size_t n)
{
	struct pmemz_disk_super *sb = (struct pmemz_disk_super *)one_extent(d, d->super_a);
	uint64_t want = d->cfg.size, keep;
	struct new_size ns = {.d = d, .sb = sb, .size = want};
	const char *why;
	int r;

	if (want == 0 || want == d->size)
		return 0;
	if (d->readonly) {
		nbdkit_error("pmemz: size=%" PRIu64
			     " refused: disk '%s' is served read-only, so its "
			     "size stays %" PRIu64 " bytes",
			     want, d->cfg.name, d->size);
		return -EROFS;
	}
	if (pmemz_disk_size_valid(want, d->chunk_size, &why) < 0) {
		nbdkit_error("pmemz: size=%" PRIu64 " refused: %s", want, why);
		return -EFBIG;
	}
	if (want < d->size) {
		keep = pmemz_disk_chunks(want, d->chunk_size);
		for (size_t i = 0; i < n; i++) {
			uint64_t tail = want % d->chunk_size;

			r = v[i].index == keep - 1 && tail != 0
				? chunk_tail_zero(d, &v[i], tail, d->chunk_size)
				: 1;
			if (r < 0)
				return r;
			if (v[i].index >= keep || r == 0) {
				nbdkit_error("pmemz: size=%" PRIu64 " refused: disk '%s' has data "
					     "beyond it (chunk %" PRIu64 ", at byte %" PRIu64
					     "; its size is %" PRIu64 ")",
					     want, d->cfg.name, v[i].index,
					     v[i].index * d->chunk_size, d->size);
				return -EFBIG;
			}
		}
	}
	r = disk_guard(d, store_size, &ns);
	if (r == -EIO) {
		nbdkit_error("pmemz: cannot make the new size of disk '%s' durable", d->cfg.name);
		return r;
	}
	if (r < 0) {
		nbdkit_error("pmemz: cannot make the new size of disk '%s' durable: %s",
			     d->cfg.name, pmemz_errormsg());
		return -EIO;
	}
	nbdkit_debug("pmemz: disk '%s' resized from %" PRIu64 " to %" PRIu64 " bytes", d->cfg.name,
		     d->size, want);
	d->size = want;
	return 0;
}

static int map_load(struct disk *d)
{
	char prefix[PMEMZ_DISK_TAG_MAX];
	struct walk w = {.d = d};
	int r;

	(void)pmemz_disk_chunk_prefix(prefix, sizeof(prefix), d->cfg.name);
	r = pmemz_tag_foreach(d->r, prefix, walk_one, &w);
	if (r < 0) {
		if (w.bad)
			nbdkit_error("pmemz: disk '%s' refused: %s", d->cfg.name, w.why);
		else
			nbdkit_error("pmemz: cannot list the chunks of disk '%s': %s", d->cfg.name,
				     r == -ENOMEM ? "out of memory" : pmemz_errormsg());
		goto out;
	}
	/* the journal's chunks join the others, before the size is settled on them all */
	r = disk_journal_recover(d->journal, w.pools, w.n_pools, &w.v, &w.n, &w.cap);
	w.n_pools = 0;
	if (r < 0)
		goto out;
	r = settle_size(d, w.v, w.n);
	if (r < 0)
		goto out;
	d->nchunks = pmemz_disk_chunks(d->size, d->chunk_size);
	for (size_t i = 0; i < w.n; i++)
		if (w.v[i].index >= d->nchunks) {
			/* settle_size refuses this for size=; here the superblock says less */
			nbdkit_error("pmemz: disk '%s' refused: chunk %" PRIu64
				     " lies beyond its size of %" PRIu64 " bytes",
				     d->cfg.name, w.v[i].index, d->size);
			r = -EUCLEAN;
			goto out;
		}
	/* reserved, not touched: a 32 TiB disk costs address space, not memory */
	d->map_bytes = d->nchunks * sizeof(*d->map);
	d->map = mmap(NULL, d->map_bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (d->map == MAP_FAILED) {
		d->map = NULL;
		nbdkit_error("pmemz: cannot map the chunk map of %" PRIu64 " chunks: %m",
			     d->nchunks);
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < w.n; i++) {
		d->map[w.v[i].index] = (struct disk_chunk){.addr = w.v[i].addr, .a = w.v[i].a};
		w.v[i].a = NULL;
	}
	d->allocated = w.n;
	nbdkit_debug("pmemz: disk '%s': %" PRIu64 " bytes, %" PRIu64 " chunks of %" PRIu64
		     ", %zu present",
		     d->cfg.name, d->size, d->nchunks, d->chunk_size, w.n);
	r = 0;
out:
	for (size_t i = 0; i < w.n; i++)
		if (w.v[i].a)
			pmemz_alloc_close(w.v[i].a);
	for (size_t i = 0; i < w.n_pools; i++)
		pmemz_alloc_close(w.pools[i]);
	free(w.pools);
	free(w.v);
	return r;
}

/* The client reserve answers the refills of the extents owned ahead, or fresh chunks without. */
static void set_reserve(struct disk *d)
{
	uint64_t bytes = d->cfg.reserve;

	if (!bytes)
		return;
	/* the reserve is held out of everyone's reach: at most half the region */
	if (bytes > d->region_size / 2)
		bytes = d->region_size / 2;
	if (bytes >= d->chunk_size && pmemz_region_set_reserve(d->r, bytes) < 0)
		/* an optimisation: serve without it */
		nbdkit_debug("pmemz: no allocation reserve: %s", pmemz_errormsg());
}

static int make_stripes(struct disk *d)
{
	d->stripes = calloc(DISK_STRIPES, sizeof(*d->stripes));
	if (!d->stripes) {
		nbdkit_error("pmemz: out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < DISK_STRIPES; i++)
		pthread_rwlock_init(&d->stripes[i].lock, NULL);
	return 0;
}

/* disk_open, each module made in turn (disk_close frees what was made). */
static int open_modules(struct disk *d)
{
	bool ahead;
	int r;

	r = disk_spares_new(d, d->cfg.spares, &d->spares);
	if (r == 0)
		r = make_stripes(d);
	if (r == 0)
		r = disk_connect(d);
	if (r == 0)
		r = super_load(d);
	if (r == 0)
		r = disk_journal_new(d, &d->journal);
	if (r < 0)
		return r;
	if (d->readonly) {
		/* nothing to write back, nothing to lease for fresh chunks */
		d->cfg.writeback = 0;
		d->cfg.reserve = 0;
	}
	/* extents owned ahead need the journal that maps them; they come zero already */
	ahead = d->cfg.ahead >= d->chunk_size && !d->cfg.zero_fresh &&
		disk_journal_on(d->journal) && !d->readonly;
	r = disk_ahead_new(d, ahead, &d->ahead);
	if (r == 0)
		r = map_load(d);
	if (r == 0)
		r = disk_fold_new(d, &d->fold);
	if (r == 0 && !d->readonly)
		r = disk_ahead_open(d->ahead);
	if (r == 0)
		r = wb_new(d, &d->wb);
	if (r == 0)
		r = disk_prewarm_new(d, d->cfg.prewarm, &d->prewarm);
	if (r == 0)
		set_reserve(d);
	return r;
}

int disk_open(struct disk *d, const struct disk_config *cfg)
{
	int r;

	memset(d, 0, sizeof(*d));
	d->cfg = *cfg;
	disk_guard_init();
	pthread_mutex_init(&d->reconnect_lock, NULL);
	if (d->cfg.spares > DISK_SPARES_MAX)
		d->cfg.spares = DISK_SPARES_MAX;
	r = open_modules(d);
	/* the journal may map chunks into them: the next start recovers them, never this close */
	if (r < 0 && d->ahead)
		disk_ahead_keep_pools(d->ahead);
	return r;
}

int disk_start(struct disk *d)
{
	int r = wb_start(d->wb);

	if (r == 0)
		r = disk_ahead_start(d->ahead);
	if (r == 0)
		r = disk_fold_start(d->fold);
	if (r == 0)
		r = disk_prewarm_start(d->prewarm);
	return r;
}

/*
 * The chunks' own handles.  Every other thread of the disk has stopped, so
 * nothing here can race: ThreadSanitizer, which would otherwise walk its
 * shadow of every entry (16 Mi of them on a 16 TiB disk: minutes), skips it.
 */
__attribute__((noinline, no_sanitize_thread)) static void close_chunk_handles(struct disk *d)
{
	for (uint64_t i = 0; i < d->nchunks; i++)
		if (d->map[i].a)
			pmemz_alloc_close(d->map[i].a);
}

void disk_close(struct disk *d)
{
	disk_prewarm_free(d->prewarm); /* it loads from the mapping */
	/* first: the write-backs still queued commit and publish their chunks */
	wb_free(d->wb);
	/* then every journal mapping is folded into its tag, and what is held ahead goes back */
	disk_fold_free(d->fold);
	/* a fold that failed leaves mappings into the pools: the next open moves them */
	if (d->journal && d->ahead && disk_journal_pending(d->journal))
		disk_ahead_keep_pools(d->ahead);
	disk_ahead_free(d->ahead);
	disk_journal_free(d->journal);
	disk_spares_free(d->spares);
	if (d->map) {
		close_chunk_handles(d);
		munmap(d->map, d->map_bytes);
	}
	if (d->super_a)
		pmemz_alloc_close(d->super_a);
	/* closing the region gives the reserve and the claim back */
	if (d->r)
		pmemz_region_close(d->r);
	if (d->c)
		pmemz_client_free(d->c);
	if (d->stripes) {
		for (unsigned i = 0; i < DISK_STRIPES; i++)
			pthread_rwlock_destroy(&d->stripes[i].lock);
		free(d->stripes);
	}
	pthread_mutex_destroy(&d->reconnect_lock);
	memset(d, 0, sizeof(*d));
}
