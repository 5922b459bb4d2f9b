/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the offline checker (common/check/check.c) on images crafted in
 * memory (fast, every kind of damage) and on regions the storage core
 * formatted and recovered in files under /dev/shm (the checker agrees with
 * the daemon: a region the daemon wrote or recovered is clean).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "media.h"
#include "log.h"
#include "region.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

/* ---- crafted images ---- */

struct img {
	uint8_t *base;
	uint64_t size;
	struct layout_header h;
};

/* A formatted image: every extent ZEROED (data zero), no tags. */
static void img_new(struct img *m, uint64_t size, uint64_t extent)
{
	struct layout_geometry g;

	m->size = size;
	m->base = calloc(1, size);
	assert_non_null(m->base);
	assert_int_equal(layout_compute(size, extent, 4096, &g), 0);
	memset(&m->h, 0, sizeof(m->h));
	memcpy(m->h.magic, LAYOUT_MAGIC, 8);
	m->h.version = LAYOUT_VERSION;
	m->h.header_size = sizeof(m->h);
	for (int i = 0; i < 16; i++)
		m->h.uuid[i] = (uint8_t)(i * 17 + 3);
	m->h.region_size = size;
	m->h.extent_size = extent;
	m->h.extent_count = g.extent_count;
	m->h.extent_table_off = g.extent_table_off;
	m->h.tag_table_off = g.tag_table_off;
	m->h.tag_count = g.tag_count;
	m->h.data_off = g.data_off;
	m->h.backup_off = LAYOUT_BACKUP_OFF;
	m->h.format_time = 1700000000;
	m->h.data_align = 4096;
	m->h.tag_slot_size = LAYOUT_TAG_SLOT_SIZE;
	m->h.incompat = LAYOUT_INCOMPAT_MOVE;
	layout_header_seal(&m->h);
	memcpy(m->base, &m->h, sizeof(m->h));
	memcpy(m->base + LAYOUT_BACKUP_OFF, &m->h, sizeof(m->h));
	for (uint64_t i = 0; i < g.extent_count; i++) {
		uint64_t rec = layout_rec(EXT_ZEROED, 0, 1);
		memcpy(m->base + g.extent_table_off + i * 8, &rec, 8);
	}
}

static void img_free(struct img *m)
{
	free(m->base);
}

/* Both headers replaced by h, sealed. */
static void img_set_headers(struct img *m, struct layout_header *h)
{
	layout_header_seal(h);
	memcpy(m->base, h, sizeof(*h));
	memcpy(m->base + LAYOUT_BACKUP_OFF, h, sizeof(*h));
}

static void set_rec(struct img *m, uint64_t i, uint64_t rec)
{
	memcpy(m->base + m->h.extent_table_off + i * 8, &rec, 8);
}

