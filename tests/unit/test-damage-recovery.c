/* SPDX-License-Identifier: MIT */
/*
 * Regression tests: the storage core (region_open: format_load + recovery)
 * on damaged media crafted in files under /dev/shm.  Each case was a bug:
 *
 *  - a COMMITTED record whose tag id flipped to a FREE slot was released and
 *    zeroed (committed data lost) while its tag stayed visible, short of it;
 *  - a zeroed block of the extent table made a tag's records DIRTY: the tag
 *    was dropped and its extents zeroed and handed out;
 *  - a record that moved into another VALID tag was adopted by it (handed
 *    to the wrong owner);
 *  - both header blocks wiped over a used region: formatted over it;
 *  - power failed while a format wrote the backup header: the region was
 *    refused for good (blank primary, "foreign" backup);
 *  - power failed while the primary header was written: without its magic
 *    word it looked foreign and the region was refused for good;
 *  - a WRITTEN slot freed by recovery was never reused until a restart;
 *  - a region recovery refused (committed extents missing) had its damaged
 *    header copy rewritten first: refused, yet written to.
 *
 * The daemon must now hide and quarantine what it cannot attribute, refuse
 * (media untouched) when committed extents would be zeroed, and the offline
 * checker must report every one of these images as damaged.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "media.h"
#include "log.h"
#include "region-internal.h"
#include "region.h"


#include "media-fixture.h"

const char *fx_region_name = "dmg";

/* Tag id VALID over [first, first + n) with data v. */
static void commit_tag(struct fx *f, uint32_t id, const char *name, uint64_t first, uint64_t n,
		       uint8_t v)
{
	set_slot(f, id, TAG_VALID, 1000, name, n);
	for (uint64_t i = first; i < first + n; i++) {
		set_rec(f, i, layout_rec(EXT_COMMITTED, id, 2));
		fill_extent(f, i, v);
	}
}

static void expect_checker(struct fx *f, enum check_status st, const char *needle)
{
	struct check_report rep;
	bool found = !needle;

	assert_int_equal(check_path(f->path, CHECK_RECOVERED, &rep), 0);
	for (size_t i = 0; needle && i < rep.n_problems; i++)
		found |= strstr(rep.problems[i], needle) != NULL;
	if (rep.status != st || !found) {
		for (size_t i = 0; i < rep.n_problems; i++)
			print_message("  problem: %s\n", rep.problems[i]);
		fail_msg("checker: status %s, want %s with \"%s\"", check_status_str(rep.status),
			 check_status_str(st), needle ? needle : "");
	}
	check_report_free(&rep);
}

/* A tag-id bit flip sends one record of tag 1 to FREE slot 3 (1 ^ 2). */
static void test_tag_flip_to_free_slot(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint32_t id;

	commit_tag(f, 1, "precious", 4, 3, 0xa5);
	set_rec(f, 5, layout_rec(EXT_COMMITTED, 1 ^ 2, 2));
	expect_checker(f, CHECK_INCONSISTENT, "was committed with 3 extents but 2 records");

	assert_int_equal(region_open(&f->rc, &r), 0);
	/* hidden, not shown short of an extent */
	assert_int_equal(region_tag_lookup(r, "precious", 1000, &id), -ENOENT);
	assert_int_equal(count_of(r, EXT_BAD), 3);
	assert_int_equal(count_of(r, EXT_COMMITTED), 0);
	zero_all(r);
	region_close(r);

	/* nothing of it was zeroed or rewritten */
	assert_true(extent_is(f, 4, 0xa5) && extent_is(f, 5, 0xa5) && extent_is(f, 6, 0xa5));
	assert_true(get_rec(f, 5) == layout_rec(EXT_COMMITTED, 3, 2));
	assert_true(get_rec(f, 4) == layout_rec(EXT_COMMITTED, 1, 2));
	/* and the other extents are in use again */
	assert_true(layout_rec_state(get_rec(f, 0)) == EXT_ZEROED);
	/* the same on every start */
	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(count_of(r, EXT_BAD), 3);
	region_close(r);
}

