/* SPDX-License-Identifier: MIT */
/*
 * Giving the heap back.
 *
 * A burst of clients (a pipeliner's replies, 256 connections at once, a
 * FLUSH storm) makes the heap grow; once they are gone their memory is
 * free but glibc keeps it: it only shrinks the top of the main heap, and
 * one small long-lived allocation above the burst pins everything below.
 * Over hours the daemon's resident memory then ratchets up to the largest
 * burst it ever saw (the soak, docs/RELIABILITY.md).  malloc_trim(0) hands
 * the free pages inside every arena back with MADV_DONTNEED.  glibc cannot
 * tell pages it gave back from pages touched since (its free total counts
 * both), so the trim repeats every HEAP_TRIM_INTERVAL ticks while over
 * HEAP_TRIM_FREE_MIN is free.  A trim costs about what freeing its pages
 * costs (a few ms for a few MiB on a loaded 2-CPU machine, test-heap
 * prints it), once after a burst; repeating it over pages already gone
 * takes microseconds.  The heap it walks is bounded by the per-connection
 * budgets, so no client can make it long.
 */
#include <malloc.h>

#include "heap.h"

#define HEAP_TRIM_FREE_MIN (1u << 20)	/* bytes free before a trim is worth it */
#define HEAP_TRIM_INTERVAL 10		/* ticks (seconds) between two looks */

static struct {
	uint64_t trims;
	unsigned ticks;
} heap;

void heap_stats_get(struct heap_stats *hs)
{
	struct mallinfo2 mi = mallinfo2();

	hs->in_use = mi.uordblks + mi.hblkhd;
	hs->free = mi.fordblks;
	hs->trims = heap.trims;
}

void heap_tick(void)
{
	struct mallinfo2 mi;

	if (++heap.ticks < HEAP_TRIM_INTERVAL)
		return;
	heap.ticks = 0;
	mi = mallinfo2();
	if (mi.fordblks < HEAP_TRIM_FREE_MIN)
		return;
	if (malloc_trim(0))
		heap.trims++;
}