static struct layout_tag *slot_at(struct img *m, uint32_t id)
{
	return (struct layout_tag *)(m->base + m->h.tag_table_off +
				     (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE);
}

static void set_slot(struct img *m, uint32_t id, uint64_t state, uint32_t uid, const char *name,
		     uint64_t n_extents)
{
	struct layout_tag t;

	memset(&t, 0, sizeof(t));
	t.uid = uid;
	t.ctime = 1700000001;
	t.n_extents = n_extents;
	snprintf(t.name, sizeof(t.name), "%s", name);
	t.checksum = layout_tag_checksum(&t);
	t.state = state;
	memcpy(slot_at(m, id), &t, sizeof(t));
}

/* A committed tag: slot id VALID over extents [first, first + n), data filled. */
static void commit_tag(struct img *m, uint32_t id, const char *name, uint64_t first, uint64_t n)
{
	set_slot(m, id, TAG_VALID, 1000, name, n);
	for (uint64_t i = first; i < first + n; i++) {
		set_rec(m, i, layout_rec(EXT_COMMITTED, id, 2));
		memset(m->base + m->h.data_off + i * m->h.extent_size, 0xa5, m->h.extent_size);
	}
}

static bool has_line(char **lines, size_t n, const char *needle)
{
	for (size_t i = 0; i < n; i++)
		if (strstr(lines[i], needle))
			return true;
	return false;
}

static void dump(const struct check_report *rep)
{
	print_message("status %s, %zu problems, %zu notes\n", check_status_str(rep->status),
		      rep->n_problems, rep->n_notes);
	for (size_t i = 0; i < rep->n_problems; i++)
		print_message("  problem: %s\n", rep->problems[i]);
	for (size_t i = 0; i < rep->n_notes; i++)
		print_message("  note: %s\n", rep->notes[i]);
}

/* Check the image; assert the status and that some problem line contains needle. */
static void expect(struct img *m, uint64_t size, unsigned flags, enum check_status st,
		   const char *needle, struct check_report *out)
{
	struct check_report rep;

	assert_int_equal(check_image(m->base, size, flags, &rep), 0);
	if (rep.status != st || (needle && !has_line(rep.problems, rep.n_problems, needle))) {
		dump(&rep);
		fail_msg("want status %s with a problem containing \"%s\"", check_status_str(st),
			 needle ? needle : "");
	}
	if (st == CHECK_CLEAN)
		assert_int_equal(rep.n_problems, 0);
	if (out)
		*out = rep;
	else
		check_report_free(&rep);
}

/* 4 MiB in 64 KiB extents: 63 extents, 63 tag slots. */
static void img_std(struct img *m)
{
	img_new(m, 4 * MiB, 64 * KiB);
	assert_int_equal(m->h.extent_count, 63);
}

static void test_clean(void **state)
{
	struct img m;
	struct check_report rep;

	(void)state;
	img_std(&m);
	commit_tag(&m, 1, "alpha", 3, 3);
	commit_tag(&m, 7, "beta", 10, 1);
	set_rec(&m, 20, layout_rec(EXT_DIRTY, 0, 4));
	set_rec(&m, 21, layout_rec(EXT_BAD, 0, 4));
	memset(m.base + m.h.data_off + 20 * m.h.extent_size, 0x11, 100); /* DIRTY: any data */
	expect(&m, m.size, 0, CHECK_CLEAN, NULL, &rep);
	assert_true(rep.primary_ok && rep.backup_ok && rep.have_hdr);
	assert_int_equal(rep.hdr.extent_count, 63);
	assert_int_equal(rep.count[EXT_COMMITTED], 4);
	assert_int_equal(rep.count[EXT_DIRTY], 1);
	assert_int_equal(rep.count[EXT_BAD], 1);
	assert_int_equal(rep.count[EXT_ZEROED], 63 - 6);
	assert_int_equal(rep.zeroed_checked, 63 - 6);
	assert_int_equal(rep.zeroed_not_zero, 0);
	assert_int_equal(rep.n_tags, 2);
	assert_int_equal(rep.valid_tags, 2);
	assert_int_equal(rep.tags[0].id, 1);
	assert_string_equal(rep.tags[0].name, "alpha");
	assert_int_equal(rep.tags[0].n_extents, 3);
	assert_int_equal(rep.tags[1].id, 7);
	assert_int_equal(rep.tags[1].uid, 1000);
	assert_int_equal(rep.n_notes, 0);
	check_report_free(&rep);
	/* the same image is also a clean recovered one */
	expect(&m, m.size, CHECK_RECOVERED, CHECK_CLEAN, NULL, NULL);
	img_free(&m);
}

static void test_headers(void **state)
{
	struct img m;
	struct check_report rep;

	(void)state;
	img_std(&m);
	/* one flipped bit in the primary: the backup is used */
	m.base[40] ^= 0x08;
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "primary header (offset 0) is corrupt", &rep);
	assert_false(rep.primary_ok);
	assert_true(rep.backup_ok && rep.have_hdr);
	assert_int_equal(rep.hdr.extent_size, 64 * KiB);
	assert_int_equal(rep.zeroed_checked, 63); /* the rest was checked with the backup */
	check_report_free(&rep);
	/* a wiped primary */
	memset(m.base, 0, LAYOUT_BLOCK);
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "primary header (offset 0) is blank", NULL);
	/* both bad */
	m.base[LAYOUT_BACKUP_OFF + 50] ^= 1;
	expect(&m, m.size, 0, CHECK_UNUSABLE, "both headers are unusable", NULL);
	/* both blank: not a region */
	memset(m.base, 0, 2 * LAYOUT_BLOCK);
	expect(&m, m.size, 0, CHECK_UNUSABLE, "not a pmemzerod region", NULL);
	/* foreign in both */
	memcpy(m.base, "XFSB", 4);
	memcpy(m.base + LAYOUT_BACKUP_OFF, "XFSB", 4);
	expect(&m, m.size, 0, CHECK_UNUSABLE, "foreign", NULL);
	img_free(&m);

	/* backup damaged, or valid but different */
	img_std(&m);
	m.base[LAYOUT_BACKUP_OFF + 100] ^= 0x80;
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "backup header (offset 4096) is corrupt", NULL);
	memcpy(m.base + LAYOUT_BACKUP_OFF, &m.h, sizeof(m.h));
	{
		struct layout_header h2 = m.h;
		h2.format_time++;
		layout_header_seal(&h2);
		memcpy(m.base + LAYOUT_BACKUP_OFF, &h2, sizeof(h2));
	}
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "differs from the primary", &rep);
	assert_true(rep.headers_differ);
	check_report_free(&rep);
	/* a foreign primary over a valid backup: the daemon refuses it (tables still listed) */
	memcpy(m.base, "NOTOURS!", 8);
	expect(&m, m.size, 0, CHECK_UNUSABLE,
	       "the daemon refuses the region (foreign primary header)", &rep);
	assert_int_equal(rep.refusal, REFUSE_FOREIGN);
	assert_true(rep.have_hdr);
	check_report_free(&rep);
	/* a newer layout version in the primary: not damage */
	{
		struct layout_header h2 = m.h;
		h2.version = LAYOUT_VERSION + 1;
		layout_header_seal(&h2);
		memcpy(m.base, &h2, sizeof(h2));
	}
	expect(&m, m.size, 0, CHECK_UNSUPPORTED, NULL, &rep);
	assert_int_equal(rep.refusal, REFUSE_UNSUPPORTED);
	assert_non_null(strstr(rep.unsupported, "layout version 3"));
	assert_int_equal(rep.layout_version, LAYOUT_VERSION + 1);
	assert_int_equal(rep.problems_total, 0);
	check_report_free(&rep);
	img_free(&m);
}

