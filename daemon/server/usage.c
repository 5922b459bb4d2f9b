/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "lease.h"
#include "usage.h"
#include "vector.h"

/* freed_by holds 1 + a row index in 16 bits: later uids are not charged. */
#define USAGE_CHARGED_ROWS UINT16_MAX
/*
 * Rows per region.  With tenant = cgroup a peer that may create cgroups
 * (a delegated subtree) could otherwise add rows without end.
 */
#define USAGE_ROWS_MAX 65536u

static void usage_zeroed(void *ctx, uint64_t first, uint64_t count)
{
	struct usage *u = ctx;

	for (uint64_t i = first; i < first + count && i < u->extent_count; i++) {
		uint16_t k = u->freed_by[i];

		if (k == 0)
			continue;
		u->rows[k - 1]->zeroed_bytes += u->extent_size;
		u->freed_by[i] = 0;
	}
}

static int usage_add_row(struct usage *u, uid_t uid, const char *tenant, struct uid_usage **out)
{
	struct uid_usage *row;

	if (u->n_rows >= USAGE_ROWS_MAX)
		return -EUSERS;
	if (PMEMZ_GROW(u->rows, &u->cap_rows, u->n_rows + 1) < 0)
		return -ENOMEM;
	row = calloc(1, sizeof(*row));
	if (!row)
		return -ENOMEM;
	if (tenant && !(row->tenant = strdup(tenant))) {
		free(row);
		return -ENOMEM;
	}
	row->uid = uid;
	TAILQ_INIT(&row->waitq);
	u->rows[u->n_rows++] = row;
	*out = row;
	return 0;
}

/* uid's own row (no tenant key). */
static struct uid_usage *usage_lookup(const struct usage *u, uid_t uid)
{
	for (size_t k = 0; k < u->n_rows; k++)
		if (!u->rows[k]->tenant && u->rows[k]->uid == uid)
			return u->rows[k];
	return NULL;
}

static struct uid_usage *usage_lookup_tenant(const struct usage *u, const char *tenant)
{
	for (size_t k = 0; k < u->n_rows; k++)
		if (u->rows[k]->tenant && strcmp(u->rows[k]->tenant, tenant) == 0)
			return u->rows[k];
	return NULL;
}

static void usage_destroy(struct usage *u)
{
	if (!u)
		return;
	for (size_t k = 0; k < u->n_rows; k++) {
		free(u->rows[k]->tenant);
		free(u->rows[k]);
	}
	free(u->rows);
	free(u->freed_by);
	free(u->tag_rows);
	free(u);
}

/* Committed usage is on media: every tag names its owner. */
static int usage_rebuild(struct usage *u, const struct region *r)
{
	for (uint32_t id = region_tag_next(r, 0); id; id = region_tag_next(r, id)) {
		struct uid_usage *row;
		uid_t uid;
		int q;

		if (region_tag_get(r, id, NULL, &uid) < 0)
			continue;
		row = usage_lookup(u, uid);
		if (!row) {
			q = usage_add_row(u, uid, NULL, &row);
			if (q < 0)
				return q;
		}
		row->committed += region_tag_extents(r, id);
		row->tags++;
	}
	return 0;
}

int usage_get(struct manager_region *mr, struct usage **out)
{
	struct usage *u;
	int q;

	if (mr->usage) {
		*out = mr->usage;
		return 0;
	}
	if (!mr->r)
		return -ENODEV;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->extent_count = mr->info.extent_count;
	u->extent_size = mr->info.extent_size;
	u->freed_by = calloc(u->extent_count ? u->extent_count : 1, sizeof(*u->freed_by));
	q = u->freed_by ? usage_rebuild(u, mr->r) : -ENOMEM;
	if (q < 0) {
		usage_destroy(u);
		return q;
	}
	region_zeroer_set_hook(mr->r, usage_zeroed, u);
	mr->usage = u;
	*out = u;
	return 0;
}

int usage_row(struct manager_region *mr, uid_t uid, struct uid_usage **out)
{
	struct usage *u;
	struct uid_usage *row;
	int q;

	q = usage_get(mr, &u);
	if (q < 0)
		return q;
	row = usage_lookup(u, uid);
	if (row) {
		*out = row;
		return 0;
	}
	return usage_add_row(u, uid, NULL, out);
}

