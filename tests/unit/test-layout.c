/* SPDX-License-Identifier: MIT */
/* Unit tests of the on-media format helpers (daemon/storage/layout.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layout.h"
#include "log.h"
#include "region.h"

static void test_crc32c(void **state)
{
	(void)state;
	/* The standard check value of CRC-32C. */
	assert_int_equal(layout_crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(layout_crc32c(0, "", 0), 0);
	/* Incremental equals one-shot. */
	assert_int_equal(layout_crc32c(layout_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
}

static void test_records(void **state)
{
	uint64_t rec;

	(void)state;
	rec = layout_rec(EXT_COMMITTED, 0xabcdef, 0xdeadbeef);
	assert_int_equal(layout_rec_state(rec), EXT_COMMITTED);
	assert_int_equal(layout_rec_tag(rec), 0xabcdef);
	assert_int_equal(layout_rec_gen(rec), 0xdeadbeef);
	assert_true(rec == 0xdeadbeefabcdef99ull); /* LAYOUT_REC_COMMITTED */
	/* A zeroed record is DIRTY, no tag, generation 0. */
	assert_int_equal(layout_rec_state(0), EXT_DIRTY);
	assert_int_equal(layout_rec_tag(0), 0);
	/* The tag field is 24 bits and never spills into the generation. */
	rec = layout_rec(EXT_LEASED, 0xffffffffu, 7);
	assert_int_equal(layout_rec_tag(rec), 0xffffff);
	assert_int_equal(layout_rec_gen(rec), 7);
}

static void test_geometry(void **state)
{
	struct layout_geometry g;

	(void)state;
	/* 16 MiB in 256 KiB extents: 20 KiB of metadata rounds up to one extent. */
	assert_int_equal(layout_compute(16 << 20, 256 << 10, 4096, &g), 0);
	assert_int_equal(g.data_off, 256 << 10);
	assert_int_equal(g.extent_count, 63);
	assert_int_equal(g.tag_count, 63);
	assert_int_equal(g.extent_table_off, 8192);
	assert_int_equal(g.tag_table_off, 8192 + 4096);
	assert_true(g.data_off + g.extent_count * g.extent_size <= g.region_size);

	/* 4 KiB extents: the metadata is sized for what is left after it. */
	assert_int_equal(layout_compute(64 << 20, 4096, 4096, &g), 0);
	assert_true(g.data_off >= g.tag_table_off + g.tag_count * LAYOUT_TAG_SLOT_SIZE);
	assert_true(g.extent_table_off + g.extent_count * 8 <= g.tag_table_off);
	assert_true(g.data_off + g.extent_count * 4096 <= g.region_size);
	/* ... and maximal: one more extent would not fit. */
	{
		struct layout_geometry g2 = g;
		uint64_t n = g.extent_count + 1;
		uint64_t meta =
		    8192 + ALIGN_UP(n * 8, 4096ull) + ALIGN_UP(MIN(n, 65536ull) * 128, 4096ull);
		assert_true(ALIGN_UP(meta, 4096ull) + n * 4096 > g2.region_size);
	}
	assert_int_equal(g.tag_count, MIN(g.extent_count, 65536ull));

	/* Many extents: the tag table is capped. */
	assert_int_equal(layout_compute(1ull << 30, 4096, 4096, &g), 0);
	assert_int_equal(g.tag_count, 65536);

	/* Device alignment 2 MiB: data aligned to it. */
	assert_int_equal(layout_compute(64 << 20, 2 << 20, 2 << 20, &g), 0);
	assert_int_equal(g.data_off % (2 << 20), 0);
	assert_int_equal(g.extent_count, 31);

	/* Bad extent sizes. */
	assert_int_equal(layout_compute(64 << 20, 0, 4096, &g), -EINVAL);
	assert_int_equal(layout_compute(64 << 20, 2048, 4096, &g), -EINVAL);
	assert_int_equal(layout_compute(64 << 20, 6000, 4096, &g), -EINVAL);
	assert_int_equal(layout_compute(64 << 20, 64 << 10, 2 << 20, &g), -EINVAL);
	assert_int_equal(layout_check_extent_size(12288, 4096), 0);
	/* Too small for one extent after the metadata. */
	assert_int_equal(layout_compute(1 << 20, 1 << 20, 4096, &g), -ENOSPC);
	assert_int_equal(layout_compute(8192, 4096, 4096, &g), -ENOSPC);
	assert_int_equal(layout_compute(2 << 20, 1 << 20, 4096, &g), 0);
	assert_int_equal(g.extent_count, 1);
}

static void make_header(struct layout_header *h)
{
	struct layout_geometry g;

	assert_int_equal(layout_compute(16 << 20, 256 << 10, 4096, &g), 0);
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, LAYOUT_MAGIC, 8);
	h->version = LAYOUT_VERSION;
	h->header_size = sizeof(*h);
	h->region_size = g.region_size;
	h->extent_size = g.extent_size;
	h->extent_count = g.extent_count;
	h->extent_table_off = g.extent_table_off;
	h->tag_table_off = g.tag_table_off;
	h->tag_count = g.tag_count;
	h->data_off = g.data_off;
	h->backup_off = LAYOUT_BACKUP_OFF;
	h->data_align = g.data_align;
	h->tag_slot_size = LAYOUT_TAG_SLOT_SIZE;
	layout_header_seal(h);
}

static void test_header_check(void **state)
{
	static uint8_t block[LAYOUT_BLOCK];
	struct layout_header h, out;
	char why[160];

	(void)state;
	memset(block, 0, sizeof(block));
	assert_int_equal(layout_header_check(block, &out, why, sizeof(why)), HDR_BLANK);

	make_header(&h);
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, &out, why, sizeof(why)), HDR_OK);
	assert_memory_equal(&out, &h, sizeof(h));

	/* Any flipped bit in the covered bytes is caught. */
	for (size_t off = 0; off < offsetof(struct layout_header, checksum); off += 7) {
		block[off] ^= 0x10;
		enum layout_hdr_status s = layout_header_check(block, NULL, why, sizeof(why));
		assert_true(s == HDR_CORRUPT || (off < 8 && s == HDR_FOREIGN));
		block[off] ^= 0x10;
	}
	block[offsetof(struct layout_header, checksum)] ^= 1;
	assert_int_equal(layout_header_check(block, NULL, why, sizeof(why)), HDR_CORRUPT);
	assert_non_null(strstr(why, "checksum"));
	block[offsetof(struct layout_header, checksum)] ^= 1;

	/* Foreign magic. */
	memcpy(block, "XFSB\0\0\0\0", 8);
	assert_int_equal(layout_header_check(block, NULL, why, sizeof(why)), HDR_FOREIGN);
	memcpy(block, &h, sizeof(h));

	/* Garbage past the header struct does not make it blank nor invalid. */
	block[LAYOUT_BLOCK - 1] = 1;
	assert_int_equal(layout_header_check(block, NULL, NULL, 0), HDR_OK);
	memset(block, 0, sizeof(block));
	block[LAYOUT_BLOCK - 1] = 1;
	assert_int_equal(layout_header_check(block, NULL, NULL, 0), HDR_FOREIGN);

	/* A newer version, sealed: unsupported, not corrupt. */
	h.version = LAYOUT_VERSION + 1;
	layout_header_seal(&h);
	memset(block, 0, sizeof(block));
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, why, sizeof(why)), HDR_UNSUPPORTED);

	/* Sealed but inconsistent geometry. */
	make_header(&h);
	h.extent_count++;
	layout_header_seal(&h);
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, why, sizeof(why)), HDR_CORRUPT);
	assert_non_null(strstr(why, "geometry"));
	make_header(&h);
	h.data_off += 4096;
	layout_header_seal(&h);
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, why, sizeof(why)), HDR_CORRUPT);
}