/* Layout versions and feature masks: v1 as before, a newer build's features never damage. */
static void test_features(void **state)
{
	struct img m;
	struct check_report rep;
	struct layout_header h;

	(void)state;
	/* Version 1, as every earlier build wrote it: clean, read as the features it had. */
	img_std(&m);
	commit_tag(&m, 2, "old", 5, 2);
	h = m.h;
	h.version = 1;
	h.incompat = 0;
	img_set_headers(&m, &h);
	expect(&m, m.size, 0, CHECK_CLEAN, NULL, &rep);
	assert_int_equal(rep.layout_version, 1);
	assert_true(rep.features.incompat == LAYOUT_INCOMPAT_MOVE);
	assert_int_equal(rep.n_tags, 1);
	check_report_free(&rep);

	/* Unknown incompat, in both or in the backup alone: unsupported, the tables unread. */
	h = m.h;
	h.incompat |= UINT64_C(1) << 12;
	img_set_headers(&m, &h);
	expect(&m, m.size, 0, CHECK_UNSUPPORTED, NULL, &rep);
	assert_int_equal(rep.refusal, REFUSE_INCOMPAT);
	assert_string_equal(check_report_status_str(&rep), "unsupported");
	assert_non_null(strstr(rep.unsupported, "unknown incompat features 0x0000000000001000"));
	assert_non_null(strstr(rep.unsupported, "(bit 12)"));
	assert_non_null(strstr(rep.unsupported, "newer pmemzerod"));
	assert_true(rep.unknown.incompat == UINT64_C(1) << 12);
	assert_false(rep.have_hdr);
	assert_int_equal(rep.n_tags, 0);
	assert_int_equal(rep.problems_total, 0);
	check_report_free(&rep);
	memcpy(m.base, &m.h, sizeof(m.h));
	expect(&m, m.size, 0, CHECK_UNSUPPORTED, NULL, &rep);
	assert_non_null(strstr(rep.unsupported, "backup header (offset 4096)"));
	check_report_free(&rep);

	/* Unknown ro_compat: unsupported (read-only), the tables checked and listed. */
	h = m.h;
	h.ro_compat = UINT64_C(1) << 1;
	img_set_headers(&m, &h);
	expect(&m, m.size, 0, CHECK_UNSUPPORTED, NULL, &rep);
	assert_int_equal(rep.refusal, REFUSE_RO_COMPAT);
	assert_string_equal(check_report_status_str(&rep), "unsupported (read-only)");
	assert_non_null(strstr(rep.unsupported, "ro_compat"));
	assert_true(rep.have_hdr);
	assert_int_equal(rep.n_tags, 1);
	assert_int_equal(rep.problems_total, 0);
	check_report_free(&rep);
	/* ... damage in its tables is reported as such, beside the verdict */
	set_rec(&m, 30, layout_rec_raw(0x55, 0, 1));
	expect(&m, m.size, 0, CHECK_UNSUPPORTED, "unknown state", &rep);
	assert_int_equal(rep.problems_total, 1);
	check_report_free(&rep);
	set_rec(&m, 30, layout_rec(EXT_ZEROED, 0, 1));

	/* Unknown compat: used as it is. */
	h = m.h;
	h.compat = UINT64_C(1) << 40;
	img_set_headers(&m, &h);
	expect(&m, m.size, 0, CHECK_CLEAN, NULL, &rep);
	assert_true(rep.unknown.compat == UINT64_C(1) << 40);
	assert_int_equal(rep.refusal, REFUSE_NONE);
	assert_string_equal(rep.unsupported, "");
	check_report_free(&rep);
	img_free(&m);
}

static void test_sizes(void **state)
{
	struct img m;
	struct check_report rep;

	(void)state;
	img_std(&m);
	/* truncated: the tables are still checked, the status is unusable */
	expect(&m, 2 * MiB, 0, CHECK_UNUSABLE, "image is truncated", &rep);
	assert_true(rep.have_hdr);
	assert_true(rep.zeroed_checked < 63);
	check_report_free(&rep);
	expect(&m, 6000, 0, CHECK_UNUSABLE, "too small for the two header blocks", NULL);
	expect(&m, 9000, 0, CHECK_UNUSABLE, "inside the extent or tag table", NULL);
	assert_int_equal(check_image(NULL, 0, 0, &rep), 0);
	assert_int_equal(rep.status, CHECK_UNUSABLE);
	check_report_free(&rep);
	img_free(&m);

	/* an image larger than the header says (the file grew) */
	img_std(&m);
	{
		uint8_t *big = calloc(1, 5 * MiB);
		assert_non_null(big);
		memcpy(big, m.base, m.size);
		assert_int_equal(check_image(big, 5 * MiB, 0, &rep), 0);
		assert_int_equal(rep.status, CHECK_UNUSABLE);
		assert_int_equal(rep.refusal, REFUSE_SIZE);
		assert_true(has_line(rep.problems, rep.n_problems, "a region is never resized"));
		check_report_free(&rep);
		/* a tail that is not a whole block: the daemon refuses such a file too */
		assert_int_equal(check_image(big, 4 * MiB + 100, 0, &rep), 0);
		assert_int_equal(rep.status, CHECK_UNUSABLE);
		assert_int_equal(rep.refusal, REFUSE_SIZE);
		check_report_free(&rep);
		free(big);
	}
	img_free(&m);
}

static void test_records(void **state)
{
	struct img m;
	struct check_report rep;

	(void)state;
	img_std(&m);
	set_rec(&m, 5, layout_rec_raw(0x07, 0, 1));
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "extent 5 (record at offset 8232", &rep);
	assert_true(has_line(rep.problems, rep.n_problems, "unknown state code 0x07"));
	assert_int_equal(rep.invalid_records, 1);
	assert_int_equal(rep.count[EXT_ZEROED], 62);
	check_report_free(&rep);
	set_rec(&m, 5, layout_rec(EXT_ZEROED, 0, 1));

	set_rec(&m, 6, layout_rec(EXT_COMMITTED, 0, 1));
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "COMMITTED with tag id 0, not in 1..63", NULL);
	set_rec(&m, 6, layout_rec(EXT_COMMITTED, 64, 1));
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "COMMITTED with tag id 64", NULL);
	set_rec(&m, 6, layout_rec(EXT_DIRTY, 3, 1));
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "DIRTY but it carries tag id 3", NULL);
	set_rec(&m, 6, layout_rec(EXT_BAD, 3, 1));
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "BAD but it carries tag id 3", NULL);
	img_free(&m);
}

