/* SPDX-License-Identifier: MIT */
/*
 * MOVE in the storage core (daemon/storage/region-move.c) and the shared
 * rule that finishes or undoes a batch (media_moves_resolve): the happy
 * path, every refusal leaving the region untouched, crashes before and
 * after the decision (region_close_abandon, and the marker's state word
 * written into the file), hostile links, and the offline checker on each
 * image.  Power failure at every store is tests/crash/test-powerfail.c's.
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
#include "log.h"
#include "media.h"
#include "region-internal.h"
#include "region.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

struct fx {
	char path[128];
	struct region_conf rc;
	char name[16];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct stat st;
	int fd;

	assert_non_null(f);
	snprintf(f->path, sizeof(f->path), "%s/pmemz-move-XXXXXX",
		 stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	close(fd);
	(void)unlink(f->path);
	strcpy(f->name, "move");
	f->rc.name = f->name;
	f->rc.path = f->path;
	f->rc.size = 16 * MiB;
	f->rc.extent_size = 256 * KiB;
	f->rc.zeroer_threads = 1;
	f->rc.batch_extents = 8;
	f->rc.source = f->name;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	(void)unlink(f->path);
	free(f);
	return 0;
}

static void rw_at(const char *path, uint64_t off, void *buf, size_t len, bool write)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	if (write)
		assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	else
		assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void header(const char *path, struct layout_header *h)
{
	static uint8_t block[LAYOUT_BLOCK];

	rw_at(path, 0, block, sizeof(block), false);
	assert_int_equal(layout_header_check(block, h, NULL, 0), HDR_OK);
}

static void slot_io(const char *path, uint32_t id, struct layout_tag *t, bool write)
{
	struct layout_header h;

	header(path, &h);
	rw_at(path, h.tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE, t, sizeof(*t),
	      write);
}

static uint64_t rec_at(const char *path, uint64_t i)
{
	struct layout_header h;
	uint64_t rec;

	header(path, &h);
	rw_at(path, h.extent_table_off + i * 8, &rec, sizeof(rec), false);
	return rec;
}

static uint64_t file_hash(const char *path)
{
	static uint8_t buf[1 << 16];
	uint64_t h = 1469598103934665603ull;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 1099511628211ull;
	close(fd);
	return h;
}

/* I3, the index against the media, and every visible tag counted once. */
static void check_i3(struct region *r)
{
	struct region_stats st;
	struct region_info info;
	uint64_t sum = 0, tags = 0;

	region_get_stats(r, &st);
	region_get_info(r, &info);
	for (int s = 0; s < EXT_NSTATES; s++)
		sum += st.count[s];
	assert_int_equal(sum, info.extent_count);
	assert_int_equal(region_index_verify(r), 0);
	for (uint32_t id = region_tag_next(r, 0); id; id = region_tag_next(r, id))
		tags++;
	assert_int_equal(tags, st.tags);
}

static uint64_t count_of(struct region *r, enum extent_state s)
{
	struct region_stats st;

	region_get_stats(r, &st);
	return st.count[s];
}

static struct region *open_ok(struct fx *f)
{
	struct region *r = NULL;

	assert_int_equal(region_open(&f->rc, &r), 0);
	check_i3(r);
	return r;
}

static void wait_all_zeroed(struct region *r)
{
	while (region_count_zeroed(r) < region_count_free(r)) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};

		(void)poll(&p, 1, 100);
		(void)region_zeroer_collect(r);
		(void)region_sync(r);
	}
	(void)region_sync(r);
}

/* The offline checker on the closed image: clean, with or without CHECK_RECOVERED. */
static void check_clean(const struct fx *f, unsigned flags)
{
	struct check_report rep;

	assert_int_equal(check_path(f->path, flags | CHECK_NO_DATA, &rep), 0);
	for (size_t k = 0; k < rep.n_problems; k++)
		fprintf(stderr, "problem: %s\n", rep.problems[k]);
	assert_int_equal(rep.status, CHECK_CLEAN);
	check_report_free(&rep);
}

