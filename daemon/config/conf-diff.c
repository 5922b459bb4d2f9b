/* SPDX-License-Identifier: MIT */
/*
 * Reload (SIGHUP): what differs between two configurations of one region,
 * by key, and which keys the running region keeps.
 */
#include <errno.h>
#include <string.h>

#include "conf-private.h"

static bool str_differs(const char *a, const char *b)
{
	if (!a || !b)
		return a != b;
	return strcmp(a, b) != 0;
}

/* Is every id of a in b? */
static bool id_subset(const unsigned *a, size_t na, const unsigned *b, size_t nb)
{
	for (size_t i = 0; i < na; i++) {
		size_t j = 0;

		while (j < nb && b[j] != a[i])
			j++;
		if (j == nb)
			return false;
	}
	return true;
}

/* Order does not matter, nor repeats: "alice bob" is "bob alice". */
static bool id_set_differs(const unsigned *a, size_t na, const unsigned *b, size_t nb)
{
	return !id_subset(a, na, b, nb) || !id_subset(b, nb, a, na);
}

static bool str_subset(char *const *a, size_t na, char *const *b, size_t nb)
{
	for (size_t i = 0; i < na; i++) {
		size_t j = 0;

		while (j < nb && strcmp(a[i], b[j]) != 0)
			j++;
		if (j == nb)
			return false;
	}
	return true;
}

static bool str_set_differs(char *const *a, size_t na, char *const *b, size_t nb)
{
	return !str_subset(a, na, b, nb) || !str_subset(b, nb, a, na);
}

unsigned conf_diff_region(const struct region_conf *a, const struct region_conf *b)
{
	unsigned ch = 0;

	if (str_differs(a->path, b->path))
		ch |= CONF_CHANGE_PATH;
	if (a->size != b->size)
		ch |= CONF_CHANGE_SIZE;
	if (a->extent_size_default != b->extent_size_default ||
	    (!a->extent_size_default && a->extent_size != b->extent_size))
		ch |= CONF_CHANGE_EXTENT_SIZE;
	if (str_differs(a->metadata, b->metadata))
		ch |= CONF_CHANGE_METADATA;
	if (id_set_differs(a->allow_uids, a->n_allow_uids, b->allow_uids, b->n_allow_uids) ||
	    id_set_differs(a->allow_gids, a->n_allow_gids, b->allow_gids, b->n_allow_gids) ||
	    str_set_differs(a->allow_cgroups, a->n_allow_cgroups, b->allow_cgroups,
			    b->n_allow_cgroups))
		ch |= CONF_CHANGE_ALLOW;
	if (a->tenant_cgroup != b->tenant_cgroup || a->tenant_levels != b->tenant_levels)
		ch |= CONF_CHANGE_TENANT;
	if (a->zeroer_threads != b->zeroer_threads)
		ch |= CONF_CHANGE_ZEROER_THREADS;
	if (a->zero_rate != b->zero_rate)
		ch |= CONF_CHANGE_ZERO_RATE;
	if (a->batch_extents != b->batch_extents)
		ch |= CONF_CHANGE_BATCH_EXTENTS;
	if (a->uid_quota != b->uid_quota || a->uid_max_tags != b->uid_max_tags ||
	    a->uid_max_waiters != b->uid_max_waiters)
		ch |= CONF_CHANGE_UID_LIMITS;
	return ch;
}

const char *conf_diff_names(unsigned changes, char *buf, size_t len)
{
	static const char *const names[] = {
	    "path",
	    "size",
	    "extent_size",
	    "metadata",
	    "allow_users/allow_groups/allow_cgroups",
	    "zeroer_threads",
	    "zero_rate",
	    "batch_extents",
	    "tenant_quota/tenant_max_tags/tenant_max_waiters",
	    "tenant",
	};
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(names) && off < len; i++) {
		int n;

		if (!(changes & (1u << i)))
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", names[i]);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	return buf;
}

int conf_diff_keep_fixed(struct region_conf *b, const struct region_conf *a)
{
	char *path = a->path ? strdup(a->path) : NULL;
	char *metadata = a->metadata ? strdup(a->metadata) : NULL;

	if ((a->path && !path) || (a->metadata && !metadata)) {
		free(path);
		free(metadata);
		return -ENOMEM;
	}
	conf_replace_str(&b->path, path);
	conf_replace_str(&b->metadata, metadata);
	b->size = a->size;
	b->extent_size = a->extent_size;
	b->extent_size_default = a->extent_size_default;
	return 0;
}