static void test_slots(void **state)
{
	struct img m;
	struct check_report rep;

	(void)state;
	/* a VALID slot with a wrong checksum: its extents are quarantined */
	img_std(&m);
	commit_tag(&m, 2, "t", 0, 2);
	slot_at(&m, 2)->uid ^= 1;
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "tag slot 2 (offset 12416, 't', uid 1001)", &rep);
	assert_true(has_line(rep.problems, rep.n_problems, "checksum is wrong"));
	assert_true(has_line(rep.problems, rep.n_problems, "belong to damaged tag slot 2"));
	check_report_free(&rep);
	img_free(&m);

	/* an unknown state word */
	img_std(&m);
	set_slot(&m, 4, 6, 0, "x", 0);
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "tag slot 4 (offset 12672): unknown state word",
	       NULL);
	img_free(&m);

	/* a bad name (a control character), checksum fine */
	img_std(&m);
	commit_tag(&m, 1, "bad\tname", 0, 1);
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "its name is invalid", NULL);
	img_free(&m);

	/* a name without its NUL */
	img_std(&m);
	commit_tag(&m, 1, "n", 0, 1);
	memset(slot_at(&m, 1)->name, 'a', 64);
	slot_at(&m, 1)->checksum = layout_tag_checksum(slot_at(&m, 1));
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "not NUL-terminated", NULL);
	img_free(&m);

	/* fewer records than committed */
	img_std(&m);
	commit_tag(&m, 1, "short", 0, 3);
	set_rec(&m, 1, layout_rec(EXT_ZEROED, 0, 2));
	memset(m.base + m.h.data_off + m.h.extent_size, 0, m.h.extent_size);
	expect(&m, m.size, 0, CHECK_UNUSABLE,
	       "tag 'short' (uid 1000, slot 1) was committed with 3 extents but 2 records", &rep);
	assert_true(has_line(rep.problems, rep.n_problems,
			     "the daemon refuses the region (committed extents missing"));
	assert_int_equal(rep.refusal, REFUSE_MISSING);
	check_report_free(&rep);
	/* ... or none at all */
	set_rec(&m, 0, layout_rec(EXT_DIRTY, 0, 2));
	set_rec(&m, 2, layout_rec(EXT_DIRTY, 0, 2));
	expect(&m, m.size, 0, CHECK_UNUSABLE, "is VALID but no extent record names it", NULL);
	img_free(&m);

	/* more records than committed */
	img_std(&m);
	commit_tag(&m, 1, "a", 0, 2);
	commit_tag(&m, 2, "b", 4, 2);
	set_rec(&m, 5, layout_rec(EXT_COMMITTED, 1, 2)); /* b's extent now names a */
	expect(&m, m.size, 0, CHECK_INCONSISTENT,
	       "tag 'a' (uid 1000, slot 1) was committed with 2 "
	       "extents but 3",
	       &rep);
	assert_true(has_line(rep.problems, rep.n_problems, "tag 'b'"));
	/* b's missing extent is a's surplus: accounted for, no refusal */
	assert_false(has_line(rep.problems, rep.n_problems, "refuses"));
	check_report_free(&rep);
	img_free(&m);

	/* a tag-id bit flip sends one of a's records to FREE slot 3: quarantined, not released */
	img_std(&m);
	commit_tag(&m, 1, "a", 0, 3);
	set_rec(&m, 1, layout_rec(EXT_COMMITTED, 3, 2));
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "name tag slot 3, which is blank", &rep);
	assert_true(has_line(rep.problems, rep.n_problems, "media damage"));
	assert_true(has_line(rep.problems, rep.n_problems, "was committed with 3 extents but 2"));
	assert_false(has_line(rep.problems, rep.n_problems, "refuses"));
	assert_int_equal(rep.n_notes, 0);
	assert_int_equal(rep.release_extents, 0);
	check_report_free(&rep);
	/* the same into a WRITTEN slot: held back, not rolled back */
	set_slot(&m, 3, TAG_WRITTEN, 1000, "w", 1);
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "tag slot 3: half-made commit (WRITTEN) with 1",
	       &rep);
	assert_true(has_line(rep.problems, rep.n_problems, "the daemon quarantines those"));
	check_report_free(&rep);
	/* ... or a FREEING slot: held back, not released */
	set_slot(&m, 3, TAG_FREEING, 1000, "f", 1);
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "tag slot 3: half-done free (FREEING) with 1",
	       NULL);
	img_free(&m);

	/* a WRITTEN or FREEING slot named by records, but with a torn body or a short count */
	img_std(&m);
	set_slot(&m, 4, TAG_WRITTEN, 1000, "torn", 1);
	slot_at(&m, 4)->checksum ^= 1;
	set_rec(&m, 7, layout_rec(EXT_COMMITTED, 4, 2));
	set_slot(&m, 5, TAG_FREEING, 1000, "short", 1);
	set_rec(&m, 8, layout_rec(EXT_COMMITTED, 5, 2));
	set_rec(&m, 9, layout_rec(EXT_COMMITTED, 5, 2));
	expect(&m, m.size, 0, CHECK_INCONSISTENT,
	       "tag slot 4 (offset 12672, 'torn', uid 1000): WRITTEN (a half-made commit) with 1",
	       &rep);
	assert_true(has_line(rep.problems, rep.n_problems, "its checksum is wrong"));
	assert_true(
	    has_line(rep.problems, rep.n_problems,
		     "FREEING (a half-done free) with 2 COMMITTED extents (first: extent 8), "
		     "but it was committed with fewer extents"));
	assert_true(has_line(rep.problems, rep.n_problems, "belong to damaged tag slot 5"));
	assert_int_equal(rep.rollback_extents + rep.release_extents, 0);
	check_report_free(&rep);
	img_free(&m);

	/* a duplicate (name, uid) */
	img_std(&m);
	commit_tag(&m, 1, "same", 0, 1);
	commit_tag(&m, 9, "same", 1, 1);
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "tag 'same' of uid 1000 is in slots 1 and 9",
	       NULL);
	img_free(&m);
}

