/* SPDX-License-Identifier: MIT */
/*
 * Regions: OPEN_REGION hands us the region's fd, which we map whole with
 * libpmem2 and close.  The mapping stays until the last handle that uses
 * it is gone: pmemz_region_close() drops the caller's reference and every
 * allocation handle holds one too, so closing a region with live
 * allocations is safe and their addresses stay valid until they are closed.
 */
#include <errno.h>
#include <libpmem2.h>
#include <stdio.h>
#include <string.h>

#include "client-private.h"
#include "pmem2-errno.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct pmemz_region *, pmemz_region_unref)

static int region_map(struct pmemz_region *r, int fd)
{
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	int ret;

	ret = pmem2_config_new(&cfg);
	if (ret == 0)
		ret = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE);
	if (ret == 0)
		ret = pmem2_source_from_fd(&src, fd);
	if (ret == 0)
		ret = pmem2_map_new(&r->map, cfg, src);
	if (src)
		(void)pmem2_source_delete(&src);
	if (cfg)
		(void)pmem2_config_delete(&cfg);
	if (ret != 0)
		return pmemz_err(pmemz_pmem2_errno(ret), "cannot map region '%s' (%s): %s", r->name,
				 r->path, pmem2_errormsg());

	r->base = pmem2_map_get_address(r->map);
	r->map_size = pmem2_map_get_size(r->map);
	r->persist = pmem2_get_persist_fn(r->map);
	r->memcpy_fn = pmem2_get_memcpy_fn(r->map);
	r->drain_fn = pmem2_get_drain_fn(r->map);
	pmemz_debug("mapped region '%s' at %p, %zu bytes, store granularity %d", r->name,
		    (void *)r->base, r->map_size, (int)pmem2_map_get_store_granularity(r->map));
	return 0;
}

static int region_set_info(struct pmemz_region *r, const Pmemz__RegionInfo *info)
{
	uint64_t data_bytes;

	if (info->extent_size == 0 ||
	    __builtin_mul_overflow(info->extent_count, info->extent_size, &data_bytes) ||
	    __builtin_add_overflow(data_bytes, info->data_offset, &data_bytes) ||
	    data_bytes > info->size)
		return pmemz_err(-EPROTO,
				 "daemon sent an inconsistent layout for region '%s': size %llu, "
				 "%llu extents of %llu bytes at offset %llu",
				 info->name, (unsigned long long)info->size,
				 (unsigned long long)info->extent_count,
				 (unsigned long long)info->extent_size,
				 (unsigned long long)info->data_offset);
	r->name = strdup(info->name);
	r->path = strdup(info->path);
	r->granularity = strdup(info->granularity);
	if (!r->name || !r->path || !r->granularity)
		return pmemz_err(-ENOMEM, "out of memory");
	r->size = info->size;
	r->extent_size = info->extent_size;
	r->extent_count = info->extent_count;
	r->data_offset = info->data_offset;
	r->alignment = info->alignment;
	r->devdax = info->devdax;
	if (info->uuid.len == sizeof(r->uuid))
		memcpy(r->uuid, info->uuid.data, sizeof(r->uuid));
	return 0;
}

PMEMZ_EXPORT int pmemz_region_open(struct pmemz_client *c, const char *name,
				   struct pmemz_region **out)
{
	_cleanup_(pmemz_region_unrefp) struct pmemz_region *r = NULL;
	_cleanup_response_ Pmemz__Response *resp = NULL;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__OpenRegionReq open = PMEMZ__OPEN_REGION_REQ__INIT;
	_cleanup_close_ int fd = -1;
	int ret;

	if (!out)
		return pmemz_err(-EINVAL, "pmemz_region_open: out is NULL");
	*out = NULL;
	if (!c)
		return pmemz_err(-EINVAL, "pmemz_region_open: client is NULL");
	if (!name || !*name)
		return pmemz_err(-EINVAL, "pmemz_region_open: empty region name");

	open.region = (char *)(uintptr_t)name;
	req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
	req.open_region = &open;
	ret = pmemz_client_call_fd(c, &req, &resp, &fd);
	if (ret < 0)
		return ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return pmemz_err(-ENOMEM, "out of memory");
	r->refs = 1;
	r->c = c;
	pmemz_client_ref(c);
	ret = pmemz_reserve_new(&r->rsv);
	if (ret < 0)
		return ret;
	ret = region_set_info(r, resp->open_region->info);
	if (ret < 0)
		return ret;
	if (!resp->open_region->fd_follows || fd < 0)
		return pmemz_err(-EPROTO, "daemon sent no file descriptor for region '%s'", name);
	ret = region_map(r, fd);
	if (ret < 0)
		return ret;
	if (r->map_size < r->data_offset + r->extent_count * r->extent_size)
		return pmemz_err(
		    -EPROTO, "region '%s' maps %zu bytes, less than its %llu byte layout", name,
		    r->map_size,
		    (unsigned long long)(r->data_offset + r->extent_count * r->extent_size));
	pmemz_client_track_region(r);
	*out = TAKE_PTR(r);
	return 0;
}

