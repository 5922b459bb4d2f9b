/* SPDX-License-Identifier: MIT */
/*
 * pmemz_admin_stat and its getters (libpmemzadmin.h): a STAT answer behind
 * an opaque handle.  A field the daemon may leave out (an older daemon, an
 * admin-only number) reads as -ENODATA, never as a zero that would look
 * like a real value.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libpmemzadmin.h"
#include "wire.h"

struct pmemz_stat {
	Pmemz__Response *resp;
	const Pmemz__StatResp *s;
};

PMEMZ_EXPORT int pmemz_admin_stat(struct pmemz_client *c, const char *region,
				  struct pmemz_stat **out)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	struct pmemz_stat *s;
	int r;

	if (!c || !out)
		return pmemz_err(-EINVAL, "pmemz_admin_stat: NULL %s", c ? "out" : "client");
	*out = NULL;
	r = pmemz_wire_stat(c, region, &resp);
	if (r < 0)
		return r;
	for (size_t i = 0; i < resp->stat->n_regions; i++)
		if (!resp->stat->regions[i]->info || !resp->stat->regions[i]->info->name)
			return pmemz_err(-EPROTO, "daemon sent a region without a name");
	s = calloc(1, sizeof(*s));
	if (!s)
		return pmemz_err(-ENOMEM, "out of memory");
	s->resp = TAKE_PTR(resp);
	s->s = s->resp->stat;
	*out = s;
	return 0;
}

int pmemz_stat_borrow(const Pmemz__StatResp *st, struct pmemz_stat **out)
{
	struct pmemz_stat *s = calloc(1, sizeof(*s));

	if (!s)
		return pmemz_err(-ENOMEM, "out of memory");
	s->s = st;
	*out = s;
	return 0;
}

PMEMZ_EXPORT void pmemz_stat_free(struct pmemz_stat *s)
{
	if (!s)
		return;
	pmemz_response_free(s->resp);
	free(s);
}

PMEMZ_EXPORT const char *pmemz_stat_daemon_version(const struct pmemz_stat *s)
{
	return s ? s->s->daemon_version : NULL;
}

PMEMZ_EXPORT int pmemz_stat_u64(const struct pmemz_stat *s, enum pmemz_stat_key k, uint64_t *v)
{
	const Pmemz__StatResp *st;

	if (!s || !v)
		return pmemz_err(-EINVAL, "pmemz_stat_u64: NULL argument");
	st = s->s;
	switch (k) {
	case PMEMZ_STAT_UPTIME_SEC:
		*v = st->uptime_sec;
		return 0;
	case PMEMZ_STAT_CONNECTIONS:
		*v = st->connections;
		return 0;
	case PMEMZ_STAT_HEAP_IN_USE:
		*v = st->heap_in_use;
		break;
	case PMEMZ_STAT_HEAP_FREE:
		*v = st->heap_free;
		break;
	case PMEMZ_STAT_HEAP_TRIMS:
		*v = st->heap_trims;
		break;
	default:
		return pmemz_err(-EINVAL, "pmemz_stat_u64: unknown key %d", (int)k);
	}
	/* The heap is told to admins only, all three together. */
	return st->has_heap_in_use ? 0 : -ENODATA;
}

PMEMZ_EXPORT size_t pmemz_stat_regions(const struct pmemz_stat *s)
{
	return s ? s->s->n_regions : 0;
}

static const Pmemz__RegionStat *region_at(const struct pmemz_stat *s, size_t i, const char *fn)
{
	if (!s || i >= s->s->n_regions) {
		(void)pmemz_err(-EINVAL, "%s: no region %zu", fn, i);
		return NULL;
	}
	return s->s->regions[i];
}

