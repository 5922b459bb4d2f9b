/* SPDX-License-Identifier: MIT */
/* The disk format of nbdkit-pmemz-plugin: names, tags, superblock checks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "disk-format.h"

#define MIB (1024ull * 1024ull)

static void test_names(void **state)
{
	assert_int_equal(pmemz_disk_name_valid("disk0"), 0);
	assert_int_equal(pmemz_disk_name_valid("a.b_c-D9"), 0);
	assert_int_equal(pmemz_disk_name_valid("0123456789abcdef0123456789abcdef"), 0);
	assert_int_equal(pmemz_disk_name_valid("0123456789abcdef0123456789abcdef0"), -EINVAL);
	assert_int_equal(pmemz_disk_name_valid(""), -EINVAL);
	assert_int_equal(pmemz_disk_name_valid(NULL), -EINVAL);
	assert_int_equal(pmemz_disk_name_valid("."), -EINVAL);
	assert_int_equal(pmemz_disk_name_valid(".."), -EINVAL);
	assert_int_equal(pmemz_disk_name_valid("a/b"), -EINVAL);
	assert_int_equal(pmemz_disk_name_valid("a b"), -EINVAL);
	assert_int_equal(pmemz_disk_name_valid("caf\xc3\xa9"), -EINVAL);
}

static void test_tags(void **state)
{
	char buf[PMEMZ_DISK_TAG_MAX], disk[PMEMZ_DISK_NAME_MAX + 1];
	uint64_t idx = 99;

	assert_int_equal(pmemz_disk_super_tag(buf, sizeof(buf), "d"), 0);
	assert_string_equal(buf, "nbd/d");
	assert_int_equal(pmemz_disk_chunk_prefix(buf, sizeof(buf), "d"), 0);
	assert_string_equal(buf, "nbd/d/");
	assert_int_equal(pmemz_disk_chunk_tag(buf, sizeof(buf), "d", 0), 0);
	assert_string_equal(buf, "nbd/d/0");
	assert_int_equal(pmemz_disk_chunk_tag(buf, sizeof(buf), "d", PMEMZ_DISK_MAX_CHUNKS - 1), 0);
	assert_int_equal(pmemz_disk_chunk_tag(buf, sizeof(buf), "d", PMEMZ_DISK_MAX_CHUNKS),
			 -EINVAL);
	assert_int_equal(pmemz_disk_chunk_tag(buf, sizeof(buf), "a/b", 1), -EINVAL);
	assert_int_equal(pmemz_disk_chunk_tag(buf, 6, "disk", 1), -ENAMETOOLONG);
	/* the longest name and index fit the daemon's 63-byte tag names */
	assert_int_equal(pmemz_disk_chunk_tag(buf, sizeof(buf), "0123456789abcdef0123456789abcdef",
					      PMEMZ_DISK_MAX_CHUNKS - 1),
			 0);
	assert_true(strlen(buf) <= 63);

	assert_int_equal(pmemz_disk_tag_parse("nbd/disk0", disk, &idx), PMEMZ_DISK_TAG_SUPER);
	assert_string_equal(disk, "disk0");
	assert_int_equal(pmemz_disk_tag_parse("nbd/disk0/0", disk, &idx), PMEMZ_DISK_TAG_CHUNK);
	assert_int_equal(idx, 0);
	assert_int_equal(pmemz_disk_tag_parse("nbd/x/16777215", disk, &idx), PMEMZ_DISK_TAG_CHUNK);
	assert_int_equal(idx, PMEMZ_DISK_MAX_CHUNKS - 1);
	assert_string_equal(disk, "x");
	const char *bad[] = {"nbd/",	  "nbd//1",	    "nbd/x/",
			     "nbd/x/007", "nbd/x/1a",	    "nbd/x/-1",
			     "nbd/x/y/1", "nbd/..",	    "other/x",
			     "nbdx",	  "nbd/x/16777216", "nbd/x/99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pmemz_disk_tag_parse(bad[i], disk, &idx), -EINVAL);
}

