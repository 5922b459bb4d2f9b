/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin-bench only (not installed): each fresh chunk zeroed
 * again in the plugin, the way a DAX file system's write path zeroes a
 * block before its first use (docs/DESIGN.md, section 1), as
 * scripts/bench-disk's baseline (target b, zeroing=inline) for what
 * pmemzerod's zeroing ahead saves.
 */
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"

#define CACHE_LINE 64u

struct zero_inline {
	char *p;
	size_t len;
};

static int zero_lines(void *arg)
{
	struct zero_inline *z = arg;

	memset(z->p, 0, z->len);
#if defined(__x86_64__) || defined(__i386__)
	for (size_t i = 0; i < z->len; i += CACHE_LINE)
		__builtin_ia32_clflush(z->p + i);
	__builtin_ia32_sfence();
#endif
	return 0;
}

/* Cached stores, then a flush of every line and a fence: zeroing on the write path. */
int disk_zero_inline(struct disk *d, char *p, size_t len)
{
	struct zero_inline z = {.p = p, .len = len};

	return disk_guard(d, zero_lines, &z);
}
