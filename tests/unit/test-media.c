/* SPDX-License-Identifier: MIT */
/*
 * Damaged media that used to look like a crash, and the crash states that
 * must not look like damage (docs/on-media-format.md):
 *
 *  - a zeroed block of the tag table made committed tags' records name FREE
 *    slots, which recovery took for a half-done free: the tags vanished and
 *    their extents were zeroed and handed out.  Now no crash leaves a
 *    COMMITTED record under a FREE slot (commit: slot body and WRITTEN
 *    durable before the records; free: FREEING, records DIRTY, then FREE),
 *    so recovery quarantines such extents and the checker reports them;
 *  - a single bit flip turned one valid state into another (DIRTY -> ZEROED
 *    handed out stale data, VALID -> FREE released a tag).  Now every two
 *    valid codes differ in several bits and a flip makes damage;
 *  - the crash points of the new commit and free protocols (images taken at
 *    each drain of region_sync) all recover to "all or nothing".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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
#include "util.h"


static const unsigned all_states[] = {EXT_DIRTY, EXT_ZEROED, EXT_LEASED, EXT_COMMITTED, EXT_BAD};
static const uint64_t all_tag_words[] = {TAG_FREE, TAG_WRITTEN, TAG_VALID, TAG_FREEING};

/* ---- files ---- */

#include "media-fixture.h"

const char *fx_region_name = "media";

/* Lease every ZEROED extent: none may be in [bad, bad + n_bad). */
static void lease_all_but(struct region *r, const uint64_t *bad, size_t n_bad)
{
	struct run *runs = NULL;
	size_t n_runs = 0;
	uint64_t n = region_count_zeroed(r);

	if (n == 0)
		return;
	assert_int_equal(region_lease(r, n, &runs, &n_runs), 0);
	for (size_t k = 0; k < n_runs; k++)
		for (size_t b = 0; b < n_bad; b++)
			assert_false(bad[b] >= runs[k].first &&
				     bad[b] < runs[k].first + runs[k].count);
	region_unlease(r, runs, n_runs);
	(void)region_sync(r);
	free(runs);
}

/* Check the file; assert the status and (if needle) a problem containing it. */
static void expect_checker(struct fx *f, unsigned flags, enum check_status st, const char *needle,
			   struct check_report *out)
{
	struct check_report rep;
	bool found = !needle;

	assert_int_equal(check_path(f->path, flags, &rep), 0);
	for (size_t i = 0; needle && i < rep.n_problems; i++)
		found |= strstr(rep.problems[i], needle) != NULL;
	if (rep.status != st || !found) {
		for (size_t i = 0; i < rep.n_problems; i++)
			print_message("  problem: %s\n", rep.problems[i]);
		for (size_t i = 0; i < rep.n_notes; i++)
			print_message("  note: %s\n", rep.notes[i]);
		fail_msg("checker: status %s, want %s with \"%s\"", check_status_str(rep.status),
			 check_status_str(st), needle ? needle : "");
	}
	if (out)
		*out = rep;
	else
		check_report_free(&rep);
}

/* ---- stderr capture (the daemon's log) ---- */

struct capture {
	char path[128];
	int saved;
	int level;
};

static void capture_start(struct capture *c)
{
	int fd;

	snprintf(c->path, sizeof(c->path), "%s/pmemz-media-log-XXXXXX", tmp_dir());
	fd = mkstemp(c->path);
	assert_true(fd >= 0);
	fflush(stderr);
	c->saved = dup(2);
	assert_true(c->saved >= 0);
	assert_true(dup2(fd, 2) == 2);
	close(fd);
	c->level = log_get_max_level();
	log_set_max_level(LOG_ERR);
}

/* The captured text (malloc'ed). */
static char *capture_end(struct capture *c)
{
	struct stat st;
	char *buf;

	fflush(stderr);
	assert_true(dup2(c->saved, 2) == 2);
	close(c->saved);
	log_set_max_level(c->level);
	assert_int_equal(stat(c->path, &st), 0);
	buf = calloc(1, (size_t)st.st_size + 1);
	assert_non_null(buf);
	read_at(c->path, 0, buf, (size_t)st.st_size);
	(void)unlink(c->path);
	return buf;
}

