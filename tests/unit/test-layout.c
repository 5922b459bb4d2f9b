/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the media module (common/media/, pmemzd_media): the on-media
 * format helpers and the rules recovery and the checker share.  Links
 * pmemzd_media alone: the module is pure.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "feature-mask.h"
#include "media.h"
#include "util.h"

static void test_crc32c(void **state)
{
	(void)state;
	/* The standard check value of CRC-32C. */
	assert_int_equal(layout_crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(layout_crc32c(0, "", 0), 0);
	/* Incremental equals one-shot. */
	assert_int_equal(layout_crc32c(layout_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
	assert_int_equal(layout_crc32c_table(0, "123456789", 9), 0xe3069283u);
}

/* The CPU's crc32 (when used) against the table: every length and alignment it splits on. */
static void test_crc32c_hw(void **state)
{
	uint8_t buf[600];
	uint32_t seed = 0x12345678u;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len + off <= sizeof(buf); len += len < 40 ? 1 : 37)
			for (uint32_t init = 0; init < 2; init++)
				assert_int_equal(layout_crc32c(init * 0xdeadbeefu, buf + off, len),
						 layout_crc32c_table(init * 0xdeadbeefu, buf + off, len));
	if (!layout_crc32c_hw())
		print_message("crc32c: no SSE4.2 here, the table is the one in use\n");
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

/*
 * A sealed header for g: version 2 as a format writes it (incompat move,
 * and split), or version 1 as every earlier build wrote it (split as flag
 * bit 0, no masks).
 */
static void header_of(struct layout_header *h, const struct layout_geometry *g, uint32_t version,
		      bool split)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, LAYOUT_MAGIC, 8);
	h->version = version;
	h->header_size = sizeof(*h);
	h->uuid[0] = 0x42;
	h->region_size = g->region_size;
	h->extent_size = g->extent_size;
	h->extent_count = g->extent_count;
	h->extent_table_off = g->extent_table_off;
	h->tag_table_off = g->tag_table_off;
	h->tag_count = g->tag_count;
	h->data_off = g->data_off;
	h->backup_off = LAYOUT_BACKUP_OFF;
	h->format_time = 1700000000;
	h->data_align = g->data_align;
	h->tag_slot_size = LAYOUT_TAG_SLOT_SIZE;
	if (version == 1)
		h->flags = split ? LAYOUT_FLAG_SPLIT : 0;
	else
		h->incompat = LAYOUT_INCOMPAT_MOVE | (split ? LAYOUT_INCOMPAT_SPLIT : 0);
	layout_header_seal(h);
}

static void make_header_sized(struct layout_header *h, uint64_t size, uint64_t extent)
{
	struct layout_geometry g;

	assert_int_equal(layout_compute(size, extent, 4096, &g), 0);
	header_of(h, &g, LAYOUT_VERSION, false);
}

static void make_header(struct layout_header *h)
{
	make_header_sized(h, 16 << 20, 256 << 10);
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
	/* New names are UTF-8 only: stray continuation, truncated, overlong, surrogate, > U+10FFFF. */
	assert_int_equal(layout_tag_name_valid("\xe4\xb8\xad\xe6\x96\x87"), 0);
	assert_int_equal(layout_tag_name_valid("\xf0\x9f\x98\x80"), 0);
	assert_int_equal(layout_tag_name_new_valid("caf\xe9"), -EINVAL); /* Latin-1 */
	assert_int_equal(layout_tag_name_new_valid("a\x80"), -EINVAL);
	assert_int_equal(layout_tag_name_new_valid("a\xc3"), -EINVAL);
	assert_int_equal(layout_tag_name_new_valid("\xc0\xaf"), -EINVAL);
	assert_int_equal(layout_tag_name_new_valid("\xed\xa0\x80"), -EINVAL);
	assert_int_equal(layout_tag_name_new_valid("\xf4\x90\x80\x80"), -EINVAL);
	/* C1 controls and the bidi marks, embeddings, overrides and isolates. */
	assert_int_equal(layout_tag_name_new_valid("a\xc2\x9bm"), -EINVAL);	   /* CSI */
	assert_int_equal(layout_tag_name_new_valid("a\xe2\x80\x8e"), -EINVAL); /* U+200E */
	assert_int_equal(layout_tag_name_new_valid("a\xe2\x80\x8f"), -EINVAL); /* U+200F */
	assert_int_equal(layout_tag_name_new_valid("a\xe2\x80\xaa"), -EINVAL); /* U+202A */
	assert_int_equal(layout_tag_name_new_valid("a\xe2\x80\xae"), -EINVAL); /* U+202E */
	assert_int_equal(layout_tag_name_new_valid("a\xe2\x81\xa6"), -EINVAL); /* U+2066 */
	assert_int_equal(layout_tag_name_new_valid("a\xe2\x81\xa9"), -EINVAL); /* U+2069 */
	assert_int_equal(layout_tag_name_new_valid("a\xe2\x80\xaf"), 0);	   /* U+202F is fine */
	assert_int_equal(layout_tag_name_new_valid("a\xe2\x81\xaa"), 0);	   /* U+206A too */
	memset(name, 'x', sizeof(name));
	name[63] = '\0';
	assert_int_equal(layout_tag_name_valid(name), 0);
	name[63] = 'x';
	name[64] = '\0';
	assert_int_equal(layout_tag_name_valid(name), -ENAMETOOLONG);
	/* New names: everything valid above is valid here too. */
	assert_int_equal(layout_tag_name_new_valid("a/b c.d-\xc3\xa9"), 0);
	assert_int_equal(layout_tag_name_new_valid("a\nb"), -EINVAL);
	/*
	 * On media the older, byte-wise rule stands, so a tag an earlier
	 * version committed under a Latin-1 or bidi name is not turned into a
	 * damaged slot by an upgrade: it stays valid, openable and releasable.
	 */
	assert_int_equal(layout_tag_name_valid("caf\xe9"), 0);
	assert_int_equal(layout_tag_name_valid("a\xe2\x80\xae"), 0);
	{
		struct layout_tag t = {.state = TAG_VALID, .uid = 1000, .n_extents = 1};
		enum media_slot_damage why;

		strcpy(t.name, "caf\xe9");
		t.checksum = layout_tag_checksum(&t);
		assert_int_equal(media_slot_classify(&t, &why), SLOT_VALID);
	}
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
	struct media_badblock bb[] = {{8192, 512}, {1 << 20, 4096}};

	(void)state;
	assert_false(layout_range_bad(bb, 2, 0, 8192));
	assert_true(layout_range_bad(bb, 2, 4096, 4097));
	assert_true(layout_range_bad(bb, 2, 8192 + 511, 1));
	assert_false(layout_range_bad(bb, 2, 8192 + 512, 1000));
	assert_true(layout_range_bad(bb, 2, 0, 2 << 20));
	assert_false(layout_range_bad(bb, 0, 0, 2 << 20));
}

/* ---- the shared rules ---- */

static void test_rec_check(void **state)
{
	(void)state;
	assert_int_equal(media_rec_check(0, 4), REC_INTACT);
	assert_int_equal(media_rec_check(layout_rec(EXT_ZEROED, 0, 9), 4), REC_INTACT);
	assert_int_equal(media_rec_check(layout_rec(EXT_BAD, 0, 1), 4), REC_INTACT);
	assert_int_equal(media_rec_check(layout_rec(EXT_COMMITTED, 1, 1), 4), REC_INTACT);
	assert_int_equal(media_rec_check(layout_rec(EXT_COMMITTED, 4, 1), 4), REC_INTACT);
	assert_int_equal(media_rec_check(layout_rec(EXT_COMMITTED, 0, 1), 4), REC_TAG_RANGE);
	assert_int_equal(media_rec_check(layout_rec(EXT_COMMITTED, 5, 1), 4), REC_TAG_RANGE);
	assert_int_equal(media_rec_check(layout_rec(EXT_LEASED, 2, 1), 4), REC_STRAY_TAG);
	assert_int_equal(media_rec_check(layout_rec(EXT_DIRTY, 1, 0), 4), REC_STRAY_TAG);
	assert_int_equal(media_rec_check(layout_rec_raw(0x55, 0, 0), 4), REC_UNKNOWN_STATE);
	/* One flipped bit of a valid code is never another valid code. */
	assert_int_equal(media_rec_check(layout_rec_raw(LAYOUT_REC_ZEROED ^ 0x01, 0, 0), 4),
			 REC_UNKNOWN_STATE);
	assert_int_equal(media_rec_check(layout_rec(EXT_NSTATES, 0, 0), 4), REC_UNKNOWN_STATE);
}

static void make_slot(struct layout_tag *t, uint64_t st, const char *name, uint64_t n)
{
	memset(t, 0, sizeof(*t));
	t->state = st;
	t->uid = 1000;
	t->n_extents = n;
	t->ctime = 1;
	(void)snprintf(t->name, sizeof(t->name), "%s", name);
	t->checksum = layout_tag_checksum(t);
}

static void test_slot_classify(void **state)
{
	struct layout_tag t;
	enum media_slot_damage why;

	(void)state;
	make_slot(&t, TAG_VALID, "db", 3);
	assert_int_equal(media_slot_classify(&t, &why), SLOT_VALID);
	assert_int_equal(why, SLOT_UNDAMAGED);
	assert_true(media_slot_sum_ok(&t));
	assert_false(media_slot_blank(&t));
	t.checksum ^= 1;
	assert_int_equal(media_slot_classify(&t, &why), SLOT_DAMAGED);
	assert_int_equal(why, SLOT_BAD_SUM);
	assert_false(media_slot_sum_ok(&t));

	make_slot(&t, TAG_VALID, "db", 3);
	memset(t.name, 'n', sizeof(t.name));
	t.checksum = layout_tag_checksum(&t);
	assert_int_equal(media_slot_classify(&t, &why), SLOT_DAMAGED);
	assert_int_equal(why, SLOT_NAME_NO_NUL);

	make_slot(&t, TAG_VALID, "a\tb", 3);
	assert_int_equal(media_slot_classify(&t, &why), SLOT_DAMAGED);
	assert_int_equal(why, SLOT_NAME_INVALID);

	make_slot(&t, TAG_VALID ^ 1, "db", 3);
	assert_int_equal(media_slot_classify(&t, &why), SLOT_DAMAGED);
	assert_int_equal(why, SLOT_BAD_STATE);

	/* WRITTEN and FREEING do not depend on the body (it may be torn). */
	make_slot(&t, TAG_WRITTEN, "db", 3);
	t.checksum ^= 1;
	assert_int_equal(media_slot_classify(&t, &why), SLOT_WRITTEN);
	assert_int_equal(why, SLOT_UNDAMAGED);
	t.state = TAG_FREEING;
	assert_int_equal(media_slot_classify(&t, NULL), SLOT_FREEING);
	memset(&t, 0, sizeof(t));
	assert_int_equal(media_slot_classify(&t, &why), SLOT_FREE);
	assert_true(media_slot_blank(&t));
}

static void test_named_slot(void **state)
{
	struct layout_tag t;

	(void)state;
	make_slot(&t, TAG_WRITTEN, "db", 3);
	assert_int_equal(media_named_slot(&t, SLOT_WRITTEN, 0), SLOT_WRITTEN);
	assert_int_equal(media_named_slot(&t, SLOT_WRITTEN, 3), SLOT_WRITTEN);
	assert_int_equal(media_named_slot(&t, SLOT_WRITTEN, 4), SLOT_DAMAGED);
	assert_int_equal(media_named_slot(&t, SLOT_FREEING, 2), SLOT_FREEING);
	assert_int_equal(media_named_slot(&t, SLOT_FREEING, 4), SLOT_DAMAGED);
	t.checksum ^= 1;
	/* A torn body is legal until a record names it. */
	assert_int_equal(media_named_slot(&t, SLOT_WRITTEN, 0), SLOT_WRITTEN);
	assert_int_equal(media_named_slot(&t, SLOT_WRITTEN, 1), SLOT_DAMAGED);
	assert_int_equal(media_named_slot(&t, SLOT_FREEING, 1), SLOT_DAMAGED);

	memset(&t, 0, sizeof(t));
	assert_int_equal(media_named_slot(&t, SLOT_FREE, 0), SLOT_FREE);
	assert_int_equal(media_named_slot(&t, SLOT_FREE, 1), SLOT_ORPHANED);
	/* VALID and DAMAGED slots are judged by the count rule, not this one. */
	make_slot(&t, TAG_VALID, "db", 3);
	assert_int_equal(media_named_slot(&t, SLOT_VALID, 7), SLOT_VALID);
	assert_int_equal(media_named_slot(&t, SLOT_DAMAGED, 7), SLOT_DAMAGED);
}

static void test_missing_extents(void **state)
{
	struct layout_tag slots[4];
	uint8_t kind[5];
	uint64_t cnt[5];
	struct media_missing m;

	(void)state;
	/* Tag 1 misses 2 extents; tag 2 is a half-made commit with 1 record. */
	make_slot(&slots[0], TAG_VALID, "a", 5);
	make_slot(&slots[1], TAG_WRITTEN, "b", 1);
	make_slot(&slots[2], TAG_VALID, "c", 2);
	memset(&slots[3], 0, sizeof(slots[3]));
	memcpy(kind, (uint8_t[]){0, SLOT_VALID, SLOT_WRITTEN, SLOT_VALID, SLOT_FREE}, sizeof(kind));
	memcpy(cnt, (uint64_t[]){0, 3, 1, 2, 0}, sizeof(cnt));

	media_missing_extents(slots, 4, kind, cnt, 0, &m);
	assert_int_equal(m.deficit, 2);
	assert_int_equal(m.candidates, 0);
	assert_int_equal(m.held, 1);
	assert_int_equal(m.n_short, 1);
	assert_int_equal(m.first_short, 1);
	assert_int_equal(m.verdict, MISSING_REFUSE);

	/* One damaged record: with the held one, enough. */
	media_missing_extents(slots, 4, kind, cnt, 1, &m);
	assert_int_equal(m.verdict, MISSING_HOLD);

	/* Two: damage alone accounts for them. */
	media_missing_extents(slots, 4, kind, cnt, 2, &m);
	assert_int_equal(m.verdict, MISSING_NONE);

	/* The surplus of another VALID tag is a candidate. */
	cnt[3] = 4;
	media_missing_extents(slots, 4, kind, cnt, 0, &m);
	assert_int_equal(m.candidates, 2);
	assert_int_equal(m.verdict, MISSING_NONE);
	cnt[3] = 2;

	/* Records under an orphaned slot are candidates. */
	kind[4] = SLOT_ORPHANED;
	cnt[4] = 2;
	media_missing_extents(slots, 4, kind, cnt, 0, &m);
	assert_int_equal(m.candidates, 2);
	assert_int_equal(m.verdict, MISSING_NONE);
	kind[4] = SLOT_FREE;
	cnt[4] = 0;

	/* A damaged slot: beyond its count when intact, all of them when its sum is wrong. */
	kind[3] = SLOT_DAMAGED;
	cnt[3] = 3;
	media_missing_extents(slots, 4, kind, cnt, 0, &m);
	assert_int_equal(m.candidates, 1);
	assert_int_equal(m.verdict, MISSING_HOLD);
	slots[2].checksum ^= 1;
	media_missing_extents(slots, 4, kind, cnt, 0, &m);
	assert_int_equal(m.candidates, 3);
	assert_int_equal(m.verdict, MISSING_NONE);
}

#define IMG_SIZE (1ull << 20)
#define IMG_EXTENT (64ull << 10)

static void test_headers_read(void **state)
{
	static uint8_t img[2 * LAYOUT_BLOCK];
	struct layout_header h, h2;
	struct media_headers m;
	struct media_badblock bb;

	(void)state;
	make_header_sized(&h, IMG_SIZE, IMG_EXTENT);
	memset(img, 0, sizeof(img));
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.choice, HDRS_BLANK);

	memcpy(img + LAYOUT_PRIMARY_OFF, &h, sizeof(h));
	memcpy(img + LAYOUT_BACKUP_OFF, &h, sizeof(h));
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.choice, HDRS_PRIMARY);
	assert_int_equal(m.primary, HDR_OK);
	assert_int_equal(m.backup, HDR_OK);
	assert_false(m.differ || m.repair_primary || m.repair_backup);
	assert_memory_equal(&m.hp, &h, sizeof(h));

	/* A different (valid) backup is rewritten from the primary. */
	h2 = h;
	h2.format_time++;
	layout_header_seal(&h2);
	memcpy(img + LAYOUT_BACKUP_OFF, &h2, sizeof(h2));
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.choice, HDRS_PRIMARY);
	assert_true(m.differ && m.repair_backup);

	/* A blank backup too; an unreadable one is not rewritten. */
	memset(img + LAYOUT_BACKUP_OFF, 0, LAYOUT_BLOCK);
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.backup, HDR_BLANK);
	assert_true(m.repair_backup);
	bb = (struct media_badblock){LAYOUT_BACKUP_OFF + 100, 8};
	media_headers_read(img, &bb, 1, &m);
	assert_int_equal(m.backup, HDR_UNREADABLE);
	assert_int_equal(m.choice, HDRS_PRIMARY);
	assert_false(m.repair_backup);

	/* A corrupt primary: the backup, and the primary repaired, unless unreadable. */
	memcpy(img + LAYOUT_BACKUP_OFF, &h, sizeof(h));
	img[LAYOUT_PRIMARY_OFF + 40] ^= 1;
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.primary, HDR_CORRUPT);
	assert_int_equal(m.choice, HDRS_BACKUP);
	assert_true(m.repair_primary);
	assert_memory_equal(&m.hb, &h, sizeof(h));
	bb = (struct media_badblock){0, 512};
	media_headers_read(img, &bb, 1, &m);
	assert_int_equal(m.primary, HDR_UNREADABLE);
	assert_int_equal(m.choice, HDRS_BACKUP);
	assert_false(m.repair_primary);

	/* A primary torn while it was written (magic word still zero) is not foreign. */
	memcpy(img + LAYOUT_PRIMARY_OFF, &h, sizeof(h));
	memset(img + LAYOUT_PRIMARY_OFF, 0, 8);
	memset(img + LAYOUT_PRIMARY_OFF + 64, 0, 16);
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.primary, HDR_CORRUPT);
	assert_non_null(strstr(m.primary_why, "torn copy"));
	assert_int_equal(m.choice, HDRS_BACKUP);
	/* ... but one word that is not the backup's makes it foreign: refused. */
	img[LAYOUT_PRIMARY_OFF + 1000] = 7;
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.primary, HDR_FOREIGN);
	assert_int_equal(m.choice, HDRS_FOREIGN);

	/* An unknown version is refused, whatever the backup. */
	h2 = h;
	h2.version = LAYOUT_VERSION + 1;
	layout_header_seal(&h2);
	memset(img, 0, LAYOUT_BLOCK);
	memcpy(img, &h2, sizeof(h2));
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.choice, HDRS_UNSUPPORTED);

	/* A blank primary and a corrupt backup: nothing to use. */
	memset(img, 0, LAYOUT_BLOCK);
	img[LAYOUT_BACKUP_OFF + 40] ^= 1;
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.primary, HDR_BLANK);
	assert_int_equal(m.backup, HDR_CORRUPT);
	assert_int_equal(m.choice, HDRS_NONE);
}