/* States recovery resolves: notes in a raw image, problems in a recovered one. */
static void test_raw_vs_recovered(void **state)
{
	struct img m;
	struct check_report rep;

	(void)state;
	img_std(&m);
	set_rec(&m, 3, layout_rec(EXT_LEASED, 0, 5));
	set_rec(&m, 4, layout_rec(EXT_LEASED, 0, 5));
	memset(m.base + m.h.data_off + 3 * m.h.extent_size, 0x77, 64); /* a client wrote */
	/* half-made commit: slot WRITTEN (body intact), records COMMITTED */
	set_slot(&m, 5, TAG_WRITTEN, 1000, "half", 2);
	set_rec(&m, 10, layout_rec(EXT_COMMITTED, 5, 5));
	set_rec(&m, 11, layout_rec(EXT_COMMITTED, 5, 5));
	/* ... one whose records are not stored yet: the body may be torn */
	set_slot(&m, 7, TAG_WRITTEN, 1000, "early", 1);
	slot_at(&m, 7)->checksum ^= 0xffff;
	/* half-done free: slot FREEING, one record still COMMITTED */
	set_slot(&m, 6, TAG_FREEING, 1000, "gone", 2);
	set_rec(&m, 12, layout_rec(EXT_COMMITTED, 6, 5));

	expect(&m, m.size, 0, CHECK_CLEAN, NULL, &rep);
	assert_int_equal(rep.count[EXT_LEASED], 2);
	assert_int_equal(rep.rollback_extents, 2);
	assert_int_equal(rep.release_extents, 1);
	assert_int_equal(rep.n_tags, 3); /* the WRITTEN and FREEING slots */
	assert_true(rep.tags[0].state == TAG_WRITTEN);
	assert_int_equal(rep.tags[0].n_extents, 2);
	assert_true(rep.tags[1].state == TAG_FREEING);
	assert_int_equal(rep.tags[1].n_extents, 1);
	assert_true(rep.tags[2].state == TAG_WRITTEN);
	assert_int_equal(rep.tags[2].n_extents, 0);
	assert_true(has_line(rep.notes, rep.n_notes, "2 extents are LEASED (first: extent 3)"));
	assert_true(has_line(rep.notes, rep.n_notes, "tag slot 5: half-made commit"));
	assert_true(has_line(rep.notes, rep.n_notes, "tag slot 6: half-done free (FREEING)"));
	assert_true(has_line(rep.notes, rep.n_notes, "tag slot 7: half-made commit"));
	check_report_free(&rep);

	expect(&m, m.size, CHECK_RECOVERED, CHECK_INCONSISTENT, "LEASED (first: extent 3)", &rep);
	assert_true(has_line(rep.problems, rep.n_problems, "tag slot 5 is WRITTEN"));
	assert_true(has_line(rep.problems, rep.n_problems, "tag slot 6 is FREEING"));
	assert_true(has_line(rep.problems, rep.n_problems, "tag slot 7 is WRITTEN"));
	assert_int_equal(rep.n_notes, 0);
	check_report_free(&rep);

	/* COMMITTED under a FREE slot is no crash: a problem in both modes */
	set_slot(&m, 6, TAG_FREE, 1000, "gone", 2);
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "name tag slot 6, which is FREE: media damage",
	       &rep);
	assert_int_equal(rep.release_extents, 0);
	check_report_free(&rep);
	img_free(&m);
}

static void test_zeroed_data(void **state)
{
	struct img m;
	struct check_report rep;
	uint64_t off;

	(void)state;
	img_std(&m);
	off = m.h.data_off + 30 * m.h.extent_size + 4097;
	m.base[off] = 0x42;
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "extent 30", &rep);
	assert_true(has_line(rep.problems, rep.n_problems, "byte 4097"));
	assert_true(has_line(rep.problems, rep.n_problems, "is 0x42: stale data"));
	assert_int_equal(rep.zeroed_not_zero, 1);
	assert_int_equal(rep.zeroed_checked, 63);
	assert_true(rep.data_checked);
	check_report_free(&rep);
	/* the last byte of the last extent */
	m.base[off] = 0;
	m.base[m.h.data_off + 63 * m.h.extent_size - 1] = 1;
	expect(&m, m.size, 0, CHECK_INCONSISTENT, "extent 62", NULL);
	/* --no-data */
	expect(&m, m.size, CHECK_NO_DATA, CHECK_CLEAN, NULL, &rep);
	assert_false(rep.data_checked);
	assert_int_equal(rep.zeroed_checked, 0);
	check_report_free(&rep);
	img_free(&m);
}