static void assert_contains(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("\"%s\" not in:\n%s", needle, text);
}

/* ---- 1. the encodings ---- */

static unsigned popcount64(uint64_t x)
{
	return (unsigned)__builtin_popcountll(x);
}

static bool valid_state(unsigned s)
{
	return s < EXT_NSTATES;
}

/* Every two valid codes differ in >= 4 bits; no 1, 2 or 3 flips make another state. */
static void test_extent_state_codes(void **state)
{
	unsigned valid = 0;

	(void)state;
	/* DIRTY is 0: a zeroed table is all DIRTY, generation 0, no tag. */
	assert_true(layout_rec(EXT_DIRTY, 0, 0) == 0);
	assert_int_equal(layout_rec_state(0), EXT_DIRTY);
	for (size_t a = 0; a < ARRAY_SIZE(all_states); a++) {
		uint64_t rec = layout_rec(all_states[a], 0x123456, 0xfeedf00d);

		/* the one mapping, both ways; the other fields untouched */
		assert_int_equal(layout_rec_state(rec), all_states[a]);
		assert_int_equal(layout_rec_tag(rec), 0x123456);
		assert_int_equal(layout_rec_gen(rec), 0xfeedf00d);
		assert_int_equal(layout_code_state(layout_state_code(all_states[a])),
				 all_states[a]);
		for (size_t b = a + 1; b < ARRAY_SIZE(all_states); b++)
			assert_true(popcount64(layout_state_code(all_states[a]) ^
					       layout_state_code(all_states[b])) >= 4);
		/* ZEROED hands out data as zero: the farthest from everything */
		if (all_states[a] != EXT_ZEROED)
			assert_true(
			    popcount64(layout_state_code(all_states[a]) ^ LAYOUT_REC_ZEROED) >= 5);
	}
	assert_true(popcount64(LAYOUT_REC_DIRTY ^ LAYOUT_REC_ZEROED) >= 7);
	/* exactly five codes are valid */
	for (unsigned code = 0; code < 256; code++)
		valid += valid_state(layout_code_state(code));
	assert_int_equal(valid, EXT_NSTATES);
	assert_false(valid_state(layout_rec_state(layout_rec(EXT_NSTATES, 0, 0))));

	/* every flip of up to 3 bits of the state byte of a valid record: unknown */
	for (size_t a = 0; a < ARRAY_SIZE(all_states); a++) {
		uint64_t rec = layout_rec(all_states[a], 0, 7);

		for (unsigned m = 1; m < 256; m++) {
			unsigned s;

			if (popcount64(m) > 3)
				continue;
			s = layout_rec_state(rec ^ m);
			if (valid_state(s))
				fail_msg("state %u with bits 0x%02x flipped reads as state %u",
					 all_states[a], m, s);
		}
	}
}

static void test_tag_state_words(void **state)
{
	(void)state;
	assert_true(TAG_FREE == 0); /* a zeroed table is all FREE */
	for (size_t a = 0; a < ARRAY_SIZE(all_tag_words); a++) {
		for (size_t b = a + 1; b < ARRAY_SIZE(all_tag_words); b++)
			assert_true(popcount64(all_tag_words[a] ^ all_tag_words[b]) >= 32);
		for (unsigned bit = 0; bit < 64; bit++)
			for (size_t b = 0; b < ARRAY_SIZE(all_tag_words); b++)
				assert_true((all_tag_words[a] ^ (1ull << bit)) != all_tag_words[b]);
	}
}

