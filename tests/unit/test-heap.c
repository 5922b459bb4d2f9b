/* SPDX-License-Identifier: MIT */
/*
 * heap.c: after a burst is freed behind a long-lived allocation, the main
 * loop's tick gives the free pages back (the soak's memory ratchet,
 * docs/RELIABILITY.md), and not more often than every HEAP_TRIM_INTERVAL.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "heap.h"
#include "sanitizer.h"

#define BURST 2048
#define CHUNK 4000 /* below the mmap threshold: from the heap */

/* Anonymous memory of this process, KiB (smaps_rollup). */
static long anon_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Anonymous: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_burst_given_back(void **state)
{
	static char *burst[BURST];
	struct heap_stats before, after;
	uint64_t t0, trim_ns = 0;
	char *pin;
	long anon_burst, anon_after;
	unsigned ticks;

	(void)mallopt(M_TRIM_THRESHOLD, 128 * 1024); /* glibc's default, pinned */
	heap_stats_get(&before);
	for (size_t i = 0; i < BURST; i++) {
		burst[i] = malloc(CHUNK);
		assert_non_null(burst[i]);
		memset(burst[i], 0x5a, CHUNK);
	}
	/* Above the burst: the top of the heap cannot shrink past it. */
	pin = malloc(64);
	assert_non_null(pin);
	for (size_t i = 0; i < BURST; i++)
		free(burst[i]);
	anon_burst = anon_kib();

	/* One look every HEAP_TRIM_INTERVAL ticks: the first ones do nothing. */
	for (ticks = 1; ticks < 100; ticks++) {
		t0 = now_ns();
		heap_tick();
		trim_ns = now_ns() - t0;
		heap_stats_get(&after);
		if (after.trims > before.trims)
			break;
	}
	assert_int_equal(after.trims, before.trims + 1);
	assert_true(ticks > 1);
	assert_true(after.free >= BURST * (CHUNK / 2));
	anon_after = anon_kib();
	print_message("anonymous %ld KiB after the burst's free, %ld KiB after the trim "
		      "(tick %u, %.1f us)\n", anon_burst, anon_after, ticks, trim_ns / 1e3);
	assert_true(anon_burst - anon_after >= (long)(BURST * CHUNK / 2 / 1024));

	/* Still free, so it repeats: once per interval, never per tick. */
	for (unsigned i = 0; i < 3 * ticks; i++)
		heap_tick();
	heap_stats_get(&before);
	assert_int_equal(before.trims, after.trims + 3);
	free(pin);
}

/* Little free: no trim at all. */
static void test_small_free_left_alone(void **state)
{
	struct heap_stats before, after;

	(void)malloc_trim(0);
	heap_stats_get(&before);
	assert_true(before.free < (1u << 20));
	for (unsigned i = 0; i < 50; i++)
		heap_tick();
	heap_stats_get(&after);
	assert_int_equal(after.trims, before.trims);
}

int main(void)
{
	if (PMEMZ_TEST_ASAN) {
		/* ASan's allocator replaces glibc's: there is no glibc heap to trim. */
		fprintf(stderr, "SKIP: test-heap measures glibc's malloc; this build uses ASan's\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small_free_left_alone),
	    cmocka_unit_test(test_burst_given_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