static void test_wiped_and_interrupted(void **state)
{
	uint8_t *img = calloc(1, IMG_SIZE);
	struct layout_header h;
	struct media_badblock bb;
	uint64_t first = 0, rec;

	(void)state;
	assert_non_null(img);
	make_header_sized(&h, IMG_SIZE, IMG_EXTENT);

	/* All zero: a new region. */
	assert_int_equal(media_wiped_records(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0, &first), 0);
	/* Intact non-zero records: the headers of a used region were wiped. */
	for (uint64_t i = 2; i < 5; i++) {
		rec = layout_rec(EXT_ZEROED, 0, 1);
		memcpy(img + h.extent_table_off + i * 8, &rec, 8);
	}
	assert_int_equal(media_wiped_records(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0, &first), 3);
	assert_int_equal(first, 2);
	/* Unless a bad block covers the table, or damaged records outnumber them. */
	bb = (struct media_badblock){h.extent_table_off, 8};
	assert_int_equal(media_wiped_records(img, IMG_SIZE, IMG_EXTENT, 4096, &bb, 1, &first), 0);
	for (uint64_t i = 5; i < 9; i++) {
		rec = layout_rec_raw(0x55, 0, 1);
		memcpy(img + h.extent_table_off + i * 8, &rec, 8);
	}
	assert_int_equal(media_wiped_records(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0, &first), 0);
	memset(img + h.extent_table_off, 0, 9 * 8);

	/* A format cut while it wrote the backup: some words of it, the tables zero. */
	memcpy(img + LAYOUT_BACKUP_OFF, &h, 16); /* magic, version, header_size */
	memcpy(img + LAYOUT_BACKUP_OFF + 32, &h.region_size, 8);
	memcpy(img + LAYOUT_BACKUP_OFF + 96, &h.format_time, 8);
	assert_true(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0));
	/* A region of another size is not this format's. */
	assert_false(
	    media_interrupted_format(img, IMG_SIZE - IMG_EXTENT, IMG_EXTENT, 4096, NULL, 0));
	/* Nor one with data in the tables, in the rest of the block, or a bad block. */
	img[h.tag_table_off + 5] = 1;
	assert_false(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0));
	img[h.tag_table_off + 5] = 0;
	img[LAYOUT_BACKUP_OFF + 300] = 1;
	assert_false(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0));
	img[LAYOUT_BACKUP_OFF + 300] = 0;
	bb = (struct media_badblock){h.extent_table_off + 4096, 8};
	assert_false(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, &bb, 1));
	assert_true(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0));
	free(img);
}