/* A zeroed block of the extent table under a committed tag. */
static void test_zeroed_table_block(void **state)
{
	struct img m;

	(void)state;
	img_std(&m);
	commit_tag(&m, 1, "precious", 10, 4);
	memset(m.base + m.h.extent_table_off, 0, LAYOUT_BLOCK);
	expect(&m, m.size, 0, CHECK_UNUSABLE, "no damaged record accounts for them", NULL);
	img_free(&m);

	/* a zeroed block of the tag table: the records name blank slots (quarantined) */
	img_std(&m);
	commit_tag(&m, 1, "precious", 10, 4);
	commit_tag(&m, 2, "other", 20, 1);
	memset(m.base + m.h.tag_table_off, 0, LAYOUT_BLOCK);
	for (unsigned flags = 0; flags <= CHECK_RECOVERED; flags += CHECK_RECOVERED) {
		struct check_report rep;

		expect(&m, m.size, flags, CHECK_INCONSISTENT,
		       "4 COMMITTED extents (first: extent 10) name tag slot 1, which is blank "
		       "(a zeroed block of the tag table?): media damage",
		       &rep);
		assert_true(has_line(rep.problems, rep.n_problems,
				     "1 COMMITTED extents (first: extent 20) name tag slot 2"));
		assert_false(has_line(rep.problems, rep.n_problems, "refuses"));
		assert_int_equal(rep.release_extents, 0);
		assert_int_equal(rep.n_notes, 0);
		check_report_free(&rep);
	}
	img_free(&m);
}

/* Known bad ranges are never read. */
static void test_badblocks(void **state)
{
	struct img m;
	struct check_report rep;
	struct media_badblock bb[2];
	uint64_t off;

	(void)state;
	img_std(&m);
	off = m.h.data_off + 5 * m.h.extent_size;
	m.base[off + 512] = 0xff; /* "poisoned": would fail I1 if it were read */
	bb[0] = (struct media_badblock){off + 512, 512};
	assert_int_equal(check_image_badblocks(m.base, m.size, 0, bb, 1, &rep), 0);
	assert_int_equal(rep.status, CHECK_CLEAN);
	assert_int_equal(rep.zeroed_bad, 1);
	assert_int_equal(rep.zeroed_checked, 62);
	assert_int_equal(rep.badblocks, 1);
	assert_true(has_line(rep.notes, rep.n_notes, "extent 5 (data at offset"));
	check_report_free(&rep);
	assert_int_equal(check_image_badblocks(m.base, m.size, CHECK_RECOVERED, bb, 1, &rep), 0);
	assert_int_equal(rep.status, CHECK_INCONSISTENT);
	assert_true(
	    has_line(rep.problems, rep.n_problems, "has a bad block; recovery marks it BAD"));
	check_report_free(&rep);
	m.base[off + 512] = 0;

	/* in the primary header: the backup is used */
	bb[0] = (struct media_badblock){0, 512};
	assert_int_equal(check_image_badblocks(m.base, m.size, 0, bb, 1, &rep), 0);
	assert_int_equal(rep.status, CHECK_INCONSISTENT);
	assert_int_equal(rep.primary_status, HDR_UNREADABLE);
	assert_true(
	    has_line(rep.problems, rep.n_problems, "primary header (offset 0) is unreadable"));
	check_report_free(&rep);
	/* in both */
	bb[1] = (struct media_badblock){LAYOUT_BACKUP_OFF + 4000, 8};
	assert_int_equal(check_image_badblocks(m.base, m.size, 0, bb, 2, &rep), 0);
	assert_int_equal(rep.status, CHECK_UNUSABLE);
	check_report_free(&rep);
	/* in the tag table */
	bb[0] = (struct media_badblock){m.h.tag_table_off + 100, 8};
	assert_int_equal(check_image_badblocks(m.base, m.size, 0, bb, 1, &rep), 0);
	assert_int_equal(rep.status, CHECK_UNUSABLE);
	assert_true(
	    has_line(rep.problems, rep.n_problems, "bad blocks in the extent or tag table"));
	check_report_free(&rep);
	img_free(&m);
}

/* Thousands of bad records: the lines are capped, the count is not. */
static void test_many_problems(void **state)
{
	struct img m;
	struct check_report rep;

	(void)state;
	img_new(&m, 32 * MiB, 4 * KiB);
	assert_true(m.h.extent_count > 2 * CHECK_MAX_LINES);
	memset(m.base + m.h.extent_table_off, 0xee, m.h.extent_count * 8);
	assert_int_equal(check_image(m.base, m.size, 0, &rep), 0);
	assert_int_equal(rep.status, CHECK_INCONSISTENT);
	assert_int_equal(rep.invalid_records, m.h.extent_count);
	assert_true(rep.problems_total >= m.h.extent_count);
	assert_int_equal(rep.n_problems, CHECK_MAX_LINES + 1);
	assert_non_null(strstr(rep.problems[CHECK_MAX_LINES], "more problems not listed"));
	check_report_free(&rep);
	img_free(&m);
}

/* ---- files ---- */

static const char *tmp_dir(void)
{
	struct stat st;

	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
}

static void tmp_file(char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/pmemz-check-XXXXXX", tmp_dir());
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
}

static void write_file(const char *path, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, len), (ssize_t)len);
	close(fd);
}