static void test_tag_names(void **state)
{
	char name[80];

	(void)state;
	assert_int_equal(layout_tag_name_valid("db"), 0);
	assert_int_equal(layout_tag_name_valid("a/b c.d-é"), 0);
	assert_int_equal(layout_tag_name_valid(""), -EINVAL);
	assert_int_equal(layout_tag_name_valid(NULL), -EINVAL);
	assert_int_equal(layout_tag_name_valid("a\nb"), -EINVAL);
	assert_int_equal(layout_tag_name_valid("a\x7f"), -EINVAL);
	memset(name, 'x', sizeof(name));
	name[63] = '\0';
	assert_int_equal(layout_tag_name_valid(name), 0);
	name[63] = 'x';
	name[64] = '\0';
	assert_int_equal(layout_tag_name_valid(name), -ENAMETOOLONG);
}

static void test_tag_checksum(void **state)
{
	struct layout_tag t, u;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.uid = 1000;
	strcpy(t.name, "hello");
	t.n_extents = 3;
	t.checksum = layout_tag_checksum(&t);
	u = t;
	/* The state word is not covered: it changes alone. */
	u.state = TAG_VALID;
	assert_int_equal(layout_tag_checksum(&u), t.checksum);
	u.uid = 1001;
	assert_int_not_equal(layout_tag_checksum(&u), t.checksum);
	u = t;
	u.name[0] = 'H';
	assert_int_not_equal(layout_tag_checksum(&u), t.checksum);
	u = t;
	u.n_extents = 4;
	assert_int_not_equal(layout_tag_checksum(&u), t.checksum);
}

static void test_bad_ranges(void **state)
{
	struct pstore_badblock bb[] = {{8192, 512}, {1 << 20, 4096}};

	(void)state;
	assert_false(layout_range_bad(bb, 2, 0, 8192));
	assert_true(layout_range_bad(bb, 2, 4096, 4097));
	assert_true(layout_range_bad(bb, 2, 8192 + 511, 1));
	assert_false(layout_range_bad(bb, 2, 8192 + 512, 1000));
	assert_true(layout_range_bad(bb, 2, 0, 2 << 20));
	assert_false(layout_range_bad(bb, 0, 0, 2 << 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32c),     cmocka_unit_test(test_records),
	    cmocka_unit_test(test_geometry),   cmocka_unit_test(test_header_check),
	    cmocka_unit_test(test_tag_names),  cmocka_unit_test(test_tag_checksum),
	    cmocka_unit_test(test_bad_ranges),
	};

	log_set_max_level(LOG_WARNING);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
