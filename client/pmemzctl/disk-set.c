/* SPDX-License-Identifier: MIT */
/*
 * The nbd disks of a region, from its tags (nbdkit-pmemz-plugin(1)): what
 * `pmemzctl disks` lists and what `pmemzctl metrics` exports per disk, so
 * that both count the same bytes the same way.
 *
 * A disk is a set of tags (common/disk/disk-format.h): its superblock
 * "nbd/DISK" (one extent: the virtual size, then the mapping journal), one
 * tag "nbd/DISK/INDEX" per chunk folded (mapped bytes), "nbd/DISK/pool/SEQ"
 * for extents it owns ahead of need, any number each, and the legacy
 * "nbd/DISK/ahead/SEQ" of a plugin before the journal (held, not mapped).
 * A pool extent that the journal's latest record for a chunk names is
 * mapped; the rest of the pool is ahead.  The tags come from LIST (every
 * uid's for an admin, the caller's otherwise: a disk is (uid, name)), in
 * pages; the journal from the region's mapping (ctl_disk_read).
 *
 * The plugin writes the disk while this reads it: LIST pages, the
 * superblock and the journal are each read at their own moment, so the
 * figures are a snapshot, not an atomic one (a chunk folded between two
 * pages may be counted twice or not at all).  Nothing here trusts them to
 * agree: every loop is bounded by what was copied, and ahead never goes
 * below zero.
 */
#include <endian.h>
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk-format.h"
#include "feature-mask.h"
#include "pmemzctl.h"
#include "sigbus.h"
#include "vector.h"