static void test_check_path(void **state)
{
	struct img m;
	struct check_report rep;
	char path[128];

	(void)state;
	assert_int_equal(check_path("/nonexistent/pmemz.img", 0, &rep), -ENOENT);
	assert_int_equal(check_path("/", 0, &rep), -EISDIR);
	assert_int_equal(check_path("/dev/null", 0, &rep), -ENODEV);

	tmp_file(path, sizeof(path));
	assert_int_equal(check_path(path, 0, &rep), 0); /* empty */
	assert_int_equal(rep.status, CHECK_UNUSABLE);
	assert_string_equal(rep.path, path);
	check_report_free(&rep);

	img_std(&m);
	commit_tag(&m, 3, "file", 0, 2);
	write_file(path, m.base, m.size);
	assert_int_equal(check_path(path, CHECK_RECOVERED, &rep), 0);
	if (rep.status != CHECK_CLEAN)
		dump(&rep);
	assert_int_equal(rep.status, CHECK_CLEAN);
	assert_int_equal(rep.image_size, m.size);
	check_report_free(&rep);

	/* truncated under a mapping: the data read gets SIGBUS, caught */
	{
		int fd = open(path, O_RDWR | O_CLOEXEC);
		uint8_t *map;
		char want[128];

		assert_true(fd >= 0);
		map = mmap(NULL, m.size, PROT_READ, MAP_SHARED, fd, 0);
		assert_true(map != MAP_FAILED);
		assert_int_equal(ftruncate(fd, (off_t)(m.h.data_off + 10 * m.h.extent_size)), 0);
		assert_int_equal(check_image(map, m.size, 0, &rep), 0);
		if (!has_line(rep.problems, rep.n_problems, "unreadable: media error"))
			dump(&rep);
		assert_int_equal(rep.status, CHECK_INCONSISTENT);
		snprintf(want, sizeof(want),
			 "extent 10 (data at offset %llu) is ZEROED but unreadable",
			 (unsigned long long)(m.h.data_off + 10 * m.h.extent_size));
		assert_true(has_line(rep.problems, rep.n_problems, want));
		assert_int_equal(rep.zeroed_not_zero, 63 - 2 - 8);
		check_report_free(&rep);
		/* in the metadata: unusable */
		assert_int_equal(ftruncate(fd, 4096), 0);
		assert_int_equal(check_image(map, m.size, 0, &rep), 0);
		assert_int_equal(rep.status, CHECK_UNUSABLE);
		assert_true(has_line(rep.problems, rep.n_problems, "media error (SIGBUS)"));
		check_report_free(&rep);
		munmap(map, m.size);
		close(fd);
	}
	img_free(&m);
	unlink(path);
}

/* 8 MiB of 128 KiB extents at path, for the daemon to create (it refuses an empty file). */
static void region_conf_for(struct region_conf *rc, char *name, char *path)
{
	(void)unlink(path);
	memset(rc, 0, sizeof(*rc));
	rc->name = name;
	rc->path = path;
	rc->size = 8 * MiB;
	rc->extent_size = 128 * KiB;
	rc->zeroer_threads = 1;
	rc->batch_extents = 8;
	rc->source = name;
}

/* The checker agrees with the storage core: what it formats and recovers is clean. */
static void test_agrees_with_daemon(void **state)
{
	struct region_conf rc;
	struct region *r = NULL;
	struct check_report rep;
	struct layout_header h;
	char path[128], name[] = "chk";
	uint8_t *img;
	int fd;

	(void)state;
	tmp_file(path, sizeof(path));
	region_conf_for(&rc, name, path);
	assert_int_equal(region_open(&rc, &r), 0);
	region_close(r);
	assert_int_equal(check_path(path, CHECK_RECOVERED, &rep), 0);
	if (rep.status != CHECK_CLEAN)
		dump(&rep);
	assert_int_equal(rep.status, CHECK_CLEAN);
	h = rep.hdr;
	check_report_free(&rep);

	/* A crashed image (lease, half-made commit, half-done free) ... */
	img = calloc(1, rc.size);
	assert_non_null(img);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, img, rc.size, 0), (ssize_t)rc.size);
	{
		struct img m = {.base = img, .size = rc.size, .h = h};

		set_rec(&m, 0, layout_rec(EXT_LEASED, 0, 3));
		set_slot(&m, 2, TAG_WRITTEN, 5, "half", 1);
		set_rec(&m, 1, layout_rec(EXT_COMMITTED, 2, 3));
		set_slot(&m, 3, TAG_FREEING, 5, "freed", 1);
		set_rec(&m, 2, layout_rec(EXT_COMMITTED, 3, 3));
		commit_tag(&m, 4, "kept", 5, 2);
	}
	assert_int_equal(pwrite(fd, img, rc.size, 0), (ssize_t)rc.size);
	close(fd);
	free(img);
	assert_int_equal(check_path(path, 0, &rep), 0);
	assert_int_equal(rep.status, CHECK_CLEAN);
	assert_int_equal(rep.rollback_extents, 1);
	assert_int_equal(rep.release_extents, 1);
	check_report_free(&rep);
	assert_int_equal(check_path(path, CHECK_RECOVERED, &rep), 0);
	assert_int_equal(rep.status, CHECK_INCONSISTENT);
	check_report_free(&rep);

	/* ... is clean as a recovered image after the daemon's recovery. */
	assert_int_equal(region_open(&rc, &r), 0);
	region_close(r);
	assert_int_equal(check_path(path, CHECK_RECOVERED, &rep), 0);
	if (rep.status != CHECK_CLEAN)
		dump(&rep);
	assert_int_equal(rep.status, CHECK_CLEAN);
	assert_int_equal(rep.valid_tags, 1);
	assert_int_equal(rep.count[EXT_COMMITTED], 2);
	assert_int_equal(rep.count[EXT_LEASED], 0);
	check_report_free(&rep);
	unlink(path);
}

