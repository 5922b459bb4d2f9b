/* SPDX-License-Identifier: MIT */
/* log_escape / LOG_ESC: client-chosen strings made safe for one log line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"

static void test_plain_kept(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(log_escape("db-1/part_2.x", buf, sizeof(buf)), "db-1/part_2.x");
	assert_string_equal(log_escape("", buf, sizeof(buf)), "");
	assert_string_equal(log_escape(NULL, buf, sizeof(buf)), "(null)");
}

static void test_controls_escaped(void **state)
{
	char buf[128];

	(void)state;
	/* A newline cannot start a forged line; ESC cannot drive the terminal. */
	assert_string_equal(log_escape("a\nERROR fake", buf, sizeof(buf)), "a\\x0aERROR fake");
	assert_string_equal(log_escape("\x1b[2J\r\t\x7f", buf, sizeof(buf)),
			    "\\x1b[2J\\x0d\\x09\\x7f");
	/* The backslash itself: the escaped form is unambiguous.  Quotes stay (messages quote). */
	assert_string_equal(log_escape("it's \"x\" \\x41", buf, sizeof(buf)),
			    "it's \"x\" \\x5cx41");
	/* Bytes above ASCII, among them a right-to-left override (U+202E). */
	assert_string_equal(log_escape("a\xe2\x80\xae"
				       "b",
				       buf, sizeof(buf)),
			    "a\\xe2\\x80\\xaeb");
}

static void test_truncated(void **state)
{
	char buf[8], big[LOG_ESC_MAX];
	char name[65];

	(void)state;
	assert_string_equal(log_escape("abcdefg", buf, sizeof(buf)), "abcdefg");
	assert_string_equal(log_escape("abcdefgh", buf, sizeof(buf)), "abcd...");
	assert_string_equal(log_escape("ab\n\n", buf, sizeof(buf)), "ab...");
	assert_string_equal(log_escape("\n", buf, 4), "...");
	/* LOG_ESC holds a 64-byte name escaped in full. */
	memset(name, '\n', 64);
	name[64] = '\0';
	assert_int_equal(strlen(log_escape(name, big, sizeof(big))), 64 * 4);
	assert_string_equal(LOG_ESC("x\ny"), "x\\x0ay");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_kept),
	    cmocka_unit_test(test_controls_escaped),
	    cmocka_unit_test(test_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
