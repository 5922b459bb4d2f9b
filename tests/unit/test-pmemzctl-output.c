/* SPDX-License-Identifier: MIT */
/* pmemzctl: value formatting and the text / JSON output backends. */
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pmemzctl.h"

static void test_format_size(void **state)
{
	char buf[32];

	assert_string_equal(ctl_format_size(0, true, buf, sizeof(buf)), "0 B");
	assert_string_equal(ctl_format_size(1023, true, buf, sizeof(buf)), "1023 B");
	assert_string_equal(ctl_format_size(1024, true, buf, sizeof(buf)), "1.0 KiB");
	assert_string_equal(ctl_format_size(3ull << 29, true, buf, sizeof(buf)), "1.5 GiB");
	assert_string_equal(ctl_format_size(64ull << 20, true, buf, sizeof(buf)), "64.0 MiB");
	assert_string_equal(ctl_format_size(64ull << 20, false, buf, sizeof(buf)), "67108864");
	assert_string_equal(ctl_format_size(UINT64_MAX, false, buf, sizeof(buf)),
			    "18446744073709551615");
}

static void test_format_rate(void **state)
{
	char buf[32];

	assert_string_equal(ctl_format_rate(2.5 * (1 << 30), true, buf, sizeof(buf)), "2.5 GiB/s");
	assert_string_equal(ctl_format_rate(0, true, buf, sizeof(buf)), "0 B/s");
	assert_string_equal(ctl_format_rate(1048576.4, false, buf, sizeof(buf)), "1048576");
	assert_string_equal(ctl_format_rate(-5, false, buf, sizeof(buf)), "0");
	assert_string_equal(ctl_format_rate(0.0 / 0.0, true, buf, sizeof(buf)), "0 B/s");
}

static void test_format_duration(void **state)
{
	char buf[32];

	assert_string_equal(ctl_format_duration(0, true, buf, sizeof(buf)), "0s");
	assert_string_equal(ctl_format_duration(45, true, buf, sizeof(buf)), "45s");
	assert_string_equal(ctl_format_duration(123, true, buf, sizeof(buf)), "2m 03s");
	assert_string_equal(ctl_format_duration(3723, true, buf, sizeof(buf)), "1h 02m 03s");
	assert_string_equal(
	    ctl_format_duration(3 * 86400 + 4 * 3600 + 5 * 60 + 6, true, buf, sizeof(buf)),
	    "3d 04h 05m");
	assert_string_equal(ctl_format_duration(3723, false, buf, sizeof(buf)), "3723");
}

static void test_format_runs(void **state)
{
	const struct ctl_run runs[3] = {{.first = 0, .count = 16},
					{.first = 32, .count = 1},
					{.first = 40, .count = 8}};
	char buf[64], small[12];

	assert_string_equal(ctl_format_runs(runs, 3, buf, sizeof(buf)), "0-15,32,40-47");
	assert_string_equal(ctl_format_runs(runs, 0, buf, sizeof(buf)), "");
	/* "0-15,32" + ",..." fits in 11 characters; "40-47" does not */
	assert_string_equal(ctl_format_runs(runs, 3, small, sizeof(small)), "0-15,32,...");
	assert_string_equal(ctl_format_runs(runs, 3, small, 9), "0-15,...");
	assert_string_equal(ctl_format_runs(runs, 3, small, 6), "..."); /* no room for "0-15,..." */
	assert_true(strlen(ctl_format_runs(runs, 3, small, 4)) < 4);
}