struct uid_usage *usage_tenant_find(const struct manager_region *mr, const struct connection *c)
{
	char buf[PEER_CGROUP_MAX];
	const char *key;

	if (!mr->usage)
		return NULL;
	if (!mr->rc->tenant_cgroup)
		return usage_lookup(mr->usage, c->uid);
	key = conf_tenant_cgroup(mr->rc, c->cgroup, buf, sizeof(buf));
	return key ? usage_lookup_tenant(mr->usage, key) : NULL;
}

int usage_tenant(struct manager_region *mr, const struct connection *c, struct uid_usage **out)
{
	char buf[PEER_CGROUP_MAX];
	const char *key;
	struct usage *u;
	struct uid_usage *row;
	int q;

	if (!mr->rc->tenant_cgroup)
		return usage_row(mr, c->uid, out);
	key = conf_tenant_cgroup(mr->rc, c->cgroup, buf, sizeof(buf));
	if (!key)
		return -EACCES; /* never pooled with others: the region is keyed by cgroup */
	q = usage_get(mr, &u);
	if (q < 0)
		return q;
	row = usage_lookup_tenant(u, key);
	if (row) {
		*out = row;
		return 0;
	}
	return usage_add_row(u, c->uid, key, out);
}

static size_t usage_row_index(const struct usage *u, const struct uid_usage *row)
{
	size_t k;

	for (k = 0; k < u->n_rows && u->rows[k] != row; k++)
		;
	return k;
}

int usage_tag_owner(struct manager_region *mr, uint32_t id, uid_t uid, struct uid_usage **out)
{
	struct usage *u;
	int q = usage_get(mr, &u);

	if (q < 0)
		return q;
	if (id < u->n_tag_rows && u->tag_rows[id] && u->tag_rows[id] <= u->n_rows) {
		*out = u->rows[u->tag_rows[id] - 1];
		return 0;
	}
	return usage_row(mr, uid, out);
}

void usage_tag_committed(struct manager_region *mr, struct uid_usage *row, uint32_t id,
			 uint64_t n_extents)
{
	struct usage *u = mr->usage;
	size_t k;

	row->committed += n_extents;
	row->tags++;
	if (!u || !row->tenant)
		return; /* a uid's row: the tag table says whose it is */
	k = usage_row_index(u, row);
	if (id >= u->n_tag_rows) {
		size_t was = u->n_tag_rows;

		/*
		 * Out of memory: the tag counts for this tenant now and for its
		 * uid's row when freed (usage_tag_freed clamps at 0).
		 */
		if (PMEMZ_GROW(u->tag_rows, &u->n_tag_rows, (size_t)id + 1) < 0)
			return;
		memset(u->tag_rows + was, 0, (u->n_tag_rows - was) * sizeof(*u->tag_rows));
	}
	u->tag_rows[id] = (uint32_t)(k + 1);
}

const char *usage_row_name(const struct uid_usage *u, char *buf, size_t len)
{
	if (u->tenant)
		(void)snprintf(buf, len, "tenant '%s'", u->tenant);
	else
		(void)snprintf(buf, len, "uid %u", (unsigned)u->uid);
	return buf;
}

struct uid_usage *usage_find(const struct manager_region *mr, uid_t uid)
{
	return mr->usage ? usage_lookup(mr->usage, uid) : NULL;
}

void usage_free(struct manager_region *mr)
{
	if (!mr->usage)
		return;
	if (mr->r)
		region_zeroer_set_hook(mr->r, NULL, NULL);
	usage_destroy(mr->usage);
	mr->usage = NULL;
}