/* A flipped bit in any record's state byte, on media: quarantined, never handed out. */
static void test_flipped_records(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint64_t bad[8 * ARRAY_SIZE(all_states)];
	size_t n = 0;
	struct check_report rep;

	assert_true(f->h.extent_count >= ARRAY_SIZE(bad) + 8);
	set_slot(f, 1, TAG_VALID, 1000, "t", 1); /* COMMITTED records name it */
	set_rec(f, 60, layout_rec(EXT_COMMITTED, 1, 2));
	fill_extent(f, 60, 0x11);
	for (size_t a = 0; a < ARRAY_SIZE(all_states); a++)
		for (unsigned bit = 0; bit < 8; bit++, n++) {
			uint32_t tag = all_states[a] == EXT_COMMITTED ? 1 : 0;

			set_rec(f, n, layout_rec(all_states[a], tag, 3) ^ (1ull << bit));
			fill_extent(f, n, 0xee); /* stale data */
			bad[n] = n;
		}
	expect_checker(f, 0, CHECK_INCONSISTENT, "unknown state code", &rep);
	assert_int_equal(rep.invalid_records, n);
	assert_int_equal(rep.count[EXT_ZEROED], 0);
	check_report_free(&rep);

	assert_int_equal(region_open(&f->rc, &r), 0);
	/* every flipped record quarantined: none became another state */
	assert_int_equal(count_of(r, EXT_BAD), n);
	assert_int_equal(count_of(r, EXT_ZEROED), 0);
	assert_int_equal(count_of(r, EXT_LEASED) + count_of(r, EXT_COMMITTED), 1);
	assert_int_equal(region_tag_next(r, 0), 1); /* the intact tag */
	zero_all(r);
	lease_all_but(r, bad, n);
	region_close(r);
	for (size_t i = 0; i < n; i++) {
		assert_true(extent_is(f, i, 0xee)); /* never zeroed */
		assert_false(layout_rec_state(get_rec(f, i)) < EXT_NSTATES);
	}
	assert_true(extent_is(f, 60, 0x11));
}

/* A flipped bit of a VALID slot's state word: the tag is hidden, its extents quarantined. */
static void test_flipped_slot_state(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint32_t id;

	set_slot(f, 2, TAG_VALID, 1000, "keep", 2);
	for (uint64_t i = 4; i < 6; i++) {
		set_rec(f, i, layout_rec(EXT_COMMITTED, 2, 2));
		fill_extent(f, i, 0x42);
	}
	for (unsigned bit = 0; bit < 64; bit += 1) {
		uint64_t w = TAG_VALID ^ (1ull << bit);

		write_at(f->path, slot_off(f, 2), &w, sizeof(w));
		assert_int_equal(region_open(&f->rc, &r), 0);
		assert_int_equal(region_tag_lookup(r, "keep", 1000, &id), -ENOENT);
		assert_int_equal(count_of(r, EXT_BAD), 2);
		assert_int_equal(count_of(r, EXT_COMMITTED), 0);
		region_close(r);
		assert_true(get_rec(f, 4) == layout_rec(EXT_COMMITTED, 2, 2));
	}
	expect_checker(f, CHECK_RECOVERED, CHECK_INCONSISTENT, "unknown state word", NULL);
	{
		uint64_t w = TAG_VALID;
		write_at(f->path, slot_off(f, 2), &w, sizeof(w));
	}
	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(region_tag_lookup(r, "keep", 1000, &id), 0);
	region_close(r);
	assert_true(extent_is(f, 4, 0x42) && extent_is(f, 5, 0x42));
	expect_checker(f, CHECK_RECOVERED, CHECK_CLEAN, NULL, NULL);
}

/* ---- 2. a zeroed block of the tag table ---- */

/* Lease n extents, write v into them, commit them as tag name; returns the tag id. */
static uint32_t commit_new(struct region *r, const char *name, uint64_t n, uint8_t v, uint64_t *ext)
{
	struct run *runs = NULL;
	size_t n_runs = 0, k = 0;
	uint32_t id;

	assert_int_equal(region_lease(r, n, &runs, &n_runs), 0);
	assert_int_equal(region_sync(r), 1);
	for (size_t j = 0; j < n_runs; j++)
		for (uint64_t i = runs[j].first; i < runs[j].first + runs[j].count; i++) {
			memset(region_extent_addr(r, i), v, r->extent_size);
			ext[k++] = i;
		}
	assert_int_equal(region_commit(r, runs, n_runs, name, 1000, true), 0);
	assert_int_equal(region_sync(r), 3);
	assert_int_equal(region_tag_lookup(r, name, 1000, &id), 0);
	free(runs);
	return id;
}