/* A committed tag of n extents (one run each time, the region being fresh). */
static uint64_t *commit_tag(struct region *r, const char *name, uid_t uid, uint64_t n)
{
	struct run *runs = NULL;
	size_t n_runs = 0, k = 0;
	uint64_t *ext = calloc(n, sizeof(*ext));

	assert_non_null(ext);
	assert_int_equal(region_lease(r, n, &runs, &n_runs), 0);
	assert_int_equal(region_commit(r, runs, n_runs, name, uid, false), 0);
	assert_int_equal(region_sync(r), 3);
	for (size_t j = 0; j < n_runs; j++)
		for (uint64_t i = runs[j].first; i < runs[j].first + runs[j].count; i++)
			ext[k++] = i;
	free(runs);
	return ext;
}

static uint32_t lookup(struct region *r, const char *name, uid_t uid)
{
	uint32_t id = 0;

	return region_tag_lookup(r, name, uid, &id) == 0 ? id : 0;
}

/* The marker slot of the last batch, found by its link (0: none). */
static uint32_t find_marker(const struct fx *f, uint32_t tag_count, uint64_t state)
{
	for (uint32_t id = 1; id <= tag_count; id++) {
		struct layout_tag t;
		struct layout_link l;

		slot_io(f->path, id, &t, false);
		layout_tag_link(&t, &l);
		if (l.kind == LINK_MARKER && t.state == state)
			return id;
	}
	return 0;
}

static uint32_t tag_count_of(const struct fx *f)
{
	struct layout_header h;

	header(f->path, &h);
	return (uint32_t)h.tag_count;
}

/* ---- the happy path ---- */

static void test_move_happy(void **state)
{
	struct fx *f = *state;
	struct region *r = open_ok(f);
	struct region_move mv[3];
	uint32_t ids[6], pool;
	uint64_t *ext;
	struct layout_tag t;
	struct layout_link l;

	wait_all_zeroed(r);
	ext = commit_tag(r, "pool", 7, 6);
	free(commit_tag(r, "other", 8, 2));
	pool = lookup(r, "pool", 7);
	for (int k = 0; k < 3; k++) /* every other extent: the pool's run splits */
		mv[k] = (struct region_move){"pool", ext[2 * k], NULL};
	mv[0].to_tag = "nbd/d/0";
	mv[1].to_tag = "nbd/d/1";
	mv[2].to_tag = "nbd/d/2";
	assert_int_equal(region_move(r, mv, 3, 7, ids, NULL), 0);
	/* At once: the new tags visible, the pool smaller, the counts the same. */
	assert_int_equal(lookup(r, "nbd/d/1", 7), ids[1]);
	assert_int_equal(region_tag_extents(r, pool), 3);
	assert_int_equal(region_tag_extents(r, ids[2]), 1);
	assert_int_equal(count_of(r, EXT_COMMITTED), 8);
	check_i3(r);
	assert_int_equal(region_sync(r), 3);
	check_i3(r);
	for (int k = 0; k < 3; k++) {
		slot_io(f->path, ids[k], &t, false);
		layout_tag_link(&t, &l);
		assert_true(t.state == TAG_VALID);
		assert_int_equal(t.n_extents, 1);
		assert_true(l.kind == LINK_MEMBER);
		assert_int_equal(l.source, pool);
		assert_int_equal(l.arg, ext[2 * k]);
		assert_int_equal(layout_rec_tag(rec_at(f->path, ext[2 * k])), ids[k]);
	}
	slot_io(f->path, pool, &t, false);
	assert_int_equal(t.n_extents, 3);
	assert_int_equal(t.checksum, layout_tag_checksum(&t));
	/* The marker is FREE (durable at the next drain), and was never a tag. */
	assert_int_not_equal(find_marker(f, tag_count_of(f), TAG_FREE), 0);
	assert_int_equal(find_marker(f, tag_count_of(f), TAG_VALID), 0);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);

	/* A restart keeps them; moving the rest removes the pool. */
	r = open_ok(f);
	assert_int_equal(lookup(r, "nbd/d/0", 7), ids[0]);
	assert_int_equal(region_tag_extents(r, lookup(r, "pool", 7)), 3);
	for (int k = 0; k < 3; k++)
		mv[k] = (struct region_move){"pool", ext[2 * k + 1], NULL};
	mv[0].to_tag = "nbd/d/3";
	mv[1].to_tag = "nbd/d/4";
	mv[2].to_tag = "nbd/d/5";
	assert_int_equal(region_move(r, mv, 3, 7, ids + 3, NULL), 0);
	assert_int_equal(lookup(r, "pool", 7), 0);
	check_i3(r);
	assert_int_equal(region_sync(r), 3);
	check_i3(r);
	slot_io(f->path, pool, &t, false);
	assert_true(t.state == TAG_FREE);
	assert_int_equal(count_of(r, EXT_COMMITTED), 8);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
	r = open_ok(f);
	assert_int_equal(lookup(r, "pool", 7), 0);
	for (int k = 0; k < 6; k++) {
		char name[16];

		snprintf(name, sizeof(name), "nbd/d/%d", k);
		assert_int_equal(region_tag_extents(r, lookup(r, name, 7)), 1);
	}
	assert_int_equal(lookup(r, "other", 8) != 0, 1);
	assert_int_equal(count_of(r, EXT_COMMITTED), 8);
	free(ext);
	region_close(r);
}