static void test_format_uuid(void **state)
{
	const uint8_t u[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
			       0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
	char buf[40];

	assert_string_equal(ctl_format_uuid(u, 16, buf, sizeof(buf)),
			    "12345678-9abc-def0-0123-456789abcdef");
	assert_string_equal(ctl_format_uuid(u, 15, buf, sizeof(buf)), "");
}

/* The same document through a backend, captured as a string. */
static char *render(const struct out_ops *ops, bool human)
{
	struct ctl_run runs[1] = {{0}};
	struct out *o;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(out_new(ops, f, human, &o), 0);
	out_str(o, "daemon_version", "daemon", "0.1.0");
	out_duration(o, "uptime_sec", "uptime", 3723);
	out_details(o, true);
	out_u64(o, "uid", "uid", 1000);
	out_details(o, false);
	o->ops->list_begin(o, "regions", "no regions");
	for (int i = 0; i < 2; i++) {
		o->ops->item_begin(o);
		out_str(o, "name", "region", i ? "second-region" : "r1");
		out_size(o, "size", "size", (uint64_t)(i + 1) << 26);
		out_u64(o, "zeroed", "zeroed", 7 + 100 * (uint64_t)i);
		out_rate(o, "zero_bytes_per_sec", "zero rate", 1.5 * (1 << 30));
		runs[0].first = 4;
		runs[0].count = 2;
		out_runs(o, "runs", "runs", runs, 1);
		out_bool(o, "devdax", "devdax", i);
		out_details(o, true);
		out_u64(o, "drains", "drains", 9);
		out_details(o, false);
		o->ops->item_end(o);
	}
	o->ops->list_end(o);
	o->ops->list_begin(o, "tags", "no tags");
	o->ops->list_end(o);
	assert_int_equal(o->ops->finish(o), 0);
	out_free(o);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_text_output(void **state)
{
	char *s = render(&out_text_ops, true);

	assert_string_equal(s, "daemon: 0.1.0\n"
			       "uptime: 1h 02m 03s\n"
			       "\n"
			       "REGION              SIZE  ZEROED  ZERO RATE  RUNS  DEVDAX\n"
			       "r1              64.0 MiB       7  1.5 GiB/s  4-5   no\n"
			       "second-region  128.0 MiB     107  1.5 GiB/s  4-5   yes\n"
			       "\n"
			       "no tags\n");
	free(s);

	s = render(&out_text_ops, false);
	assert_non_null(strstr(s, "r1              67108864       7  1610612736  4-5   no\n"));
	assert_non_null(strstr(s, "uptime: 3723\n"));
	free(s);
}

static void test_json_output(void **state)
{
	char *s = render(&out_json_ops, true);
	struct json_object *root = json_tokener_parse(s), *v, *regions, *r1, *runs;

	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "daemon_version", &v));
	assert_string_equal(json_object_get_string(v), "0.1.0");
	assert_true(json_object_object_get_ex(root, "uptime_sec", &v));
	assert_int_equal(json_object_get_uint64(v), 3723);
	assert_true(json_object_object_get_ex(root, "uid", &v)); /* details are in JSON */
	assert_true(json_object_object_get_ex(root, "regions", &regions));
	assert_int_equal(json_object_array_length(regions), 2);
	r1 = json_object_array_get_idx(regions, 1);
	assert_true(json_object_object_get_ex(r1, "size", &v));
	assert_int_equal(json_object_get_uint64(v), 128ull << 20); /* raw even when human */
	assert_true(json_object_object_get_ex(r1, "devdax", &v));
	assert_true(json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(r1, "drains", &v));
	assert_true(json_object_object_get_ex(r1, "runs", &runs));
	assert_int_equal(json_object_array_length(runs), 1);
	assert_true(json_object_object_get_ex(json_object_array_get_idx(runs, 0), "count", &v));
	assert_int_equal(json_object_get_uint64(v), 2);
	assert_true(json_object_object_get_ex(root, "tags", &v));
	assert_int_equal(json_object_array_length(v), 0);
	json_object_put(root);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format_size),	    cmocka_unit_test(test_format_rate),
	    cmocka_unit_test(test_format_duration), cmocka_unit_test(test_format_runs),
	    cmocka_unit_test(test_format_uuid),	    cmocka_unit_test(test_text_output),
	    cmocka_unit_test(test_json_output),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