/* A record of tag 2 moved into VALID tag 1: neither owner gets the wrong extent. */
static void test_record_moved_to_other_tag(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint32_t id;

	commit_tag(f, 1, "a", 0, 2, 0x11);
	commit_tag(f, 2, "b", 4, 2, 0x22);
	commit_tag(f, 3, "c", 8, 1, 0x33);
	set_rec(f, 5, layout_rec(EXT_COMMITTED, 1, 2));
	expect_checker(f, CHECK_INCONSISTENT, "tag 'a' (uid 1000, slot 1) was committed with 2");

	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(region_tag_lookup(r, "a", 1000, &id), -ENOENT);
	assert_int_equal(region_tag_lookup(r, "b", 1000, &id), -ENOENT);
	assert_int_equal(region_tag_lookup(r, "c", 1000, &id), 0); /* intact: still there */
	assert_int_equal(count_of(r, EXT_BAD), 4);
	assert_int_equal(count_of(r, EXT_COMMITTED), 1);
	zero_all(r);
	region_close(r);
	for (uint64_t i = 0; i < 2; i++)
		assert_true(extent_is(f, i, 0x11) && extent_is(f, 4 + i, 0x22));
}

/* A zeroed block of the extent table: the records of a tag look DIRTY. */
static void test_zeroed_extent_table_refused(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	static uint8_t zero[LAYOUT_BLOCK];
	uint8_t *before, *after;

	commit_tag(f, 1, "precious", 10, 4, 0x5a);
	set_rec(f, 20, layout_rec(EXT_ZEROED, 0, 1));
	write_at(f->path, f->h.extent_table_off, zero, sizeof(zero));
	expect_checker(f, CHECK_UNUSABLE, "no damaged record accounts for them");

	before = read_all(f);
	assert_int_equal(region_open(&f->rc, &r), -EUCLEAN);
	assert_null(r);
	after = read_all(f);
	assert_memory_equal(before, after, f->rc.size);
	free(after);
	free(before);

	/* only some of its records (two 8-byte words) */
	commit_tag(f, 1, "precious", 10, 4, 0x5a);
	set_rec(f, 11, 0);
	set_rec(f, 13, 0);
	before = read_all(f);
	assert_int_equal(region_open(&f->rc, &r), -EUCLEAN);
	after = read_all(f);
	assert_memory_equal(before, after, f->rc.size);
	free(after);
	free(before);

	/* damaged records account for the missing ones: open, quarantined */
	set_rec(f, 11, layout_rec(9, 0, 0));
	set_rec(f, 13, layout_rec(EXT_ZEROED, 1, 2));
	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(count_of(r, EXT_BAD), 4);
	zero_all(r);
	region_close(r);
	for (uint64_t i = 10; i < 14; i++)
		assert_true(extent_is(f, i, 0x5a));
}

/* Both header blocks wiped over a used region: refused, not formatted. */
static void test_wiped_headers_refused(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	static uint8_t zero[2 * LAYOUT_BLOCK];
	uint8_t *before, *after;

	commit_tag(f, 1, "precious", 3, 2, 0x77);
	for (uint64_t i = 5; i < 40; i++)
		set_rec(f, i, layout_rec(EXT_ZEROED, 0, 1));
	write_at(f->path, 0, zero, sizeof(zero));
	expect_checker(f, CHECK_UNUSABLE, "not a pmemzerod region");

	before = read_all(f);
	assert_int_equal(region_open(&f->rc, &r), -EUCLEAN);
	assert_null(r);
	after = read_all(f);
	assert_memory_equal(before, after, f->rc.size);
	free(after);
	free(before);

	/* A region wiped before it was ever used (all-zero tables): formatted. */
	before = calloc(1, f->h.data_off);
	assert_non_null(before);
	write_at(f->path, 0, before, f->h.data_off);
	free(before);
	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(count_of(r, EXT_COMMITTED), 0);
	region_close(r);
	expect_checker(f, CHECK_CLEAN, NULL);
}