/*
 * Room for run splits is bounded by a tag's extents: a MOVE of many
 * one-extent tags once grew every source to one run per move of the
 * request (257 runs each for the nbd disk's 256-move sync points: 1 MiB
 * of realloc per request, half the daemon's time).
 */
static void test_move_runs_bounded(void **state)
{
	struct fx *f = *state;
	struct region *r = open_ok(f);
	struct region_move mv[7];
	char from[6][8], to[7][16];
	uint32_t ids[7], pool;
	uint64_t *ext = NULL;

	wait_all_zeroed(r);
	ext = commit_tag(r, "pool", 7, 4);
	pool = lookup(r, "pool", 7);
	for (int k = 0; k < 6; k++) {
		snprintf(from[k], sizeof(from[k]), "s%d", k);
		snprintf(to[k], sizeof(to[k]), "nbd/d/%d", k);
		uint64_t *one = commit_tag(r, from[k], 7, 1);

		mv[k] = (struct region_move){from[k], one[0], to[k]};
		free(one);
	}
	snprintf(to[6], sizeof(to[6]), "nbd/d/6");
	mv[6] = (struct region_move){"pool", ext[1], to[6]}; /* the pool's run splits */
	assert_int_equal(region_move(r, mv, 7, 7, ids, NULL), 0);
	assert_int_equal(region_tag_extents(r, pool), 3);
	assert_int_equal(r->tags[pool].n_runs, 2);
	assert_true(r->tags[pool].cap_runs <= 4);
	for (int k = 0; k < 7; k++)
		assert_true(r->tags[ids[k]].cap_runs <= 1);
	assert_int_equal(region_sync(r), 3);
	check_i3(r);
	free(ext);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
}

/* ---- refusals: nothing changes ---- */

static void expect_refused(struct fx *f, struct region *r, const struct region_move *mv, size_t n,
			   uid_t uid, int err, size_t bad)
{
	uint32_t ids[LAYOUT_MOVE_MAX];
	size_t got = 999;

	assert_int_equal(region_move(r, mv, n, uid, ids, &got), err);
	assert_int_equal(got, bad);
	assert_int_equal(region_sync(r), 0); /* nothing stored, nothing pending */
	(void)f;
}