void pmemz_region_ref(struct pmemz_region *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

void pmemz_region_unref(struct pmemz_region *r)
{
	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pmemz_client_untrack_region(r);
	if (r->map)
		(void)pmem2_map_delete(&r->map);
	pmemz_client_unref(r->c);
	pmemz_reserve_free(r->rsv);
	pmemz_region_claims_free(r);
	free(r->name);
	free(r->path);
	free(r->granularity);
	free(r);
}

int pmemz_region_check(struct pmemz_region *r)
{
	char msg[sizeof(r->stale_msg)];
	int stale;

	if (!__atomic_load_n(&r->stale, __ATOMIC_ACQUIRE))
		return 0; /* the common case, without the client's lock */
	pthread_mutex_lock(&r->c->lock);
	stale = r->stale;
	if (stale)
		memcpy(msg, r->stale_msg, sizeof(msg));
	pthread_mutex_unlock(&r->c->lock);
	return stale ? pmemz_err(stale, "%s", msg) : 0;
}

PMEMZ_EXPORT void pmemz_region_close(struct pmemz_region *r)
{
	if (!r)
		return;
	pmemz_reserve_drop(r); /* reserved leases go back to the daemon now */
	pmemz_region_unclaim_all(r);
	pmemz_region_unref(r);
}

PMEMZ_EXPORT size_t pmemz_region_extent_size(const struct pmemz_region *r)
{
	return r ? (size_t)r->extent_size : 0;
}

PMEMZ_EXPORT size_t pmemz_region_size(const struct pmemz_region *r)
{
	return r ? r->map_size : 0;
}

PMEMZ_EXPORT void *pmemz_region_address(const struct pmemz_region *r)
{
	return r ? r->base : NULL;
}

/* [addr, addr+len) inside the mapping?  Sets the region offset. */
static int region_range(const struct pmemz_region *r, const void *addr, size_t len, uint64_t *off,
			const char *fn)
{
	uintptr_t a = (uintptr_t)addr, b = (uintptr_t)r->base, end;

	if (__builtin_add_overflow(a, len, &end) || a < b || end > b + r->map_size)
		return pmemz_err(-ERANGE, "%s: range %p+%zu is outside region '%s' (%p+%zu)", fn,
				 addr, len, r->name, (void *)r->base, r->map_size);
	*off = a - b;
	return 0;
}

PMEMZ_EXPORT int pmemz_persist(struct pmemz_region *r, const void *addr, size_t len)
{
	uint64_t off = 0;
	int ret;

	if (!r || !addr)
		return pmemz_err(-EINVAL, "pmemz_persist: NULL %s", r ? "address" : "region");
	ret = region_range(r, addr, len, &off, "pmemz_persist");
	if (ret < 0)
		return ret;
	if (len > 0)
		r->persist(addr, len);
	return 0;
}

PMEMZ_EXPORT int pmemz_flush(struct pmemz_region *r, const void *addr, size_t len, unsigned flags)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FlushReq flush = PMEMZ__FLUSH_REQ__INIT;
	Pmemz__ByteRange range = PMEMZ__BYTE_RANGE__INIT;
	Pmemz__ByteRange *ranges[1] = {&range};
	uint64_t off = 0;
	int ret;

	if (!r || !addr)
		return pmemz_err(-EINVAL, "pmemz_flush: NULL %s", r ? "address" : "region");
	if (flags & ~PMEMZ_FLUSH_DEEP)
		return pmemz_err(-EINVAL, "pmemz_flush: unknown flags 0x%x", flags);
	ret = region_range(r, addr, len, &off, "pmemz_flush");
	if (ret < 0)
		return ret;
	if (len == 0)
		return 0;
	ret = pmemz_region_check(r);
	if (ret < 0)
		return ret;

	range.offset = off;
	range.length = len;
	flush.region = r->name;
	flush.n_ranges = 1;
	flush.ranges = ranges;
	flush.has_deep = true;
	flush.deep = !!(flags & PMEMZ_FLUSH_DEEP);
	req.op_case = PMEMZ__REQUEST__OP_FLUSH;
	req.flush = &flush;
	return pmemz_client_call(r->c, &req, &resp);
}
