/* SPDX-License-Identifier: MIT */
/*
 * Damaged media (docs/on-media-format.md; the threat model of
 * docs/DESIGN.md): the real pmemzerod on damaged copies of
 * a region that holds two committed tags, and `pmemzctl check` on them.
 *
 * A pristine region is made once (the daemon formats it, zeroes it, two
 * tags are committed with a pattern, the daemon stops).  Each test copies
 * it, damages the copy and starts the daemon:
 *
 *  - where the backup header makes it safe, the daemon starts, repairs the
 *    header, the tags are intact and `pmemzctl check --recovered` is clean;
 *  - damaged records or tag slots (a bit flip, a zeroed block of the tag
 *    table): the daemon starts, the damaged tags are hidden and their
 *    extents quarantined (never handed out, never zeroed), the other tag is
 *    intact, and the checker reports the damage (exit 1);
 *  - otherwise (both headers, wiped headers, a zeroed table block, a
 *    truncated or grown file, a changed extent size): the daemon exits
 *    non-zero with a message naming the region and the damage, the file is
 *    byte-for-byte unchanged, and the checker gives the expected status.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "harness.h"
#include "media.h"
#include "libpmemzclient.h"

#define MIB ITEST_MIB
#define KIB 1024ull
#define REGION "vault"
#define RSIZE (8 * MIB)
#define EXT (256 * KIB)
#define SEED_A 4242
#define SEED_B 1717

/* The pristine image and where its tags are. */
static uint8_t *pristine;
static size_t pristine_len;
static struct layout_header H;
static uint32_t id_a, id_b;	 /* slots of "precious" (3 extents) and "other" (1) */
static uint64_t ext_a[3], ext_b; /* their extents */

static void write_region_conf(struct itest_env *e, const char *path, const char *extra)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s\n"
			 "%s",
			 path, extra ? extra : "size = 8M\nextent_size = 256K\n");
}

static void commit_tag(struct pmemz_region *r, const char *tag, size_t bytes, uint64_t seed)
{
	struct pmemz_alloc *a = NULL;

	assert_int_equal(pmemz_alloc_new(r, bytes, 0, &a), 0);
	itest_fill_alloc(r, a, seed);
	assert_int_equal(pmemz_alloc_commit(a, tag, PMEMZ_COMMIT_FLUSH), 0);
	pmemz_alloc_close(a);
}

static uint64_t rec_at(const uint8_t *img, uint64_t i)
{
	uint64_t rec;

	memcpy(&rec, img + H.extent_table_off + i * 8, 8);
	return rec;
}

