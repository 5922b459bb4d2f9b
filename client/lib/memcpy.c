/* SPDX-License-Identifier: MIT */
/*
 * pmemz_memcpy / pmemz_drain: stores into the region mapping with
 * libpmem2's functions for it, so that the bytes go out with non-temporal
 * stores (no cache pollution, no flush per line) where the mapping is
 * pmem, and with the right flush where it is not.  A drain orders the
 * calling thread's stores only: a writer drains its own before it
 * answers, which is what makes a later COMMIT or FLUSH of the data safe.
 */
#include <errno.h>
#include <libpmem2.h>

#include "client-private.h"

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
