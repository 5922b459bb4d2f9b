/* SPDX-License-Identifier: MIT */
/* libpmem2 return codes as negative errno values (daemon and client library). */
#ifndef PMEMZ_PMEM2_ERRNO_H
#define PMEMZ_PMEM2_ERRNO_H

#include <errno.h>

#include <libpmem2.h>

static inline int pmemz_pmem2_errno(int r)
{
	if (r >= 0)
		return 0;
	if (r > PMEM2_E_UNKNOWN)
		return r; /* already -errno */
	switch (r) {
	case PMEM2_E_NOSUPP:
	case PMEM2_E_GRANULARITY_NOT_SUPPORTED:
	case PMEM2_E_SOURCE_TYPE_NOT_SUPPORTED:
		return -ENOTSUP;
	case PMEM2_E_NO_ACCESS:
		return -EACCES;
	case PMEM2_E_DAX_REGION_NOT_FOUND:
		return -ENODEV;
	case PMEM2_E_IO_FAIL:
		return -EIO;
	case PMEM2_E_NO_BAD_BLOCK_FOUND:
		return -ENOENT;
	case PMEM2_E_MAP_RANGE:
	case PMEM2_E_LENGTH_OUT_OF_RANGE:
	case PMEM2_E_OFFSET_OUT_OF_RANGE:
	case PMEM2_E_DEEP_FLUSH_RANGE:
		return -ERANGE;
	default:
		return -EINVAL;
	}
}

#endif