static const struct layout_tag *slot_at(const uint8_t *img, uint32_t id)
{
	return (const struct layout_tag *)(img + H.tag_table_off +
					   (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE);
}

static int make_pristine(void **state)
{
	struct itest_env e;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct itest_stat st;
	char path[PATH_MAX];
	size_t n = 0;

	(void)state;
	itest_env_init(&e, "itest-damage-pristine");
	itest_path(&e, path, sizeof(path), "vault.img");
	write_region_conf(&e, path, NULL);
	itest_daemon_start(&e);
	itest_wait_zeroed(e.sock, REGION, 10000, &st);
	assert_int_equal(pmemz_client_new(e.sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
	commit_tag(r, "precious", 3 * EXT, SEED_A);
	commit_tag(r, "other", EXT, SEED_B);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(&e);
	pristine = itest_read_file(path, &pristine_len);
	itest_env_cleanup(&e);

	assert_int_equal(pristine_len, RSIZE);
	assert_int_equal(layout_header_check(pristine, &H, NULL, 0), HDR_OK);
	for (uint32_t id = 1; id <= H.tag_count; id++) {
		const struct layout_tag *t = slot_at(pristine, id);

		if (t->state == TAG_VALID && strcmp(t->name, "precious") == 0)
			id_a = id;
		if (t->state == TAG_VALID && strcmp(t->name, "other") == 0)
			id_b = id;
	}
	assert_true(id_a && id_b);
	for (uint64_t i = 0; i < H.extent_count; i++) {
		uint64_t rec = rec_at(pristine, i);

		if (layout_rec_state(rec) == EXT_COMMITTED && layout_rec_tag(rec) == id_a) {
			assert_true(n < 3);
			ext_a[n++] = i;
		} else if (layout_rec_state(rec) == EXT_COMMITTED && layout_rec_tag(rec) == id_b) {
			ext_b = i;
		} else {
			assert_int_equal(rec, layout_rec(EXT_ZEROED, 0, layout_rec_gen(rec)));
		}
	}
	assert_int_equal(n, 3);
	return 0;
}

static int free_pristine(void **state)
{
	(void)state;
	free(pristine);
	return 0;
}

/* A damaged copy of the pristine image in DIR/vault.img; the caller frees it. */
static uint8_t *copy_of_pristine(void)
{
	uint8_t *img = malloc(pristine_len);

	assert_non_null(img);
	memcpy(img, pristine, pristine_len);
	return img;
}

static void put(struct itest_env *e, char *path, size_t path_len, const uint8_t *img, size_t len)
{
	itest_path(e, path, path_len, "vault.img");
	itest_write_file(path, img, len);
}

/* pmemzctl check [--recovered] PATH: assert the exit status, return stdout (malloc'ed). */
static char *ctl_check(const char *path, bool recovered, int want)
{
	char *out = NULL, *err = NULL;
	char *argv[] = {UNCONST(itest_ctl_path()), UNCONST("check"),
			UNCONST(recovered ? "--recovered" : "--no-data"), UNCONST(path), NULL};
	int status = itest_run(argv, 30000, &out, &err);

	if (!WIFEXITED(status) || WEXITSTATUS(status) != want)
		fail_msg("pmemzctl check %s: status 0x%x, want exit %d\n%s%s", path, status, want,
			 out, err);
	free(err);
	return out;
}

/* The log since the last start contains every needle (NULL-terminated list). */
static void log_has(struct itest_env *e, const char *what, const char *const *needles)
{
	char *log = itest_read_log(e);

	for (size_t i = 0; needles[i]; i++)
		if (!strstr(log, needles[i])) {
			itest_dump_log(e, true);
			free(log);
			fail_msg("[%s] the daemon log lacks \"%s\"", what, needles[i]);
		}
	print_message("[%s] %s", what, log);
	free(log);
}

/* The daemon refuses: non-zero exit, the region and the damage named, the file unchanged. */
static void expect_refusal(struct itest_env *e, const char *path, const uint8_t *img, size_t len,
			   const char *what, const char *const *needles)
{
	int status = itest_daemon_expect_exit(e, ITEST_START_TIMEOUT_MS);
	size_t now_len;
	uint8_t *now;

	if (!WIFEXITED(status) || WEXITSTATUS(status) == 0) {
		itest_dump_log(e, true);
		fail_msg("[%s] pmemzerod did not refuse (status 0x%x)", what, status);
	}
	{
		char *log = itest_read_log(e);
		bool named = strstr(log, "region '" REGION "'") != NULL;

		free(log);
		if (!named)
			fail_msg("[%s] the refusal does not name region '" REGION "'", what);
	}
	log_has(e, what, needles);
	now = itest_read_file(path, &now_len);
	assert_int_equal(now_len, len);
	if (memcmp(now, img, len) != 0) {
		size_t i = 0;

		while (now[i] == img[i])
			i++;
		fail_msg("[%s] refused region file modified at offset %zu", what, i);
	}
	free(now);
}

/* Does the tag open, and then hold its pattern? */
static int tag_state(struct itest_env *e, const char *tag, size_t bytes, uint64_t seed)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	int rc;

	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
	rc = pmemz_alloc_open(r, tag, &a);
	if (rc == 0) {
		assert_int_equal(pmemz_alloc_size(a), bytes);
		itest_check_alloc(r, a, seed);
		pmemz_alloc_close(a);
	}
	pmemz_region_close(r);
	pmemz_client_free(c);
	return rc;
}

/* The data of the extents of tag A (and B) on the media equals the pristine image's. */
static void assert_data_kept(const char *path, bool and_b)
{
	size_t len;
	uint8_t *now = itest_read_file(path, &len);

	for (int k = 0; k < 3 + and_b; k++) {
		uint64_t i = k < 3 ? ext_a[k] : ext_b, off = H.data_off + i * EXT;

		if (memcmp(now + off, pristine + off, EXT) != 0)
			fail_msg("the data of extent %llu (tag '%s') changed",
				 (unsigned long long)i, k < 3 ? "precious" : "other");
		/* left as it was: still COMMITTED (to whatever the damage says) */
		assert_int_equal(layout_rec_state(rec_at(now, i)), EXT_COMMITTED);
	}
	free(now);
}

static void assert_a_data_kept(const char *path)
{
	assert_data_kept(path, false);
}

/* Allocate every zeroed extent: zero, and none of them one of tag A's (or B's). */
static void assert_quarantined_kept_back(struct itest_env *e, bool and_b)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	uint8_t *bits;

	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(pmemz_alloc_new(r, st.zeroed * EXT, 0, &a), 0);
	itest_assert_alloc_zero(r, a);
	bits = itest_alloc_bitmap(r, a);
	for (int k = 0; k < 3; k++)
		assert_false(bits[(H.data_off / EXT) + ext_a[k]]);
	if (and_b)
		assert_false(bits[(H.data_off / EXT) + ext_b]);
	free(bits);
	assert_int_equal(pmemz_alloc_release(a), 0); /* frees the handle too */
	pmemz_region_close(r);
	pmemz_client_free(c);
}

/* ---- header damage the backup repairs ---- */

static void repaired_start(struct itest_env *e, uint8_t *img, const char *what,
			   const char *const *needles)
{
	char path[PATH_MAX];
	uint8_t *now;
	size_t len;
	char *out;

	put(e, path, sizeof(path), img, pristine_len);
	out = ctl_check(path, false, 1);
	free(out);
	write_region_conf(e, path, NULL);
	itest_daemon_start(e);
	log_has(e, what, needles);
	assert_int_equal(tag_state(e, "precious", 3 * EXT, SEED_A), 0);
	assert_int_equal(tag_state(e, "other", EXT, SEED_B), 0);
	itest_daemon_stop(e);
	now = itest_read_file(path, &len);
	assert_memory_equal(now, now + LAYOUT_BACKUP_OFF, LAYOUT_BLOCK);
	assert_memory_equal(now, pristine, sizeof(struct layout_header));
	free(now);
	out = ctl_check(path, true, 0);
	assert_non_null(strstr(out, "status:"));
	free(out);
}

static void test_primary_bit_flip(void **state)
{
	uint8_t *img = copy_of_pristine();

	img[48] ^= 0x04; /* extent_count */
	repaired_start(
	    *state, img, "primary header bit flip",
	    (const char *const[]){"primary header corrupt", "using the backup header", NULL});
	free(img);
}

static void test_primary_zeroed(void **state)
{
	uint8_t *img = copy_of_pristine();

	memset(img, 0, LAYOUT_BLOCK);
	repaired_start(*state, img, "primary header zeroed",
		       (const char *const[]){"primary header blank", NULL});
	free(img);
}

static void test_backup_damaged(void **state)
{
	uint8_t *img = copy_of_pristine();

	memset(img + LAYOUT_BACKUP_OFF, 0, LAYOUT_BLOCK);
	repaired_start(*state, img, "backup header zeroed",
		       (const char *const[]){"backup header blank", "rewriting it", NULL});
	memcpy(img, pristine, pristine_len);
	img[LAYOUT_BACKUP_OFF + 100] ^= 0x01;
	repaired_start(*state, img, "backup header bit flip",
		       (const char *const[]){"backup header corrupt", NULL});
	free(img);
}

/* ---- refused ---- */

static void test_both_headers_damaged(void **state)
{
	struct itest_env *e = *state;
	uint8_t *img = copy_of_pristine();
	char path[PATH_MAX];

	img[40] ^= 0x10;
	img[LAYOUT_BACKUP_OFF + 72] ^= 0x01;
	put(e, path, sizeof(path), img, pristine_len);
	write_region_conf(e, path, NULL);
	expect_refusal(e, path, img, pristine_len, "both headers bit-flipped",
		       (const char *const[]){"primary header corrupt", "backup header corrupt",
					     "refusing", NULL});
	free(ctl_check(path, false, 2));
	free(img);
}

static void test_headers_wiped(void **state)
{
	struct itest_env *e = *state;
	uint8_t *img = copy_of_pristine();
	char path[PATH_MAX];

	memset(img, 0, 2 * LAYOUT_BLOCK);
	put(e, path, sizeof(path), img, pristine_len);
	write_region_conf(e, path, NULL);
	expect_refusal(e, path, img, pristine_len, "both header blocks wiped",
		       (const char *const[]){"both header blocks are blank",
					     "Refusing to format over it", NULL});
	free(ctl_check(path, false, 2));
	free(img);
}

static void test_extent_table_block_zeroed(void **state)
{
	struct itest_env *e = *state;
	uint8_t *img = copy_of_pristine();
	char path[PATH_MAX];

	memset(img + H.extent_table_off, 0, LAYOUT_BLOCK);
	put(e, path, sizeof(path), img, pristine_len);
	write_region_conf(e, path, NULL);
	expect_refusal(e, path, img, pristine_len, "extent table block zeroed",
		       (const char *const[]){"tag 'precious'", "missing from the extent table",
					     "refusing to open the region",
					     "refused: committed extents missing from the extent table",
					     NULL});
	/* pmemzctl check: unusable (exit 2), for the reason the daemon refused it */
	{
		char *out = ctl_check(path, false, 2);

		assert_non_null(strstr(out, "the daemon refuses the region (committed extents "
					    "missing from the extent table)"));
		free(out);
	}
	free(img);
}

static void test_truncated(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX];

	put(e, path, sizeof(path), pristine, 6 * MIB);
	/* with the size configured */
	write_region_conf(e, path, NULL);
	expect_refusal(e, path, pristine, 6 * MIB, "truncated, size configured",
		       (const char *const[]){"refusing to resize it", NULL});
	/* without: the header's size is what counts */
	write_region_conf(e, path, "extent_size = 256K\n");
	expect_refusal(e, path, pristine, 6 * MIB, "truncated, no size configured",
		       (const char *const[]){"header says the region is 8388608 bytes",
					     "refusing to touch it", NULL});
	free(ctl_check(path, false, 2));
}