/*
 * Power failed while a format wrote the backup header (found by the
 * power-failure sweep, tests/crash): the primary is blank, the backup is a
 * torn header (some 8-byte words written, the rest still zero), the tables
 * are zero.  That is a format to finish, not damage; anything more is
 * refused.
 */
static void test_torn_format(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint8_t hdr[LAYOUT_BLOCK], *before, *after;
	static uint8_t zero[256 * KiB];
	uint64_t w;

	/* the region as the format left it: tables zero, headers blank */
	assert_true(f->h.data_off <= sizeof(zero));
	write_at(f->path, 0, zero, f->h.data_off);
	/* the backup: magic and geometry words written, uuid, time and checksum not */
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, &f->h, sizeof(f->h));
	memset(hdr + 16, 0, 16);				      /* uuid */
	memset(hdr + 96, 0, 8);					      /* format_time */
	memset(hdr + offsetof(struct layout_header, checksum), 0, 4); /* checksum */
	write_at(f->path, LAYOUT_BACKUP_OFF, hdr, sizeof(hdr));
	expect_checker(f, CHECK_UNUSABLE, "both headers are unusable");

	/* with a record in the table it is not a format in progress: refused */
	set_rec(f, 7, layout_rec(EXT_ZEROED, 0, 1));
	before = read_all(f);
	assert_int_equal(region_open(&f->rc, &r), -EUCLEAN);
	after = read_all(f);
	assert_memory_equal(before, after, f->rc.size);
	free(after);
	free(before);
	set_rec(f, 7, 0);

	/* a word a format never writes: refused */
	w = 0x1234;
	write_at(f->path, LAYOUT_BACKUP_OFF + 512, &w, sizeof(w));
	assert_int_equal(region_open(&f->rc, &r), -EUCLEAN);
	w = 0;
	write_at(f->path, LAYOUT_BACKUP_OFF + 512, &w, sizeof(w));
	/* a known word with the wrong value (another region size): refused */
	w = f->rc.size * 2;
	write_at(f->path, LAYOUT_BACKUP_OFF + 32, &w, sizeof(w));
	assert_int_equal(region_open(&f->rc, &r), -EUCLEAN);
	w = f->rc.size;
	write_at(f->path, LAYOUT_BACKUP_OFF + 32, &w, sizeof(w));

	/* the interrupted format is finished */
	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(count_of(r, EXT_DIRTY) + count_of(r, EXT_ZEROED), f->h.extent_count);
	region_close(r);
	expect_checker(f, CHECK_CLEAN, NULL);
}

/*
 * Power failed while the primary header was written (format step 4, or a
 * repair from the backup; found by the power-failure sweep): the magic word
 * did not make it, other words did.  That is our header, half written, not
 * a foreign one: use the backup and repair it.  One word that is not the
 * backup's makes it foreign again.
 */
static void test_torn_primary(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint8_t blk[LAYOUT_BLOCK], now[LAYOUT_BLOCK];
	uint64_t w;

	commit_tag(f, 1, "kept", 2, 2, 0x3c);
	read_at(f->path, LAYOUT_BACKUP_OFF, blk, sizeof(blk));
	memset(blk, 0, 8);	 /* magic */
	memset(blk + 40, 0, 16); /* extent_size, extent_count */
	memset(blk + 248, 0, 8); /* checksum */
	write_at(f->path, 0, blk, sizeof(blk));
	expect_checker(f, CHECK_INCONSISTENT, "a torn copy of the backup");

	w = 0x5a5a;
	write_at(f->path, 200, &w, sizeof(w)); /* reserved: never written */
	assert_int_equal(region_open(&f->rc, &r), -EMEDIUMTYPE);
	w = 0;
	write_at(f->path, 200, &w, sizeof(w));

	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(count_of(r, EXT_COMMITTED), 2);
	region_close(r);
	read_at(f->path, 0, now, sizeof(now));
	read_at(f->path, LAYOUT_BACKUP_OFF, blk, sizeof(blk));
	assert_memory_equal(now, blk, sizeof(now));
	expect_checker(f, CHECK_CLEAN, NULL);
}

