/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the device-DAX discovery module (common/dax/dax.c) that need no
 * device: sysfs path parsing, bad-sector clipping, names, the CXL helpers
 * (label storage area index, the create-region command, the description);
 * and discovery on this machine (no devices expected on a build host:
 * checked only then).
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

/* ---- label storage area (CXL memdevs' LSA, NVDIMM labels) ---- */

static void put_le(uint8_t *p, uint64_t v, size_t bytes)
{
	for (size_t i = 0; i < bytes; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/*
 * Index block number i (of size bytes) at lsa + i * size, as libnvdimm
 * writes it: sequence seq, nslot slots of which the ones in used[] are in
 * use; checksum computed unless bad_checksum.
 */
static void make_index(uint8_t *lsa, unsigned i, uint64_t size, uint32_t seq, uint32_t nslot,
		       const uint32_t *used, size_t nused, bool bad_checksum)
{
	uint8_t *b = lsa + i * size;

	memset(b, 0, size);
	memcpy(b, "NAMESPACE_INDEX", 16);
	b[19] = 1; /* 256-byte labels */
	put_le(b + 20, seq, 4);
	put_le(b + 24, i * size, 8);
	put_le(b + 32, size, 8);
	put_le(b + 40, (1 - i) * size, 8);
	put_le(b + 48, 2 * size, 8);
	put_le(b + 56, nslot, 4);
	put_le(b + 60, 1, 2);
	put_le(b + 62, 2, 2);
	/* A block that claims more slots than it holds gets the bits that fit. */
	for (uint32_t s = 0; s < nslot && 72 + s / 8 < size; s++)
		b[72 + s / 8] |= (uint8_t)(1u << (s % 8));
	for (size_t k = 0; k < nused; k++)
		b[72 + used[k] / 8] &= (uint8_t)~(1u << (used[k] % 8));
	put_le(b + 64, dax_lsa_index_checksum(b, size) + (bad_checksum ? 1 : 0), 8);
}

/*
 * The index block Linux 6.1 wrote to QEMU 7.2's CXL Type-3 LSA (256 MiB
 * device) after `ndctl create-namespace -m devdax`: 1047550 slots, slot 1
 * in use, sequence 2.  Its checksum, read back from the device
 * (`cxl read-labels mem0`), anchors dax_lsa_index_checksum() to the
 * kernel's nd_fletcher64().
 */
static void test_lsa_kernel_block(void **state)
{
	const uint64_t size = 0x20000, kernel_checksum = 0xd2ee994e1849b249ull;
	const uint32_t used_slot = 1;
	uint8_t *lsa = calloc(2, size);
	uint64_t used = 99, isz = 0;

	(void)state;
	assert_non_null(lsa);
	make_index(lsa, 0, size, 2, 0xffbfe, &used_slot, 1, false);
	assert_int_equal(dax_lsa_index_checksum(lsa, size), kernel_checksum);
	/* The second block never written (zero): the first one counts. */
	assert_int_equal(dax_lsa_labels_in_use(lsa, 2 * size, &used, &isz), 0);
	assert_int_equal(used, 1);
	assert_int_equal(isz, size);
	free(lsa);
}

static void test_lsa_index(void **state)
{
	const uint64_t size = 256;
	const uint32_t old_used[] = {0}, new_used[] = {0, 5, 63};
	uint8_t lsa[2 * 256];
	uint64_t used, isz;

	(void)state;
	/* Blank (a fresh device): no labels, -ENODATA. */
	memset(lsa, 0, sizeof(lsa));
	assert_int_equal(dax_lsa_labels_in_use(lsa, sizeof(lsa), &used, &isz), -ENODATA);
	assert_int_equal(isz, 0);

	/* Sequence numbers wrap 1, 2, 3, 1: block 1 (seq 1) is newer than block 0 (seq 3). */
	make_index(lsa, 0, size, 3, 64, old_used, ARRAY_SIZE(old_used), false);
	make_index(lsa, 1, size, 1, 64, new_used, ARRAY_SIZE(new_used), false);
	assert_int_equal(dax_lsa_labels_in_use(lsa, sizeof(lsa), &used, &isz), 0);
	assert_int_equal(used, 3);
	/* ...and block 0 (seq 2) newer than block 1 (seq 1). */
	make_index(lsa, 0, size, 2, 64, old_used, ARRAY_SIZE(old_used), false);
	assert_int_equal(dax_lsa_labels_in_use(lsa, sizeof(lsa), &used, NULL), 0);
	assert_int_equal(used, 1);

	/* A torn newer block (bad checksum): the older one counts. */
	make_index(lsa, 0, size, 2, 64, new_used, ARRAY_SIZE(new_used), true);
	make_index(lsa, 1, size, 1, 64, old_used, ARRAY_SIZE(old_used), false);
	assert_int_equal(dax_lsa_labels_in_use(lsa, sizeof(lsa), &used, NULL), 0);
	assert_int_equal(used, 1);
	/* Both torn: nothing to trust. */
	make_index(lsa, 1, size, 1, 64, old_used, ARRAY_SIZE(old_used), true);
	assert_int_equal(dax_lsa_labels_in_use(lsa, sizeof(lsa), &used, NULL), -ENODATA);

	/* Sequence 0 is never valid; nor a block that claims more slots than it maps. */
	make_index(lsa, 0, size, 0, 64, new_used, ARRAY_SIZE(new_used), false);
	make_index(lsa, 1, size, 1, (size - 72) * 8 + 1, old_used, 0, false);
	assert_int_equal(dax_lsa_labels_in_use(lsa, sizeof(lsa), &used, NULL), -ENODATA);

	/* Too short to hold both blocks: -EINVAL, with the size to read. */
	make_index(lsa, 0, size, 1, 64, new_used, ARRAY_SIZE(new_used), false);
	assert_int_equal(dax_lsa_labels_in_use(lsa, 128, &used, &isz), -EINVAL);
	assert_int_equal(isz, size);
	assert_int_equal(dax_lsa_labels_in_use(lsa, 16, &used, &isz), -EINVAL);
	assert_int_equal(isz, 0);
	/* An absurd index size is not a size to read. */
	put_le(lsa + 32, 1ull << 40, 8);
	assert_int_equal(dax_lsa_labels_in_use(lsa, sizeof(lsa), &used, &isz), -ENODATA);
	assert_int_equal(isz, 0);
}

static void test_cxl_strings(void **state)
{
	const struct dax_cxl_memdev m[] = {{"mem0", 0x1234}, {"mem1", 0x5678}};
	struct dax_cxl c = {.on_cxl = true};
	char buf[160], small[20];

	(void)state;
	assert_int_equal(dax_cxl_create_region_cmd("decoder0.0", m, 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "cxl create-region -m -t pmem -d decoder0.0 -w 1 mem0");
	assert_int_equal(dax_cxl_create_region_cmd("decoder0.1", m, 2, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "cxl create-region -m -t pmem -d decoder0.1 -w 2 mem0 mem1");
	/* No window reaches the memdev: the command says what to fill in. */
	assert_int_equal(dax_cxl_create_region_cmd("", m, 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "cxl create-region -m -t pmem -d DECODER -w 1 mem0");
	assert_int_equal(dax_cxl_create_region_cmd("decoder0.0", m, 1, small, sizeof(small)),
			 -ENOSPC);
	assert_int_equal(dax_cxl_create_region_cmd("decoder0.0", m, 2, buf, 52), -ENOSPC);

	/* Not root: on CXL, but which region is unknown. */
	assert_string_equal(dax_cxl_describe(&c, buf, sizeof(buf)),
			    "CXL (region unknown: its address is readable by root only)");
	c.known = true;
	(void)snprintf(c.region, sizeof(c.region), "region0");
	(void)snprintf(c.root_decoder, sizeof(c.root_decoder), "decoder0.0");
	c.ways = 1;
	c.granularity = 256;
	c.nmemdevs = 1;
	c.memdevs[0] = m[0];
	assert_string_equal(
	    dax_cxl_describe(&c, buf, sizeof(buf)),
	    "CXL region0 (root decoder decoder0.0, 1 way x 256 B): mem0 (serial 0x1234)");
	c.ways = 2;
	c.granularity = 4096;
	c.nmemdevs = 2;
	c.memdevs[1] = m[1];
	assert_string_equal(dax_cxl_describe(&c, buf, sizeof(buf)),
			    "CXL region0 (root decoder decoder0.0, 2 ways x 4096 B): mem0 (serial "
			    "0x1234), mem1 (serial 0x5678)");
	/* Truncated, never overrun. */
	assert_string_equal(dax_cxl_describe(&c, small, sizeof(small)), "CXL region0 (root d");
}

/* dir (sysfs) has an entry whose name starts with prefix. */
static bool dir_has(const char *dir_path, const char *prefix)
{
	DIR *dir = opendir(dir_path);
	struct dirent *e;
	bool any = false;

	if (!dir)
		return false;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			any = true;
	(void)closedir(dir);
	return any;
}

/* A build host has no CXL memdevs, hence nothing to assemble. */
static void test_cxl_unassembled_host(void **state)
{
	struct dax_cxl_unassembled *u = NULL;
	size_t n = 99;
	int r;

	(void)state;
	r = dax_cxl_unassembled(&u, &n);
	if (r < 0) {
		print_message("dax_cxl_unassembled: %s\n", strerror(-r));
		assert_null(u);
		assert_int_equal(n, 0);
		return;
	}
	if (dir_has("/sys/bus/cxl/devices", "mem")) {
		print_message("this machine has CXL memdevs: %zu unassembled pmem region(s)\n", n);
		for (size_t i = 0; i < n; i++)
			assert_memory_equal(u[i].command, "cxl create-region ", 18);
		free(u);
		return;
	}
	assert_int_equal(n, 0);
	assert_null(u);
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
	if (!dir_has("/sys/bus/dax/devices", "")) {
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
		/* Which CXL region is known only to root, and only on CXL. */
		assert_true(!v[i].cxl.known || v[i].cxl.on_cxl);
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
	    cmocka_unit_test(test_discover),	cmocka_unit_test(test_lsa_kernel_block),
	    cmocka_unit_test(test_lsa_index),	cmocka_unit_test(test_cxl_strings),
	    cmocka_unit_test(test_cxl_unassembled_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