static void test_size(void **state)
{
	const char *why = NULL;

	assert_int_equal(pmemz_disk_chunks(1, 2 * MIB), 1);
	assert_int_equal(pmemz_disk_chunks(2 * MIB, 2 * MIB), 1);
	assert_int_equal(pmemz_disk_chunks(2 * MIB + 1, 2 * MIB), 2);
	assert_int_equal(pmemz_disk_size_valid(1, 2 * MIB, &why), 0);
	assert_int_equal(pmemz_disk_size_valid(PMEMZ_DISK_MAX_CHUNKS * 2 * MIB, 2 * MIB, &why), 0);
	assert_int_equal(pmemz_disk_size_valid(PMEMZ_DISK_MAX_CHUNKS * 2 * MIB + 1, 2 * MIB, &why),
			 -EFBIG);
	assert_non_null(strstr(why, "chunk map"));
	assert_int_equal(pmemz_disk_size_valid(UINT64_MAX, 2 * MIB, &why), -EFBIG);
	assert_int_equal(pmemz_disk_size_valid(0, 2 * MIB, &why), -EINVAL);
	assert_int_equal(pmemz_disk_size_valid(1, 1000, &why), -EINVAL);
}

static void test_super(void **state)
{
	struct pmemz_disk_super sb, c;
	const uint8_t uuid[16] = {1, 2, 3};
	const char *why = NULL;

	pmemz_disk_super_init(&sb, "disk0", 10 * MIB, 2 * MIB, 1700000000, uuid);
	assert_int_equal(pmemz_disk_super_check(&sb, "disk0", 2 * MIB, &why), 0);
	assert_int_equal(sb.size, 10 * MIB);

	/* size sits outside the checksum: grown in place by one 8-byte store */
	c = sb;
	c.size = 100 * MIB;
	assert_int_equal(pmemz_disk_super_check(&c, "disk0", 2 * MIB, &why), 0);
	c.size = 0;
	assert_int_equal(pmemz_disk_super_check(&c, "disk0", 2 * MIB, &why), -EINVAL);

	assert_int_equal(pmemz_disk_super_check(&sb, "disk1", 2 * MIB, &why), -EUCLEAN);
	assert_non_null(strstr(why, "another disk"));
	assert_int_equal(pmemz_disk_super_check(&sb, "disk0", 4 * MIB, &why), -EINVAL);
	assert_non_null(strstr(why, "chunk size"));

	c = sb;
	c.magic[0] ^= 1;
	assert_int_equal(pmemz_disk_super_check(&c, "disk0", 2 * MIB, &why), -EUCLEAN);
	c = sb;
	c.created ^= 1;
	assert_int_equal(pmemz_disk_super_check(&c, "disk0", 2 * MIB, &why), -EUCLEAN);
	assert_non_null(strstr(why, "checksum"));
	c = sb;
	c.version = PMEMZ_DISK_VERSION + 1;
	assert_int_equal(pmemz_disk_super_check(&c, "disk0", 2 * MIB, &why), -EPROTO);
	/* a blank (zeroed) extent is not a superblock */
	memset(&c, 0, sizeof(c));
	assert_int_equal(pmemz_disk_super_check(&c, "disk0", 2 * MIB, &why), -EUCLEAN);
}

static void test_pool_tags(void **state)
{
	char buf[PMEMZ_DISK_TAG_MAX], disk[PMEMZ_DISK_NAME_MAX + 1];
	uint64_t seq = 0;

	assert_int_equal(pmemz_disk_pool_tag(buf, sizeof(buf), "d", 7), 0);
	assert_string_equal(buf, "nbd/d/pool/7");
	assert_int_equal(pmemz_disk_tag_parse(buf, disk, &seq), PMEMZ_DISK_TAG_POOL);
	assert_string_equal(disk, "d");
	assert_int_equal(seq, 7);
	assert_int_equal(pmemz_disk_tag_parse("nbd/d/pool/07", disk, &seq), -EINVAL);
	assert_int_equal(pmemz_disk_tag_parse("nbd/d/pool/", disk, &seq), -EINVAL);
	assert_int_equal(pmemz_disk_tag_parse("nbd/d/pool/1/2", disk, &seq), -EINVAL);
	assert_int_equal(pmemz_disk_tag_parse("nbd/d/ahead/3", disk, &seq), PMEMZ_DISK_TAG_AHEAD);
	assert_int_equal(seq, 3);
	/* the longest name and sequence number fit the daemon's 63-byte tag names */
	assert_int_equal(pmemz_disk_pool_tag(buf, sizeof(buf), "0123456789abcdef0123456789abcdef",
					     PMEMZ_DISK_AHEAD_SEQ_MAX),
			 0);
	assert_true(strlen(buf) <= 63);
	assert_int_equal(pmemz_disk_pool_tag(buf, sizeof(buf), "d", PMEMZ_DISK_AHEAD_SEQ_MAX + 1),
			 -EINVAL);
}