static void test_grown(void **state)
{
	struct itest_env *e = *state;
	uint8_t *img = calloc(1, 10 * MIB);
	char path[PATH_MAX];

	assert_non_null(img);
	memcpy(img, pristine, pristine_len);
	put(e, path, sizeof(path), img, 10 * MIB);
	write_region_conf(e, path, NULL);
	expect_refusal(e, path, img, 10 * MIB, "grown, size configured",
		       (const char *const[]){"configured size is 8.0 MiB", NULL});
	write_region_conf(e, path, "extent_size = 256K\n");
	expect_refusal(e, path, img, 10 * MIB, "grown, no size configured",
		       (const char *const[]){"header says the region is 8388608 bytes",
					     "refused: size differs from the header's region size",
					     NULL});
	/* never resized: unusable (exit 2), for the reason the daemon refused it */
	{
		char *out = ctl_check(path, false, 2);

		assert_non_null(strstr(out, "the daemon refuses the region (size differs from "
					    "the header's region size)"));
		free(out);
	}
	free(img);
}

static void test_extent_size_changed(void **state)
{
	struct itest_env *e = *state;
	char path[PATH_MAX];

	put(e, path, sizeof(path), pristine, pristine_len);
	write_region_conf(e, path, "size = 8M\nextent_size = 512K\n");
	expect_refusal(e, path, pristine, pristine_len, "extent size changed in the config",
		       (const char *const[]){"configured extent size 512.0 KiB differs",
					     "on-media extent size 256.0 KiB", NULL});
	free(ctl_check(path, true, 0)); /* the media itself is fine */
}