/* The split layout: data at offset 0 of its own file, tables in the metadata file. */
static void test_split_geometry(void **state)
{
	struct layout_geometry g, inl;
	struct layout_header h;
	uint8_t block[LAYOUT_BLOCK];

	(void)state;
	assert_int_equal(layout_compute_split(64ull << 20, 1ull << 20, 4096, &g), 0);
	assert_int_equal(g.extent_count, 64);
	assert_int_equal(g.data_off, 0);
	assert_int_equal(g.extent_table_off, LAYOUT_EXTENT_TABLE_OFF);
	assert_int_equal(g.tag_table_off, LAYOUT_EXTENT_TABLE_OFF + LAYOUT_BLOCK);
	assert_int_equal(g.tag_count, 64);
	assert_int_equal(layout_meta_size(&g), LAYOUT_EXTENT_TABLE_OFF + 3 * LAYOUT_BLOCK);
	/* More extents than the inline layout of the same size: no metadata in the way. */
	assert_int_equal(layout_compute(64ull << 20, 1ull << 20, 4096, &inl), 0);
	assert_true(g.extent_count > inl.extent_count);
	assert_int_equal(layout_compute_split(4096, 1ull << 20, 4096, &g), -ENOSPC);
	/* Sizes a hostile header may claim: no wrap-around makes them fit. */
	assert_true(layout_compute(32ull << 20, 1ull << 63, 4096, &g) < 0);
	assert_true(layout_compute(32ull << 20, 1ull << 62, 1ull << 62, &g) < 0);
	assert_true(layout_compute_split(32ull << 20, 1ull << 63, 4096, &g) < 0);
	assert_int_equal(layout_compute_split(64ull << 20, 1000, 4096, &g), -EINVAL);

	/* A version 1 split header checks with its own geometry, and only with the flag. */
	assert_int_equal(layout_compute_split(64ull << 20, 1ull << 20, 4096, &g), 0);
	header_of(&h, &g, 1, true);
	memset(block, 0, sizeof(block));
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, NULL, 0), HDR_OK);
	assert_true(layout_header_split(&h));
	h.flags = 0; /* the same geometry claimed inline: data over the tables */
	layout_header_seal(&h);
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, NULL, 0), HDR_CORRUPT);
	h.flags = LAYOUT_FLAG_SPLIT | 0x2u; /* an unknown flag */
	layout_header_seal(&h);
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, NULL, 0), HDR_CORRUPT);

	/* Version 2: split is the incompat bit alone; the flags word is reserved. */
	header_of(&h, &g, 2, true);
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, NULL, 0), HDR_OK);
	assert_true(layout_header_split(&h));
	h.incompat &= ~LAYOUT_INCOMPAT_SPLIT; /* claimed inline */
	layout_header_seal(&h);
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, NULL, 0), HDR_CORRUPT);
	h.flags = LAYOUT_FLAG_SPLIT; /* the version 1 way does not make it split */
	layout_header_seal(&h);
	memcpy(block, &h, sizeof(h));
	assert_int_equal(layout_header_check(block, NULL, NULL, 0), HDR_CORRUPT);
}