int usage_check_bytes(const struct manager_region *mr, const struct uid_usage *u,
		      uint64_t n_extents, char *msg, size_t len)
{
	uint64_t es = mr->info.extent_size, quota = mr->rc->uid_quota;
	uint64_t held = u->leased + u->committed + u->waiting;
	char q_s[32], held_s[32], l_s[32], c_s[32], w_s[32], want_s[32], who[PEER_CGROUP_MAX + 16];

	if (!quota || (held + n_extents) <= quota / es)
		return 0;
	(void)snprintf(msg, len,
		       "%s over its quota in region '%s': %s %s, in use %s (leased %s, "
		       "committed %s, waited for %s), %s more wanted",
		       usage_row_name(u, who, sizeof(who)), mr->info.name,
		       mr->rc->tenant_cgroup ? "tenant_quota" : "uid_quota",
		       pmemz_format_size(quota, q_s, sizeof(q_s)),
		       pmemz_format_size(held * es, held_s, sizeof(held_s)),
		       pmemz_format_size(u->leased * es, l_s, sizeof(l_s)),
		       pmemz_format_size(u->committed * es, c_s, sizeof(c_s)),
		       pmemz_format_size(u->waiting * es, w_s, sizeof(w_s)),
		       pmemz_format_size(n_extents * es, want_s, sizeof(want_s)));
	return -EDQUOT;
}

/* A count limit (0: unset): -EDQUOT with "uid_max_KEY N, HAVE WHAT" when have reached it. */
static int check_count(const struct manager_region *mr, const struct uid_usage *u, const char *key,
		       const char *what, uint64_t max, uint64_t have, char *msg, size_t len)
{
	char who[PEER_CGROUP_MAX + 16];

	if (!max || have < max)
		return 0;
	/* tenant = uid keeps the old key names in messages: scripts match them. */
	(void)snprintf(msg, len,
		       "%s over its limit in region '%s': %s%s %" PRIu64 ", %" PRIu64 " %s",
		       usage_row_name(u, who, sizeof(who)), mr->info.name,
		       mr->rc->tenant_cgroup ? "tenant_" : "uid_", key, max, have, what);
	return -EDQUOT;
}

int usage_check_tags(const struct manager_region *mr, const struct uid_usage *u, char *msg,
		     size_t len)
{
	return check_count(mr, u, "max_tags", "tags committed", mr->rc->uid_max_tags, u->tags, msg,
			   len);
}

int usage_check_tags_more(const struct manager_region *mr, const struct uid_usage *u,
			  uint64_t more, char *msg, size_t len)
{
	uint64_t max = mr->rc->uid_max_tags;
	char who[PEER_CGROUP_MAX + 16];

	if (!max || u->tags + more <= max)
		return 0;
	(void)snprintf(msg, len,
		       "%s over its limit in region '%s': %smax_tags %" PRIu64 ", %" PRIu64
		       " tags committed, %" PRIu64 " more wanted",
		       usage_row_name(u, who, sizeof(who)), mr->info.name,
		       mr->rc->tenant_cgroup ? "tenant_" : "uid_", max, u->tags, more);
	return -EDQUOT;
}

int usage_check_waiters(const struct manager_region *mr, const struct uid_usage *u, char *msg,
			size_t len)
{
	return check_count(mr, u, "max_waiters", "allocations waiting", mr->rc->uid_max_waiters,
			   u->waiters, msg, len);
}

/* The runs are DIRTY now because of u: its account pays for their zeroing. */
static void usage_mark_freed(struct usage *u, const struct uid_usage *row, const struct run *runs,
			     size_t n_runs)
{
	size_t k = usage_row_index(u, row);

	if (k >= u->n_rows || k >= USAGE_CHARGED_ROWS)
		return;
	for (size_t i = 0; i < n_runs; i++)
		for (uint64_t e = runs[i].first;
		     e < runs[i].first + runs[i].count && e < u->extent_count; e++)
			u->freed_by[e] = (uint16_t)(k + 1);
}

void usage_release_lease(struct manager *m, struct lease *l)
{
	struct manager_region *mr = m->regions[l->region];
	struct uid_usage *row = l->row ? l->row : usage_find(mr, l->uid);

	region_unlease(mr->r, l->runs, l->n_runs);
	if (row) {
		row->leased -= l->n_extents;
		usage_mark_freed(mr->usage, row, l->runs, l->n_runs);
	}
	lease_table_remove(m->leases, l);
}

void usage_tag_freed(struct manager_region *mr, struct uid_usage *u, uint32_t id,
		     const struct run *runs, size_t n_runs, uint64_t n_extents)
{
	if (id < mr->usage->n_tag_rows)
		mr->usage->tag_rows[id] = 0;
	u->committed -= MIN(u->committed, n_extents);
	u->tags -= u->tags > 0;
	usage_mark_freed(mr->usage, u, runs, n_runs);
}