/* A half-made commit rolled back at recovery frees its slot for reuse at once. */
static void test_written_slot_reused(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	struct run *runs = NULL;
	size_t n_runs = 0;
	uint64_t n = f->h.extent_count;
	char name[16];

	assert_int_equal(f->h.tag_count, n);
	/* every slot but 1 holds a tag of one extent; slot 1 is a half-made commit */
	for (uint32_t id = 2; id <= n; id++) {
		snprintf(name, sizeof(name), "t%u", id);
		commit_tag(f, id, name, id - 1, 1, 0x01);
	}
	set_slot(f, 1, TAG_WRITTEN, 1000, "half", 1);
	set_rec(f, 0, layout_rec(EXT_COMMITTED, 1, 2));

	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(count_of(r, EXT_COMMITTED), n - 1);
	zero_all(r);
	assert_int_equal(region_lease(r, 1, &runs, &n_runs), 0);
	assert_int_equal(region_commit(r, runs, n_runs, "again", 1000, false), 0);
	assert_int_equal(region_sync(r), 3);
	free(runs);
	region_close(r);
	expect_checker(f, CHECK_CLEAN, NULL);
}

/* ---- the checker and recovery agree on whether an image is usable ---- */

static void reseal_primary(struct fx *f, void (*edit)(struct layout_header *h))
{
	struct layout_header h = f->h;

	edit(&h);
	layout_header_seal(&h);
	write_at(f->path, LAYOUT_PRIMARY_OFF, &h, sizeof(h));
}

static void newer_version(struct layout_header *h)
{
	h->version = LAYOUT_VERSION + 1;
}

static void unknown_incompat(struct layout_header *h)
{
	h->incompat |= UINT64_C(1) << 17;
}

static void unknown_ro_compat(struct layout_header *h)
{
	h->ro_compat |= UINT64_C(1) << 0;
}

static void unknown_compat(struct layout_header *h)
{
	h->compat |= UINT64_C(1) << 63;
}

/* What every earlier build wrote: layout version 1, no masks. */
static void version_1(struct layout_header *h)
{
	h->version = 1;
	h->incompat = 0;
}

/* Both headers edited and resealed. */
static void reseal_both(struct fx *f, void (*edit)(struct layout_header *h))
{
	struct layout_header h = f->h;

	edit(&h);
	layout_header_seal(&h);
	write_at(f->path, LAYOUT_PRIMARY_OFF, &h, sizeof(h));
	write_at(f->path, LAYOUT_BACKUP_OFF, &h, sizeof(h));
}

static void resize_file(struct fx *f, uint64_t size)
{
	assert_int_equal(truncate(f->path, (off_t)size), 0);
}

static void dmg_none(struct fx *f)
{
	commit_tag(f, 1, "kept", 2, 2, 0x11);
}

static void dmg_foreign_primary(struct fx *f)
{
	dmg_none(f);
	write_at(f->path, LAYOUT_PRIMARY_OFF, "NOTOURS!", 8);
}

static void dmg_newer_primary(struct fx *f)
{
	dmg_none(f);
	reseal_primary(f, newer_version);
}

static void dmg_incompat(struct fx *f)
{
	dmg_none(f);
	reseal_both(f, unknown_incompat);
}

static void dmg_incompat_backup(struct fx *f)
{
	struct layout_header h = f->h;

	dmg_none(f);
	unknown_incompat(&h);
	layout_header_seal(&h);
	write_at(f->path, LAYOUT_BACKUP_OFF, &h, sizeof(h));
}

static void dmg_incompat_torn_primary(struct fx *f)
{
	static uint8_t zero[LAYOUT_BLOCK];

	dmg_incompat(f);
	write_at(f->path, LAYOUT_PRIMARY_OFF, zero, sizeof(zero));
}