/* The layout numbers, from the region's info; 1 when k is not one of them. */
static int info_u64(const Pmemz__RegionInfo *in, enum pmemz_region_stat_key k, uint64_t *v)
{
	switch (k) {
	case PMEMZ_RS_SIZE:
		*v = in->size;
		return 0;
	case PMEMZ_RS_EXTENT_SIZE:
		*v = in->extent_size;
		return 0;
	case PMEMZ_RS_EXTENTS:
		*v = in->extent_count;
		return 0;
	case PMEMZ_RS_DATA_OFFSET:
		*v = in->data_offset;
		return 0;
	case PMEMZ_RS_ALIGNMENT:
		*v = in->alignment;
		return 0;
	case PMEMZ_RS_DEVDAX:
		*v = in->devdax;
		return 0;
	default:
		return 1;
	}
}

/* The numbers a daemon may leave out: 0, -ENODATA, or 1 when k is not one of them. */
static int optional_u64(const Pmemz__RegionStat *rs, enum pmemz_region_stat_key k, uint64_t *v)
{
	bool has;

	switch (k) {
	case PMEMZ_RS_NUMA_NODE:
		has = rs->has_numa_node && rs->numa_node >= 0;
		*v = has ? (uint64_t)rs->numa_node : 0;
		break;
	case PMEMZ_RS_ZERO_FENCES:
		has = rs->has_zero_fences;
		*v = rs->zero_fences;
		break;
	case PMEMZ_RS_MOVES:
		has = rs->has_moves;
		*v = rs->moves;
		break;
	case PMEMZ_RS_PAUSED:
		has = rs->has_paused;
		*v = rs->paused;
		break;
	case PMEMZ_RS_NAME_ONLY:
		has = rs->has_name_only;
		*v = rs->name_only;
		break;
	case PMEMZ_RS_WAIT_COUNT:
		has = rs->has_wait_count;
		*v = rs->wait_count;
		break;
	default:
		return 1;
	}
	return has ? 0 : -ENODATA;
}

PMEMZ_EXPORT int pmemz_stat_region_u64(const struct pmemz_stat *s, size_t i,
				       enum pmemz_region_stat_key k, uint64_t *v)
{
	const Pmemz__RegionStat *rs = region_at(s, i, "pmemz_stat_region_u64");
	int r;

	if (!rs || !v)
		return pmemz_err(-EINVAL, "pmemz_stat_region_u64: bad argument");
	r = info_u64(rs->info, k, v);
	if (r <= 0)
		return r;
	r = optional_u64(rs, k, v);
	if (r <= 0)
		return r;
	switch (k) {
	case PMEMZ_RS_ZEROED:
		*v = rs->zeroed;
		return 0;
	case PMEMZ_RS_ZEROING:
		*v = rs->zeroing;
		return 0;
	case PMEMZ_RS_DIRTY:
		*v = rs->dirty;
		return 0;
	case PMEMZ_RS_LEASED:
		*v = rs->leased;
		return 0;
	case PMEMZ_RS_COMMITTED:
		*v = rs->committed;
		return 0;
	case PMEMZ_RS_BAD:
		*v = rs->bad;
		return 0;
	case PMEMZ_RS_BYTES_ZEROED:
		*v = rs->bytes_zeroed;
		return 0;
	case PMEMZ_RS_WAITERS:
		*v = rs->waiters;
		return 0;
	case PMEMZ_RS_ZERO_BATCHES:
		*v = rs->zero_batches;
		return 0;
	case PMEMZ_RS_DRAINS:
		*v = rs->drains;
		return 0;
	case PMEMZ_RS_ALLOCATIONS:
		*v = rs->allocations;
		return 0;
	case PMEMZ_RS_COMMITS:
		*v = rs->commits;
		return 0;
	case PMEMZ_RS_FREES:
		*v = rs->frees;
		return 0;
	case PMEMZ_RS_TAGS:
		*v = rs->tags;
		return 0;
	case PMEMZ_RS_ZEROER_THREADS:
		*v = rs->zeroer_threads;
		return 0;
	case PMEMZ_RS_ZERO_RATE_LIMIT:
		*v = rs->zero_rate_limit;
		return 0;
	case PMEMZ_RS_RESERVE_LOW:
		*v = rs->reserve_low;
		return 0;
	case PMEMZ_RS_RESERVE_HIGH:
		*v = rs->reserve_high;
		return 0;
	case PMEMZ_RS_ZONE_CHANGES:
		*v = rs->zone_changes;
		return 0;
	default:
		return pmemz_err(-EINVAL, "pmemz_stat_region_u64: key %d is not an integer",
				 (int)k);
	}
}

