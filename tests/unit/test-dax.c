/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the device-DAX discovery module (daemon/tools/dax.c) that need no
 * device: sysfs path parsing, bad-sector clipping, names; and discovery on
 * this machine (no devices expected on a build host: checked only then).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dax.h"
#include "util.h"

static void test_region_path(void **state)
{
	char region[32], nddev[32];

	(void)state;
	assert_int_equal(
	    dax_parse_region_path(
		"/sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0012:00/ndbus0/region0/dax0.0", region,
		sizeof(region), nddev, sizeof(nddev)),
	    0);
	assert_string_equal(region, "region0");
	assert_string_equal(nddev, "dax0.0");

	/* The closest regionN parent wins; trailing and double slashes are fine. */
	assert_int_equal(dax_parse_region_path("/sys/devices/region7/x/ndbus1//region12/dax12.3/",
					       region, sizeof(region), nddev, sizeof(nddev)),
			 0);
	assert_string_equal(region, "region12");
	assert_string_equal(nddev, "dax12.3");

	/* A region component without a child. */
	assert_int_equal(dax_parse_region_path("/sys/bus/nd/region3", region, sizeof(region), nddev,
					       sizeof(nddev)),
			 0);
	assert_string_equal(region, "region3");
	assert_string_equal(nddev, "");

	/* Not an NVDIMM (hmem, CXL): no regionN component. */
	assert_int_equal(dax_parse_region_path("/sys/devices/platform/hmem.0/dax0.0", region,
					       sizeof(region), nddev, sizeof(nddev)),
			 -ENOENT);
	assert_string_equal(region, "");
	assert_int_equal(dax_parse_region_path("/sys/devices/regionX/dax0.0", region,
					       sizeof(region), nddev, sizeof(nddev)),
			 -ENOENT);
	assert_int_equal(dax_parse_region_path("/sys/devices/region/dax0.0", region, sizeof(region),
					       nddev, sizeof(nddev)),
			 -ENOENT);
	assert_int_equal(dax_parse_region_path(NULL, region, sizeof(region), nddev, sizeof(nddev)),
			 -ENOENT);
	/* Too small a buffer is "not found", never a truncated name. */
	assert_int_equal(
	    dax_parse_region_path("/a/region123/dax1.0", region, 5, nddev, sizeof(nddev)), -ENOENT);
}

static void test_clip_badblocks(void **state)
{
	/* Region at 4 GiB; device data from 4 GiB + 10 MiB, 100 MiB long. */
	const uint64_t region_res = 4ull << 30, dev_res = region_res + (10ull << 20),
		       dev_size = 100ull << 20;
	const uint64_t dev_first_sector = (10ull << 20) / 512;
	const uint64_t sect[][2] = {
	    {0, 8},			   /* before the device (its info block) */
	    {dev_first_sector - 4, 8},	   /* straddles the start: 4 sectors inside */
	    {(50ull << 20) / 512, 8},	   /* 50 MiB into the region: inside */
	    {(110ull << 20) / 512 - 2, 4}, /* straddles the end: 2 inside */
	    {(200ull << 20) / 512, 1},	   /* after the device */
	    {UINT64_MAX / 256, 8},	   /* absurd: ignored, no overflow */
	};
	struct dax_badblock out[ARRAY_SIZE(sect)];
	uint64_t sectors = 0;
	size_t n;

	(void)state;
	n = dax_clip_badblocks(region_res, dev_res, dev_size, sect, ARRAY_SIZE(sect), out,
			       &sectors);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].off, 0);
	assert_int_equal(out[0].len, 4 * 512);
	assert_int_equal(out[1].off, 40ull << 20);
	assert_int_equal(out[1].len, 8 * 512);
	assert_int_equal(out[2].off, dev_size - 2 * 512);
	assert_int_equal(out[2].len, 2 * 512);
	assert_int_equal(sectors, 4 + 8 + 2);

	/* Nothing bad. */
	assert_int_equal(dax_clip_badblocks(region_res, dev_res, dev_size, sect, 0, out, &sectors),
			 0);
	assert_int_equal(sectors, 0);
}

static void test_names(void **state)
{
	struct dax_dev d = {0};

	(void)state;
	assert_string_equal(dax_persistence_name(DAX_PERSIST_CPU_CACHE), "cpu_cache");
	assert_string_equal(dax_persistence_name(DAX_PERSIST_MEMCTRL), "memory_controller");
	assert_string_equal(dax_persistence_name(DAX_PERSIST_NONE), "none");
	assert_string_equal(dax_persistence_name(DAX_PERSIST_UNKNOWN), "unknown");
	/* eADR is what makes libpmem2 pick BYTE; everything else flushes. */
	assert_string_equal(dax_persistence_granularity(DAX_PERSIST_CPU_CACHE), "byte");
	assert_string_equal(dax_persistence_granularity(DAX_PERSIST_MEMCTRL), "cache_line");
	assert_string_equal(dax_persistence_granularity(DAX_PERSIST_NONE), "cache_line");
	assert_string_equal(dax_persistence_granularity(DAX_PERSIST_UNKNOWN), "cache_line");

	assert_string_equal(dax_mode_name(&d), "disabled");
	d.enabled = true;
	assert_string_equal(dax_mode_name(&d), "devdax");
	d.system_ram = true;
	assert_string_equal(dax_mode_name(&d), "system-ram");
}

static bool host_has_dax_devices(void)
{
	DIR *dir = opendir("/sys/bus/dax/devices");
	struct dirent *e;
	bool any = false;

	if (!dir)
		return false;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			any = true;
	(void)closedir(dir);
	return any;
}

static void test_lookup_not_dax(void **state)
{
	char tmpl[] = "/tmp/pmemz-dax-XXXXXX";
	struct dax_dev d;
	int fd;

	(void)state;
	/* A character device that is not a device-DAX, a regular file, nothing. */
	assert_int_equal(dax_lookup("/dev/null", &d), -ENODEV);
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	assert_int_equal(dax_lookup(tmpl, &d), -ENODEV);
	(void)close(fd);
	(void)unlink(tmpl);
	assert_int_equal(dax_lookup("/nonexistent-pmemz/dax0.0", &d), -ENOENT);
}

static void test_discover(void **state)
{
	struct dax_dev *v = NULL;
	size_t n = 99;
	int r;

	(void)state;
	r = dax_discover(&v, &n);
	if (r < 0) {
		/* No sysfs view of dax at all (a container): an error, never a crash. */
		print_message("dax_discover: %s\n", strerror(-r));
		assert_null(v);
		assert_int_equal(n, 0);
		return;
	}
	if (!host_has_dax_devices()) {
		assert_int_equal(n, 0);
		assert_null(v);
		return;
	}
	print_message("this machine has %zu device-DAX device(s)\n", n);
	for (size_t i = 0; i < n; i++) {
		struct dax_dev one;

		assert_true(v[i].size > 0);
		assert_true(v[i].align > 0 && (v[i].align & (v[i].align - 1)) == 0);
		assert_memory_equal(v[i].path, "/dev/dax", 8);
		if (i)
			assert_true(strverscmp(v[i - 1].devname, v[i].devname) < 0);
		if (v[i].enabled && !v[i].system_ram && access(v[i].path, F_OK) == 0) {
			assert_int_equal(dax_lookup(v[i].path, &one), 0);
			assert_string_equal(one.devname, v[i].devname);
			assert_true(one.size == v[i].size);
		}
	}
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_region_path), cmocka_unit_test(test_clip_badblocks),
	    cmocka_unit_test(test_names),	cmocka_unit_test(test_lookup_not_dax),
	    cmocka_unit_test(test_discover),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