static void test_zeroed_tag_table(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	static uint8_t zero[LAYOUT_BLOCK];
	uint64_t ext[4];
	uint32_t id_a, id_b, id;
	struct capture cap;
	struct check_report rep;
	char *log, want[128];

	assert_int_equal(region_open(&f->rc, &r), 0);
	zero_all(r);
	id_a = commit_new(r, "precious", 3, 0xa5, ext);
	id_b = commit_new(r, "other", 1, 0x5a, ext + 3);
	region_close(r);
	expect_checker(f, CHECK_RECOVERED, CHECK_CLEAN, NULL, NULL);

	/* Both slots are in the first block of the tag table. */
	assert_true(slot_off(f, MAX(id_a, id_b)) < f->h.tag_table_off + LAYOUT_BLOCK);
	write_at(f->path, f->h.tag_table_off, zero, sizeof(zero));

	/* The checker: a problem (damage), not a note (a crash recovery resolves). */
	expect_checker(f, 0, CHECK_INCONSISTENT,
		       "which is blank (a zeroed block of the tag table?)", &rep);
	assert_int_equal(rep.release_extents + rep.rollback_extents, 0);
	assert_int_equal(rep.n_notes, 0);
	check_report_free(&rep);

	capture_start(&cap);
	assert_int_equal(region_open(&f->rc, &r), 0);
	log = capture_end(&cap);
	/* logged at error level, naming the region, the tag ids and the extents */
	assert_contains(log, "error: region 'media': tag id");
	snprintf(want, sizeof(want), "tag id %u (slot at offset %llu) is blank", id_a,
		 (unsigned long long)slot_off(f, id_a));
	assert_contains(log, want);
	snprintf(want, sizeof(want), "3 COMMITTED records name it (extents %llu",
		 (unsigned long long)ext[0]);
	assert_contains(log, want);
	snprintf(want, sizeof(want), "tag id %u", id_b);
	assert_contains(log, want);
	assert_contains(log, "quarantin");
	free(log);

	/* hidden, quarantined: never zeroed, never handed out */
	assert_int_equal(region_tag_lookup(r, "precious", 1000, &id), -ENOENT);
	assert_int_equal(region_tag_lookup(r, "other", 1000, &id), -ENOENT);
	assert_int_equal(region_tag_next(r, 0), 0);
	assert_int_equal(count_of(r, EXT_BAD), 4);
	assert_int_equal(count_of(r, EXT_COMMITTED), 0);
	zero_all(r);
	lease_all_but(r, ext, 4);
	zero_all(r);
	/* a new tag never takes the orphaned slots (it would adopt their records) */
	{
		uint64_t e2[1];
		uint32_t id_c = commit_new(r, "new", 1, 0x77, e2);

		assert_int_not_equal(id_c, id_a);
		assert_int_not_equal(id_c, id_b);
		assert_int_equal(region_tag_free(r, id_c, NULL), 0);
		assert_int_equal(region_sync(r), 2);
	}
	region_close(r);

	for (int k = 0; k < 3; k++) {
		assert_true(extent_is(f, ext[k], 0xa5));
		assert_true(get_rec(f, ext[k]) ==
			    layout_rec(EXT_COMMITTED, id_a, layout_rec_gen(get_rec(f, ext[k]))));
	}
	assert_true(extent_is(f, ext[3], 0x5a));
	/* the same on every start; the damage stays for the operator */
	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(count_of(r, EXT_BAD), 4);
	region_close(r);
	expect_checker(f, CHECK_RECOVERED, CHECK_INCONSISTENT, "which is blank", NULL);
}