PMEMZ_EXPORT int pmemz_stat_region_double(const struct pmemz_stat *s, size_t i,
					  enum pmemz_region_stat_key k, double *v)
{
	const Pmemz__RegionStat *rs = region_at(s, i, "pmemz_stat_region_double");

	if (!rs || !v)
		return pmemz_err(-EINVAL, "pmemz_stat_region_double: bad argument");
	switch (k) {
	case PMEMZ_RS_ZERO_BYTES_PER_SEC:
		*v = rs->zero_bytes_per_sec;
		return 0;
	case PMEMZ_RS_ALLOC_RATE:
		*v = rs->alloc_rate;
		return 0;
	case PMEMZ_RS_WAIT_SUM_SEC:
		*v = rs->wait_sum_sec;
		return rs->has_wait_sum_sec ? 0 : -ENODATA;
	default:
		return pmemz_err(-EINVAL, "pmemz_stat_region_double: key %d is not a real",
				 (int)k);
	}
}

PMEMZ_EXPORT const char *pmemz_stat_region_str(const struct pmemz_stat *s, size_t i,
					       enum pmemz_region_stat_key k)
{
	const Pmemz__RegionStat *rs = region_at(s, i, "pmemz_stat_region_str");

	if (!rs)
		return NULL;
	switch (k) {
	case PMEMZ_RS_NAME:
		return rs->info->name;
	case PMEMZ_RS_PATH:
		return rs->info->path;
	case PMEMZ_RS_STATE:
		return rs->state;
	case PMEMZ_RS_FAILURE:
		return rs->failure;
	case PMEMZ_RS_GRANULARITY:
		return rs->info->granularity;
	case PMEMZ_RS_PERSISTENCE_DOMAIN:
		return rs->info->persistence_domain;
	case PMEMZ_RS_ZERO_POLICY:
		return rs->zero_policy;
	case PMEMZ_RS_ZERO_ZONE:
		return rs->zero_zone;
	default:
		(void)pmemz_err(-EINVAL, "pmemz_stat_region_str: key %d is not a string", (int)k);
		return NULL;
	}
}

PMEMZ_EXPORT int pmemz_stat_region_uuid(const struct pmemz_stat *s, size_t i, uint8_t uuid[16])
{
	const Pmemz__RegionStat *rs = region_at(s, i, "pmemz_stat_region_uuid");

	if (!rs || !uuid)
		return pmemz_err(-EINVAL, "pmemz_stat_region_uuid: bad argument");
	if (rs->info->uuid.len != 16)
		return -ENODATA;
	memcpy(uuid, rs->info->uuid.data, 16);
	return 0;
}

PMEMZ_EXPORT size_t pmemz_stat_region_wait_buckets(const struct pmemz_stat *s, size_t i)
{
	const Pmemz__RegionStat *rs = region_at(s, i, "pmemz_stat_region_wait_buckets");

	/* A daemon older than the histogram sends no buckets, or not all of it. */
	if (!rs || !rs->has_wait_count || !rs->has_wait_sum_sec ||
	    rs->n_wait_bucket_le != rs->n_wait_bucket_count)
		return 0;
	return rs->n_wait_bucket_le;
}

PMEMZ_EXPORT int pmemz_stat_region_wait_bucket(const struct pmemz_stat *s, size_t i, size_t b,
					       double *le, uint64_t *count)
{
	const Pmemz__RegionStat *rs;

	if (b >= pmemz_stat_region_wait_buckets(s, i) || !le || !count)
		return pmemz_err(-EINVAL, "pmemz_stat_region_wait_bucket: no bucket %zu", b);
	rs = s->s->regions[i];
	*le = rs->wait_bucket_le[b];
	*count = rs->wait_bucket_count[b];
	return 0;
}