static void test_move_refused(void **state)
{
	struct fx *f = *state;
	struct region *r = open_ok(f);
	struct region_move mv[LAYOUT_MOVE_MAX + 1];
	uint64_t *pool, *other, hash;
	uint32_t ids[4];

	wait_all_zeroed(r);
	pool = commit_tag(r, "pool", 7, 4);
	other = commit_tag(r, "theirs", 8, 2);
	free(commit_tag(r, "taken", 7, 1));
	hash = file_hash(f->path);
	for (size_t k = 0; k <= LAYOUT_MOVE_MAX; k++)
		mv[k] = (struct region_move){"pool", pool[0], "x"};

	expect_refused(f, r, mv, 0, 7, -EINVAL, 0);
	expect_refused(f, r, mv, LAYOUT_MOVE_MAX + 1, 7, -EINVAL, LAYOUT_MOVE_MAX + 1);
	mv[1] = (struct region_move){"pool", pool[1], "x"}; /* to_tag repeated */
	expect_refused(f, r, mv, 2, 7, -EINVAL, 1);
	mv[1] = (struct region_move){"pool", pool[0], "y"}; /* extent twice */
	expect_refused(f, r, mv, 2, 7, -EINVAL, 1);
	mv[1] = (struct region_move){"pool", 1u << 30, "y"}; /* out of range */
	expect_refused(f, r, mv, 2, 7, -EINVAL, 1);
	mv[1] = (struct region_move){"pool", other[0], "y"}; /* not of from_tag */
	expect_refused(f, r, mv, 2, 7, -EINVAL, 1);
	mv[1] = (struct region_move){"pool", pool[1], "bad\x01name"};
	expect_refused(f, r, mv, 2, 7, -EINVAL, 1);
	mv[1] = (struct region_move){"pool", pool[1], ""};
	expect_refused(f, r, mv, 2, 7, -EINVAL, 1);
	mv[1] = (struct region_move){"nope", pool[1], "y"};
	expect_refused(f, r, mv, 2, 7, -ENOENT, 1);
	mv[1] = (struct region_move){"theirs", other[0], "y"}; /* another uid's tag */
	expect_refused(f, r, mv, 2, 7, -ENOENT, 1);
	mv[1] = (struct region_move){"pool", pool[1], "taken"};
	expect_refused(f, r, mv, 2, 7, -EEXIST, 1);
	assert_int_equal(file_hash(f->path), hash);

	/* A from_tag committed, or freed, in this very iteration: -EBUSY. */
	{
		struct run *runs = NULL;
		size_t n_runs = 0;
		uint32_t id;

		assert_int_equal(region_lease(r, 1, &runs, &n_runs), 0);
		assert_int_equal(region_commit(r, runs, n_runs, "fresh", 7, false), 0);
		mv[1] = (struct region_move){"fresh", runs[0].first, "y"};
		assert_int_equal(region_move(r, mv, 2, 7, ids, NULL), -EBUSY);
		assert_int_equal(region_sync(r), 3);
		id = lookup(r, "fresh", 7);
		assert_int_equal(region_tag_free(r, id, NULL), 0);
		assert_int_equal(region_move(r, mv, 2, 7, ids, NULL), -EBUSY);
		assert_int_equal(region_sync(r), 2);
		free(runs);
	}
	/* Taking part in a MOVE of this iteration: FREE and MOVE from it wait. */
	assert_int_equal(region_move(r, mv, 1, 7, ids, NULL), 0);
	assert_int_equal(region_tag_free(r, ids[0], NULL), -EBUSY);
	assert_int_equal(region_tag_free(r, lookup(r, "pool", 7), NULL), -EBUSY);
	mv[1] = (struct region_move){"x", pool[0], "z"};
	assert_int_equal(region_move(r, mv + 1, 1, 7, ids + 1, NULL), -EBUSY);
	assert_int_equal(region_sync(r), 3);
	assert_int_equal(region_tag_free(r, ids[0], NULL), 0);
	assert_int_equal(region_sync(r), 2);
	check_i3(r);
	free(pool);
	free(other);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
}