/* COMMITTED under a WRITTEN or FREEING slot whose body is not the durable one: damage. */
static void test_pending_slot_damage(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	struct layout_tag t;
	uint32_t id;

	/* slot 1 WRITTEN, torn body: its records are not a commit to roll back */
	set_slot(f, 1, TAG_WRITTEN, 1000, "torn", 2);
	get_slot(f, 1, &t);
	t.checksum ^= 0x100;
	write_at(f->path, slot_off(f, 1), &t, sizeof(t));
	/* slot 2 FREEING, more records than it was committed with */
	set_slot(f, 2, TAG_FREEING, 1000, "short", 1);
	/* slot 3 FREE but not blank (the old protocol's half-done free): damage too */
	set_slot(f, 3, TAG_FREE, 1000, "old", 1);
	/* slot 4 a good VALID tag */
	set_slot(f, 4, TAG_VALID, 1000, "good", 1);
	for (uint64_t i = 0; i < 6; i++) {
		uint32_t tag = i < 2 ? 1 : i < 4 ? 2 : i < 5 ? 3 : 4;

		set_rec(f, i, layout_rec(EXT_COMMITTED, tag, 2));
		fill_extent(f, i, (uint8_t)(0x30 + i));
	}
	expect_checker(f, 0, CHECK_INCONSISTENT, "its checksum is wrong", NULL);
	expect_checker(f, 0, CHECK_INCONSISTENT, "it was committed with fewer extents", NULL);
	expect_checker(f, 0, CHECK_INCONSISTENT, "name tag slot 3, which is FREE: media damage",
		       NULL);

	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(count_of(r, EXT_BAD), 5);
	assert_int_equal(count_of(r, EXT_COMMITTED), 1);
	assert_int_equal(region_tag_lookup(r, "good", 1000, &id), 0);
	assert_int_equal(id, 4);
	zero_all(r);
	region_close(r);
	for (uint64_t i = 0; i < 6; i++) {
		assert_true(extent_is(f, i, (uint8_t)(0x30 + i)));
		assert_int_equal(layout_rec_state(get_rec(f, i)), EXT_COMMITTED);
	}
	/* left as they were */
	get_slot(f, 1, &t);
	assert_true(t.state == TAG_WRITTEN);
	get_slot(f, 2, &t);
	assert_true(t.state == TAG_FREEING);
}

/* ---- 3. the crash points of commit and free ---- */

/*
 * A tracer that copies the whole region at each of the main thread's drains:
 * the image a power failure right after that drain leaves (everything stored
 * before it durable, nothing after it stored).
 */
#define MAX_SNAPS 4
struct snaps {
	const uint8_t *base;
	size_t size;
	pthread_t main;
	unsigned n;
	uint8_t *img[MAX_SNAPS];
};

static void sn_store(void *ctx, const void *dst, size_t len, bool nt)
{
	(void)ctx, (void)dst, (void)len, (void)nt;
}
static void sn_flush(void *ctx, const void *p, size_t len)
{
	(void)ctx, (void)p, (void)len;
}
static void sn_drain(void *ctx)
{
	struct snaps *s = ctx;

	if (!pthread_equal(pthread_self(), s->main))
		return;
	assert_true(s->n < MAX_SNAPS);
	s->img[s->n] = malloc(s->size);
	assert_non_null(s->img[s->n]);
	memcpy(s->img[s->n], s->base, s->size);
	s->n++;
}

static void snaps_start(struct snaps *s, struct region *r, struct pstore_tracer *t)
{
	struct pstore *ps = region_get_pstore(r);

	memset(s, 0, sizeof(*s));
	s->base = pstore_base(ps);
	s->size = pstore_size(ps);
	s->main = pthread_self();
	*t = (struct pstore_tracer){sn_store, sn_flush, sn_drain, s};
	pstore_set_tracer(ps, t);
}

static void snaps_stop(struct snaps *s, struct region *r)
{
	(void)s;
	pstore_set_tracer(region_get_pstore(r), NULL);
}

static void snaps_free(struct snaps *s)
{
	for (unsigned k = 0; k < s->n; k++)
		free(s->img[k]);
	s->n = 0;
}

static uint64_t img_rec(struct fx *f, const uint8_t *img, uint64_t i)
{
	uint64_t rec;

	memcpy(&rec, img + f->h.extent_table_off + i * 8, sizeof(rec));
	return rec;
}

