/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

/*
 * The daemon's malloc heap, for STAT (pmemzctl status/metrics) and the
 * soak: how much is in use, how much glibc keeps free, and how often the
 * daemon gave free pages back.
 */
struct heap_stats {
	uint64_t in_use;	 /* bytes handed out by malloc, mmap'd chunks included */
	uint64_t free;		 /* bytes malloc holds free (its arenas' free chunks) */
	uint64_t trims;		 /* heap_tick calls that gave free pages back */
};

void heap_stats_get(struct heap_stats *hs);

/*
 * Called once a second from the main loop: every HEAP_TRIM_INTERVAL calls,
 * when malloc holds more than HEAP_TRIM_FREE_MIN free, its free pages go
 * back to the kernel.
 */
void heap_tick(void);
