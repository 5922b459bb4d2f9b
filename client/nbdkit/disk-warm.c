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
 * How many stores: one per page of the mapping.  Through 2 MiB mappings
 * (device DAX, a tmpfs with huge=) an extent is one page, and one store
 * maps all of it.  Through 4 KiB pages it is 512 faults, milliseconds an
 * extent in a virtual machine: more CPU than the writes that land in the
 * extent save whenever they touch a few of its pages, and more than the
 * refill thread can spend at the rate fresh chunks are taken.  So
 * warm=auto stores into the first page of the first extent, then times
 * stores into a few other pages of the same 2 MiB: when those are cheap
 * (under WARM_MAX_NS), the mapping's pages are 2 MiB and one store an
 * extent per 2 MiB is enough; otherwise extents are left cold.
 * warm=true stores into every 4 KiB page, whatever it costs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"
#include "util.h"

#define WARM_MAX_NS 1000u
#define WARM_PAGE 4096u
#define WARM_HUGE (2u << 20)
#define WARM_PROBES 8u

struct disk_warm {
	struct disk *d;
	int mode; /* DISK_WARM_* (atomic: the refill threads decide it) */
};

struct warm_range {
	char *p;
	size_t len, stride;
	unsigned slow;	   /* probe: stores into a page after the first over WARM_MAX_NS */
	uint64_t probe_ns; /* ... and the cheapest of them */
};

static void store(char *p)
{
	(void)__atomic_fetch_or((uint64_t *)(void *)p, 0, __ATOMIC_RELAXED);
}

/* The first page, and each page (of stride bytes) that starts in the range. */
static int touch(void *arg)
{
	const struct warm_range *w = arg;
	uintptr_t end = (uintptr_t)w->p + w->len;

	store(w->p);
	for (uintptr_t q = ((uintptr_t)w->p / w->stride + 1) * w->stride; q < end; q += w->stride)
		store((char *)q);
	return 0;
}

/* The first page, then pages spread over the rest of its first 2 MiB. */
static int probe(void *arg)
{
	struct warm_range *w = arg;
	size_t pages = (w->len < WARM_HUGE ? w->len : WARM_HUGE) / WARM_PAGE;

	store(w->p);
	for (unsigned i = 1; i <= WARM_PROBES; i++) {
		uint64_t t0 = pmemz_now_ns(), dt;

		store(w->p + (size_t)(i * 61u % pages) * WARM_PAGE);
		dt = pmemz_now_ns() - t0;
		w->slow += dt > WARM_MAX_NS;
		if (i == 1 || dt < w->probe_ns)
			w->probe_ns = dt;
	}
	return 0;
}

/*
 * warm=auto's choice, from the first extent of 64 pages or more (pages
 * in the same 2 MiB of a huge mapping whenever the extent is aligned).
 */
static void decide(struct disk_warm *dw, struct warm_range *w)
{
	if (disk_guard(dw->d, probe, w) < 0)
		return; /* a fault (logged): decide on the next one */
	/* a preemption may slow one store down: most of them decide */
	/* both refill threads may decide at once: they decide alike, and either store stands */
	__atomic_store_n(&dw->mode, w->slow > WARM_PROBES / 2 ? DISK_WARM_OFF : DISK_WARM_HUGE,
			 __ATOMIC_RELAXED);
	nbdkit_debug("pmemz: stores into other pages of a touched 2 MiB: %u of %u over %u ns, "
		     "the cheapest %" PRIu64 " ns: extents owned ahead are %s",
		     w->slow, WARM_PROBES, WARM_MAX_NS, w->probe_ns,
		     w->slow <= WARM_PROBES / 2
			 ? "touched once per 2 MiB before a write lands in them"
			 : "left for the write to touch (4 KiB pages)");
}

int disk_warm_new(struct disk *d, int mode, struct disk_warm **out)
{
	struct disk_warm *dw = calloc(1, sizeof(*dw));

	if (!dw) {
		nbdkit_error("pmemz: out of memory");
		return -ENOMEM;
	}
	*dw = (struct disk_warm){.d = d, .mode = mode};
	*out = dw;
	return 0;
}

void disk_warm_free(struct disk_warm *dw)
{
	free(dw);
}

void disk_warm(struct disk_warm *dw, struct pmemz_alloc *a)
{
	size_t n = pmemz_alloc_count(a);

	for (size_t i = 0; i < n; i++) {
		int mode = __atomic_load_n(&dw->mode, __ATOMIC_RELAXED);
		struct warm_range w = {.len = 0};

		if (mode == DISK_WARM_OFF)
			return;
		w.p = pmemz_alloc_range(a, i, &w.len);
		if (!w.p)
			return;
		if (mode == DISK_WARM_PROBE && w.len >= 64u * WARM_PAGE) {
			decide(dw, &w);
			mode = __atomic_load_n(&dw->mode, __ATOMIC_RELAXED);
		}
		if (mode == DISK_WARM_PROBE || mode == DISK_WARM_OFF)
			continue;
		w.stride = mode == DISK_WARM_HUGE ? WARM_HUGE : WARM_PAGE;
		if (disk_guard(dw->d, touch, &w) < 0)
			return; /* a fault (logged): the write into it fails as it would */
	}
}