static const struct layout_tag *img_slot(struct fx *f, const uint8_t *img, uint32_t id)
{
	return (const struct layout_tag *)(img + slot_off(f, id));
}

/*
 * Put img in the file, check it raw (clean: only what recovery resolves),
 * recover it, check the result (clean as a recovered image).  Returns the
 * region, open.
 */
static struct region *recover_image(struct fx *f, const uint8_t *img)
{
	struct region *r = NULL;

	write_at(f->path, 0, img, f->rc.size);
	expect_checker(f, 0, CHECK_CLEAN, NULL, NULL);
	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_int_equal(region_index_verify(r), 0);
	assert_int_equal(count_of(r, EXT_LEASED), 0);
	assert_int_equal(count_of(r, EXT_BAD), 0);
	return r;
}

static void close_recovered(struct fx *f, struct region *r)
{
	region_close(r);
	expect_checker(f, CHECK_RECOVERED, CHECK_CLEAN, NULL, NULL);
}

/* The tag is there with its extents and data, or (want == false) gone without a trace. */
static void expect_tag(struct fx *f, struct region *r, const char *name, const uint64_t *ext,
		       size_t n, uint8_t v, bool want)
{
	uint32_t id;

	if (!want) {
		assert_int_equal(region_tag_lookup(r, name, 1000, &id), -ENOENT);
		return;
	}
	assert_int_equal(region_tag_lookup(r, name, 1000, &id), 0);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(r->vstate[ext[k]], EXT_COMMITTED);
		assert_int_equal(layout_rec_tag(region_index_rec_load(r, ext[k])), id);
		assert_true(extent_is(f, ext[k], v));
	}
}

static void test_commit_crash_points(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	struct run *runs = NULL;
	size_t n_runs = 0, n = 0;
	uint64_t ext[4];
	struct snaps s;
	struct pstore_tracer tr;
	uint32_t id;
	uint8_t *mixed;

	assert_int_equal(region_open(&f->rc, &r), 0);
	zero_all(r);
	assert_int_equal(region_lease(r, 4, &runs, &n_runs), 0);
	assert_int_equal(region_sync(r), 1);
	for (size_t j = 0; j < n_runs; j++)
		for (uint64_t i = runs[j].first; i < runs[j].first + runs[j].count; i++) {
			memset(region_extent_addr(r, i), 0xc3, r->extent_size); /* not flushed */
			ext[n++] = i;
		}
	snaps_start(&s, r, &tr);
	assert_int_equal(region_commit(r, runs, n_runs, "c", 1000, true), 0);
	assert_int_equal(region_tag_lookup(r, "c", 1000, &id), 0);
	/* one group commit: slot, drain, records, drain, VALID, drain */
	assert_int_equal(region_sync(r), 3);
	snaps_stop(&s, r);
	assert_int_equal(s.n, 3);
	region_close(r);
	free(runs);

	/* Drain 1 (phase 0): the body is durable, WRITTEN; the records still LEASED. */
	assert_true(img_slot(f, s.img[0], id)->state == TAG_WRITTEN);
	assert_int_equal(img_slot(f, s.img[0], id)->checksum,
			 layout_tag_checksum(img_slot(f, s.img[0], id)));
	for (size_t k = 0; k < n; k++)
		assert_int_equal(layout_rec_state(img_rec(f, s.img[0], ext[k])), EXT_LEASED);
	/* Drain 2 (phase 1): the records COMMITTED, the slot still WRITTEN. */
	assert_true(img_slot(f, s.img[1], id)->state == TAG_WRITTEN);
	for (size_t k = 0; k < n; k++)
		assert_true(
		    img_rec(f, s.img[1], ext[k]) ==
		    layout_rec(EXT_COMMITTED, id, layout_rec_gen(img_rec(f, s.img[1], ext[k]))));
	/* Drain 3 (phase 2): VALID. */
	assert_true(img_slot(f, s.img[2], id)->state == TAG_VALID);

	/* Power fails after drain 1 or 2: rolled back whole. */
	for (unsigned k = 0; k < 2; k++) {
		r = recover_image(f, s.img[k]);
		expect_tag(f, r, "c", ext, n, 0, false);
		for (size_t j = 0; j < n; j++)
			assert_int_equal(r->vstate[ext[j]], EXT_DIRTY);
		assert_int_equal(count_of(r, EXT_DIRTY) + count_of(r, EXT_ZEROED),
				 f->h.extent_count);
		assert_int_equal(region_tag_next(r, 0), 0);
		close_recovered(f, r);
		{
			struct layout_tag t;
			get_slot(f, id, &t);
			assert_true(t.state == TAG_FREE);
		}
	}
	/* ... or in the middle of phase 1: some records COMMITTED, some LEASED. */
	mixed = malloc(f->rc.size);
	assert_non_null(mixed);
	memcpy(mixed, s.img[1], f->rc.size);
	memcpy(mixed + f->h.extent_table_off + ext[1] * 8,
	       s.img[0] + f->h.extent_table_off + ext[1] * 8, 8);
	r = recover_image(f, mixed);
	expect_tag(f, r, "c", ext, n, 0, false);
	close_recovered(f, r);
	free(mixed);

	/* After drain 3: the commit is durable, with the data flushed before it. */
	r = recover_image(f, s.img[2]);
	expect_tag(f, r, "c", ext, n, 0xc3, true);
	close_recovered(f, r);
	snaps_free(&s);
}

