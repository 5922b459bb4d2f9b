/* SPDX-License-Identifier: MIT */
/*
 * The nbd disks of a region, from its tags (nbdkit-pmemz-plugin(1)): what
 * `pmemzctl disks` lists and what `pmemzctl metrics` exports per disk, so
 * that both count the same bytes the same way.
 *
 * A disk is a set of tags: its superblock "nbd/DISK" (one extent: the
 * virtual size), one tag "nbd/DISK/INDEX" per chunk written (mapped bytes)
 * and "nbd/DISK/ahead/SEQ" for extents it owns ahead of need (held, not
 * mapped yet).  The tags come from LIST (every uid's for an admin, the
 * caller's otherwise: a disk is (uid, name)), in pages.
 */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "disk-format.h"
#include "pmemzctl.h"

static int disk_cmp(const void *a, const void *b)
{
	const struct ctl_disk *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return strcmp(x->name, y->name);
}

void ctl_disk_set_done(struct ctl_disk_set *s)
{
	tdestroy(s->root, free);
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

/* Tag i of the list: a disk's superblock, chunk or ahead extents, or not a disk's (ignored). */
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
	if (kind == PMEMZ_DISK_TAG_SUPER) {
		/* One extent, as the plugin writes it; anything else is not a superblock. */
		d->has_sb = pmemz_taglist_runs(l, i) == 1 &&
			    pmemz_taglist_run(l, i, 0, &d->sb_extent, &count) == 0 && count == 1;
		return 0;
	}
	if (kind == PMEMZ_DISK_TAG_AHEAD) {
		d->ahead += pmemz_taglist_bytes(l, i);
		return 0;
	}
	d->chunks++;
	d->allocated += pmemz_taglist_bytes(l, i);
	return 0;
}

static void taglist_freep(struct pmemz_taglist **l)
{
	pmemz_taglist_free(*l);
}

int ctl_disk_set_list(struct pmemz_client *c, const char *region, bool all, struct ctl_disk_set *s)
{
	_cleanup_(taglist_freep) struct pmemz_taglist *l = NULL;
	/* Chunks are one run, but a tag under the prefix may be anything. */
	unsigned flags = PMEMZ_LIST_FIRST_RUNS | (all ? PMEMZ_LIST_ALL_USERS : 0);
	int r;

	r = pmemz_admin_list(c, region, PMEMZ_DISK_TAG_PREFIX, flags, &l);
	if (r < 0)
		return r;
	for (size_t i = 0; i < pmemz_taglist_count(l); i++)
		if (disk_add_tag(s, l, i) < 0)
			return ctl_oom();
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
