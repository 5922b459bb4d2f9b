/* SPDX-License-Identifier: MIT */
/*
 * The read-only mapper (see region-map.c): PROT_READ, no store functions,
 * so pmemz_persist and pmemz_memcpy on such a handle fail with -EROFS.
 * The length is the size the daemon reports, a multiple of the device's
 * alignment, so device-DAX accepts it too.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "client-private.h"

static int readonly_map(struct pmemz_region *r, int fd)
{
	void *p;

	if (r->size == 0 || r->size > SIZE_MAX)
		return pmemz_err(-EPROTO, "region '%s': size %llu cannot be mapped", r->name,
				 (unsigned long long)r->size);
	p = mmap(NULL, (size_t)r->size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return pmemz_err(-errno, "cannot map region '%s' (%s) read-only: %s", r->name,
				 r->path, strerror(errno));
	r->base = p;
	r->map_size = (size_t)r->size;
	r->persist = NULL;
	r->memcpy_fn = NULL;
	r->drain_fn = NULL;
	return 0;
}

static void readonly_unmap(struct pmemz_region *r)
{
	(void)munmap(r->base, r->map_size);
	r->base = NULL;
}

const struct pmemz_region_mapper pmemz_region_readonly_mapper = {
    .map = readonly_map,
    .unmap = readonly_unmap,
};
