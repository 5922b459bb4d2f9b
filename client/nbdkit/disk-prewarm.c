/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the region's whole mapping, faulted in once at
 * start by a thread of its own, so that no write of the disk pays a page
 * fault later.  It is the plugin's one way of touching pages ahead of
 * writes (the man page's prewarm= gives the measurement that chose it).
 *
 * A store into a page of the mapping that this process has not touched
 * yet faults, although pmemzerod's zeroer wrote the page through its own
 * mapping: a fresh chunk's first write pays that, an overwrite does not.
 * In a virtual machine that shadows the guest's page tables it is the
 * largest cost of a fresh 4 KiB write (scripts/bench-disk prints the
 * host's price as "the floor"), and MADV_POPULATE_READ/WRITE do not help:
 * they fill the guest's tables, and the first access still traps into the
 * hypervisor.  Only an access does.  Touching each extent as the disk
 * gets it would pay the same fault, only earlier; touching every page of
 * the region once pays it once per process, and a load of the next page
 * costs less than a first store into a random one, because the walk is
 * sequential.
 *
 * Loads only: the region holds other tenants' extents and pmemzerod's
 * metadata, and nothing here may store there.  On device DAX and tmpfs
 * (no dirty tracking of shared pages) a read fault maps the page
 * writable; a file system that tracks dirty pages still takes a cheaper
 * write-protect fault at the first store.
 *
 * It runs at SCHED_IDLE, so it takes no CPU a request wants, and stops
 * when the disk closes.  Each 2 MiB is asked whether it is mapped as one
 * page (huge_at): one load then, else one per 4 KiB page.  prewarm=auto
 * walks a region mostly in 2 MiB pages whatever its size (a few bytes of
 * page table per 2 MiB), and one in 4 KiB pages only up to
 * PREWARM_AUTO_MAX (its page tables take 1/512 of what they map: 64 MiB
 * for 32 GiB).  A fault of the walk (a tenant truncated the region's
 * file) skips that 2 MiB.  A hypervisor may shadow even a 2 MiB guest
 * page in 4 KiB pieces: the 4 KiB walk is what removes the faults there
 * (docs/PERFORMANCE.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "util.h"

#define PREWARM_AUTO_MAX (32ull << 30) /* 4 KiB pages: region bytes walked at most (auto) */
#define PREWARM_STEP (2u << 20)	       /* a guard, a stop check: per this many bytes */
#define PAGE_4K 4096u
#define PROBES 8u
#define PROBE_MAX_NS 1000u

struct disk_prewarm {
	struct disk *d;
	int mode; /* DISK_PREWARM_* */
	pthread_t thread;
	bool running;
	bool stop; /* atomic */
};

struct walk {
	const char *p;
	size_t len, stride;
};

static int load_pages(void *arg)
{
	const struct walk *w = arg;

	/* other threads and processes store into these bytes: a racy load, its value unused */
	for (size_t off = 0; off < w->len; off += w->stride)
		(void)__atomic_load_n(w->p + off, __ATOMIC_RELAXED);
	return 0;
}

/* One load (guarded): its time in ns, or UINT64_MAX on a fault. */
static uint64_t timed_load(struct disk *d, const char *p)
{
	struct walk w = {.p = p, .len = 1, .stride = 1};
	uint64_t t0 = pmemz_now_ns();

	if (disk_guard(d, load_pages, &w) < 0)
		return UINT64_MAX;
	return pmemz_now_ns() - t0;
}

/*
 * Is the 2 MiB at p mapped through one 2 MiB page?  After a load of its
 * first byte, a load from another 4 KiB page of it faults again through
 * 4 KiB pages, and costs nanoseconds through one 2 MiB page.  Where a
 * file's pages are is the file system's choice, range by range (tmpfs
 * with huge=: wherever a whole 2 MiB was allocated at once), so each 2
 * MiB is asked.  -1: a fault.
 */
static int huge_at(struct disk *d, const char *p)
{
	uint64_t first = timed_load(d, p), other;

	if (first == UINT64_MAX)
		return -1;
	other = timed_load(d, p + PREWARM_STEP / 2 + PAGE_4K);
	if (other == UINT64_MAX)
		return -1;
	/* a preemption may slow one load down: the next 2 MiB asks again */
	return other < PROBE_MAX_NS;
}

/* Most of PROBES 2 MiB steps spread over the region in 2 MiB pages? */
static bool mostly_huge(struct disk *d)
{
	size_t steps = d->region_size / PREWARM_STEP;
	unsigned huge = 0;

	for (unsigned i = 0; i < PROBES && steps; i++)
		huge += huge_at(d, d->base + (size_t)(i * 2u + 1) * (steps / (PROBES * 2u)) *
						 PREWARM_STEP) == 1;
	return huge > PROBES / 2;
}

/* The 2 MiB step at off: 0 when walked, -1 when it faulted; *huge_steps counted. */
static int walk_step(struct disk *d, size_t off, uint64_t *huge_steps)
{
	struct walk w = {.p = d->base + off, .stride = PAGE_4K};
	int h;

	w.len = d->region_size - off < PREWARM_STEP ? d->region_size - off : PREWARM_STEP;
	h = w.len == PREWARM_STEP ? huge_at(d, w.p) : 0;
	if (h < 0)
		return -1;
	if (h) {
		(*huge_steps)++;
		return 0;
	}
	return disk_guard(d, load_pages, &w) < 0 ? -1 : 0;
}

static bool stopping(struct disk_prewarm *p)
{
	return __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE);
}

static void *prewarm_thread(void *arg)
{
	struct disk_prewarm *p = arg;
	struct disk *d = p->d;
	struct sched_param sp = {.sched_priority = 0};
	uint64_t t0 = pmemz_now_ns(), faults = 0, huge = 0;
	size_t off;
	int r;

	/* only the CPU time nothing else wants */
	r = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	if (r)
		nbdkit_debug("pmemz: prewarm at normal priority: %s", strerror(r));
	if (p->mode == DISK_PREWARM_AUTO && d->region_size > PREWARM_AUTO_MAX && !mostly_huge(d)) {
		nbdkit_debug("pmemz: prewarm=auto: the region's mapping is in 4 KiB pages and over "
			     "%llu GiB: not faulted in ahead (prewarm=true does)",
			     PREWARM_AUTO_MAX >> 30);
		return NULL;
	}
	for (off = 0; off < d->region_size && !stopping(p); off += PREWARM_STEP)
		faults += walk_step(d, off, &huge) < 0;
	nbdkit_debug("pmemz: prewarm: %zu MiB of the region's mapping faulted in (%" PRIu64
		     " of %zu 2 MiB steps in one page) in %.3f s%s, %" PRIu64
		     " step(s) faulted (SIGBUS)",
		     off >> 20, huge, (d->region_size + PREWARM_STEP - 1) / PREWARM_STEP,
		     (double)(pmemz_now_ns() - t0) / 1e9,
		     off < d->region_size ? ", stopped by close" : "", faults);
	return NULL;
}

int disk_prewarm_new(struct disk *d, int mode, struct disk_prewarm **out)
{
	struct disk_prewarm *p = calloc(1, sizeof(*p));

	if (!p) {
		nbdkit_error("pmemz: out of memory");
		return -ENOMEM;
	}
	*p = (struct disk_prewarm){.d = d, .mode = mode};
	*out = p;
	return 0;
}

int disk_prewarm_start(struct disk_prewarm *p)
{
	int r;

	if (p->mode == DISK_PREWARM_OFF || p->running)
		return 0;
	p->stop = false;
	r = pthread_create(&p->thread, NULL, prewarm_thread, p);
	if (r) {
		/* an optimisation: serve without it */
		nbdkit_debug("pmemz: no prewarm thread: %s", strerror(r));
		return 0;
	}
	p->running = true;
	return 0;
}

void disk_prewarm_free(struct disk_prewarm *p)
{
	if (!p)
		return;
	if (p->running) {
		__atomic_store_n(&p->stop, true, __ATOMIC_RELEASE);
		pthread_join(p->thread, NULL);
	}
	free(p);
}