static void test_journal_records(void **state)
{
	const uint8_t uuid[16] = {9, 8, 7}, other[16] = {9, 8, 6};
	struct pmemz_disk_jrec r, z = {0};
	size_t slots = pmemz_disk_journal_slots(2 * MIB);

	assert_int_equal(slots, (2 * MIB - PMEMZ_DISK_JOURNAL_RECORDS) / 32);
	assert_int_equal(pmemz_disk_journal_slots(4096), 0);
	assert_int_equal(pmemz_disk_journal_slots(PMEMZ_DISK_JOURNAL_RECORDS + 63 * 32), 0);
	assert_int_equal(pmemz_disk_journal_slots(PMEMZ_DISK_JOURNAL_RECORDS + 64 * 32), 64);

	pmemz_disk_jrec_make(&r, uuid, 70, 5, 11);
	assert_true(pmemz_disk_jrec_valid(&r, uuid, 0, 70 % 64, 64, 6));
	assert_true(pmemz_disk_jrec_valid(&r, uuid, 70, 70 % 64, 64, 6));
	/* folded: below the base */
	assert_false(pmemz_disk_jrec_valid(&r, uuid, 71, 70 % 64, 64, 6));
	/* in another slot: one of an earlier lap, or moved */
	assert_false(pmemz_disk_jrec_valid(&r, uuid, 0, 7, 64, 6));
	/* past the disk's size, another disk's, torn */
	assert_false(pmemz_disk_jrec_valid(&r, uuid, 0, 70 % 64, 64, 5));
	assert_false(pmemz_disk_jrec_valid(&r, other, 0, 70 % 64, 64, 6));
	r.extent ^= 1;
	assert_false(pmemz_disk_jrec_valid(&r, uuid, 0, 70 % 64, 64, 6));
	r.extent ^= 1;
	r.check ^= 1ull << 40;
	assert_false(pmemz_disk_jrec_valid(&r, uuid, 0, 70 % 64, 64, 6));
	/* a zeroed slot is never a record, whatever the uuid */
	assert_false(pmemz_disk_jrec_valid(&z, uuid, 0, 0, 64, 6));
	assert_false(pmemz_disk_jrec_valid(&z, (const uint8_t[16]){0}, 0, 0, 64, 6));
	assert_false(pmemz_disk_jrec_valid(&r, uuid, 0, 0, 0, 6));
}

static void test_journal_latest(void **state)
{
	const uint8_t u[16] = {1};
	struct pmemz_disk_jrec v[6];
	size_t n;

	pmemz_disk_jrec_make(&v[0], u, 1, 4, 100); /* chunk 4, superseded by seq 5 */
	pmemz_disk_jrec_make(&v[1], u, 5, 4, 101);
	pmemz_disk_jrec_make(&v[2], u, 2, 7, 102); /* chunk 7: extent 102 claimed later by 9 */
	pmemz_disk_jrec_make(&v[3], u, 6, 9, 102);
	pmemz_disk_jrec_make(&v[4], u, 3, 1, 100); /* extent 100: chunk 4's old one */
	pmemz_disk_jrec_make(&v[5], u, 4, 2, 103);
	n = pmemz_disk_journal_latest(v, 6);
	assert_int_equal(n, 4);
	assert_int_equal(v[0].chunk, 1);
	assert_int_equal(v[0].extent, 100);
	assert_int_equal(v[1].chunk, 2);
	assert_int_equal(v[1].extent, 103);
	assert_int_equal(v[2].chunk, 4);
	assert_int_equal(v[2].extent, 101);
	assert_int_equal(v[3].chunk, 9);
	assert_int_equal(v[3].extent, 102);
	assert_int_equal(pmemz_disk_journal_latest(v, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_tags),
	    cmocka_unit_test(test_size),
	    cmocka_unit_test(test_super),
	    cmocka_unit_test(test_pool_tags),
	    cmocka_unit_test(test_journal_records),
	    cmocka_unit_test(test_journal_latest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
