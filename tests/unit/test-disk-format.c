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
#include "feature-mask.h"

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

	pmemz_disk_super_init(&sb, "disk0", 10 * MIB, 2 * MIB, 1700000000, uuid,
			      pmemz_disk_journal_slots(2 * MIB));
	assert_int_equal(pmemz_disk_super_check(&sb, "disk0", 2 * MIB, &why), 0);
	assert_int_equal(sb.size, 10 * MIB);
	assert_int_equal(sb.version, 2);
	assert_int_equal(sb.super_size, 256);

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
	assert_non_null(strstr(why, "later version"));
	/* a blank (zeroed) extent is not a superblock */
	memset(&c, 0, sizeof(c));
	assert_int_equal(pmemz_disk_super_check(&c, "disk0", 2 * MIB, &why), -EUCLEAN);
}

/* sb with its checksum made again (after a field was changed). */
static struct pmemz_disk_super sealed(struct pmemz_disk_super sb)
{
	sb.checksum = pmemz_disk_super_checksum(&sb);
	return sb;
}

static void test_super_v2(void **state)
{
	struct pmemz_disk_super sb, c;
	struct pmemz_disk_features f, u;
	const uint8_t uuid[16] = {4, 5, 6};
	const char *why = NULL;
	char bits[128];

	pmemz_disk_super_init(&sb, "d", 10 * MIB, 2 * MIB, 1700000000, uuid, 16);
	assert_int_equal(pmemz_disk_super_check(&sb, "d", 2 * MIB, &why), 0);
	pmemz_disk_super_features(&sb, &f);
	assert_int_equal(f.journal_slots, 16);
	assert_int_equal(f.incompat, PMEMZ_DISK_INCOMPAT_JOURNAL | PMEMZ_DISK_INCOMPAT_POOL);
	assert_int_equal(f.compat | f.ro_compat, 0);
	pmemz_disk_super_unknown(&f, &u);
	assert_int_equal(u.compat | u.ro_compat | u.incompat, 0);

	/* the masks, the slot count and the reserved bytes are covered by the checksum */
	c = sb;
	c.incompat ^= UINT64_C(1) << 40;
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);
	c = sb;
	c.ro_compat ^= 1;
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);
	c = sb;
	c.compat ^= 1;
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);
	c = sb;
	c.journal_slots = 17;
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);
	c = sb;
	c.reserved[100] = 1;
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);

	/* unknown incompat: unsupported (-EPROTO), the bits named, never "damaged" */
	c = sb;
	c.incompat |= UINT64_C(1) << 9 | UINT64_C(1) << 63;
	c = sealed(c);
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EPROTO);
	assert_non_null(strstr(why, "later version"));
	assert_null(strstr(why, "damaged"));
	pmemz_disk_super_features(&c, &f);
	pmemz_disk_super_unknown(&f, &u);
	assert_int_equal(u.incompat, UINT64_C(1) << 9 | UINT64_C(1) << 63);
	(void)pmemz_mask_str(u.incompat, bits, sizeof(bits));
	assert_string_equal(bits, "0x8000000000000200 (bits 9, 63)");
	(void)pmemz_mask_str(u.incompat, bits, 10); /* short: cut, still a string */
	assert_string_equal(bits, "0x8000000");

	/* unknown ro_compat and compat pass the check: the reader decides */
	c = sb;
	c.ro_compat = UINT64_C(1) << 3;
	c.compat = UINT64_C(1) << 5;
	c = sealed(c);
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), 0);
	pmemz_disk_super_features(&c, &f);
	pmemz_disk_super_unknown(&f, &u);
	assert_int_equal(u.ro_compat, UINT64_C(1) << 3);
	assert_int_equal(u.compat, UINT64_C(1) << 5);
	assert_int_equal(u.incompat, 0);
	(void)pmemz_mask_str(u.ro_compat, bits, sizeof(bits));
	assert_string_equal(bits, "0x0000000000000008 (bit 3)");

	/* a journal that does not fit the extent, or its bits, is damage */
	c = sb;
	c.journal_slots = pmemz_disk_journal_slots(2 * MIB) + 1;
	c = sealed(c);
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);
	c.journal_slots = PMEMZ_DISK_JOURNAL_SLOTS_MIN - 1;
	c = sealed(c);
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);
	c.journal_slots = 0;
	c = sealed(c);
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);
	c.incompat = PMEMZ_DISK_INCOMPAT_POOL; /* pool tags without the journal mapping them */
	c = sealed(c);
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), -EUCLEAN);
	c.incompat = 0;
	c = sealed(c);
	assert_int_equal(pmemz_disk_super_check(&c, "d", 2 * MIB, &why), 0);

	/* extents too small for a journal: a new disk has none, and no bit */
	pmemz_disk_super_init(&c, "d", 10 * MIB, 8192, 1700000000, uuid,
			      pmemz_disk_journal_slots(8192));
	assert_int_equal(pmemz_disk_super_check(&c, "d", 8192, &why), 0);
	assert_int_equal(c.journal_slots | c.incompat, 0);
}