/* ---- layout versions and feature masks ---- */

static enum layout_hdr_status check_hdr(const struct layout_header *h, struct layout_header *out,
					char *why, size_t why_len)
{
	static uint8_t block[LAYOUT_BLOCK];

	memset(block, 0, sizeof(block));
	memcpy(block, h, sizeof(*h));
	return layout_header_check(block, out, why, why_len);
}

static void reseal(struct layout_header *h)
{
	layout_header_seal(h);
}

/* Every header every earlier build wrote (version 1, inline and split) reads as it had. */
static void test_header_v1(void **state)
{
	struct layout_geometry g;
	struct layout_header h, out;
	struct layout_features f;

	(void)state;
	assert_int_equal(layout_compute(16 << 20, 256 << 10, 4096, &g), 0);
	header_of(&h, &g, 1, false);
	assert_int_equal(check_hdr(&h, &out, NULL, 0), HDR_OK);
	assert_memory_equal(&out, &h, sizeof(h));
	layout_header_features(&h, &f);
	assert_true(f.compat == 0 && f.ro_compat == 0 && f.incompat == LAYOUT_INCOMPAT_MOVE);
	layout_header_unknown(&h, &f);
	assert_true(f.compat == 0 && f.ro_compat == 0 && f.incompat == 0);
	assert_false(layout_header_split(&h));

	assert_int_equal(layout_compute_split(16 << 20, 256 << 10, 4096, &g), 0);
	header_of(&h, &g, 1, true);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_OK);
	layout_header_features(&h, &f);
	assert_true(f.incompat == (LAYOUT_INCOMPAT_MOVE | LAYOUT_INCOMPAT_SPLIT));

	/* The exact version 1 rules: where version 2 has masks, version 1 has zero. */
	h.compat = 1;
	reseal(&h);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_CORRUPT);
	h.compat = 0;
	h.incompat = LAYOUT_INCOMPAT_MOVE;
	reseal(&h);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_CORRUPT);
	h.incompat = 0;
	h.reserved[50] = 1;
	reseal(&h);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_CORRUPT);
}