/* ---- damaged records and slots: started, quarantined ---- */

static void quarantined_start(struct itest_env *e, uint8_t *img, const char *what,
			      const char *const *needles, uint64_t want_bad, bool a_hidden)
{
	char path[PATH_MAX];
	struct itest_stat st;

	put(e, path, sizeof(path), img, pristine_len);
	free(ctl_check(path, false, 1));
	write_region_conf(e, path, NULL);
	itest_daemon_start(e);
	log_has(e, what, needles);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, what);
	assert_int_equal(st.bad, want_bad);
	assert_int_equal(tag_state(e, "precious", 3 * EXT, SEED_A), a_hidden ? -ENOENT : 0);
	assert_int_equal(tag_state(e, "other", EXT, SEED_B), 0);
	/* everything else can be handed out; none of it is a quarantined extent */
	assert_quarantined_kept_back(e, false);
	itest_daemon_stop(e);
	assert_a_data_kept(path);
	free(ctl_check(path, true, 1)); /* the damage is left for the operator */
}

static void test_record_tag_bit_flip(void **state)
{
	uint8_t *img = copy_of_pristine();
	uint64_t rec = rec_at(img, ext_a[1]);
	uint32_t other = (id_a ^ 0x4u);

	assert_true(other >= 1 && other <= H.tag_count && other != id_b);
	rec = layout_rec(EXT_COMMITTED, other, layout_rec_gen(rec));
	memcpy(img + H.extent_table_off + ext_a[1] * 8, &rec, 8);
	quarantined_start(*state, img, "record tag id bit flip",
			  (const char *const[]){"tag 'precious'",
						"was committed with 3 extents but 2", "quarantin",
						NULL},
			  3, true);
	free(img);
}