static void test_move_nospace(void **state)
{
	struct fx *f = *state;
	struct region *r = open_ok(f);
	struct region_move mv[4];
	uint32_t ids[4], tag_count = tag_count_of(f), used = 1;
	uint64_t *pool;
	struct run *runs = NULL;
	size_t n_runs = 0;
	char name[16], names[4][8];

	wait_all_zeroed(r);
	pool = commit_tag(r, "pool", 7, 4);
	/* Leave 4 free slots: 4 moves need 5, 2 moves need 3. */
	while (used < tag_count - 4) {
		snprintf(name, sizeof(name), "t%u", used++);
		free(commit_tag(r, name, 7, 1));
	}
	for (int k = 0; k < 4; k++) {
		snprintf(names[k], sizeof(names[k]), "m%d", k);
		mv[k] = (struct region_move){"pool", pool[k], names[k]};
	}
	assert_int_equal(region_move(r, mv, 4, 7, ids, NULL), -ENOSPC);
	assert_int_equal(region_sync(r), 0);
	assert_int_equal(region_move(r, mv, 2, 7, ids, NULL), 0);
	assert_int_equal(region_sync(r), 3);
	/*
	 * One slot is free, and the marker's: held until the drain that makes
	 * its FREE durable, so 1 move (2 slots) waits for the next pass.
	 */
	assert_int_equal(region_move(r, mv + 2, 1, 7, ids + 2, NULL), -ENOSPC);
	assert_int_equal(region_lease(r, 1, &runs, &n_runs), 0);
	assert_int_equal(region_sync(r), 1);
	assert_int_equal(region_move(r, mv + 2, 1, 7, ids + 2, NULL), 0);
	assert_int_equal(region_sync(r), 3);
	region_unlease(r, runs, n_runs);
	assert_int_equal(region_sync(r), 1);
	check_i3(r);
	free(runs);
	free(pool);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
}

/* ---- crashes ---- */

/* A batch of 3 moves from a pool of 5, cut before region_sync: its bodies and WRITTEN only. */
static uint64_t *crash_mid_batch(struct fx *f, uint32_t *ids, uint32_t *pool)
{
	struct region *r = open_ok(f);
	struct region_move mv[3];
	uint64_t *ext;

	wait_all_zeroed(r);
	ext = commit_tag(r, "pool", 7, 5);
	free(commit_tag(r, "other", 7, 2));
	*pool = lookup(r, "pool", 7);
	mv[0] = (struct region_move){"pool", ext[0], "c0"};
	mv[1] = (struct region_move){"pool", ext[2], "c1"};
	mv[2] = (struct region_move){"pool", ext[4], "c2"};
	assert_int_equal(region_move(r, mv, 3, 7, ids, NULL), 0);
	region_close_abandon(r);
	return ext;
}

static void test_move_crash_undecided(void **state)
{
	struct fx *f = *state;
	uint32_t ids[3], pool;
	uint64_t *ext = crash_mid_batch(f, ids, &pool);
	struct region *r;

	assert_int_not_equal(find_marker(f, tag_count_of(f), TAG_WRITTEN), 0);
	check_clean(f, 0); /* a batch in flight is no damage */
	r = open_ok(f);
	assert_int_equal(region_tag_extents(r, lookup(r, "pool", 7)), 5);
	assert_int_equal(lookup(r, "c0", 7), 0);
	assert_int_equal(lookup(r, "c2", 7), 0);
	assert_int_equal(count_of(r, EXT_COMMITTED), 7);
	assert_int_equal(find_marker(f, tag_count_of(f), TAG_WRITTEN), 0);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
	free(ext);
}

/* Decided (the marker's VALID durable), nothing of phase 2: recovery finishes it. */
static void test_move_crash_decided(void **state)
{
	struct fx *f = *state;
	uint32_t ids[3], pool, b;
	uint64_t *ext = crash_mid_batch(f, ids, &pool);
	struct layout_tag t;
	struct region *r;

	b = find_marker(f, tag_count_of(f), TAG_WRITTEN);
	assert_int_not_equal(b, 0);
	slot_io(f->path, b, &t, false);
	t.state = TAG_VALID;
	slot_io(f->path, b, &t, true);
	check_clean(f, 0);

	r = open_ok(f);
	assert_int_equal(region_tag_extents(r, lookup(r, "pool", 7)), 2);
	for (int k = 0; k < 3; k++) {
		char name[4] = {'c', (char)('0' + k), 0};

		assert_int_equal(lookup(r, name, 7), ids[k]);
		assert_int_equal(layout_rec_tag(rec_at(f->path, ext[2 * k])), ids[k]);
	}
	assert_int_equal(count_of(r, EXT_COMMITTED), 7);
	slot_io(f->path, pool, &t, false);
	assert_int_equal(t.n_extents, 2);
	assert_int_equal(t.checksum, layout_tag_checksum(&t));
	slot_io(f->path, b, &t, false);
	assert_true(t.state == TAG_FREE);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
	free(ext);
}