static void dmg_ro_compat(struct fx *f)
{
	dmg_none(f);
	/* A crash state too: recovery would write, the refusal must not. */
	set_rec(f, 9, layout_rec(EXT_LEASED, 0, 3));
	reseal_both(f, unknown_ro_compat);
}

static void dmg_compat(struct fx *f)
{
	dmg_none(f);
	reseal_both(f, unknown_compat);
}

static void dmg_version_1(struct fx *f)
{
	dmg_none(f);
	reseal_both(f, version_1);
}

static void dmg_corrupt_primary(struct fx *f)
{
	uint64_t w = 0x5a5a;

	dmg_none(f);
	write_at(f->path, 200, &w, sizeof(w));
}

static void dmg_both_corrupt(struct fx *f)
{
	uint64_t w = 0x5a5a;

	dmg_corrupt_primary(f);
	write_at(f->path, LAYOUT_BACKUP_OFF + 200, &w, sizeof(w));
}

static void dmg_grown(struct fx *f)
{
	resize_file(f, f->h.region_size + LAYOUT_BLOCK);
}

static void dmg_truncated(struct fx *f)
{
	resize_file(f, f->h.region_size - LAYOUT_BLOCK);
}

static void dmg_odd_tail(struct fx *f)
{
	resize_file(f, f->h.region_size + 100);
}

static void dmg_zeroed_table_block(struct fx *f)
{
	static uint8_t zero[LAYOUT_BLOCK];

	commit_tag(f, 1, "precious", 10, 4, 0x5a);
	write_at(f->path, f->h.extent_table_off, zero, sizeof(zero));
}

/* Refused by recovery, with a header copy to repair: the repair is not written either. */
static void dmg_missing_backup_corrupt(struct fx *f)
{
	uint64_t w = 0x5a5a;

	dmg_zeroed_table_block(f);
	write_at(f->path, LAYOUT_BACKUP_OFF + 200, &w, sizeof(w));
}

static void dmg_missing_accounted(struct fx *f)
{
	commit_tag(f, 1, "precious", 10, 4, 0x5a);
	set_rec(f, 11, layout_rec(9, 0, 0));
	set_rec(f, 13, layout_rec(EXT_ZEROED, 1, 2));
}

static void dmg_tag_flip(struct fx *f)
{
	commit_tag(f, 1, "precious", 4, 3, 0xa5);
	set_rec(f, 5, layout_rec(EXT_COMMITTED, 1 ^ 2, 2));
}

static void dmg_wiped_headers(struct fx *f)
{
	static uint8_t zero[2 * LAYOUT_BLOCK];

	commit_tag(f, 1, "precious", 3, 2, 0x77);
	write_at(f->path, 0, zero, sizeof(zero));
}

static const struct damage {
	const char *name;
	void (*apply)(struct fx *f);
	enum media_refusal refusal; /* the verdict both must give */
} damages[] = {
    {"none", dmg_none, REFUSE_NONE},
    {"foreign primary over a valid backup", dmg_foreign_primary, REFUSE_FOREIGN},
    {"newer-version primary over a valid backup", dmg_newer_primary, REFUSE_UNSUPPORTED},
    {"unknown incompat features", dmg_incompat, REFUSE_INCOMPAT},
    {"unknown incompat features in the backup", dmg_incompat_backup, REFUSE_INCOMPAT},
    {"unknown incompat features, primary blank", dmg_incompat_torn_primary, REFUSE_INCOMPAT},
    {"unknown ro_compat features", dmg_ro_compat, REFUSE_RO_COMPAT},
    {"unknown compat features", dmg_compat, REFUSE_NONE},
    {"layout version 1", dmg_version_1, REFUSE_NONE},
    {"corrupt primary", dmg_corrupt_primary, REFUSE_NONE},
    {"both headers corrupt", dmg_both_corrupt, REFUSE_NO_HEADER},
    {"image grown", dmg_grown, REFUSE_SIZE},
    {"image truncated", dmg_truncated, REFUSE_SIZE},
    {"image with a partial block at its end", dmg_odd_tail, REFUSE_SIZE},
    {"committed extents missing (zeroed table block)", dmg_zeroed_table_block, REFUSE_MISSING},
    {"committed extents missing, the backup header corrupt", dmg_missing_backup_corrupt,
     REFUSE_MISSING},
    {"missing extents accounted for by damaged records", dmg_missing_accounted, REFUSE_NONE},
    {"tag id flipped to a free slot", dmg_tag_flip, REFUSE_NONE},
    {"headers wiped over a used region", dmg_wiped_headers, REFUSE_BLANK},
};

