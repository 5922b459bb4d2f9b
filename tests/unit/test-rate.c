/* SPDX-License-Identifier: MIT */
/*
 * pmemz_parse_rate: the one rate syntax of zero_rate, zero_pace_rate and
 * pmemzctl set-rate.  The daemon's file once refused "2G/s", "300k/S" and
 * "Unlimited", which set-rate took; set-rate refused values of 64
 * characters or more, which the file took.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

static void test_rate_ok(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} cases[] = {
	    {"0", 0},
	    {"unlimited", 0},
	    {"Unlimited", 0}, /* the file refused it */
	    {"UNLIMITED", 0},
	    {"1048576", 1048576},
	    {"512M", 512ull << 20},
	    {"512m", 512ull << 20},
	    {"2G/s", 2ull << 30}, /* the file refused it */
	    {"2g/S", 2ull << 30},
	    {"300k/S", 300ull << 10},
	    {"1GiB/s", 1ull << 30},
	    {"4096B/s", 4096},
	    {"1T", 1ull << 40},
	    {"0/s", 0},
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		v = 12345;
		assert_int_equal(pmemz_parse_rate(cases[i].s, &v), 0);
		assert_true(v == cases[i].v);
	}
}

static void test_rate_long(void **state)
{
	char s[80];
	uint64_t v = 0;

	(void)state;
	/* set-rate refused 64 characters or more; the file took them. */
	memset(s, '0', 70);
	strcpy(s + 70, "1M/s");
	assert_int_equal(pmemz_parse_rate(s, &v), 0);
	assert_true(v == 1ull << 20);
}

static void test_rate_bad(void **state)
{
	static const char *const bad[] = {
	    "", "/s", "/S", "fast", "-1", "1M/sec", "1M /s", "1/s/s", "unlimited/s", "s",
	    "1Q/s", "M/s", " unlimited",
	};
	uint64_t v = 7;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(pmemz_parse_rate(bad[i], &v), -EINVAL);
		assert_true(v == 7); /* nothing set on an error */
	}
	assert_int_equal(pmemz_parse_rate(NULL, &v), -EINVAL);
	assert_int_equal(pmemz_parse_rate("16777216T/s", &v), -ERANGE);
	assert_int_equal(pmemz_parse_rate("99999999999999999999/s", &v), -ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rate_ok),
	    cmocka_unit_test(test_rate_long),
	    cmocka_unit_test(test_rate_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