/* Decided, and the pool's recount torn (its checksum wrong): still finished, not damage. */
static void test_move_crash_torn_source(void **state)
{
	struct fx *f = *state;
	uint32_t ids[3], pool, b;
	uint64_t *ext = crash_mid_batch(f, ids, &pool);
	struct layout_tag t;
	struct region *r;

	b = find_marker(f, tag_count_of(f), TAG_WRITTEN);
	slot_io(f->path, b, &t, false);
	t.state = TAG_VALID;
	slot_io(f->path, b, &t, true);
	slot_io(f->path, pool, &t, false);
	t.n_extents = 2; /* the count landed, the checksum did not */
	slot_io(f->path, pool, &t, true);
	/* and one record moved, one member VALID */
	slot_io(f->path, ids[1], &t, false);
	t.state = TAG_VALID;
	slot_io(f->path, ids[1], &t, true);
	check_clean(f, 0);
	r = open_ok(f);
	assert_int_equal(region_tag_extents(r, lookup(r, "pool", 7)), 2);
	assert_int_equal(lookup(r, "c1", 7), ids[1]);
	assert_int_equal(count_of(r, EXT_COMMITTED), 7);
	assert_int_equal(count_of(r, EXT_BAD), 0);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
	free(ext);
}

/*
 * A batch done, its marker's FREE not durable (VALID again here), and its
 * emptied source's slot already the next batch's marker: the first batch's
 * members are done, not damage (its records name them).
 */
static void test_move_crash_source_reused(void **state)
{
	struct fx *f = *state;
	struct region *r = open_ok(f);
	struct region_move mv[2];
	uint32_t ids[3], pool, b1, b2, tc = tag_count_of(f);
	uint64_t *ext;
	struct layout_tag t;

	wait_all_zeroed(r);
	ext = commit_tag(r, "pool", 7, 2);
	pool = lookup(r, "pool", 7);
	mv[0] = (struct region_move){"pool", ext[0], "c0"};
	mv[1] = (struct region_move){"pool", ext[1], "c1"};
	assert_int_equal(region_move(r, mv, 2, 7, ids, NULL), 0);
	assert_int_equal(region_sync(r), 3);
	b1 = find_marker(f, tc, TAG_FREE);
	mv[0] = (struct region_move){"c0", ext[0], "d0"};
	assert_int_equal(region_move(r, mv, 1, 7, ids + 2, NULL), 0);
	b2 = find_marker(f, tc, TAG_WRITTEN);
	assert_int_equal(b2, pool); /* the emptied source's slot, reused at once */
	region_close_abandon(r);
	slot_io(f->path, b1, &t, false);
	t.state = TAG_VALID;
	slot_io(f->path, b1, &t, true);
	check_clean(f, 0);

	r = open_ok(f);
	assert_int_equal(lookup(r, "c0", 7), ids[0]);
	assert_int_equal(lookup(r, "c1", 7), ids[1]);
	assert_int_equal(lookup(r, "d0", 7), 0);
	assert_int_equal(lookup(r, "pool", 7), 0);
	assert_int_equal(count_of(r, EXT_COMMITTED), 2);
	assert_int_equal(count_of(r, EXT_BAD), 0);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
	free(ext);
}

/*
 * Two MOVEs of one pass, both decided: the first empties "pool", the
 * second names a new tag "pool".  Not a duplicate: the emptied one goes.
 */