/* metadata = PATH: the pair checks clean; either file alone is unusable input. */
static void test_split_pair(void **state)
{
	struct region_conf rc;
	struct region *r = NULL;
	struct run *runs = NULL;
	size_t n_runs;
	struct check_report rep;
	char path[128], meta[160], name[] = "split";
	uint8_t junk[4096];
	int fd;

	(void)state;
	tmp_file(path, sizeof(path));
	snprintf(meta, sizeof(meta), "%s.meta", path);
	region_conf_for(&rc, name, path);
	rc.metadata = meta;
	assert_int_equal(region_open(&rc, &r), 0);
	for (int i = 0; i < 3000 && region_count_zeroed(r) < 3; i++) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};

		(void)poll(&p, 1, 10);
		(void)region_zeroer_collect(r);
		(void)region_sync(r);
	}
	assert_int_equal(region_lease(r, 3, &runs, &n_runs), 0);
	assert_int_equal(region_commit(r, runs, n_runs, "t", 5, false), 0);
	assert_true(region_sync(r) > 0);
	region_close(r);
	free(runs);

	assert_int_equal(check_path_split(meta, path, CHECK_RECOVERED | CHECK_NO_DATA, &rep), 0);
	if (rep.status != CHECK_CLEAN)
		dump(&rep);
	assert_int_equal(rep.status, CHECK_CLEAN);
	assert_true(rep.features.incompat == (LAYOUT_INCOMPAT_SPLIT | LAYOUT_INCOMPAT_MOVE));
	assert_int_equal(rep.count[EXT_COMMITTED], 3);
	assert_int_equal(rep.count[EXT_DIRTY] + rep.count[EXT_ZEROED], 64 - 3);
	assert_string_equal(rep.meta_path, meta);
	check_report_free(&rep);
	/* What tenants write to the data file is not metadata. */
	memset(junk, 0xa5, sizeof(junk));
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	close(fd);
	assert_int_equal(check_path_split(meta, path, CHECK_RECOVERED | CHECK_NO_DATA, &rep), 0);
	assert_int_equal(rep.status, CHECK_CLEAN);
	check_report_free(&rep);
	/* The metadata alone: a split header needs its data file. */
	assert_int_equal(check_path(meta, 0, &rep), 0);
	assert_int_equal(rep.status, CHECK_UNUSABLE);
	check_report_free(&rep);
	/* The pair swapped: the data file has no header. */
	assert_int_equal(check_path_split(path, meta, 0, &rep), 0);
	assert_int_equal(rep.status, CHECK_UNUSABLE);
	check_report_free(&rep);
	/*
	 * A metadata file or a data file of another size: the daemon refuses
	 * (never resized), and the checker says unusable for the same reason.
	 */
	rc.size = 0; /* as they are, not the configured size */
	{
		static const struct {
			bool meta;
			int64_t delta;
			enum media_refusal why;
		} sizes[] = {
		    {true, 4096, REFUSE_META_SIZE},
		    {true, -4096, REFUSE_META_SIZE},
		    {false, 4096, REFUSE_SIZE},
		    {false, -(int64_t)(128 * KiB), REFUSE_SIZE},
		};

		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			const char *which = sizes[k].meta ? meta : path;
			struct stat st;

			assert_int_equal(stat(which, &st), 0);
			assert_int_equal(truncate(which, st.st_size + sizes[k].delta), 0);
			assert_int_equal(check_path_split(meta, path, CHECK_NO_DATA, &rep), 0);
			if (rep.refusal != sizes[k].why)
				dump(&rep);
			assert_int_equal(rep.status, CHECK_UNUSABLE);
			assert_int_equal(rep.refusal, sizes[k].why);
			assert_true(has_line(rep.problems, rep.n_problems,
					     media_refusal_str(sizes[k].why)));
			check_report_free(&rep);
			assert_int_equal(region_open(&rc, &r), -EINVAL);
			assert_int_equal(truncate(which, st.st_size), 0);
		}
		assert_int_equal(check_path_split(meta, path, CHECK_NO_DATA, &rep), 0);
		assert_int_equal(rep.status, CHECK_CLEAN);
		check_report_free(&rep);
	}
	/* A truncated data file is unusable, not a crash. */
	assert_int_equal(truncate(path, 4096), 0);
	assert_int_equal(check_path_split(meta, path, 0, &rep), 0);
	assert_int_equal(rep.status, CHECK_UNUSABLE);
	check_report_free(&rep);
	unlink(path);
	unlink(meta);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean),	cmocka_unit_test(test_headers),
	    cmocka_unit_test(test_sizes),	cmocka_unit_test(test_records),
	    cmocka_unit_test(test_slots),	cmocka_unit_test(test_raw_vs_recovered),
	    cmocka_unit_test(test_zeroed_data), cmocka_unit_test(test_zeroed_table_block),
	    cmocka_unit_test(test_badblocks),	cmocka_unit_test(test_many_problems),
	    cmocka_unit_test(test_check_path),	cmocka_unit_test(test_agrees_with_daemon),
	    cmocka_unit_test(test_split_pair),	cmocka_unit_test(test_features),
	};

	log_set_max_level(LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
