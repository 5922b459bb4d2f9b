/* SPDX-License-Identifier: MIT */
/*
 * The caller's stores into a region's mapping, made durable.
 *
 * pmemz_persist flushes with libpmem2's function for the mapping, no
 * RPC; pmemz_flush asks the daemon to flush (FLUSH, deep or not), the
 * caller's own extents only.  pmemz_memcpy / pmemz_drain store with libpmem2's
 * functions for the mapping, so that the bytes go out with non-temporal
 * stores (no cache pollution, no flush per line) where the mapping is
 * pmem, and with the right flush where it is not.  A drain orders the
 * calling thread's stores only: a writer drains its own before it
 * answers, which is what makes a later COMMIT or FLUSH of the data safe.
 */
#include <errno.h>
#include <libpmem2.h>

#include "wire.h"

PMEMZ_EXPORT int pmemz_memcpy(struct pmemz_region *r, void *dst, const void *src, size_t len,
			      unsigned flags)
{
	uintptr_t a = (uintptr_t)dst, b, end;
	unsigned pflags = PMEM2_F_MEM_NONTEMPORAL;

	if (!r)
		return pmemz_err(-EINVAL, "pmemz_memcpy: region is NULL");
	if (!dst || (!src && len))
		return pmemz_err(-EINVAL, "pmemz_memcpy: NULL %s", dst ? "source" : "destination");
	if (flags & ~PMEMZ_MEM_NODRAIN)
		return pmemz_err(-EINVAL, "pmemz_memcpy: unknown flags 0x%x", flags);
	b = (uintptr_t)r->base;
	if (__builtin_add_overflow(a, len, &end) || a < b || end > b + r->map_size)
		return pmemz_err(-EFAULT,
				 "pmemz_memcpy: range %p+%zu is outside region '%s' (%p+%zu)", dst,
				 len, r->name, (void *)r->base, r->map_size);
	if (len == 0)
		return 0;
	if (!r->memcpy_fn)
		return pmemz_err(-EROFS, "pmemz_memcpy: region '%s' is mapped read-only", r->name);
	if (flags & PMEMZ_MEM_NODRAIN)
		pflags |= PMEM2_F_MEM_NODRAIN;
	(void)r->memcpy_fn(dst, src, len, pflags);
	return 0;
}

PMEMZ_EXPORT void pmemz_drain(struct pmemz_region *r)
{
	if (r && r->drain_fn)
		r->drain_fn();
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
	if (len > 0 && !r->persist)
		return pmemz_err(-EROFS, "pmemz_persist: region '%s' is mapped read-only", r->name);
	if (len > 0)
		r->persist(addr, len);
	return 0;
}

PMEMZ_EXPORT int pmemz_flush(struct pmemz_region *r, const void *addr, size_t len, unsigned flags)
{
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

	return pmemz_wire_flush(r->c, r->name, off, len, !!(flags & PMEMZ_FLUSH_DEEP));
}