/* Version 2: what a format writes, the masks, unknown bits of each mask. */
static void test_header_v2(void **state)
{
	struct layout_geometry g;
	struct layout_header h, v2, out;
	struct layout_features f;
	char why[160];

	(void)state;
	assert_int_equal(layout_compute(16 << 20, 256 << 10, 4096, &g), 0);
	header_of(&v2, &g, 2, false);
	assert_int_equal(check_hdr(&v2, &out, why, sizeof(why)), HDR_OK);
	assert_memory_equal(&out, &v2, sizeof(v2));
	layout_header_features(&v2, &f);
	assert_true(f.compat == 0 && f.ro_compat == 0 && f.incompat == LAYOUT_INCOMPAT_MOVE);
	/* The masks are covered by the checksum. */
	h = v2;
	h.incompat ^= UINT64_C(1) << 40;
	assert_int_equal(check_hdr(&h, NULL, why, sizeof(why)), HDR_CORRUPT);
	/* move is not required: a reader that knows it reads links anyway. */
	h = v2;
	h.incompat = 0;
	reseal(&h);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_OK);
	/* Reserved: the flags word and the bytes after the masks. */
	h = v2;
	h.flags = 4;
	reseal(&h);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_CORRUPT);
	h = v2;
	h.reserved[107] = 1;
	reseal(&h);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_CORRUPT);

	/* Unknown incompat: unsupported, naming the bits, whatever else it holds. */
	h = v2;
	h.incompat |= (UINT64_C(1) << 5) | (UINT64_C(1) << 63);
	h.header_size = 512;
	h.reserved[0] = 9;
	h.extent_count = 7; /* a geometry this build would call wrong */
	reseal(&h);
	memset(&out, 0, sizeof(out));
	assert_int_equal(check_hdr(&h, &out, why, sizeof(why)), HDR_UNSUPPORTED);
	assert_non_null(strstr(why, "incompat"));
	assert_non_null(strstr(why, "0x8000000000000020 (bits 5, 63)"));
	assert_non_null(strstr(why, "newer pmemzerod"));
	assert_int_equal(out.incompat, h.incompat);
	layout_header_unknown(&out, &f);
	assert_true(f.incompat == ((UINT64_C(1) << 5) | (UINT64_C(1) << 63)));

	/* Unknown ro_compat and compat: a valid header, the bits reported as unknown. */
	h = v2;
	h.ro_compat = UINT64_C(1) << 3;
	reseal(&h);
	assert_int_equal(check_hdr(&h, &out, NULL, 0), HDR_OK);
	layout_header_unknown(&out, &f);
	assert_true(f.ro_compat == (UINT64_C(1) << 3) && f.compat == 0 && f.incompat == 0);
	h = v2;
	h.compat = UINT64_C(1) << 0;
	/* ... whose feature may use the reserved words. */
	h.flags = 0x77;
	h.reserved[3] = 0x55;
	reseal(&h);
	assert_int_equal(check_hdr(&h, &out, NULL, 0), HDR_OK);
	layout_header_unknown(&out, &f);
	assert_true(f.compat == 1 && f.ro_compat == 0);
	/* ... but not a wrong geometry. */
	h.extent_count++;
	reseal(&h);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_CORRUPT);

	/* Versions this build does not know, older or newer. */
	h = v2;
	h.version = 3;
	reseal(&h);
	assert_int_equal(check_hdr(&h, &out, why, sizeof(why)), HDR_UNSUPPORTED);
	assert_non_null(strstr(why, "layout version 3"));
	assert_int_equal(out.version, 3);
	h.version = 0;
	reseal(&h);
	assert_int_equal(check_hdr(&h, NULL, NULL, 0), HDR_UNSUPPORTED);
}

