/* SPDX-License-Identifier: MIT */
/*
 * The two ways a region handle maps the fd OPEN_REGION hands over.
 *
 * Applications get libpmem2's read-write mapping and its store functions
 * (NT memcpy, persist, drain), so the same code runs clwb+sfence on pmem
 * and msync on a plain file.  pmemzctl only reads (disk superblocks), and
 * a tool run as root must not be able to store into a tenant's region by
 * mistake: it maps with PROT_READ and links no libpmem2 store at all,
 * which tests/unit/test-reader-symbols.sh checks on the binary.  Each
 * mapper is its own object file so a static link pulls in only the one
 * it uses.
 */
#include <errno.h>
#include <libpmem2.h>

#include "client-private.h"
#include "pmem2-errno.h"

static int pmem2_mapper_map(struct pmemz_region *r, int fd)
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

static void pmem2_mapper_unmap(struct pmemz_region *r)
{
	(void)pmem2_map_delete(&r->map);
	r->base = NULL;
}

const struct pmemz_region_mapper pmemz_region_pmem2_mapper = {
    .map = pmem2_mapper_map,
    .unmap = pmem2_mapper_unmap,
};

PMEMZ_EXPORT int pmemz_region_open(struct pmemz_client *c, const char *name,
				   struct pmemz_region **out)
{
	return pmemz_region_open_mapped(c, name, &pmemz_region_pmem2_mapper, out);
}