static void test_record_state_bit_flip(void **state)
{
	uint8_t *img = copy_of_pristine();
	uint64_t i = 0;

	while (layout_rec_state(rec_at(img, i)) != EXT_ZEROED)
		i++;
	img[H.extent_table_off + i * 8] ^= 0x80; /* ZEROED 0x7f -> code 0xff: no state */
	quarantined_start(*state, img, "record state bit flip",
			  (const char *const[]){"extent records are damaged", NULL}, 1, false);
	free(img);
}

static void test_tag_slot_bit_flip(void **state)
{
	uint8_t *img = copy_of_pristine();
	uint64_t off = H.tag_table_off + (uint64_t)(id_a - 1) * LAYOUT_TAG_SLOT_SIZE;

	img[off + 33] ^= 0x01; /* the name: checksum mismatch */
	quarantined_start(*state, img, "tag slot bit flip",
			  (const char *const[]){"tag slots are damaged", NULL}, 3, true);
	free(img);
}

/*
 * A zeroed block of the tag table: both tags' slots read FREE (all zero)
 * while their records are COMMITTED.  No crash leaves that, so it is not a
 * half-done free to complete: both tags are hidden and their extents
 * quarantined, never zeroed nor handed out, and the checker reports it.
 */
static void test_tag_table_block_zeroed(void **state)
{
	struct itest_env *e = *state;
	uint8_t *img = copy_of_pristine();
	char path[PATH_MAX], want_a[64], want_ext[64];
	const char *what = "tag table block zeroed";
	struct itest_stat st;
	char *out;

	/* both slots are in the block */
	assert_true((uint64_t)id_a * LAYOUT_TAG_SLOT_SIZE <= LAYOUT_BLOCK &&
		    (uint64_t)id_b * LAYOUT_TAG_SLOT_SIZE <= LAYOUT_BLOCK);
	memset(img + H.tag_table_off, 0, LAYOUT_BLOCK);
	put(e, path, sizeof(path), img, pristine_len);
	out = ctl_check(path, false, 1);
	assert_non_null(strstr(out, "(a zeroed block of the tag table?): media damage"));
	free(out);
	write_region_conf(e, path, NULL);
	itest_daemon_start(e);
	snprintf(want_a, sizeof(want_a), "tag id %u (slot at offset", id_a);
	snprintf(want_ext, sizeof(want_ext), "name it (extents %llu", (unsigned long long)ext_a[0]);
	log_has(e, what,
		(const char *const[]){"error: region '" REGION "'", want_a, want_ext,
				      "is blank (a zeroed block of the tag table?)",
				      "quarantining those extents", NULL});
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, what);
	assert_int_equal(st.bad, 4);
	assert_int_equal(st.committed, 0);
	assert_int_equal(tag_state(e, "precious", 3 * EXT, SEED_A), -ENOENT);
	assert_int_equal(tag_state(e, "other", EXT, SEED_B), -ENOENT);
	assert_quarantined_kept_back(e, true);
	itest_daemon_stop(e);
	assert_data_kept(path, true);
	free(ctl_check(path, true, 1)); /* the damage is left for the operator */
	free(img);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, itest_setup, itest_teardown)
	const struct CMUnitTest tests[] = {
	    T(test_primary_bit_flip),
	    T(test_primary_zeroed),
	    T(test_backup_damaged),
	    T(test_both_headers_damaged),
	    T(test_headers_wiped),
	    T(test_extent_table_block_zeroed),
	    T(test_truncated),
	    T(test_grown),
	    T(test_extent_size_changed),
	    T(test_record_tag_bit_flip),
	    T(test_record_state_bit_flip),
	    T(test_tag_slot_bit_flip),
	    T(test_tag_table_block_zeroed),
	};

	if (access(itest_ctl_path(), X_OK) != 0)
		return itest_skip("pmemzctl is not built");
	return cmocka_run_group_tests(tests, make_pristine, free_pristine);
}