static void test_move_crash_name_reused(void **state)
{
	struct fx *f = *state;
	struct region *r = open_ok(f);
	struct region_move mv[1];
	uint32_t ids[2], tc = tag_count_of(f);
	uint64_t *p, *q, got[1];
	struct layout_tag t;
	struct run *runs = NULL;
	size_t n_runs = 0;

	wait_all_zeroed(r);
	p = commit_tag(r, "pool", 7, 1);
	q = commit_tag(r, "q", 7, 2);
	mv[0] = (struct region_move){"pool", p[0], "x"};
	assert_int_equal(region_move(r, mv, 1, 7, ids, NULL), 0);
	mv[0] = (struct region_move){"q", q[1], "pool"};
	assert_int_equal(region_move(r, mv, 1, 7, ids + 1, NULL), 0);
	region_close_abandon(r);
	for (uint32_t id = 1; id <= tc; id++) { /* both decided */
		slot_io(f->path, id, &t, false);
		if (t.reserved[0] == 'M' && t.reserved[4] == 'M' && t.reserved[7] == 'K' &&
		    t.state == TAG_WRITTEN) {
			t.state = TAG_VALID;
			slot_io(f->path, id, &t, true);
		}
	}
	check_clean(f, 0);
	r = open_ok(f);
	assert_int_equal(lookup(r, "x", 7), ids[0]);
	assert_int_equal(lookup(r, "pool", 7), ids[1]);
	assert_int_equal(region_tag_runs(r, ids[1], &runs, &n_runs, NULL), 0);
	got[0] = runs[0].first;
	assert_int_equal(got[0], q[1]);
	assert_int_equal(region_tag_extents(r, lookup(r, "q", 7)), 1);
	assert_int_equal(count_of(r, EXT_BAD), 0);
	region_close(r);
	check_clean(f, CHECK_RECOVERED);
	free(runs);
	free(p);
	free(q);
}

/* ---- hostile links: damage, never a crash, never another tag's extent ---- */

static void test_move_hostile_links(void **state)
{
	struct fx *f = *state;
	uint32_t ids[3], pool, b;
	uint64_t *ext = crash_mid_batch(f, ids, &pool), seed = 12345;
	uint32_t tc = tag_count_of(f);
	struct layout_tag saved[3], t;
	struct layout_link l;
	struct region *r;

	b = find_marker(f, tc, TAG_WRITTEN);
	slot_io(f->path, b, &t, false);
	t.state = TAG_VALID;
	slot_io(f->path, b, &t, true);
	for (int k = 0; k < 3; k++)
		slot_io(f->path, ids[k], &saved[k], false);

	for (int round = 0; round < 24; round++) {
		/* One member's link made hostile, with a right checksum (a tenant can). */
		t = saved[round % 3];
		layout_tag_link(&t, &l);
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		switch (round % 6) {
		case 0: l.arg = seed; break;		     /* extent out of range */
		case 1: l.source = (uint32_t)seed; break;    /* source out of range */
		case 2: l.batch = (uint32_t)(seed % (tc + 2)); break;
		case 3: l.arg = ext[(round / 6) % 2 ? 1 : 3]; break; /* another extent of the pool */
		case 4: l.source = l.batch; break;	     /* the marker as a source */
		case 5: { /* two members naming one extent */
			struct layout_link o;

			layout_tag_link(&saved[(round + 1) % 3], &o);
			l.arg = o.arg;
			break;
		}
		}
		layout_tag_set_link(&t, &l);
		t.checksum = layout_tag_checksum(&t);
		slot_io(f->path, ids[round % 3], &t, true);

		r = open_ok(f);
		/* "other" never loses an extent, the counts add up. */
		assert_int_equal(region_tag_extents(r, lookup(r, "other", 7)), 2);
		assert_int_equal(count_of(r, EXT_COMMITTED) + count_of(r, EXT_BAD), 7);
		region_close_abandon(r); /* keep the image as it was for the next round */
		for (int k = 0; k < 3; k++)
			slot_io(f->path, ids[k], &saved[k], true);
		slot_io(f->path, b, &t, false);
		t.state = TAG_VALID;
		slot_io(f->path, b, &t, true);
	}
	free(ext);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
	    T(test_move_happy),		  T(test_move_refused),
	    T(test_move_nospace),	  T(test_move_crash_undecided),
	    T(test_move_crash_decided),	  T(test_move_crash_torn_source),
	    T(test_move_hostile_links),	  T(test_move_crash_source_reused),
	    T(test_move_crash_name_reused), T(test_move_runs_bounded),
	};

	log_set_max_level(getenv("PMEMZ_TEST_DEBUG") ? LOG_DEBUG : LOG_CRIT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