static int disk_cmp(const void *a, const void *b)
{
	const struct ctl_disk *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void disk_free(void *p)
{
	struct ctl_disk *d = p;

	free(d->pool);
	free(d);
}

void ctl_disk_set_done(struct ctl_disk_set *s)
{
	tdestroy(s->root, disk_free);
	s->root = NULL;
	s->n = 0;
}

static int disk_get(struct ctl_disk_set *s, uint32_t uid, const char *name, struct ctl_disk **out)
{
	struct ctl_disk key = {.uid = uid}, *d, **slot;

	(void)snprintf(key.name, sizeof(key.name), "%s", name);
	slot = tfind(&key, &s->root, disk_cmp);
	if (slot) {
		*out = *slot;
		return 0;
	}
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	*d = key;
	slot = tsearch(d, &s->root, disk_cmp);
	if (!slot) {
		free(d);
		return -ENOMEM;
	}
	s->n++;
	*out = d;
	return 0;
}

static int pool_add_run(struct ctl_disk *d, uint64_t first, uint64_t count)
{
	int r;

	if (!count)
		return 0;
	r = PMEMZ_GROW(d->pool, &d->cap_pool, d->n_pool + 1);
	if (r < 0)
		return -ENOMEM; /* the caller's one answer to any failure here */
	d->pool[d->n_pool++] = (struct ctl_run){.first = first, .count = count};
	return 0;
}

/*
 * The runs of the caller's own pool tag, read whole (RUNS, through an
 * allocation handle): LIST gave only the first ones.  A tag gone meanwhile
 * (folded, freed at the plugin's open) has nothing to add.
 */
static int pool_add_own(struct pmemz_region *reg, struct ctl_disk *d, uint64_t seq)
{
	const uint8_t *data =
	    (const uint8_t *)pmemz_region_address(reg) + pmemz_region_data_offset(reg);
	uint64_t extent_size = pmemz_region_extent_size(reg);
	char tag[PMEMZ_DISK_TAG_MAX];
	struct pmemz_alloc *a = NULL;
	int r;

	if (pmemz_disk_pool_tag(tag, sizeof(tag), d->name, seq) < 0)
		return 0;
	r = pmemz_alloc_open(reg, tag, &a);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	for (size_t i = 0; r == 0 && i < pmemz_alloc_count(a); i++) {
		size_t len;
		const uint8_t *p = pmemz_alloc_range(a, i, &len);

		r = pool_add_run(d, (uint64_t)(p - data) / extent_size, len / extent_size);
	}
	pmemz_alloc_close(a);
	return r;
}

/*
 * Pool tag i of the list: its bytes, and its runs.  LIST cuts a tag too
 * fragmented for one reply to its first runs (PMEMZ_LIST_FIRST_RUNS: else
 * the whole listing would fail), its bytes whole: the caller's own such
 * tag is read again whole; another uid's cannot be (RUNS is the owner's
 * alone), and a record naming one of its missing runs counts as ahead.
 */
static int disk_add_pool(struct ctl_disk_set *s, struct ctl_disk *d, const struct pmemz_taglist *l,
			 size_t i, uint64_t seq)
{
	uint64_t first, count, listed = 0;
	int r;

	d->pool_bytes += pmemz_taglist_bytes(l, i);
	d->ahead += pmemz_taglist_bytes(l, i);
	for (size_t k = 0; k < pmemz_taglist_runs(l, i); k++) {
		if (pmemz_taglist_run(l, i, k, &first, &count) < 0)
			break;
		r = pool_add_run(d, first, count);
		if (r < 0)
			return r;
		listed += count;
	}
	if (listed * s->extent_size >= pmemz_taglist_bytes(l, i))
		return 0;
	if (d->uid != s->uid || !s->reg)
		return 0;
	return pool_add_own(s->reg, d, seq);
}

/* Tag i of the list: a disk's superblock, chunk, pool or ahead tag, or not a disk's (ignored). */
static int disk_add_tag(struct ctl_disk_set *s, const struct pmemz_taglist *l, size_t i)
{
	char name[PMEMZ_DISK_NAME_MAX + 1];
	struct ctl_disk *d;
	uint64_t index, count = 0;
	int kind, r;

	kind = pmemz_disk_tag_parse(pmemz_taglist_name(l, i), name, &index);
	if (kind < 0)
		return 0;
	r = disk_get(s, pmemz_taglist_uid(l, i), name, &d);
	if (r < 0)
		return r;
	switch (kind) {
	case PMEMZ_DISK_TAG_SUPER:
		/* One extent, as the plugin writes it; anything else is not a superblock. */
		d->has_sb = pmemz_taglist_runs(l, i) == 1 &&
			    pmemz_taglist_run(l, i, 0, &d->sb_extent, &count) == 0 && count == 1;
		return 0;
	case PMEMZ_DISK_TAG_AHEAD:
		d->ahead += pmemz_taglist_bytes(l, i);
		return 0;
	case PMEMZ_DISK_TAG_POOL:
		return disk_add_pool(s, d, l, i, index);
	default:
		d->chunks++;
		d->allocated += pmemz_taglist_bytes(l, i);
		return 0;
	}
}

static void taglist_freep(struct pmemz_taglist **l)
{
	pmemz_taglist_free(*l);
}

int ctl_disk_set_list(struct pmemz_client *c, struct pmemz_region *reg, const char *region,
		      bool all, struct ctl_disk_set *s)
{
	_cleanup_(taglist_freep) struct pmemz_taglist *l = NULL;
	/* A tag under the prefix may be anything: one too fragmented must not fail the rest. */
	unsigned flags = PMEMZ_LIST_FIRST_RUNS | (all ? PMEMZ_LIST_ALL_USERS : 0);
	int r;

	s->reg = reg;
	s->uid = pmemz_client_uid(c);
	s->extent_size = pmemz_region_extent_size(reg);
	r = pmemz_admin_list(c, region, PMEMZ_DISK_TAG_PREFIX, flags, &l);
	for (size_t i = 0; r == 0 && i < pmemz_taglist_count(l); i++)
		if (disk_add_tag(s, l, i) < 0)
			r = ctl_oom();
	s->reg = NULL; /* the set may outlive the handle */
	return r;
}

static int run_cmp(const void *a, const void *b)
{
	const struct ctl_run *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* Sort the pool's runs and merge the ones that touch (a tag read twice, a snapshot's overlaps). */
static void pool_settle(struct ctl_disk *d)
{
	size_t k = 0;

	if (d->n_pool)
		qsort(d->pool, d->n_pool, sizeof(*d->pool), run_cmp);
	for (size_t i = 0; i < d->n_pool; i++) {
		struct ctl_run *last = k ? &d->pool[k - 1] : NULL;

		if (last && d->pool[i].first <= last->first + last->count) {
			uint64_t end = d->pool[i].first + d->pool[i].count;

			if (end > last->first + last->count)
				last->count = end - last->first;
			continue;
		}
		d->pool[k++] = d->pool[i];
	}
	d->n_pool = k;
}

/* Does extent lie in one of the disk's (settled) pool runs? */
static bool pool_has(const struct ctl_disk *d, uint64_t extent)
{
	size_t lo = 0, hi = d->n_pool;

	/* the last run starting at or before extent */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->pool[mid].first <= extent)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && extent - d->pool[lo - 1].first < d->pool[lo - 1].count;
}

static void freep_jrec(struct pmemz_disk_jrec **p)
{
	free(*p);
}

/*
 * The chunks d's journal maps into its pool: the base and every slot
 * copied out of ext (the superblock's extent: any tenant may write it, or
 * truncate the file under it), the valid records, the latest per chunk
 * (and per extent), those naming a pool extent.  0, -EIO, -ENOMEM.
 */