/* A version 1 superblock, as db6afef wrote it: 128 bytes, the checksum over [0, 88). */
static void super_v1(struct pmemz_disk_super *sb, uint64_t chunk_size)
{
	const uint8_t uuid[16] = {7};

	pmemz_disk_super_init(sb, "old", 10 * MIB, chunk_size, 1700000000, uuid, 0);
	sb->version = PMEMZ_DISK_VERSION_1;
	sb->super_size = PMEMZ_DISK_SUPER_SIZE_1;
	sb->incompat = 0;
	sb->checksum = pmemz_disk_super_checksum(sb);
}

static void test_super_v1(void **state)
{
	struct pmemz_disk_super sb, c;
	struct pmemz_disk_features f;
	const char *why = NULL;

	super_v1(&sb, 2 * MIB);
	assert_int_equal(pmemz_disk_super_check(&sb, "old", 2 * MIB, &why), 0);
	/* the features it had: pool tags, a journal as long as the extent holds */
	pmemz_disk_super_features(&sb, &f);
	assert_int_equal(f.journal_slots, pmemz_disk_journal_slots(2 * MIB));
	assert_int_equal(f.incompat, PMEMZ_DISK_INCOMPAT_JOURNAL | PMEMZ_DISK_INCOMPAT_POOL);
	assert_int_equal(f.compat | f.ro_compat, 0);
	super_v1(&c, 8192);
	pmemz_disk_super_features(&c, &f);
	assert_int_equal(f.journal_slots, 0);
	assert_int_equal(f.incompat, PMEMZ_DISK_INCOMPAT_POOL);

	/* its checksum stops at byte 88: what lies from 104 on is not a v1 field */
	c = sb;
	c.created ^= 1;
	assert_int_equal(pmemz_disk_super_check(&c, "old", 2 * MIB, &why), -EUCLEAN);
	c = sb;
	c.incompat = UINT64_C(1) << 9;
	c.journal_slots = 5;
	assert_int_equal(pmemz_disk_super_check(&c, "old", 2 * MIB, &why), 0);
	pmemz_disk_super_features(&c, &f);
	assert_int_equal(f.journal_slots, pmemz_disk_journal_slots(2 * MIB));
	/* and its size, as in version 2, is outside it */
	c = sb;
	c.size = 20 * MIB;
	assert_int_equal(pmemz_disk_super_check(&c, "old", 2 * MIB, &why), 0);
	/* a version 1 superblock of another size, or a version 2 of 128 bytes, is damage */
	c = sb;
	c.super_size = PMEMZ_DISK_SUPER_SIZE_2;
	c.checksum = pmemz_disk_super_checksum(&c);
	assert_int_equal(pmemz_disk_super_check(&c, "old", 2 * MIB, &why), -EUCLEAN);
	c = sb;
	c.version = PMEMZ_DISK_VERSION;
	c.checksum = pmemz_disk_super_checksum(&c);
	assert_int_equal(pmemz_disk_super_check(&c, "old", 2 * MIB, &why), -EUCLEAN);
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
	    cmocka_unit_test(test_names),	   cmocka_unit_test(test_tags),
	    cmocka_unit_test(test_size),	   cmocka_unit_test(test_super),
	    cmocka_unit_test(test_super_v2),	   cmocka_unit_test(test_super_v1),
	    cmocka_unit_test(test_pool_tags),	   cmocka_unit_test(test_journal_records),
	    cmocka_unit_test(test_journal_latest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