static void test_free_crash_points(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	struct snaps s, s2;
	struct pstore_tracer tr;
	uint64_t ext[3], ext2[2];
	uint32_t id, id2;
	uint8_t *mixed;
	struct layout_tag t;

	assert_int_equal(region_open(&f->rc, &r), 0);
	zero_all(r);
	id = commit_new(r, "f", 3, 0x3c, ext);

	snaps_start(&s, r, &tr);
	assert_int_equal(region_tag_free(r, id, NULL), 0);
	/* FREEING, drain, records DIRTY, drain; FREE stored, drained later */
	assert_int_equal(region_sync(r), 2);
	snaps_stop(&s, r);
	assert_int_equal(s.n, 2);
	assert_true(r->slots[id - 1].state == TAG_FREE);

	/* The next iteration reuses the slot at once; its FREE may not be durable yet. */
	zero_all(r);
	snaps_start(&s2, r, &tr);
	id2 = commit_new(r, "g", 2, 0x96, ext2);
	snaps_stop(&s2, r);
	assert_int_equal(id2, id);
	assert_int_equal(s2.n, 4); /* the lease's drain, then the commit's three */
	region_close(r);

	/* Drain 1: FREEING with the body kept, the records still COMMITTED. */
	assert_true(img_slot(f, s.img[0], id)->state == TAG_FREEING);
	assert_string_equal(img_slot(f, s.img[0], id)->name, "f");
	assert_int_equal(img_slot(f, s.img[0], id)->checksum,
			 layout_tag_checksum(img_slot(f, s.img[0], id)));
	for (size_t k = 0; k < 3; k++)
		assert_int_equal(layout_rec_state(img_rec(f, s.img[0], ext[k])), EXT_COMMITTED);
	/* Drain 2: the records DIRTY, the slot still FREEING. */
	assert_true(img_slot(f, s.img[1], id)->state == TAG_FREEING);
	for (size_t k = 0; k < 3; k++)
		assert_true(img_rec(f, s.img[1], ext[k]) ==
			    layout_rec(EXT_DIRTY, 0, layout_rec_gen(img_rec(f, s.img[1], ext[k]))));

	/* Power fails after either drain, or in the middle of phase 1: the free completes. */
	mixed = malloc(f->rc.size);
	assert_non_null(mixed);
	memcpy(mixed, s.img[1], f->rc.size);
	memcpy(mixed + f->h.extent_table_off + ext[0] * 8,
	       s.img[0] + f->h.extent_table_off + ext[0] * 8, 8);
	for (unsigned k = 0; k < 3; k++) {
		r = recover_image(f, k < 2 ? s.img[k] : mixed);
		expect_tag(f, r, "f", ext, 3, 0, false);
		for (size_t j = 0; j < 3; j++)
			assert_int_equal(r->vstate[ext[j]], EXT_DIRTY);
		assert_int_equal(region_tag_next(r, 0), 0);
		close_recovered(f, r);
		get_slot(f, id, &t);
		assert_true(t.state == TAG_FREE);
	}
	free(mixed);

	/*
	 * The slot reused: after the new commit's drain 1 (its body, the old
	 * FREE never durable), 2 or 3.  The old tag never comes back.
	 */
	assert_true(img_slot(f, s2.img[1], id)->state == TAG_WRITTEN);
	assert_string_equal(img_slot(f, s2.img[1], id)->name, "g");
	for (unsigned k = 1; k < 4; k++) {
		r = recover_image(f, s2.img[k]);
		expect_tag(f, r, "f", ext, 3, 0, false);
		expect_tag(f, r, "g", ext2, 2, 0x96, k == 3);
		close_recovered(f, r);
	}
	/* the old FREE lost: FREEING under the new body, before the commit's drain 1 */
	mixed = malloc(f->rc.size);
	assert_non_null(mixed);
	memcpy(mixed, s2.img[0], f->rc.size);
	{
		uint64_t w = TAG_FREEING;
		memcpy(mixed + slot_off(f, id), &w, sizeof(w));
		memcpy(mixed + slot_off(f, id) + 8, s2.img[1] + slot_off(f, id) + 8, 40);
	}
	r = recover_image(f, mixed);
	expect_tag(f, r, "f", ext, 3, 0, false);
	expect_tag(f, r, "g", ext2, 2, 0, false);
	close_recovered(f, r);
	free(mixed);
	snaps_free(&s);
	snaps_free(&s2);
}

