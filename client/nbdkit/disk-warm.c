/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the first touch of an extent owned ahead, taken by
 * the refill thread instead of the write that lands in it.
 *
 * The first store into a page through nbdkit's mapping faults, even when
 * pmemzerod's zeroer filled the page through its own: the page is not in
 * this process's page tables yet.  A fresh chunk's first write then pays
 * that fault, an overwrite does not -- the fresh-write penalty pmemzerod
 * exists to remove, back at the page-table level.  So the refill thread
 * stores into every page of an extent (an atomic OR of zero: the bytes
 * stay what they are, and nothing else can see the extent yet) before it
 * is offered to a write.  MADV_POPULATE_WRITE is not enough: a hypervisor
 * that shadows the guest's page tables still faults at the first access.
 *
 * Only where it is cheap.  Through 2 MiB mappings (device DAX, a tmpfs
 * with huge=) an extent is one fault and the touch costs microseconds.
 * Through 4 KiB pages it is 512 faults, milliseconds per extent in a
 * virtual machine: more CPU than the writes that land in the extent save
 * whenever they touch a few of its pages, and more than the refill thread
 * can spend at the rate fresh chunks are taken.  The first extent decides:
 * above WARM_MAX_NS_PER_PAGE, extents are offered cold from then on.
 */
#include <inttypes.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"

#define WARM_MAX_NS_PER_PAGE 1000u
#define WARM_PAGE 4096u

struct warm_range {
	char *p;
	size_t len;
};

static int touch(void *arg)
{
	const struct warm_range *w = arg;

	for (size_t off = 0; off < w->len; off += WARM_PAGE)
		(void)__atomic_fetch_or((uint64_t *)(void *)(w->p + off), 0, __ATOMIC_RELAXED);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void disk_warm(struct disk *d, struct pmemz_alloc *a)
{
	size_t n = pmemz_alloc_count(a), pages = 0;
	uint64_t t0;

	if (d->ahead.warm == DISK_WARM_OFF)
		return;
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		struct warm_range w = {.len = 0};

		w.p = pmemz_alloc_range(a, i, &w.len);
		if (!w.p || disk_guard(d, touch, &w) < 0)
			return; /* a fault: logged; the write into it fails as it would */
		pages += w.len / WARM_PAGE;
	}
	if (d->ahead.warm == DISK_WARM_PROBE && pages) {
		uint64_t per_page = (now_ns() - t0) / pages;

		d->ahead.warm = per_page > WARM_MAX_NS_PER_PAGE ? DISK_WARM_OFF : DISK_WARM_ON;
		nbdkit_debug("pmemz: the first touch of a page costs %" PRIu64 " ns here: extents "
			     "owned ahead are %s",
			     per_page,
			     d->ahead.warm == DISK_WARM_ON ? "touched before a write lands in them"
							   : "left for the write to touch");
	}
}
