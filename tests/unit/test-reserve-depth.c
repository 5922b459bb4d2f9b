/* SPDX-License-Identifier: MIT */
/*
 * The client reserve's depth policy (pmemz_depth_*, reserve.c) with
 * simulated time: a caller allocating every `gap` ns from a daemon that
 * answers `lat` ns after a refill went out.  The depth follows the
 * latency, grows fast when the reserve runs dry, never leaves
 * [floor, cap], sinks back slowly, and a quota refusal cuts it for good.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "client-private.h"

#define US 1000ull
#define MS (1000 * US)

struct sim {
	struct pmemz_depth d;
	uint64_t now;
};

/* One allocation: the caller worked `gap`, its lease's answer took `lat`. */
static void step(struct sim *s, uint64_t gap, uint64_t lat, bool stalled)
{
	s->now += gap;
	pmemz_depth_begin(&s->d, s->now);
	pmemz_depth_answered(&s->d, lat, stalled);
	s->now += 1 * US;
	pmemz_depth_end(&s->d, s->now);
	assert_true(s->d.target >= s->d.floor);
	assert_true(s->d.target <= s->d.cap);
	assert_true(s->d.max_target <= s->d.cap);
}

static void sim_start(struct sim *s, size_t floor, size_t cap)
{
	s->now = 1 * MS;
	pmemz_depth_reset(&s->d, floor, cap);
	assert_int_equal(s->d.target, floor);
}

static void test_prompt_daemon_keeps_floor(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s, 16, 128);
	for (int i = 0; i < 2000; i++)
		step(&s, 200 * US, 60 * US, false);
	assert_int_equal(s.d.target, 16);
	assert_int_equal(s.d.max_target, 16);
	assert_int_equal(s.d.stalls, 0);
}

static void test_follows_latency(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s, 16, 128);
	for (int i = 0; i < 20; i++)
		step(&s, 200 * US, 60 * US, false);
	/* 5 ms answers at one allocation per 200 us: 25 in flight, x2 safety,
	 * x2 for the half a refill batch is short of it. */
	step(&s, 200 * US, 5 * MS, false);
	assert_int_equal(s.d.target, 100);
	assert_int_equal(s.d.stalls, 0);
	/* A slower caller needs less for the same daemon. */
	sim_start(&s, 4, 128);
	for (int i = 0; i < 20; i++)
		step(&s, 2 * MS, 60 * US, false);
	step(&s, 2 * MS, 5 * MS, false);
	assert_int_equal(s.d.target, 10);
}

static void test_late_answer_deepens_before_dry(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s, 16, 128);
	for (int i = 0; i < 20; i++)
		step(&s, 200 * US, 60 * US, false);
	/* The oldest request has been out 4 ms: deepen now, not when dry. */
	pmemz_depth_pending(&s.d, 4 * MS);
	assert_true(s.d.target >= 40);
	assert_int_equal(s.d.stalls, 0);
	/* A young one changes nothing, nor can an old one pass the cap. */
	pmemz_depth_pending(&s.d, 10 * US);
	assert_true(s.d.target >= 40);
	pmemz_depth_pending(&s.d, 10000 * MS);
	assert_int_equal(s.d.target, 128);
}

static void test_dry_doubles_up_to_cap(void **state)
{
	struct sim s;
	size_t prev;

	(void)state;
	sim_start(&s, 16, 100);
	/* A stall of about one gap: the latency alone asks for little. */
	for (int i = 0; i < 5; i++)
		step(&s, 200 * US, 60 * US, false);
	step(&s, 200 * US, 200 * US, true);
	assert_int_equal(s.d.target, 32);
	assert_int_equal(s.d.stalls, 1);
	prev = s.d.target;
	for (int i = 0; i < 10; i++) {
		step(&s, 200 * US, 200 * US, true);
		assert_true(s.d.target == s.d.cap || s.d.target == 2 * prev);
		prev = s.d.target;
	}
	assert_int_equal(s.d.target, 100);
	assert_int_equal(s.d.max_target, 100);
	/* Huge latencies cannot pass the cap either. */
	step(&s, 1 * US, 10000 * MS, true);
	assert_int_equal(s.d.target, 100);
}