static void test_feature_strings(void **state)
{
	char b[128];

	(void)state;
	assert_string_equal(pmemz_mask_str(0, b, sizeof(b)), "0");
	assert_string_equal(pmemz_mask_str(4, b, sizeof(b)), "0x0000000000000004 (bit 2)");
	assert_string_equal(pmemz_mask_str(0x30, b, sizeof(b)), "0x0000000000000030 (bits 4, 5)");
	/* Truncated, still a string. */
	assert_string_equal(pmemz_mask_str(0x30, b, 8), "0x00000");
	assert_string_equal(layout_features_str(2, 3, b, sizeof(b)), "split, move");
	assert_string_equal(layout_features_str(2, 0x12, b, sizeof(b)), "move, bit 4");
	assert_string_equal(layout_features_str(0, 1, b, sizeof(b)), "bit 0");
	assert_string_equal(layout_features_str(1, 0, b, sizeof(b)), "none");
	assert_true(media_refusal_unsupported(REFUSE_UNSUPPORTED));
	assert_true(media_refusal_unsupported(REFUSE_INCOMPAT));
	assert_true(media_refusal_unsupported(REFUSE_RO_COMPAT));
	assert_false(media_refusal_unsupported(REFUSE_NO_HEADER));
	assert_false(media_refusal_unsupported(REFUSE_NONE));
}