/* A commit and a free of the same tag in one iteration: never COMMITTED on media. */
static void test_commit_and_free_one_iteration(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	struct run *runs = NULL;
	size_t n_runs = 0;
	struct snaps s;
	struct pstore_tracer tr;
	uint32_t id;

	assert_int_equal(region_open(&f->rc, &r), 0);
	zero_all(r);
	assert_int_equal(region_lease(r, 2, &runs, &n_runs), 0);
	assert_int_equal(region_sync(r), 1);
	snaps_start(&s, r, &tr);
	assert_int_equal(region_commit(r, runs, n_runs, "brief", 1000, false), 0);
	assert_int_equal(region_tag_lookup(r, "brief", 1000, &id), 0);
	assert_int_equal(region_tag_free(r, id, NULL), 0);
	assert_int_equal(region_sync(r), 2);
	snaps_stop(&s, r);
	assert_int_equal(region_index_verify(r), 0);
	assert_int_equal(count_of(r, EXT_DIRTY) + count_of(r, EXT_ZEROED), f->h.extent_count);
	region_close(r);
	for (unsigned k = 0; k < s.n; k++) {
		for (uint64_t i = runs[0].first; i < runs[0].first + runs[0].count; i++)
			assert_int_not_equal(layout_rec_state(img_rec(f, s.img[k], i)),
					     EXT_COMMITTED);
		r = recover_image(f, s.img[k]);
		assert_int_equal(region_tag_next(r, 0), 0);
		close_recovered(f, r);
	}
	free(runs);
	snaps_free(&s);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
#define TS(fn) cmocka_unit_test_setup_teardown(fn, fx_setup_small, fx_teardown)
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_extent_state_codes),
	    cmocka_unit_test(test_tag_state_words),
	    T(test_flipped_records),
	    TS(test_flipped_slot_state),
	    T(test_zeroed_tag_table),
	    TS(test_pending_slot_damage),
	    TS(test_commit_crash_points),
	    TS(test_free_crash_points),
	    TS(test_commit_and_free_one_iteration),
	};

	log_set_max_level(getenv("PMEMZ_TEST_VERBOSE") ? LOG_DEBUG : LOG_CRIT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
