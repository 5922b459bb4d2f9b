/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl metrics: the Prometheus text exposition of a STAT answer made up
 * here: label values escaped as the format says, the histogram's buckets
 * with le labels that read back exactly, and no histogram samples for a
 * region whose daemon sent none.  (tests/integration/test-metrics.c runs
 * the reference parser over the real thing.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client-private.h" /* the admin handles over answers made up here */
#include "pmemzctl.h"

/* The exposition of STAT s with, per region, usage[i] (usage NULL: none). */
static int write_metrics(FILE *f, const Pmemz__StatResp *s, const Pmemz__UsageResp *const *usage)
{
	struct pmemz_usage *u[8] = {NULL};
	struct ctl_metrics_in in = {0};
	struct pmemz_stat *st = NULL;
	int r;

	assert_true(s->n_regions <= 8);
	assert_int_equal(pmemz_stat_borrow(s, &st), 0);
	in.stat = st;
	for (size_t i = 0; usage && i < s->n_regions; i++)
		if (usage[i])
			assert_int_equal(pmemz_usage_borrow(usage[i], &u[i]), 0);
	if (usage)
		in.usage = (const struct pmemz_usage *const *)u;
	r = ctl_metrics_write_in(f, &in);
	for (size_t i = 0; i < 8; i++)
		pmemz_usage_free(u[i]);
	pmemz_stat_free(st);
	return r;
}

static char *render(const Pmemz__StatResp *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(write_metrics(f, s, NULL), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static int count_lines(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += strncmp(p, prefix, strlen(prefix)) == 0;
	return n;
}

static void test_exposition(void **state)
{
	static double le[] = {0.0001, 0.25, 1.0};
	static uint64_t counts[] = {1, 3, 4};
	Pmemz__RegionInfo info[2] = {PMEMZ__REGION_INFO__INIT, PMEMZ__REGION_INFO__INIT};
	Pmemz__RegionStat rs[2] = {PMEMZ__REGION_STAT__INIT, PMEMZ__REGION_STAT__INIT};
	Pmemz__RegionStat *ptrs[2] = {&rs[0], &rs[1]};
	Pmemz__StatResp s = PMEMZ__STAT_RESP__INIT;
	char *text;

	(void)state;
	info[0].name = (char *)"a\"b\\c\nd";
	info[1].name = (char *)"old";
	rs[0].info = &info[0];
	rs[0].zeroed = 7;
	rs[0].bad = 2;
	rs[0].bytes_zeroed = 1ull << 40;
	rs[0].n_wait_bucket_le = 3;
	rs[0].wait_bucket_le = le;
	rs[0].n_wait_bucket_count = 3;
	rs[0].wait_bucket_count = counts;
	rs[0].has_wait_sum_sec = true;
	rs[0].wait_sum_sec = 2.75;
	rs[0].has_wait_count = true;
	rs[0].wait_count = 5;
	rs[0].has_numa_node = true;
	rs[0].numa_node = 1;
	rs[1].info = &info[1]; /* a daemon without the histogram fields, nor a node */
	rs[1].committed = 3;
	s.n_regions = 2;
	s.regions = ptrs;
	s.connections = 4;

	text = render(&s);
	assert_non_null(
	    strstr(text, "pmemzerod_extents{region=\"a\\\"b\\\\c\\nd\",state=\"zeroed\"} 7\n"));
	assert_non_null(strstr(text, "pmemzerod_extents{region=\"old\",state=\"committed\"} 3\n"));
	assert_non_null(strstr(
	    text, "pmemzerod_zeroed_bytes_total{region=\"a\\\"b\\\\c\\nd\"} 1099511627776\n"));
	assert_non_null(strstr(text, "pmemzerod_bad_blocks{region=\"a\\\"b\\\\c\\nd\"} 2\n"));
	assert_non_null(strstr(text, "pmemzerod_region_up{region=\"old\"} 1\n"));
	assert_non_null(strstr(text, "le=\"0.0001\"} 1\n"));
	assert_non_null(strstr(text, "le=\"0.25\"} 3\n"));
	assert_non_null(strstr(text, "le=\"1\"} 4\n"));
	assert_non_null(strstr(text, "le=\"+Inf\"} 5\n"));
	assert_non_null(
	    strstr(text, "pmemzerod_allocate_wait_seconds_sum{region=\"a\\\"b\\\\c\\nd\"} 2.75\n"));
	assert_non_null(
	    strstr(text, "pmemzerod_allocate_wait_seconds_count{region=\"a\\\"b\\\\c\\nd\"} 5\n"));
	assert_null(strstr(text, "pmemzerod_allocate_wait_seconds_count{region=\"old\"}"));
	assert_non_null(strstr(text, "\npmemzerod_connections 4\n"));
	assert_non_null(strstr(text, "pmemzerod_region_numa_node{region=\"a\\\"b\\\\c\\nd\"} 1\n"));
	assert_null(strstr(text, "pmemzerod_region_numa_node{region=\"old\"}"));
	/* One HELP and one TYPE per family, whatever the number of regions. */
	assert_int_equal(count_lines(text, "# HELP "), 13);
	assert_int_equal(count_lines(text, "# TYPE "), 13);
	assert_non_null(strstr(text, "pmemzerod_moves_total{region=\"old\"} 0\n"));
	assert_int_equal(count_lines(text, "# TYPE pmemzerod_allocate_wait_seconds histogram"), 1);
	assert_int_equal(count_lines(text, "pmemzerod_extents{"), 10);
	/* Every line ends; no raw newline from a label value splits one. */
	assert_int_equal(count_lines(text, "d\""), 0);
	free(text);
}

/* A failed region is down; a region the caller may not open exports nothing but up. */
static void test_failed_and_name_only(void **state)
{
	Pmemz__RegionInfo info[2] = {PMEMZ__REGION_INFO__INIT, PMEMZ__REGION_INFO__INIT};
	Pmemz__RegionStat rs[2] = {PMEMZ__REGION_STAT__INIT, PMEMZ__REGION_STAT__INIT};
	Pmemz__RegionStat *ptrs[2] = {&rs[0], &rs[1]};
	Pmemz__StatResp s = PMEMZ__STAT_RESP__INIT;
	char *text;

	(void)state;
	info[0].name = (char *)"broken";
	rs[0].info = &info[0];
	rs[0].state = (char *)"failed";
	rs[0].committed = 2;
	info[1].name = (char *)"theirs";
	rs[1].info = &info[1];
	rs[1].has_name_only = true;
	rs[1].name_only = true;
	rs[1].state = (char *)"online";
	s.n_regions = 2;
	s.regions = ptrs;

	text = render(&s);
	assert_non_null(strstr(text, "pmemzerod_region_up{region=\"broken\"} 0\n"));
	assert_non_null(strstr(text, "pmemzerod_extents{region=\"broken\",state=\"committed\"} 2\n"));
	assert_non_null(strstr(text, "pmemzerod_region_up{region=\"theirs\"} 1\n"));
	assert_int_equal(count_lines(text, "pmemzerod_extents{region=\"theirs\""), 0);
	assert_int_equal(count_lines(text, "pmemzerod_waiters{region=\"theirs\""), 0);
	assert_int_equal(count_lines(text, "pmemzerod_zeroed_bytes_total{region=\"theirs\""), 0);
	free(text);
}

/* Per-uid usage: one sample per uid and family, only for regions with an answer. */
static void test_uid_usage(void **state)
{
	Pmemz__RegionInfo info[2] = {PMEMZ__REGION_INFO__INIT, PMEMZ__REGION_INFO__INIT};
	Pmemz__RegionStat rs[2] = {PMEMZ__REGION_STAT__INIT, PMEMZ__REGION_STAT__INIT};
	Pmemz__RegionStat *ptrs[2] = {&rs[0], &rs[1]};
	Pmemz__StatResp s = PMEMZ__STAT_RESP__INIT;
	Pmemz__UidUsage u[2] = {PMEMZ__UID_USAGE__INIT, PMEMZ__UID_USAGE__INIT};
	Pmemz__UidUsage *up[2] = {&u[0], &u[1]};
	Pmemz__UsageResp ur = PMEMZ__USAGE_RESP__INIT;
	const Pmemz__UsageResp *usage[2] = {&ur, NULL};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	info[0].name = (char *)"a";
	info[1].name = (char *)"b";
	rs[0].info = &info[0];
	rs[1].info = &info[1];
	s.n_regions = 2;
	s.regions = ptrs;
	u[0].uid = 0;
	u[0].leased = 4096;
	u[1].uid = 65534;
	u[1].committed = 8192;
	u[1].tags = 2;
	u[1].rezeroed = 12288;
	ur.n_uids = 2;
	ur.uids = up;

	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(write_metrics(f, &s, usage), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(buf, "# TYPE pmemzerod_uid_rezeroed_bytes_total counter\n"));
	assert_non_null(strstr(buf, "pmemzerod_uid_leased_bytes{region=\"a\",uid=\"0\"} 4096\n"));
	assert_non_null(
	    strstr(buf, "pmemzerod_uid_committed_bytes{region=\"a\",uid=\"65534\"} 8192\n"));
	assert_non_null(strstr(buf, "pmemzerod_uid_tags{region=\"a\",uid=\"65534\"} 2\n"));
	assert_non_null(
	    strstr(buf, "pmemzerod_uid_rezeroed_bytes_total{region=\"a\",uid=\"65534\"} 12288\n"));
	assert_int_equal(count_lines(buf, "pmemzerod_uid_leased_bytes{"), 2);
	assert_int_equal(count_lines(buf, "pmemzerod_uid_tags{region=\"b\""), 0);
	free(buf);

	/* Without usage answers, no per-uid family at all. */
	buf = render(&s);
	assert_null(strstr(buf, "pmemzerod_uid_"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exposition),
	    cmocka_unit_test(test_failed_and_name_only),
	    cmocka_unit_test(test_uid_usage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