/* An image of IMG_SIZE bytes whose two header blocks hold p and b (NULL: blank). */
static enum media_refusal refusal_of(uint8_t *img, const struct layout_header *p,
				     const struct layout_header *b, struct media_headers *m)
{
	struct media_image mi = {.base = img, .size = IMG_SIZE, .data_size = IMG_SIZE};

	memset(img, 0, 2 * LAYOUT_BLOCK);
	if (p)
		memcpy(img + LAYOUT_PRIMARY_OFF, p, sizeof(*p));
	if (b)
		memcpy(img + LAYOUT_BACKUP_OFF, b, sizeof(*b));
	return media_region_refusal(&mi, m);
}

/*
 * A newer build's header, in either block, is neither used nor rewritten;
 * unknown ro_compat is readable but refused; unknown compat is used.
 */
static void test_headers_newer(void **state)
{
	uint8_t *img = calloc(1, IMG_SIZE);
	struct layout_header h, inc, ro, co, v3;
	struct media_headers m;

	(void)state;
	assert_non_null(img);
	make_header_sized(&h, IMG_SIZE, IMG_EXTENT);
	inc = ro = co = v3 = h;
	inc.incompat |= UINT64_C(1) << 9;
	ro.ro_compat |= UINT64_C(1) << 2;
	co.compat |= UINT64_C(1) << 7;
	v3.version = 3;
	reseal(&inc);
	reseal(&ro);
	reseal(&co);
	reseal(&v3);

	assert_int_equal(refusal_of(img, &h, &h, &m), REFUSE_NONE);
	assert_int_equal(refusal_of(img, &inc, &h, &m), REFUSE_INCOMPAT);
	assert_int_equal(m.choice, HDRS_UNSUPPORTED);
	assert_false(m.repair_primary || m.repair_backup);
	assert_true(m.unknown.incompat == UINT64_C(1) << 9 && m.newer_version == 0);
	/* In the backup only: the primary is not used to undo it. */
	assert_int_equal(refusal_of(img, &h, &inc, &m), REFUSE_INCOMPAT);
	assert_false(m.repair_primary || m.repair_backup);
	/* Beside a corrupt, blank or torn primary: refused, never repaired from it. */
	refusal_of(img, &inc, &inc, &m);
	img[LAYOUT_PRIMARY_OFF + 40] ^= 1;
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.primary, HDR_CORRUPT);
	assert_int_equal(m.choice, HDRS_UNSUPPORTED);
	assert_int_equal(refusal_of(img, NULL, &inc, &m), REFUSE_INCOMPAT);
	assert_int_equal(m.primary, HDR_BLANK);
	refusal_of(img, &inc, &inc, &m);
	memset(img + LAYOUT_PRIMARY_OFF, 0, 8); /* the magic word not yet written */
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.primary, HDR_CORRUPT);
	assert_int_equal(m.choice, HDRS_UNSUPPORTED);
	/* A foreign primary still wins. */
	refusal_of(img, &inc, &inc, &m);
	memcpy(img, "NOTOURS!", 8);
	img[LAYOUT_PRIMARY_OFF + 2000] = 1;
	media_headers_read(img, NULL, 0, &m);
	assert_int_equal(m.choice, HDRS_FOREIGN);

	/* A newer layout version, either block. */
	assert_int_equal(refusal_of(img, &v3, &h, &m), REFUSE_UNSUPPORTED);
	assert_int_equal(m.newer_version, 3);
	assert_int_equal(refusal_of(img, &h, &v3, &m), REFUSE_UNSUPPORTED);

	/* ro_compat: the header is usable for reading, the region refused. */
	assert_int_equal(refusal_of(img, &ro, &ro, &m), REFUSE_RO_COMPAT);
	assert_int_equal(m.choice, HDRS_PRIMARY);
	assert_true(m.unknown.ro_compat == UINT64_C(1) << 2);
	assert_int_equal(refusal_of(img, &h, &ro, &m), REFUSE_RO_COMPAT);
	/* Damage is damage first: the size (a ro_compat feature cannot change it). */
	{
		struct media_image mi = {.base = img, .size = IMG_SIZE, .data_size = IMG_SIZE / 2};

		refusal_of(img, &ro, &ro, &m);
		assert_int_equal(media_region_refusal(&mi, &m), REFUSE_SIZE);
	}

	/* compat: used; a repair copies the header that carries them. */
	assert_int_equal(refusal_of(img, NULL, &co, &m), REFUSE_NONE);
	assert_int_equal(m.choice, HDRS_BACKUP);
	assert_true(m.repair_primary);
	assert_true(m.unknown.compat == UINT64_C(1) << 7);
	assert_int_equal(m.hb.compat, co.compat);
	assert_int_equal(refusal_of(img, &co, &h, &m), REFUSE_NONE);
	assert_true(m.differ && m.repair_backup);
	free(img);
}