/* The whole file, whatever its size now; *len gets it. */
static uint8_t *whole_file(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *b;

	assert_int_equal(stat(path, &st), 0);
	*len = (size_t)st.st_size;
	b = malloc(*len + 1);
	assert_non_null(b);
	read_at(path, 0, b, *len);
	return b;
}

/* The reason is on a problem line (damage) or the unsupported line, as the daemon logs it. */
static bool reason_named(const struct check_report *rep, enum media_refusal why)
{
	bool named = strstr(rep->unsupported, media_refusal_str(why)) != NULL;

	for (size_t i = 0; i < rep->n_problems; i++)
		named |= strstr(rep->problems[i], media_refusal_str(why)) != NULL;
	return named;
}

/*
 * For each damage: check_image unusable or unsupported <=> region_open
 * fails, unsupported exactly for a newer build's format, and the checker
 * names the media module's reason (fuzz-media's oracle, pinned).  A
 * refused region is left byte for byte as it was (a blank one aside,
 * which the daemon may format).  The region is opened as it is, at its
 * size (no configured size, as pmemzctl check sees it).
 */
static void test_checker_agrees(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(damages) / sizeof(damages[0]); k++) {
		const struct damage *d = &damages[k];
		struct region *r = NULL;
		struct check_report rep;
		void *fs = NULL;
		uint8_t *before, *after;
		size_t len_before, len_after;
		bool refused;
		struct fx *f;
		int ret;

		assert_int_equal(fx_setup(&fs), 0);
		f = fs;
		f->rc.size = 0;
		d->apply(f);
		assert_int_equal(check_path(f->path, 0, &rep), 0);
		refused = rep.status == CHECK_UNUSABLE || rep.status == CHECK_UNSUPPORTED;
		before = whole_file(f->path, &len_before);
		ret = region_open(&f->rc, &r);
		if (ret == 0)
			region_close(r);
		if (rep.refusal != d->refusal || refused != (ret < 0) ||
		    refused != (rep.refusal != REFUSE_NONE) ||
		    (rep.status == CHECK_UNSUPPORTED) != media_refusal_unsupported(d->refusal)) {
			for (size_t i = 0; i < rep.n_problems; i++)
				print_message("  problem: %s\n", rep.problems[i]);
			fail_msg("%s: checker %s (%s), want %s; region_open: %s", d->name,
				 check_status_str(rep.status), media_refusal_str(rep.refusal),
				 media_refusal_str(d->refusal), ret ? strerror(-ret) : "ok");
		}
		if (d->refusal != REFUSE_NONE)
			assert_true(reason_named(&rep, d->refusal));
		if (ret < 0 && d->refusal != REFUSE_BLANK) {
			after = whole_file(f->path, &len_after);
			if (len_after != len_before || memcmp(before, after, len_before) != 0)
				fail_msg("%s: refused, but region_open wrote to it", d->name);
			free(after);
		}
		free(before);
		check_report_free(&rep);
		fx_teardown(&fs);
	}
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
	    T(test_tag_flip_to_free_slot),
	    T(test_record_moved_to_other_tag),
	    T(test_zeroed_extent_table_refused),
	    T(test_wiped_headers_refused),
	    T(test_torn_format),
	    T(test_torn_primary),
	    cmocka_unit_test_setup_teardown(test_written_slot_reused, fx_setup_small, fx_teardown),
	    cmocka_unit_test(test_checker_agrees),
	};

	log_set_max_level(getenv("PMEMZ_TEST_VERBOSE") ? LOG_DEBUG : LOG_CRIT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