static void test_shrinks_slowly(void **state)
{
	struct sim s;
	size_t prev;
	int i;

	(void)state;
	sim_start(&s, 16, 128);
	step(&s, 200 * US, 60 * US, false);
	step(&s, 200 * US, 20 * MS, true);
	assert_int_equal(s.d.target, 128);
	/* The daemon is prompt again: the depth never rises, and sinks slowly. */
	prev = s.d.target;
	for (i = 0; i < 128; i++) {
		step(&s, 200 * US, 60 * US, false);
		assert_true(s.d.target <= prev);
		prev = s.d.target;
	}
	assert_true(s.d.target >= 100); /* a depth's worth of calm: one step down */
	for (; i < 100000 && s.d.target > s.d.floor; i++) {
		step(&s, 200 * US, 60 * US, false);
		assert_true(s.d.target <= prev);
		prev = s.d.target;
	}
	assert_int_equal(s.d.target, 16);
	assert_true(i > 1000); /* not at once */
	assert_int_equal(s.d.max_target, 128);
}

static void test_refusal_cuts(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s, 8, 128);
	step(&s, 200 * US, 60 * US, false);
	step(&s, 200 * US, 200 * US, true);
	step(&s, 200 * US, 200 * US, true);
	step(&s, 200 * US, 200 * US, true);
	assert_int_equal(s.d.target, 64);
	/* Refused while 40 were out: halve (32), and never above that again. */
	pmemz_depth_refused(&s.d, 40);
	assert_int_equal(s.d.target, 32);
	assert_int_equal(s.d.cuts, 1);
	for (int i = 0; i < 10; i++)
		step(&s, 200 * US, 50 * MS, true);
	assert_int_equal(s.d.target, 32);
	/* Refused with few out: down to what was out, not below the floor. */
	pmemz_depth_refused(&s.d, 12);
	assert_int_equal(s.d.target, 12);
	pmemz_depth_refused(&s.d, 0);
	assert_int_equal(s.d.target, 8);
	step(&s, 200 * US, 50 * MS, true);
	assert_int_equal(s.d.target, 8);
	/* Set anew: the ceiling goes. */
	pmemz_depth_reset(&s.d, 8, 128);
	step(&s, 200 * US, 200 * US, true);
	assert_int_equal(s.d.target, 16);
}

static void test_idle_pause(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s, 4, 64);
	for (int i = 0; i < 50; i++)
		step(&s, 200 * US, 2 * MS, false);
	assert_true(s.d.target >= 20);
	/* A 10 s pause, then a burst: the pause does not make the caller look
	 * slow (it is clamped to the latency), so the depth stays for the burst. */
	step(&s, 10000 * MS, 2 * MS, false);
	assert_true(s.d.gap_ns <= s.d.lat_ns);
	assert_true(s.d.target >= 20);
}

static void test_resize_keeps_latency(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s, 16, 128);
	for (int i = 0; i < 20; i++)
		step(&s, 200 * US, 5 * MS, false);
	step(&s, 200 * US, 20 * MS, true);
	assert_int_equal(s.d.target, 128);
	pmemz_depth_refused(&s.d, 100);
	/* Off, then set again: the slow daemon is remembered, the rest is not. */
	pmemz_depth_resize(&s.d, 0, 0);
	assert_int_equal(s.d.target, 0);
	pmemz_depth_resize(&s.d, 16, 96);
	assert_int_equal(s.d.target, 96);
	assert_int_equal(s.d.max_target, 96);
	assert_int_equal(s.d.stalls, 0);
	assert_int_equal(s.d.cuts, 0);
	assert_int_equal(s.d.ceiling, SIZE_MAX);
	/* A fresh reserve knows nothing: the floor. */
	pmemz_depth_reset(&s.d, 16, 96);
	assert_int_equal(s.d.target, 16);
}

static void test_batch_and_off(void **state)
{
	struct pmemz_depth d;

	(void)state;
	pmemz_depth_reset(&d, 1, 1);
	assert_int_equal(pmemz_depth_batch(&d), 1);
	pmemz_depth_reset(&d, 64, 128);
	assert_int_equal(pmemz_depth_batch(&d), 32);
	/* Off (set_reserve 0): nothing kept. */
	pmemz_depth_reset(&d, 0, 0);
	assert_int_equal(d.target, 0);
	/* A cap below the floor is the floor. */
	pmemz_depth_reset(&d, 16, 4);
	assert_int_equal(d.cap, 16);
	assert_int_equal(d.target, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prompt_daemon_keeps_floor),
	    cmocka_unit_test(test_follows_latency),
	    cmocka_unit_test(test_late_answer_deepens_before_dry),
	    cmocka_unit_test(test_dry_doubles_up_to_cap),
	    cmocka_unit_test(test_shrinks_slowly),
	    cmocka_unit_test(test_refusal_cuts),
	    cmocka_unit_test(test_idle_pause),
	    cmocka_unit_test(test_resize_keeps_latency),
	    cmocka_unit_test(test_batch_and_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
