/* SPDX-License-Identifier: MIT */
/*
 * The adaptive zeroing policy's decisions (zeroer-policy.c), on a clock the
 * test moves: watermarks from the reserve floor and the allocation rate,
 * the zones and their hysteresis, waiting allocations, the rate's rise and
 * decay, and the default policy that never leaves FAST.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "zeroer-policy.h"

#define MS 1000000ull
#define EXT (2ull << 20)

static const struct zero_policy_conf adaptive = {
    .adaptive = true,
    .reserve_min = 16 * EXT, /* low >= 16 extents */
    .low_ms = 250,
    .high_ms = 2000,
    .pace_rate = 256ull << 20,
};

static void test_full_policy_stays_fast(void **state)
{
	struct zero_policy_conf c = adaptive;
	struct zpolicy p;

	(void)state;
	c.adaptive = false;
	zeroer_policy_init(&p, &c, EXT, 1000, 0);
	assert_int_equal(zeroer_policy_decide(&p, 0, false, 0), ZP_FAST);
	assert_int_equal(zeroer_policy_decide(&p, 1000, false, 1000 * MS), ZP_FAST);
	assert_int_equal(p.changes, 0);
}

static void test_zones_and_hysteresis(void **state)
{
	struct zpolicy p;
	uint64_t t = 0;

	(void)state;
	zeroer_policy_init(&p, &adaptive, EXT, 1000, t);
	assert_int_equal(p.low, 16); /* set before the first decision */
	/* No allocations yet: low = the floor, high = twice it. */
	assert_int_equal(zeroer_policy_decide(&p, 0, false, t), ZP_FAST);
	assert_int_equal(p.low, 16);
	assert_int_equal(p.high, 32);
	assert_int_equal(zeroer_policy_decide(&p, 15, false, t), ZP_FAST);
	assert_int_equal(zeroer_policy_decide(&p, 16, false, t), ZP_PACED);
	assert_int_equal(zeroer_policy_decide(&p, 31, false, t), ZP_PACED);
	assert_int_equal(zeroer_policy_decide(&p, 32, false, t), ZP_IDLE);
	/* Down between the watermarks: still idle (hysteresis). */
	assert_int_equal(zeroer_policy_decide(&p, 20, false, t), ZP_IDLE);
	/* A waiting allocation: fast whatever the reserve, then back. */
	assert_int_equal(zeroer_policy_decide(&p, 20, true, t), ZP_FAST);
	assert_int_equal(zeroer_policy_decide(&p, 20, false, t), ZP_PACED);
	assert_int_equal(zeroer_policy_decide(&p, 40, false, t), ZP_IDLE);
	assert_int_equal(zeroer_policy_decide(&p, 15, false, t), ZP_FAST);
	assert_int_equal(p.changes, 6);
}

static void test_rate_sizes_the_reserve(void **state)
{
	struct zpolicy p;
	uint64_t t = 0;

	(void)state;
	zeroer_policy_init(&p, &adaptive, EXT, 100000, t);
	/* A burst of 0.2 s at 10000/s barely moves the estimate ... */
	for (int i = 0; i < 2; i++) {
		t += 100 * MS;
		zeroer_policy_note_alloc(&p, 1000, t);
	}
	(void)zeroer_policy_decide(&p, 0, false, t + 100 * MS);
	assert_true(p.rate < 1000);
	assert_true(p.low < 200); /* a tenth of the 2000 extents the burst took */
	/* ... 1000 extents per 100 ms = 10000/s for twenty seconds does. */
	for (int i = 0; i < 200; i++) {
		t += 100 * MS;
		zeroer_policy_note_alloc(&p, 1000, t);
	}
	(void)zeroer_policy_decide(&p, 0, false, t + 100 * MS);
	assert_in_range((uint64_t)p.rate, 8000, 10000);
	/* low = rate x 250 ms, high = rate x 2000 ms */
	assert_in_range(p.low, 2000, 2500);
	assert_in_range(p.high, 16000, 20000);

	/* A quiet minute: the estimate decays, the watermarks with it. */
	t += 60000 * MS;
	(void)zeroer_policy_decide(&p, 0, false, t);
	assert_true(p.rate < 1000);
	assert_true(p.low < 250);
}

static void test_watermarks_capped(void **state)
{
	struct zpolicy p;
	uint64_t t = 0;

	(void)state;
	zeroer_policy_init(&p, &adaptive, EXT, 40, t);
	for (int i = 0; i < 200; i++) {
		t += 100 * MS;
		zeroer_policy_note_alloc(&p, 1000, t);
	}
	assert_int_equal(zeroer_policy_decide(&p, 39, false, t + 100 * MS), ZP_FAST);
	assert_int_equal(p.low, 40);
	assert_int_equal(p.high, 40);
	assert_int_equal(zeroer_policy_decide(&p, 40, false, t + 100 * MS), ZP_IDLE);
	assert_string_equal(zeroer_policy_zone_name(ZP_PACED), "paced");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_policy_stays_fast),
	    cmocka_unit_test(test_zones_and_hysteresis),
	    cmocka_unit_test(test_rate_sizes_the_reserve),
	    cmocka_unit_test(test_watermarks_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