/* A format cut while it wrote the backup, by this build or by a version 1 one. */
static void test_interrupted_format_versions(void **state)
{
	uint8_t *img = calloc(1, IMG_SIZE);
	struct layout_header h;
	struct layout_geometry g;

	(void)state;
	assert_non_null(img);
	assert_int_equal(layout_compute(IMG_SIZE, IMG_EXTENT, 4096, &g), 0);
	header_of(&h, &g, 2, false);
	memcpy(img + LAYOUT_BACKUP_OFF, &h, 16);
	memcpy(img + LAYOUT_BACKUP_OFF + 136, &h.incompat, 8);
	assert_true(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0));
	/* Masks a format of this build does not write: a newer build's, not ours to redo. */
	h.incompat |= UINT64_C(1) << 9;
	memcpy(img + LAYOUT_BACKUP_OFF + 136, &h.incompat, 8);
	assert_false(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0));
	memset(img + LAYOUT_BACKUP_OFF + 136, 0, 8);
	h.ro_compat = 1;
	memcpy(img + LAYOUT_BACKUP_OFF + 128, &h.ro_compat, 8);
	assert_false(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0));
	memset(img + LAYOUT_BACKUP_OFF, 0, LAYOUT_BLOCK);
	/* A version 1 format's words. */
	header_of(&h, &g, 1, false);
	memcpy(img + LAYOUT_BACKUP_OFF, &h, 16);
	memcpy(img + LAYOUT_BACKUP_OFF + 32, &h.region_size, 8);
	assert_true(media_interrupted_format(img, IMG_SIZE, IMG_EXTENT, 4096, NULL, 0));
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32c),
	    cmocka_unit_test(test_crc32c_hw),
	    cmocka_unit_test(test_records),
	    cmocka_unit_test(test_geometry),
	    cmocka_unit_test(test_header_check),
	    cmocka_unit_test(test_tag_names),
	    cmocka_unit_test(test_tag_checksum),
	    cmocka_unit_test(test_bad_ranges),
	    cmocka_unit_test(test_rec_check),
	    cmocka_unit_test(test_slot_classify),
	    cmocka_unit_test(test_named_slot),
	    cmocka_unit_test(test_missing_extents),
	    cmocka_unit_test(test_headers_read),
	    cmocka_unit_test(test_wiped_and_interrupted),
	    cmocka_unit_test(test_split_geometry),
	    cmocka_unit_test(test_header_v1),
	    cmocka_unit_test(test_header_v2),
	    cmocka_unit_test(test_feature_strings),
	    cmocka_unit_test(test_headers_newer),
	    cmocka_unit_test(test_interrupted_format_versions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