static int journal_mapped(const uint8_t *ext, uint64_t extent_size,
			  const struct pmemz_disk_super *sb, const struct ctl_disk *d,
			  uint64_t *mapped)
{
	uint64_t nchunks = pmemz_disk_chunks(sb->size, extent_size), base;
	_cleanup_(freep_jrec) struct pmemz_disk_jrec *v = NULL;
	struct pmemz_disk_features f;
	size_t slots, n = 0;

	/* the count the superblock gives (checked: it fits the extent) */
	pmemz_disk_super_features(sb, &f);
	slots = (size_t)f.journal_slots;
	*mapped = 0;
	/* too small an extent has no journal; without a pool nothing it says counts */
	if (!slots || !d->n_pool)
		return 0;
	v = calloc(slots, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (pmemz_sigbus_copy(&base, ext + PMEMZ_DISK_JOURNAL_OFFSET, sizeof(base)) < 0 ||
	    pmemz_sigbus_copy(v, ext + PMEMZ_DISK_JOURNAL_RECORDS, slots * sizeof(*v)) < 0)
		return -EIO;
	base = le64toh(base);
	for (size_t i = 0; i < slots; i++) {
		struct pmemz_disk_jrec rec = {.seq = le64toh(v[i].seq),
					      .chunk = le64toh(v[i].chunk),
					      .extent = le64toh(v[i].extent),
					      .check = le64toh(v[i].check)};

		if (pmemz_disk_jrec_valid(&rec, sb->uuid, base, i, slots, nchunks))
			v[n++] = rec;
	}
	n = pmemz_disk_journal_latest(v, n);
	for (size_t i = 0; i < n; i++)
		if (pool_has(d, v[i].extent))
			(*mapped)++;
	return 0;
}

enum ctl_disk_verdict ctl_disk_super_verdict(const struct pmemz_disk_super *sb, const char *name,
					     uint64_t extent_size, const char **state, char *buf,
					     size_t len)
{
	struct pmemz_disk_features f, unknown;
	const char *why = NULL;
	char bits[128];
	int r = pmemz_disk_super_check(sb, name, extent_size, &why);

	if (r == -EPROTO && sb->version > PMEMZ_DISK_VERSION) {
		(void)snprintf(buf, len, "unsupported: superblock version %u of a later plugin",
			       (unsigned)sb->version);
		*state = buf;
		return CTL_DISK_UNSUPPORTED;
	}
	if (r < 0 && r != -EPROTO) {
		*state = why ? why : "bad superblock";
		return CTL_DISK_BAD;
	}
	pmemz_disk_super_features(sb, &f);
	pmemz_disk_super_unknown(&f, &unknown);
	if (unknown.incompat || unknown.ro_compat) {
		bool ro = !unknown.incompat;

		(void)pmemz_mask_str(ro ? unknown.ro_compat : unknown.incompat, bits, sizeof(bits));
		(void)snprintf(buf, len, "%s: %s features %s of a later plugin",
			       ro ? "read-only" : "unsupported", ro ? "ro_compat" : "incompat",
			       bits);
		*state = buf;
		return ro ? CTL_DISK_READONLY : CTL_DISK_UNSUPPORTED;
	}
	*state = "ok";
	return CTL_DISK_OK;
}

int ctl_disk_read(struct pmemz_region *reg, struct ctl_disk *d)
{
	uint64_t extent_size = pmemz_region_extent_size(reg), mapped = 0, bytes;
	const uint8_t *data =
	    (const uint8_t *)pmemz_region_address(reg) + pmemz_region_data_offset(reg);
	const uint8_t *ext;
	struct pmemz_disk_super sb;
	enum ctl_disk_verdict v;
	const char *state;
	int r;

	pool_settle(d);
	d->state = "no superblock";
	if (!d->has_sb)
		return 0;
	d->state = "superblock outside the region";
	if (d->sb_extent >= pmemz_region_extent_count(reg) || extent_size < sizeof(sb))
		return 0;
	ext = data + d->sb_extent * extent_size;
	/* A copy: other tenants of the region may write it while it is checked. */
	if (pmemz_sigbus_copy(&sb, ext, sizeof(sb)) < 0) {
		d->state = "unreadable superblock";
		return -EIO;
	}
	v = ctl_disk_super_verdict(&sb, d->name, extent_size, &state, d->state_buf,
				   sizeof(d->state_buf));
	d->state = state;
	if (v == CTL_DISK_BAD || (v == CTL_DISK_UNSUPPORTED && sb.version > PMEMZ_DISK_VERSION))
		return 0;
	d->size = sb.size;
	/* a journal of features this build does not know may say anything: its tags alone */
	if (v == CTL_DISK_UNSUPPORTED)
		return 0;
	r = journal_mapped(ext, extent_size, &sb, d, &mapped);
	if (r == -EIO)
		d->state = "unreadable journal";
	if (r < 0)
		return r;
	/* Each record names a distinct pool extent; a snapshot's pool may still say less. */
	bytes = mapped * extent_size;
	d->chunks += mapped;
	d->allocated += bytes;
	d->ahead -= bytes < d->pool_bytes ? bytes : d->pool_bytes;
	return 0;
}

struct disk_walk {
	void (*fn)(struct ctl_disk *d, void *arg);
	void *arg;
};

static void disk_visit(const void *node, VISIT which, void *arg)
{
	struct disk_walk *w = arg;

	/* In order: an inner node after its left subtree. */
	if (which == postorder || which == leaf)
		w->fn(*(struct ctl_disk *const *)node, w->arg);
}

void ctl_disk_set_foreach(const struct ctl_disk_set *s, void (*fn)(struct ctl_disk *d, void *arg),
			  void *arg)
{
	struct disk_walk w = {.fn = fn, .arg = arg};

	twalk_r(s->root, disk_visit, &w);
}
