/* SPDX-License-Identifier: MIT */
/*
 * The adaptive zeroing policy in the daemon (zero_policy = adaptive): the
 * zeroer fills the reserve at full speed to the low watermark, then paces
 * (here so slowly that the reserve stays put); an allocation that takes
 * the reserve below the low watermark brings full speed back until it is
 * refilled; STAT and pmemzctl status report the policy's state.  A region
 * with the default policy zeroes everything and reports "full".
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB

static int setup(void **state)
{
	struct itest_env *e;
	int r = itest_setup(state);

	if (r)
		return r;
	e = *state;
	itest_write_conf(e,
			 "[region pol]\n"
			 "path = %s/pol.img\n"
			 "size = 64M\n"
			 "extent_size = 1M\n"
			 "batch_extents = 1\n"
			 "zero_policy = adaptive\n"
			 "reserve_min = 8M\n"
			 "zero_pace_rate = 64K\n"
			 "\n"
			 "[region full]\n"
			 "path = %s/full.img\n"
			 "size = 16M\n"
			 "extent_size = 1M\n",
			 e->dir, e->dir);
	itest_daemon_start(e);
	return 0;
}

static Pmemz__Response *stat_of(struct itest_env *e, const char *region)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq sr = PMEMZ__STAT_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int fd = itest_raw_connect(e->sock);

	assert_true(fd >= 0);
	sr.region = (char *)(uintptr_t)region;
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &sr;
	assert_int_equal(itest_raw_call(fd, &req, &resp), 0);
	close(fd);
	assert_int_equal(resp->stat->n_regions, 1);
	return resp;
}

/* Poll until the region's zone is `zone`; returns its ZEROED count then. */
static uint64_t wait_zone(struct itest_env *e, const char *zone, int timeout_ms)
{
	uint64_t t0 = itest_now_ms();

	for (;;) {
		Pmemz__Response *resp = stat_of(e, "pol");
		const Pmemz__RegionStat *rs = resp->stat->regions[0];
		bool ok = rs->zero_zone && strcmp(rs->zero_zone, zone) == 0;
		uint64_t zeroed = rs->zeroed;

		itest_resp_free(resp);
		if (ok)
			return zeroed;
		if (itest_now_ms() - t0 > (uint64_t)timeout_ms)
			fail_msg("zeroing zone '%s' not reached in %d ms", zone, timeout_ms);
		itest_msleep(20);
	}
}

static void test_reserve_and_pacing(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	const Pmemz__RegionStat *rs;
	Pmemz__Response *resp;
	char *out = NULL, *err = NULL;
	uint64_t zeroed;

	/* Full speed to the low watermark (8 extents), then paced at 64 KiB/s. */
	zeroed = wait_zone(e, "paced", 30000);
	assert_in_range(zeroed, 8, 10);
	itest_msleep(1000);
	resp = stat_of(e, "pol");
	rs = resp->stat->regions[0];
	assert_string_equal(rs->zero_policy, "adaptive");
	assert_true(rs->has_reserve_low && rs->has_reserve_high);
	assert_int_equal(rs->reserve_low, 8);
	assert_int_equal(rs->reserve_high, 16);
	assert_in_range(rs->zeroed, 8, 11); /* one more extent takes 16 s at the pace */
	assert_true(rs->dirty > 40);
	itest_resp_free(resp);

	/* Take the reserve below the low watermark: full speed until refilled. */
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "pol", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 6 * MIB, 0, &a), 0);
	itest_assert_alloc_zero(r, a);
	zeroed = wait_zone(e, "paced", 20000);
	assert_true(zeroed >= 8);
	itest_msleep(300); /* the rate is sampled over at least 100 ms */
	resp = stat_of(e, "pol");
	rs = resp->stat->regions[0];
	assert_true(rs->has_zone_changes && rs->zone_changes >= 3);
	assert_true(rs->has_alloc_rate && rs->alloc_rate > 0);
	itest_resp_free(resp);

	char *argv[] = {
	    (char *)(uintptr_t)itest_ctl_path(), "--socket", e->sock, "--json", "status", NULL};
	assert_int_equal(itest_run(argv, 10000, &out, &err), 0);
	assert_non_null(strstr(out, "\"zero_policy\": \"adaptive\""));
	assert_non_null(strstr(out, "\"zero_zone\": \"paced\""));
	free(out);
	free(err);

	pmemz_alloc_close(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void test_default_policy(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	Pmemz__Response *resp;

	itest_wait_zeroed(e->sock, "full", 30000, &st);
	assert_int_equal(st.dirty, 0);
	resp = stat_of(e, "full");
	assert_string_equal(resp->stat->regions[0]->zero_policy, "full");
	assert_string_equal(resp->stat->regions[0]->zero_zone, "fast");
	itest_resp_free(resp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_reserve_and_pacing, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_default_policy, setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
