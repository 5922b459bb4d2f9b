/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the storage core (daemon/storage/region*.c, format.c, zeroer.c,
 * pstore.c) on real libpmem2 mappings of files in /dev/shm.  Run by ctest
 * with the default granularity and with PMEM2_FORCE_GRANULARITY=CACHE_LINE.
 *
 * A crash is simulated with region_close_abandon() (no second phase, no
 * more drains) and by writing records into the file directly.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "media.h"
#include "log.h"
#include "region-internal.h"
#include "region.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

struct fx {
	char path[128];
	struct region_conf rc;
	char name[16];
};

static const char *tmp_dir(void)
{
	struct stat st;

	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
}

/* A fresh file name (no file yet) and a configuration for it. */
static void fx_init(struct fx *f, uint64_t size, uint64_t extent)
{
	int fd;

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s/pmemz-test-XXXXXX", tmp_dir());
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	close(fd);
	/* A unique name, no file: region_open creates it (an empty one it refuses). */
	(void)unlink(f->path);
	strcpy(f->name, "test");
	f->rc.name = f->name;
	f->rc.path = f->path;
	f->rc.size = size;
	f->rc.extent_size = extent;
	f->rc.zeroer_threads = 1;
	f->rc.batch_extents = 8;
	f->rc.source = f->name;
}

static void fx_fini(struct fx *f)
{
	(void)unlink(f->path);
}

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fx_init(f, 16 * MiB, 256 * KiB);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	fx_fini(*state);
	free(*state);
	return 0;
}

static void read_at(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void write_at(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
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

static void read_header(const char *path, uint64_t off, struct layout_header *h)
{
	static uint8_t block[LAYOUT_BLOCK];

	read_at(path, off, block, sizeof(block));
	assert_int_equal(layout_header_check(block, h, NULL, 0), HDR_OK);
}

static uint64_t read_rec(const char *path, const struct layout_header *h, uint64_t i)
{
	uint64_t rec;

	read_at(path, h->extent_table_off + i * 8, &rec, sizeof(rec));
	return rec;
}

static void write_rec(const char *path, const struct layout_header *h, uint64_t i, uint64_t rec)
{
	write_at(path, h->extent_table_off + i * 8, &rec, sizeof(rec));
}

static void read_slot(const char *path, const struct layout_header *h, uint32_t id,
		      struct layout_tag *t)
{
	read_at(path, h->tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE, t, sizeof(*t));
}

static void write_slot(const char *path, const struct layout_header *h, uint32_t id,
		       const struct layout_tag *t)
{
	write_at(path, h->tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE, t, sizeof(*t));
}

/* I3 and the index's own consistency, after every step. */
static void check_i3(struct region *r)
{
	struct region_stats st;
	struct region_info info;
	uint64_t sum = 0;

	region_get_stats(r, &st);
	region_get_info(r, &info);
	for (int s = 0; s < EXT_NSTATES; s++)
		sum += st.count[s];
	assert_int_equal(sum, info.extent_count);
	assert_int_equal(region_count_free(r), st.count[EXT_DIRTY] + st.count[EXT_ZEROED]);
	assert_int_equal(region_index_verify(r), 0);
}

static uint64_t count_of(struct region *r, enum extent_state s)
{
	struct region_stats st;

	region_get_stats(r, &st);
	return st.count[s];
}

/* Drive the main-loop side until every free extent is ZEROED (and durable). */
static void wait_all_zeroed(struct region *r)
{
	uint64_t deadline = pmemz_now_ns() + 30ull * 1000000000ull;

	while (region_count_zeroed(r) < region_count_free(r)) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};
		(void)poll(&p, 1, 100);
		(void)region_zeroer_collect(r);
		(void)region_sync(r);
		check_i3(r);
		assert_true(pmemz_now_ns() < deadline);
	}
	(void)region_sync(r);
}

static struct region *open_ok(struct fx *f)
{
	struct region *r = NULL;

	assert_int_equal(region_open(&f->rc, &r), 0);
	assert_non_null(r);
	check_i3(r);
	return r;
}

/* ---- format, reopen, header handling ---- */

static void test_format_reopen(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct region_info info;
	struct layout_header hp, hb;
	uint8_t uuid[16];
	struct stat st;

	r = open_ok(f);
	region_get_info(r, &info);
	assert_string_equal(info.name, "test");
	assert_int_equal(info.size, 16 * MiB);
	assert_int_equal(info.extent_size, 256 * KiB);
	assert_int_equal(info.extent_count, 63);
	assert_int_equal(info.data_offset, 256 * KiB);
	assert_false(info.devdax);
	assert_non_null(info.granularity);
	if (getenv("PMEM2_FORCE_GRANULARITY"))
		assert_string_equal(info.granularity, "cache_line");
	assert_true(region_get_fd(r) >= 0);
	assert_ptr_equal(region_get_conf(r), &f->rc);
	memcpy(uuid, info.uuid, 16);
	assert_int_equal(uuid[6] >> 4, 4); /* v4 */
	/* A fresh region is all DIRTY. */
	assert_int_equal(count_of(r, EXT_DIRTY), 63);
	region_close(r);

	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, 16 * MiB);
	read_header(f->path, 0, &hp);
	read_header(f->path, LAYOUT_BACKUP_OFF, &hb);
	assert_memory_equal(&hp, &hb, sizeof(hp));
	assert_memory_equal(hp.uuid, uuid, 16);
	assert_int_equal(hp.extent_count, 63);
	assert_int_equal(hp.extent_size, 256 * KiB);
	assert_int_equal(hp.region_size, 16 * MiB);

	/* Reopen, also with no configured size or extent size. */
	f->rc.size = 0;
	f->rc.extent_size = 0;
	r = open_ok(f);
	region_get_info(r, &info);
	assert_memory_equal(info.uuid, uuid, 16);
	assert_int_equal(info.extent_count, 63);
	assert_int_equal(info.extent_size, 256 * KiB);
	region_close(r);
}

static void test_create_and_size_rules(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint64_t h;

	/* A missing file is created at its size. */
	unlink(f->path);
	r = open_ok(f);
	region_close(r);
	h = file_hash(f->path);

	/* A configured size different from the file's: refused, untouched. */
	f->rc.size = 32 * MiB;
	assert_int_equal(region_open(&f->rc, &r), -EINVAL);
	assert_null(r);
	assert_int_equal(file_hash(f->path), h);

	/*
	 * An existing empty file (a tenant truncated it?) is neither sized nor
	 * formatted: refused, left empty, also with a size configured.
	 */
	{
		int fd;

		assert_int_equal(truncate(f->path, 0), 0);
		assert_int_equal(region_open(&f->rc, &r), -EINVAL);
		assert_null(r);
		f->rc.size = 16 * MiB;
		assert_int_equal(region_open(&f->rc, &r), -EINVAL);
		assert_null(r);
		fd = open(f->path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(lseek(fd, 0, SEEK_END), 0);
		close(fd);
		/* Nor one whose size is not a multiple of 4 KiB. */
		f->rc.size = 0;
		assert_int_equal(truncate(f->path, 16 * MiB + 100), 0);
		assert_int_equal(region_open(&f->rc, &r), -EINVAL);
		assert_null(r);
	}

	/* Missing, with no size: refused, not created. */
	unlink(f->path);
	f->rc.size = 0;
	assert_int_equal(region_open(&f->rc, &r), -ENOENT);
	assert_int_equal(access(f->path, F_OK), -1);

	/* A size that is not a multiple of 4 KiB. */
	f->rc.size = 16 * MiB + 100;
	assert_int_equal(region_open(&f->rc, &r), -EINVAL);
	assert_int_equal(access(f->path, F_OK), -1);

	/* Too small for one extent: refused with -ENOSPC, the new file removed. */
	f->rc.size = 256 * KiB;
	assert_int_equal(region_open(&f->rc, &r), -ENOSPC);
	assert_int_equal(access(f->path, F_OK), -1);

	/* A character device that is not a device-DAX. */
	{
		struct region_conf rc = f->rc;
		rc.path = (char *)"/dev/null";
		assert_int_equal(region_open(&rc, &r), -ENODEV);
		assert_null(r);
	}

	/* An extent size that is not a multiple of 4 KiB. */
	unlink(f->path);
	f->rc.size = 16 * MiB;
	f->rc.extent_size = 6000;
	assert_int_equal(region_open(&f->rc, &r), -EINVAL);
}

static void test_primary_corrupt_uses_backup(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct layout_header h0, h1;
	uint8_t b = 0;

	r = open_ok(f);
	region_close(r);
	read_header(f->path, 0, &h0);

	/* One flipped bit in the extent count. */
	read_at(f->path, offsetof(struct layout_header, extent_count), &b, 1);
	b ^= 0x01;
	write_at(f->path, offsetof(struct layout_header, extent_count), &b, 1);

	r = open_ok(f);
	region_close(r);
	read_header(f->path, 0, &h1); /* repaired */
	assert_memory_equal(&h0, &h1, sizeof(h0));

	/* A wiped (all zero) primary with a good backup: also repaired. */
	{
		static uint8_t zero[LAYOUT_BLOCK];
		write_at(f->path, 0, zero, sizeof(zero));
	}
	r = open_ok(f);
	region_close(r);
	read_header(f->path, 0, &h1);
	assert_memory_equal(&h0, &h1, sizeof(h0));

	/* A damaged backup is rewritten from the primary. */
	b = 0xff;
	write_at(f->path, LAYOUT_BACKUP_OFF + 40, &b, 1);
	r = open_ok(f);
	region_close(r);
	read_header(f->path, LAYOUT_BACKUP_OFF, &h1);
	assert_memory_equal(&h0, &h1, sizeof(h0));
}

static void test_both_corrupt_refused(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint64_t h;
	uint8_t b = 0x5a;

	r = open_ok(f);
	region_close(r);
	write_at(f->path, 20, &b, 1);
	write_at(f->path, LAYOUT_BACKUP_OFF + 20, &b, 1);
	h = file_hash(f->path);
	assert_int_equal(region_open(&f->rc, &r), -EUCLEAN);
	assert_null(r);
	assert_int_equal(file_hash(f->path), h);
}

static void test_foreign_refused(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint64_t h;

	/* Ours once, now a filesystem's magic over the primary: never repaired. */
	r = open_ok(f);
	region_close(r);
	write_at(f->path, 0, "XFSB", 4);
	h = file_hash(f->path);
	assert_int_equal(region_open(&f->rc, &r), -EMEDIUMTYPE);
	assert_null(r);
	assert_int_equal(file_hash(f->path), h);

	/* Someone else's data from the start: never formatted. */
	{
		uint8_t junk[3 * LAYOUT_BLOCK];
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)(i * 31 + 7);
		write_at(f->path, 0, junk, sizeof(junk));
	}
	h = file_hash(f->path);
	assert_int_equal(region_open(&f->rc, &r), -EMEDIUMTYPE);
	assert_int_equal(file_hash(f->path), h);

	/* Blank primary but a non-blank backup block: not blank, refused. */
	{
		static uint8_t zero[LAYOUT_BLOCK];
		write_at(f->path, 0, zero, sizeof(zero));
	}
	h = file_hash(f->path);
	assert_int_equal(region_open(&f->rc, &r), -EUCLEAN);
	assert_int_equal(file_hash(f->path), h);
}

static void test_geometry_mismatch_refused(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	uint64_t h;

	r = open_ok(f);
	region_close(r);
	h = file_hash(f->path);

	f->rc.extent_size = 512 * KiB;
	assert_int_equal(region_open(&f->rc, &r), -EINVAL);
	assert_null(r);
	assert_int_equal(file_hash(f->path), h);

	/* The file grew: the header no longer describes it. */
	f->rc.extent_size = 256 * KiB;
	assert_int_equal(truncate(f->path, 20 * MiB), 0);
	h = file_hash(f->path);
	f->rc.size = 0;
	assert_int_equal(region_open(&f->rc, &r), -EINVAL);
	assert_int_equal(file_hash(f->path), h);
}

static void test_unsupported_version_refused(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	struct layout_header hd;
	uint64_t h;

	r = open_ok(f);
	region_close(r);
	read_header(f->path, 0, &hd);
	hd.version = LAYOUT_VERSION + 1;
	layout_header_seal(&hd);
	write_at(f->path, 0, &hd, sizeof(hd));
	h = file_hash(f->path);
	assert_int_equal(region_open(&f->rc, &r), -ENOTSUP);
	assert_int_equal(file_hash(f->path), h);
}

/* Both header blocks of path (at 0, as the headers of an inline or a split region) rewritten. */
static void edit_headers(const char *path, void (*edit)(struct layout_header *h, void *arg),
			 void *arg)
{
	struct layout_header h;

	read_header(path, 0, &h);
	edit(&h, arg);
	layout_header_seal(&h);
	write_at(path, LAYOUT_PRIMARY_OFF, &h, sizeof(h));
	write_at(path, LAYOUT_BACKUP_OFF, &h, sizeof(h));
}

/* As every build before the feature masks wrote it: version 1, split as flag bit 0. */
static void as_version_1(struct layout_header *h, void *arg)
{
	(void)arg;
	h->flags = (h->incompat & LAYOUT_INCOMPAT_SPLIT) ? LAYOUT_FLAG_SPLIT : 0;
	h->version = 1;
	h->compat = h->ro_compat = h->incompat = 0;
}

static void or_masks(struct layout_header *h, void *arg)
{
	const struct layout_features *f = arg;

	h->compat |= f->compat;
	h->ro_compat |= f->ro_compat;
	h->incompat |= f->incompat;
}

/* A region with a committed tag "keep" of 2 extents, closed; reopened by check_keep. */
static void commit_keep(struct fx *f)
{
	struct region *r = open_ok(f);
	struct run *runs = NULL;
	size_t n_runs;

	wait_all_zeroed(r);
	assert_int_equal(region_lease(r, 2, &runs, &n_runs), 0);
	assert_int_equal(region_commit(r, runs, n_runs, "keep", 7, true), 0);
	assert_int_equal(region_sync(r), 3);
	free(runs);
	region_close(r);
}

static void check_keep(struct fx *f)
{
	struct region *r = open_ok(f);
	uint32_t id;

	assert_int_equal(region_tag_lookup(r, "keep", 7, &id), 0);
	assert_int_equal(region_tag_extents(r, id), 2);
	region_close(r);
}

/*
 * A new region is layout version 2 with incompat move; a version 1 region
 * (inline or split, as every earlier build wrote it) opens as it did and
 * stays version 1, a header repair included, so that build still opens it.
 */
static void test_layout_version_1_opens(void **state)
{
	struct fx *f = *state;
	struct layout_header h, hb;
	char meta[160];
	uint64_t w = 0x5a5a5a5a;

	commit_keep(f);
	read_header(f->path, 0, &h);
	assert_int_equal(h.version, 2);
	assert_true(h.incompat == LAYOUT_INCOMPAT_MOVE && !h.compat && !h.ro_compat && !h.flags);
	edit_headers(f->path, as_version_1, NULL);
	check_keep(f);
	read_header(f->path, 0, &h);
	assert_int_equal(h.version, 1);
	/* A torn primary: repaired from the backup, as version 1. */
	write_at(f->path, 200, &w, sizeof(w));
	check_keep(f);
	read_header(f->path, 0, &h);
	read_header(f->path, LAYOUT_BACKUP_OFF, &hb);
	assert_int_equal(h.version, 1);
	assert_memory_equal(&h, &hb, sizeof(h));

	/* Split: the metadata file's headers with flag bit 0. */
	fx_fini(f);
	snprintf(meta, sizeof(meta), "%s.meta", f->path);
	(void)unlink(meta);
	f->rc.metadata = meta;
	commit_keep(f);
	edit_headers(meta, as_version_1, NULL);
	read_header(meta, 0, &h);
	assert_true(h.version == 1 && h.flags == LAYOUT_FLAG_SPLIT && layout_header_split(&h));
	check_keep(f);
	read_header(meta, 0, &h);
	assert_true(h.version == 1 && h.flags == LAYOUT_FLAG_SPLIT);
	/* The metadata opened inline: a split header there is refused. */
	{
		struct region_conf rc = f->rc;
		struct region *r = NULL;

		rc.metadata = NULL;
		rc.path = meta;
		rc.size = 0;
		assert_int_equal(region_open(&rc, &r), -EINVAL);
	}
	(void)unlink(meta);
}

/*
 * A newer build's features: unknown incompat refused (-ENOTSUP), unknown
 * ro_compat refused (-EROFS), both with the file left byte for byte as it
 * was although recovery has work (a LEASED record); unknown compat used,
 * and a repair keeps them with the rest of the header block.
 */
static void test_unknown_features(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	struct layout_features inc = {.incompat = UINT64_C(1) << 30};
	struct layout_features ro = {.ro_compat = UINT64_C(1) << 4};
	struct layout_features co = {.compat = UINT64_C(1) << 1};
	struct layout_header h, hb;
	uint8_t block[LAYOUT_BLOCK], mark = 0x6b;
	uint64_t hash, w = 0x5a5a5a5a;

	commit_keep(f);
	read_header(f->path, 0, &h);
	write_rec(f->path, &h, h.extent_count - 1, layout_rec(EXT_LEASED, 0, 9));
	edit_headers(f->path, or_masks, &inc);
	hash = file_hash(f->path);
	assert_int_equal(region_open(&f->rc, &r), -ENOTSUP);
	assert_int_equal(file_hash(f->path), hash);

	read_at(f->path, 0, block, sizeof(block));
	memcpy(&h, block, sizeof(h));
	h.incompat &= ~inc.incompat;
	h.ro_compat = ro.ro_compat;
	layout_header_seal(&h);
	write_at(f->path, 0, &h, sizeof(h));
	write_at(f->path, LAYOUT_BACKUP_OFF, &h, sizeof(h));
	hash = file_hash(f->path);
	assert_int_equal(region_open(&f->rc, &r), -EROFS);
	assert_int_equal(file_hash(f->path), hash);
	/* In the backup alone too: the primary is not used to undo it. */
	h.ro_compat = 0;
	layout_header_seal(&h);
	write_at(f->path, 0, &h, sizeof(h));
	hash = file_hash(f->path);
	assert_int_equal(region_open(&f->rc, &r), -EROFS);
	assert_int_equal(file_hash(f->path), hash);
	write_at(f->path, LAYOUT_BACKUP_OFF, &h, sizeof(h));

	/* compat: served; a torn primary is rewritten from the whole backup block. */
	edit_headers(f->path, or_masks, &co);
	write_at(f->path, LAYOUT_BACKUP_OFF + 3000, &mark, 1);
	write_at(f->path, 200, &w, sizeof(w));
	check_keep(f);
	read_header(f->path, 0, &h);
	read_header(f->path, LAYOUT_BACKUP_OFF, &hb);
	assert_true(h.compat == co.compat);
	assert_memory_equal(&h, &hb, sizeof(h));
	read_at(f->path, 3000, &w, 1);
	assert_int_equal((uint8_t)w, mark);
}

/*
 * A split region refused for its metadata file's size (larger than its
 * tables) with a corrupt backup header: the repair the header choice asks
 * for is not written, the file is left as it was.
 */
static void test_refused_split_untouched(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	char meta[160];
	uint64_t w = 0x5a5a5a5a, hash;
	struct stat st;

	snprintf(meta, sizeof(meta), "%s.meta", f->path);
	(void)unlink(meta);
	f->rc.metadata = meta;
	r = open_ok(f);
	region_close(r);
	assert_int_equal(stat(meta, &st), 0);
	assert_int_equal(truncate(meta, st.st_size + 4096), 0);
	write_at(meta, LAYOUT_BACKUP_OFF + 200, &w, sizeof(w));
	hash = file_hash(meta);
	assert_int_equal(region_open(&f->rc, &r), -EINVAL);
	assert_int_equal(file_hash(meta), hash);
	(void)unlink(meta);
}

static void test_one_daemon_per_region(void **state)
{
	struct fx *f = *state;
	struct region *r = NULL;
	int to_child[2], from_child[2];
	pid_t pid;
	char c;

	r = open_ok(f);
	region_close(r);
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(from_child), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct region *cr = NULL;
		int ok = region_open(&f->rc, &cr) == 0;
		(void)!write(from_child[1], ok ? "y" : "n", 1);
		(void)!read(to_child[0], &c, 1);
		if (cr)
			region_close(cr);
		_exit(0);
	}
	assert_int_equal(read(from_child[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	assert_int_equal(region_open(&f->rc, &r), -EBUSY);
	assert_null(r);
	assert_int_equal(write(to_child[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	r = open_ok(f);
	region_close(r);
	close(to_child[0]);
	close(to_child[1]);
	close(from_child[0]);
	close(from_child[1]);
}

/*
 * The fd a tenant gets is a new open file description: its flags and its
 * OFD locks are not the daemon's, and the one-daemon lock is not on the
 * region file (attack 2: a tenant's lock kept the daemon from restarting).
 * Two opens of one file in one process conflict too.
 */
static void test_handed_fd_and_lock(void **state)
{
	struct fx *f = *state;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	struct region *r = NULL, *r2 = NULL;
	int fd;

	r = open_ok(f);
	fd = region_open_fd(r);
	assert_true(fd >= 0);
	assert_true(fd != region_get_fd(r));
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND), 0);
	assert_true(fcntl(fd, F_GETFL) & O_APPEND);
	assert_false(fcntl(region_get_fd(r), F_GETFL) & O_APPEND);
	assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	assert_int_equal(region_open(&f->rc, &r2), -EBUSY);
	assert_null(r2);
	/* A tenant's write lock on the whole file, held across a restart. */
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
	region_close(r);
	r = open_ok(f);
	region_close(r);
	close(fd);
}

/*
 * A tenant truncates the file under the daemon (attack 1): the next store
 * faults, the region says it failed and why, and region_sync refuses to
 * attest anything; the process lives and the zeroer stops.
 */
static void test_truncated_fails_region(void **state)
{
	struct fx *f = *state;
	struct region *r = open_ok(f);
	struct run *runs = NULL;
	size_t n_runs = 0;
	char why[160];
	int fd;

	wait_all_zeroed(r);
	assert_false(region_failed(r, why, sizeof(why)));
	fd = region_open_fd(r);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	close(fd);
	/* The lease stores LEASED records in the truncated part. */
	assert_int_equal(region_lease(r, 4, &runs, &n_runs), 0);
	assert_true(region_failed(r, why, sizeof(why)));
	assert_non_null(strstr(why, "SIGBUS"));
	assert_int_equal(region_sync(r), -EIO);
	region_unlease(r, runs, n_runs);
	assert_int_equal(region_sync(r), -EIO);
	free(runs);
	/* Nothing more becomes ZEROED, nothing is submitted. */
	assert_int_equal(region_zeroer_collect(r), 0);
	region_close(r);
	/* A restart refuses the file: smaller than its header says. */
	assert_int_equal(region_open(&f->rc, &r), -EINVAL);
	assert_null(r);
}

/* The zeroer meets the fault: no batch of the truncated file becomes ZEROED. */
static void test_truncated_under_zeroer(void **state)
{
	struct fx *f = *state;
	struct region *r = open_ok(f);
	uint64_t zeroed;
	int fd, i;

	region_zeroer_pause(r, true);
	fd = region_open_fd(r);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	close(fd);
	region_zeroer_pause(r, false);
	for (i = 0; i < 300 && !region_failed(r, NULL, 0); i++) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};

		(void)poll(&p, 1, 100);
		(void)region_zeroer_collect(r);
	}
	assert_true(region_failed(r, NULL, 0));
	/* Batches still out come back as not zeroed (earlier ones may have been). */
	zeroed = region_count_zeroed(r);
	for (i = 0; i < 5; i++) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};

		(void)poll(&p, 1, 20);
		(void)region_zeroer_collect(r);
	}
	assert_int_equal(region_count_zeroed(r), zeroed);
	assert_int_equal(region_sync(r), -EIO);
	region_close(r);
}

/*
 * metadata = PATH: header and tables in a file of their own, the data file
 * holds only extents (data_offset 0).  What a tenant writes to the data
 * file cannot touch the allocation state; the two files are used as a pair
 * and never formatted over.
 */
static void test_split_metadata(void **state)
{
	struct fx *f = *state;
	char meta[160];
	struct region *r;
	struct region_info info;
	struct layout_header h;
	struct run *runs = NULL;
	size_t n_runs;
	uint32_t id;
	uint8_t junk[8192];
	struct stat st;
	int fd;

	snprintf(meta, sizeof(meta), "%s.meta", f->path);
	(void)unlink(meta);
	f->rc.metadata = meta;
	r = open_ok(f);
	region_get_info(r, &info);
	assert_int_equal(info.size, 16 * MiB);
	assert_int_equal(info.data_offset, 0);
	assert_int_equal(info.extent_count, 64); /* the whole data file */
	wait_all_zeroed(r);
	assert_int_equal(region_lease(r, 2, &runs, &n_runs), 0);
	assert_int_equal(region_commit(r, runs, n_runs, "split", 7, true), 0);
	assert_int_equal(region_sync(r), 3);
	region_close(r);

	read_header(meta, 0, &h);
	assert_int_equal(h.version, LAYOUT_VERSION);
	assert_true(h.incompat == (LAYOUT_INCOMPAT_SPLIT | LAYOUT_INCOMPAT_MOVE));
	assert_int_equal(h.flags, 0);
	assert_int_equal(h.region_size, 16 * MiB);
	assert_int_equal(h.data_off, 0);
	assert_int_equal(stat(meta, &st), 0);
	assert_int_equal((uint64_t)st.st_size, layout_tables_end(h.tag_table_off, h.tag_count));

	/* A tenant scribbles over the start of the data file: no header to hit. */
	memset(junk, 0x5a, sizeof(junk));
	fd = open(f->path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	close(fd);
	r = open_ok(f);
	assert_int_equal(region_tag_lookup(r, "split", 7, &id), 0);
	assert_int_equal(count_of(r, EXT_COMMITTED), 2);
	region_close(r);

	/* The data file without its metadata is refused, not formatted inline. */
	f->rc.metadata = NULL;
	assert_int_equal(region_open(&f->rc, &r), -EMEDIUMTYPE);
	/* The metadata missing for an existing data file: refused, not created. */
	f->rc.metadata = meta;
	assert_int_equal(rename(meta, "/dev/shm/pmemz-test-split-moved") == 0 ||
			     rename(meta, "/tmp/pmemz-test-split-moved") == 0,
			 1);
	assert_int_equal(region_open(&f->rc, &r), -ENOENT);
	assert_int_equal(access(meta, F_OK), -1);
	(void)unlink("/dev/shm/pmemz-test-split-moved");
	(void)unlink("/tmp/pmemz-test-split-moved");
	/* Created empty by the operator: formatted, everything DIRTY again. */
	fd = open(meta, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	r = open_ok(f);
	assert_int_equal(region_tag_lookup(r, "split", 7, &id), -ENOENT);
	assert_int_equal(count_of(r, EXT_DIRTY), 64);
	region_close(r);
	/* A metadata file of the wrong size is refused. */
	assert_int_equal(truncate(meta, (off_t)(st.st_size + LAYOUT_BLOCK)), 0);
	assert_int_equal(region_open(&f->rc, &r), -EINVAL);
	/* An inline region's header in the metadata slot: refused. */
	f->rc.metadata = NULL;
	(void)unlink(f->path);
	r = open_ok(f);
	region_close(r);
	f->rc.metadata = f->path;
	{
		struct region_conf rc = f->rc;
		char data[160];

		snprintf(data, sizeof(data), "%s.data", f->path);
		(void)unlink(data);
		rc.path = data;
		rc.metadata = f->path;
		assert_int_equal(region_open(&rc, &r), -EINVAL);
		(void)unlink(data);
	}
	f->rc.metadata = NULL;
	free(runs);
	(void)unlink(meta);
}

/* ---- state transitions ---- */

static void test_lease_unlease(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct layout_header hd;
	struct run *runs = NULL;
	size_t n_runs = 0;
	uint64_t gen0;

	r = open_ok(f);
	/* Nothing collected yet: nothing ZEROED. */
	assert_int_equal(region_count_zeroed(r), 0);
	assert_int_equal(region_lease(r, 1, &runs, &n_runs), -EAGAIN);
	assert_int_equal(region_lease(r, 64, &runs, &n_runs), -ENOSPC);
	assert_int_equal(region_lease(r, 0, &runs, &n_runs), -EINVAL);
	wait_all_zeroed(r);
	assert_int_equal(region_count_zeroed(r), 63);
	read_header(f->path, 0, &hd);
	gen0 = layout_rec_gen(read_rec(f->path, &hd, 0));

	assert_int_equal(region_lease(r, 5, &runs, &n_runs), 0);
	assert_int_equal(n_runs, 1); /* contiguous when possible */
	assert_int_equal(runs[0].count, 5);
	assert_int_equal(count_of(r, EXT_LEASED), 5);
	assert_int_equal(region_count_zeroed(r), 58);
	assert_int_equal(region_count_free(r), 58);
	assert_int_equal(region_sync(r), 1);
	check_i3(r);
	for (uint64_t i = runs[0].first; i < runs[0].first + 5; i++) {
		uint64_t rec = read_rec(f->path, &hd, i);
		assert_int_equal(layout_rec_state(rec), EXT_LEASED);
		if (i == 0)
			assert_int_equal(layout_rec_gen(rec), gen0 + 1);
	}
	assert_int_equal(region_sync(r), 0); /* nothing pending */

	region_unlease(r, runs, n_runs);
	assert_int_equal(count_of(r, EXT_LEASED), 0);
	assert_int_equal(count_of(r, EXT_DIRTY), 5);
	check_i3(r);
	/* Unleasing again is ignored, never counted twice. */
	region_unlease(r, runs, n_runs);
	assert_int_equal(count_of(r, EXT_DIRTY), 5);
	assert_int_equal(count_of(r, EXT_LEASED), 0);
	/* Out of range runs too. */
	{
		struct run bogus = {62, 5};
		region_unlease(r, &bogus, 1);
	}
	assert_int_equal(region_sync(r), 1);
	check_i3(r);
	for (uint64_t i = runs[0].first; i < runs[0].first + 5; i++)
		assert_int_equal(layout_rec_state(read_rec(f->path, &hd, i)), EXT_DIRTY);
	free(runs);

	/* They come back zeroed. */
	wait_all_zeroed(r);
	assert_int_equal(region_count_zeroed(r), 63);

	/* Lease everything: then -ENOSPC. */
	assert_int_equal(region_lease(r, 63, &runs, &n_runs), 0);
	assert_int_equal(n_runs, 1);
	assert_int_equal(region_lease(r, 1, &runs, &n_runs), -ENOSPC);
	(void)region_sync(r);
	check_i3(r);
	free(runs);
	region_close(r);
}

static void test_lease_fragmented(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct run *a = NULL, *b = NULL, *runs = NULL;
	size_t na, nb, n_runs;
	uint64_t total = 0;

	r = open_ok(f);
	wait_all_zeroed(r);
	/* Lease all, then free every other extent: 32 holes of one... */
	assert_int_equal(region_lease(r, 63, &a, &na), 0);
	for (uint64_t i = 0; i < 63; i += 2) {
		struct run one = {i, 1};
		region_unlease(r, &one, 1);
	}
	(void)region_sync(r);
	/* ...and 11..13, joining 10..14 into one run of 5. */
	{
		struct run three = {11, 3};
		region_unlease(r, &three, 1);
	}
	(void)region_sync(r);
	check_i3(r);
	wait_all_zeroed(r);
	/* First fit: 10..14 (11 and 13 joined the single holes 10, 12, 14). */
	assert_int_equal(region_lease(r, 3, &b, &nb), 0);
	assert_int_equal(nb, 1);
	assert_int_equal(b[0].first, 10);
	assert_int_equal(b[0].count, 3);
	free(b);
	/* More than any run: the longest runs, sorted, no duplicates. */
	assert_int_equal(region_lease(r, 10, &runs, &n_runs), 0);
	for (size_t k = 0; k < n_runs; k++) {
		total += runs[k].count;
		if (k)
			assert_true(runs[k].first >= runs[k - 1].first + runs[k - 1].count);
	}
	assert_int_equal(total, 10);
	(void)region_sync(r);
	check_i3(r);
	free(runs);
	free(a);
	region_close(r);
}

static void test_recovery_leases(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct run *runs = NULL;
	size_t n_runs;

	r = open_ok(f);
	wait_all_zeroed(r);
	assert_int_equal(region_lease(r, 10, &runs, &n_runs), 0);
	assert_int_equal(region_sync(r), 1);
	free(runs);
	region_close_abandon(r); /* a crash */

	r = open_ok(f);
	assert_int_equal(count_of(r, EXT_LEASED), 0);
	assert_int_equal(count_of(r, EXT_DIRTY), 10);
	assert_int_equal(count_of(r, EXT_ZEROED), 53);
	wait_all_zeroed(r);
	region_close(r);
}

static void fill_pattern(struct fx *f, struct region *r, const struct run *runs, size_t n,
			 uint8_t seed)
{
	struct region_info info;
	static uint8_t buf[256 * KiB];

	region_get_info(r, &info);
	for (size_t k = 0; k < n; k++)
		for (uint64_t i = runs[k].first; i < runs[k].first + runs[k].count; i++) {
			for (size_t j = 0; j < sizeof(buf); j++)
				buf[j] = (uint8_t)(seed + i + j);
			write_at(f->path, info.data_offset + i * info.extent_size, buf,
				 sizeof(buf));
		}
}

static void check_pattern(struct fx *f, const struct layout_header *hd, const struct run *runs,
			  size_t n, uint8_t seed)
{
	static uint8_t buf[256 * KiB];

	for (size_t k = 0; k < n; k++)
		for (uint64_t i = runs[k].first; i < runs[k].first + runs[k].count; i++) {
			read_at(f->path, hd->data_off + i * hd->extent_size, buf, sizeof(buf));
			for (size_t j = 0; j < sizeof(buf); j++)
				assert_int_equal(buf[j], (uint8_t)(seed + i + j));
		}
}

static void test_commit_durable(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct layout_header hd;
	struct run *runs = NULL, *got = NULL;
	size_t n_runs, n_got;
	uint64_t n_ext;
	uint32_t id;
	const char *name;
	uid_t uid;

	r = open_ok(f);
	wait_all_zeroed(r);
	assert_int_equal(region_lease(r, 4, &runs, &n_runs), 0);
	assert_int_equal(region_sync(r), 1);
	fill_pattern(f, r, runs, n_runs, 3);
	assert_int_equal(region_commit(r, runs, n_runs, "db", 1000, true), 0);
	assert_int_equal(count_of(r, EXT_COMMITTED), 4);
	check_i3(r);
	assert_int_equal(region_sync(r), 3); /* drain, COMMITTED, drain, VALID, drain */
	check_i3(r);
	region_close(r);

	read_header(f->path, 0, &hd);
	r = open_ok(f);
	assert_int_equal(region_tag_lookup(r, "db", 1000, &id), 0);
	assert_int_equal(region_tag_get(r, id, &name, &uid), 0);
	assert_string_equal(name, "db");
	assert_int_equal(uid, 1000);
	assert_int_equal(region_tag_runs(r, id, &got, &n_got, &n_ext), 0);
	assert_int_equal(n_ext, 4);
	assert_int_equal(n_got, n_runs);
	assert_memory_equal(got, runs, n_runs * sizeof(*runs));
	assert_int_equal(count_of(r, EXT_COMMITTED), 4);
	check_pattern(f, &hd, got, n_got, 3);
	free(got);
	free(runs);
	region_close(r);
}

static void test_commit_rolled_back(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct layout_header hd;
	struct layout_tag slot;
	struct run *runs = NULL;
	size_t n_runs;
	uint32_t id;

	r = open_ok(f);
	wait_all_zeroed(r);
	assert_int_equal(region_lease(r, 4, &runs, &n_runs), 0);
	assert_int_equal(region_sync(r), 1);
	assert_int_equal(region_commit(r, runs, n_runs, "half", 1000, false), 0);
	assert_int_equal(region_tag_lookup(r, "half", 1000, &id), 0);
	region_close_abandon(r); /* crash before region_sync */

	read_header(f->path, 0, &hd);
	/*
	 * What region_commit stored: slot body and WRITTEN; the records are
	 * still LEASED (they go COMMITTED only after the body is durable).
	 */
	read_slot(f->path, &hd, id, &slot);
	assert_int_equal(slot.state, TAG_WRITTEN);
	assert_int_equal(slot.checksum, layout_tag_checksum(&slot));
	assert_int_equal(layout_rec_state(read_rec(f->path, &hd, runs[0].first)), EXT_LEASED);

	r = open_ok(f);
	assert_int_equal(region_tag_lookup(r, "half", 1000, &id), -ENOENT);
	assert_int_equal(region_tag_next(r, 0), 0);
	assert_int_equal(count_of(r, EXT_COMMITTED), 0);
	assert_int_equal(count_of(r, EXT_LEASED), 0);
	assert_int_equal(count_of(r, EXT_DIRTY), 4);
	read_slot(f->path, &hd, 1, &slot);
	assert_int_equal(slot.state, TAG_FREE);
	for (uint64_t i = runs[0].first; i < runs[0].first + runs[0].count; i++)
		assert_int_equal(read_rec(f->path, &hd, i) & 0xffffffffu, EXT_DIRTY);
	free(runs);
	region_close(r);
}

static void test_free_atomic(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct layout_header hd;
	struct run *runs = NULL;
	size_t n_runs;
	uint64_t n_ext = 0;
	uint32_t id, id2;

	r = open_ok(f);
	wait_all_zeroed(r);
	assert_int_equal(region_lease(r, 6, &runs, &n_runs), 0);
	assert_int_equal(region_sync(r), 1);
	assert_int_equal(region_commit(r, runs, n_runs, "t", 7, false), 0);
	assert_int_equal(region_sync(r), 3);
	assert_int_equal(region_tag_lookup(r, "t", 7, &id), 0);

	/* Free phase 1 only, then crash: the free completes at recovery. */
	assert_int_equal(region_tag_free(r, id, &n_ext), 0);
	assert_int_equal(n_ext, 6);
	assert_int_equal(count_of(r, EXT_DIRTY), 6);
	assert_int_equal(region_tag_lookup(r, "t", 7, &id2), -ENOENT);
	check_i3(r);
	region_close_abandon(r);

	read_header(f->path, 0, &hd);
	assert_int_equal(layout_rec_state(read_rec(f->path, &hd, runs[0].first)), EXT_COMMITTED);
	{
		struct layout_tag slot;

		read_slot(f->path, &hd, id, &slot); /* the body kept */
		assert_true(slot.state == TAG_FREEING);
		assert_int_equal(slot.checksum, layout_tag_checksum(&slot));
	}
	r = open_ok(f);
	assert_int_equal(region_tag_lookup(r, "t", 7, &id2), -ENOENT);
	assert_int_equal(count_of(r, EXT_COMMITTED), 0);
	assert_int_equal(count_of(r, EXT_DIRTY), 6);
	assert_int_equal(layout_rec_state(read_rec(f->path, &hd, runs[0].first)), EXT_DIRTY);
	wait_all_zeroed(r);
	free(runs);

	/* A full free: two drains, DIRTY on media, then zeroed. */
	assert_int_equal(region_lease(r, 2, &runs, &n_runs), 0);
	assert_int_equal(region_commit(r, runs, n_runs, "u", 7, false), 0);
	assert_int_equal(region_sync(r), 3);
	assert_int_equal(region_tag_lookup(r, "u", 7, &id), 0);
	assert_int_equal(region_tag_free(r, id, NULL), 0);
	assert_int_equal(region_tag_free(r, id, NULL), -ENOENT); /* not twice */
	assert_int_equal(region_sync(r), 2);
	check_i3(r);
	assert_int_equal(layout_rec_state(read_rec(f->path, &hd, runs[0].first)), EXT_DIRTY);
	wait_all_zeroed(r);
	assert_int_equal(region_count_zeroed(r), 63);
	free(runs);
	region_close(r);
}

static void test_tags(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct run *runs = NULL, *got = NULL;
	size_t n_runs, n_got;
	uint32_t id_a, id_b, id;
	char longname[80];
	uint64_t n;
	struct region_stats st;

	r = open_ok(f);
	wait_all_zeroed(r);
	assert_int_equal(region_lease(r, 10, &runs, &n_runs), 0);
	assert_int_equal(n_runs, 1);

	/* Bad names and bad runs change nothing. */
	memset(longname, 'n', sizeof(longname));
	longname[64] = '\0';
	assert_int_equal(region_commit(r, runs, n_runs, longname, 1, false), -ENAMETOOLONG);
	assert_int_equal(region_commit(r, runs, n_runs, "", 1, false), -EINVAL);
	assert_int_equal(region_commit(r, runs, 0, "x", 1, false), -EINVAL);
	{
		struct run overlap[2] = {{runs[0].first, 2}, {runs[0].first + 1, 2}};
		assert_int_equal(region_commit(r, overlap, 2, "x", 1, false), -EINVAL);
		struct run outside = {runs[0].first + 9, 2}; /* one not leased */
		assert_int_equal(region_commit(r, &outside, 1, "x", 1, false), -EINVAL);
		struct run range = {60, 10};
		assert_int_equal(region_commit(r, &range, 1, "x", 1, false), -EINVAL);
	}
	assert_int_equal(count_of(r, EXT_LEASED), 10);
	assert_int_equal(region_sync(r), 1);

	/* Same name, two uids; split runs given out of order are merged. */
	{
		struct run a[2] = {{runs[0].first + 2, 2}, {runs[0].first, 2}};
		struct run b = {runs[0].first + 4, 3};
		assert_int_equal(region_commit(r, a, 2, "data", 1000, false), 0);
		assert_int_equal(region_commit(r, &b, 1, "data", 1001, false), 0);
		/* Visible at once (the reply waits for region_sync anyway). */
		struct run c = {runs[0].first + 7, 1};
		assert_int_equal(region_commit(r, &c, 1, "data", 1001, false), -EEXIST);
		/* The extents of a commit are no longer leased. */
		assert_int_equal(region_commit(r, &b, 1, "other", 1001, false), -EINVAL);
	}
	assert_int_equal(region_sync(r), 3); /* one group commit for both */
	check_i3(r);
	assert_int_equal(region_tag_lookup(r, "data", 1000, &id_a), 0);
	assert_int_equal(region_tag_lookup(r, "data", 1001, &id_b), 0);
	assert_int_not_equal(id_a, id_b);
	assert_int_equal(region_tag_lookup(r, "data", 1002, &id), -ENOENT);
	assert_int_equal(region_tag_lookup(r, longname, 1000, &id), -ENAMETOOLONG);
	assert_int_equal(region_tag_runs(r, id_a, &got, &n_got, &n), 0);
	assert_int_equal(n_got, 1);
	assert_int_equal(got[0].first, runs[0].first);
	assert_int_equal(got[0].count, 4);
	assert_int_equal(n, 4);
	free(got);

	/* Iteration. */
	{
		unsigned seen = 0;
		for (uint32_t t = region_tag_next(r, 0); t; t = region_tag_next(r, t))
			seen++;
		assert_int_equal(seen, 2);
	}
	region_get_stats(r, &st);
	assert_int_equal(st.tags, 2);
	assert_int_equal(region_tag_get(r, 0, NULL, NULL), -ENOENT);
	assert_int_equal(region_tag_get(r, 9999, NULL, NULL), -ENOENT);
	assert_int_equal(region_tag_free(r, 9999, NULL), -ENOENT);

	/* Commit and free in one iteration: nothing survives, slot not reused early. */
	{
		struct run c = {runs[0].first + 7, 3};
		assert_int_equal(region_commit(r, &c, 1, "tmp", 5, false), 0);
		assert_int_equal(region_tag_lookup(r, "tmp", 5, &id), 0);
		assert_int_equal(region_tag_free(r, id, &n), 0);
		assert_int_equal(n, 3);
		assert_int_equal(region_sync(r), 2);
		check_i3(r);
		assert_int_equal(region_tag_lookup(r, "tmp", 5, &id), -ENOENT);
	}
	free(runs);

	/* Free one; the other survives a restart. */
	assert_int_equal(region_tag_free(r, id_a, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(region_sync(r), 2);
	check_i3(r);
	region_close(r);
	r = open_ok(f);
	assert_int_equal(region_tag_lookup(r, "data", 1000, &id), -ENOENT);
	assert_int_equal(region_tag_lookup(r, "data", 1001, &id), 0);
	assert_int_equal(id, id_b);
	assert_int_equal(count_of(r, EXT_COMMITTED), 3);
	region_close(r);
}

/* Records and slots crafted in the file: the recovery rules and damage handling. */
static void test_recovery_crafted(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct layout_header hd;
	struct layout_tag slot;
	uint32_t id;

	r = open_ok(f);
	region_close(r);
	read_header(f->path, 0, &hd);

	write_rec(f->path, &hd, 0, layout_rec(7, 0, 1));		/* unknown state */
	write_rec(f->path, &hd, 1, layout_rec(EXT_COMMITTED, 9999, 1)); /* tag out of range */
	write_rec(f->path, &hd, 2, layout_rec(EXT_COMMITTED, 3, 1));	/* slot 3 WRITTEN */
	write_rec(f->path, &hd, 3, layout_rec(EXT_COMMITTED, 5, 1));	/* slot 5 damaged */
	write_rec(f->path, &hd, 4, layout_rec(EXT_COMMITTED, 6, 1));	/* slot 6 VALID */
	write_rec(f->path, &hd, 5, layout_rec(EXT_LEASED, 0, 1));
	write_rec(f->path, &hd, 6, layout_rec(EXT_ZEROED, 0, 1));
	write_rec(f->path, &hd, 7, layout_rec(EXT_BAD, 0, 1));
	write_rec(f->path, &hd, 8, layout_rec(EXT_COMMITTED, 0, 1)); /* no tag */

	memset(&slot, 0, sizeof(slot));
	slot.uid = 1;
	strcpy(slot.name, "w");
	slot.n_extents = 1;
	slot.checksum = layout_tag_checksum(&slot);
	slot.state = TAG_WRITTEN;
	write_slot(f->path, &hd, 3, &slot);
	strcpy(slot.name, "empty");
	slot.checksum = layout_tag_checksum(&slot);
	slot.state = TAG_VALID;
	write_slot(f->path, &hd, 4, &slot); /* VALID without extents */
	strcpy(slot.name, "damaged");
	slot.checksum = layout_tag_checksum(&slot) ^ 1;
	write_slot(f->path, &hd, 5, &slot);
	strcpy(slot.name, "good");
	slot.checksum = layout_tag_checksum(&slot);
	write_slot(f->path, &hd, 6, &slot);

	r = open_ok(f);
	/* 0, 1, 3, 8 quarantined in memory; 7 really BAD. */
	assert_int_equal(count_of(r, EXT_BAD), 5);
	assert_int_equal(count_of(r, EXT_COMMITTED), 1);
	assert_int_equal(count_of(r, EXT_LEASED), 0);
	assert_int_equal(count_of(r, EXT_ZEROED), 1);
	assert_int_equal(count_of(r, EXT_DIRTY), 63 - 7);
	assert_int_equal(region_tag_lookup(r, "good", 1, &id), 0);
	assert_int_equal(id, 6);
	assert_int_equal(region_tag_lookup(r, "w", 1, &id), -ENOENT);
	assert_int_equal(region_tag_lookup(r, "empty", 1, &id), -ENOENT);
	assert_int_equal(region_tag_lookup(r, "damaged", 1, &id), -ENOENT);
	region_close(r);

	/* Repairs on media; damage left as it was. */
	assert_true(read_rec(f->path, &hd, 0) == layout_rec(7, 0, 1));
	assert_true(read_rec(f->path, &hd, 1) == layout_rec(EXT_COMMITTED, 9999, 1));
	assert_true(read_rec(f->path, &hd, 2) == layout_rec(EXT_DIRTY, 0, 1));
	assert_true(read_rec(f->path, &hd, 3) == layout_rec(EXT_COMMITTED, 5, 1));
	assert_true(read_rec(f->path, &hd, 5) == layout_rec(EXT_DIRTY, 0, 1));
	read_slot(f->path, &hd, 3, &slot);
	assert_int_equal(slot.state, TAG_FREE);
	read_slot(f->path, &hd, 4, &slot);
	assert_int_equal(slot.state, TAG_FREE);
	read_slot(f->path, &hd, 5, &slot);
	assert_int_equal(slot.state, TAG_VALID);
	/* Extent 2, 5 were zeroed meanwhile or are DIRTY: never anything else. */
	r = open_ok(f);
	assert_int_equal(count_of(r, EXT_BAD), 5);
	region_close(r);
}

/* ---- zeroing ---- */

/* Format, then stale data (byte) everywhere in the data area and every record DIRTY. */
static void make_stale(struct fx *f, struct layout_header *hd, uint8_t byte)
{
	static uint8_t buf[1 * MiB];
	struct region *r = open_ok(f);
	uint64_t data_len;

	region_close(r);
	read_header(f->path, 0, hd);
	data_len = hd->extent_count * hd->extent_size;
	memset(buf, byte, sizeof(buf));
	for (uint64_t off = 0; off < data_len; off += sizeof(buf))
		write_at(f->path, hd->data_off + off, buf, MIN(sizeof(buf), data_len - off));
	for (uint64_t i = 0; i < hd->extent_count; i++)
		write_rec(f->path, hd, i, 0);
}

/* Every byte of the data area reads zero (I1). */
static void assert_data_zero(const char *path, const struct layout_header *hd)
{
	static uint8_t buf[1 * MiB];
	uint64_t data_len = hd->extent_count * hd->extent_size;

	for (uint64_t off = 0; off < data_len; off += sizeof(buf)) {
		size_t len = MIN(sizeof(buf), data_len - off);

		read_at(path, hd->data_off + off, buf, len);
		for (size_t j = 0; j < len; j++)
			if (buf[j])
				fail_msg("byte %llu of the data area is 0x%02x",
					 (unsigned long long)(off + j), buf[j]);
	}
}

static void test_zeroer_fills_zeroes(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct layout_header hd;
	struct region_stats st;
	uint64_t data_len;

	f->rc.zeroer_threads = 2;
	f->rc.batch_extents = 4;
	make_stale(f, &hd, 0xab);
	data_len = hd.extent_count * hd.extent_size;

	r = open_ok(f);
	assert_int_equal(count_of(r, EXT_DIRTY), hd.extent_count);
	wait_all_zeroed(r);
	region_get_stats(r, &st);
	assert_int_equal(st.count[EXT_ZEROED], hd.extent_count);
	assert_int_equal(st.bytes_zeroed, data_len);
	assert_true(st.zero_batches >= DIV_ROUND_UP(hd.extent_count, 4));
	assert_int_equal(st.zeroing, 0);
	assert_true(st.drains > 0);
	region_close(r);

	assert_data_zero(f->path, &hd);
	for (uint64_t i = 0; i < hd.extent_count; i++)
		assert_int_equal(layout_rec_state(read_rec(f->path, &hd, i)), EXT_ZEROED);
}

/* A tracer recording the order of stores, flushes and drains per thread. */
struct ev {
	pthread_t thread;
	char kind; /* 's' store, 'n' nt store, 'f' flush, 'd' drain */
	const void *p;
	size_t len;
};
struct trace {
	pthread_mutex_t lock;
	struct ev *ev;
	size_t n, cap;
	/*
	 * Hand-back gate: armed, a worker's first drain closes it and the
	 * worker's next NT store waits until the main thread opens it, so the
	 * main thread sees a batch that has handed back and still runs.
	 */
	pthread_cond_t cond;
	bool gate_armed, gate_closed, gate_open;
	pthread_t main_thread;
};

static void gate_pass(struct trace *t, char kind)
{
	if (!t->gate_armed || pthread_equal(pthread_self(), t->main_thread))
		return;
	pthread_mutex_lock(&t->lock);
	if (kind == 'd' && !t->gate_closed) {
		t->gate_closed = true;
		pthread_cond_broadcast(&t->cond);
	} else if (kind == 'n') {
		while (t->gate_closed && !t->gate_open)
			pthread_cond_wait(&t->cond, &t->lock);
	}
	pthread_mutex_unlock(&t->lock);
}

static void trace_add(struct trace *t, char kind, const void *p, size_t len)
{
	pthread_mutex_lock(&t->lock);
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 1024;
		t->ev = realloc(t->ev, t->cap * sizeof(*t->ev));
		assert_non_null(t->ev);
	}
	t->ev[t->n++] = (struct ev){pthread_self(), kind, p, len};
	pthread_mutex_unlock(&t->lock);
}
static void tr_store(void *ctx, const void *dst, size_t len, bool nt)
{
	if (nt)
		gate_pass(ctx, 'n');
	trace_add(ctx, nt ? 'n' : 's', dst, len);
}
static void tr_flush(void *ctx, const void *p, size_t len)
{
	trace_add(ctx, 'f', p, len);
}
static void tr_drain(void *ctx)
{
	trace_add(ctx, 'd', NULL, 0);
	gate_pass(ctx, 'd');
}

/* Collect every batch out (pausing the pool), so that what follows starts clean. */
static void settle_zeroer(struct region *r)
{
	region_zeroer_pause(r, true);
	while (r->zeroer_outstanding) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};
		(void)poll(&p, 1, 100);
		(void)region_zeroer_collect(r);
	}
	(void)region_sync(r);
}

/*
 * I5 on a trace of the storage: every ZEROED record is stored by the main
 * thread only after the drain, on the worker that zeroed the extent, that
 * covers its zeroes; workers do nothing but NT zeroes and drains.  Returns
 * the workers' drains; checks that each extent not ZEROED before (st0) was
 * zeroed and stored ZEROED once.
 */
static uint64_t check_trace_i5(struct region *r, const struct trace *t,
			       const struct region_stats *st0)
{
	struct region_info info;
	uint8_t *base = pstore_base(region_get_pstore(r));
	uint64_t worker_drains = 0, zeroed_stores = 0, traced = 0;
	size_t *zero_at, *drained_at;
	pthread_t *zeroer;

	region_get_info(r, &info);
	zero_at = calloc(info.extent_count, sizeof(size_t));
	drained_at = calloc(info.extent_count, sizeof(size_t));
	zeroer = calloc(info.extent_count, sizeof(pthread_t));
	assert_non_null(zero_at);
	assert_non_null(drained_at);
	assert_non_null(zeroer);
	for (uint64_t i = 0; i < info.extent_count; i++)
		zero_at[i] = drained_at[i] = SIZE_MAX;
	for (size_t k = 0; k < t->n; k++) {
		const struct ev *e = &t->ev[k];
		const uint8_t *p = e->p;

		if (pthread_equal(e->thread, t->main_thread)) {
			if (e->kind == 'n')
				fail_msg("NT store from the main thread");
			if (e->kind == 's' && e->len == 8 && p >= base + r->hdr.extent_table_off &&
			    p < base + r->hdr.tag_table_off) {
				uint64_t i = (uint64_t)(p - base - r->hdr.extent_table_off) / 8;
				if (layout_rec_state(*(const uint64_t *)p) == EXT_ZEROED) {
					zeroed_stores++;
					/* I5: the zeroes were drained by their worker before. */
					assert_true(drained_at[i] != SIZE_MAX);
					assert_true(drained_at[i] < k);
				}
			}
			continue;
		}
		/* A worker: only NT zeroes of the data area, flushes and drains. */
		switch (e->kind) {
		case 'n': {
			uint64_t off = (uint64_t)(p - base), i;
			assert_true(off >= info.data_offset);
			i = (off - info.data_offset) / info.extent_size;
			assert_true(i < info.extent_count);
			zero_at[i] = k;
			zeroer[i] = e->thread;
			drained_at[i] = SIZE_MAX;
			break;
		}
		case 'f':
			break;
		case 'd':
			worker_drains++;
			for (uint64_t i = 0; i < info.extent_count; i++)
				if (zero_at[i] != SIZE_MAX && drained_at[i] == SIZE_MAX &&
				    pthread_equal(zeroer[i], e->thread))
					drained_at[i] = k;
			break;
		default:
			fail_msg("cached store from a zeroer thread");
		}
	}
	assert_int_equal(zeroed_stores, info.extent_count - st0->count[EXT_ZEROED]);
	for (uint64_t i = 0; i < info.extent_count; i++)
		traced += zero_at[i] != SIZE_MAX;
	assert_int_equal(traced, info.extent_count - st0->count[EXT_ZEROED]);
	free(zero_at);
	free(drained_at);
	free(zeroer);
	return worker_drains;
}

/*
 * I5 for zeroing: one drain per batch on the worker, and every ZEROED
 * record is stored only after the worker's drain that covers its zeroes.
 */
static void test_zeroer_order(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct trace t = {.lock = PTHREAD_MUTEX_INITIALIZER, .main_thread = pthread_self()};
	struct pstore_tracer tracer = {tr_store, tr_flush, tr_drain, &t};
	struct region_stats st0, st1;

	f->rc.batch_extents = 4;
	r = open_ok(f);
	/* Let the batches already submitted finish, untraced. */
	settle_zeroer(r);
	region_get_stats(r, &st0);
	pstore_set_tracer(region_get_pstore(r), &tracer);
	region_zeroer_pause(r, false);
	wait_all_zeroed(r);
	region_get_stats(r, &st1);
	pstore_set_tracer(region_get_pstore(r), NULL);

	assert_int_equal(check_trace_i5(r, &t, &st0), st1.zero_batches - st0.zero_batches);
	/* No one waited: one fence per batch. */
	assert_int_equal(st1.zero_fences - st0.zero_fences, st1.zero_batches - st0.zero_batches);
	free(t.ev);
	region_close(r);
}

/*
 * Hand-back: while an allocation waits, a batch hands each
 * extent back as soon as it is fenced.  The gate holds the worker after
 * its first hand-back: the main loop must then collect ZEROED extents out
 * of a batch still running; in all, one fence per extent, and I5 on the
 * whole trace.
 */
static void test_hand_back(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct trace t = {.lock = PTHREAD_MUTEX_INITIALIZER,
			  .cond = PTHREAD_COND_INITIALIZER,
			  .main_thread = pthread_self(),
			  .gate_armed = true};
	struct pstore_tracer tracer = {tr_store, tr_flush, tr_drain, &t};
	struct region_stats st0, st1;
	struct pollfd p;
	uint64_t got, fresh;

	f->rc.batch_extents = 64; /* the whole region in one batch */
	r = open_ok(f);
	settle_zeroer(r);
	region_get_stats(r, &st0);
	fresh = st0.count[EXT_DIRTY];
	assert_true(fresh > 2);
	pstore_set_tracer(region_get_pstore(r), &tracer);
	region_zeroer_set_urgent(r, true);
	region_zeroer_pause(r, false);

	/* The first hand-back: its eventfd signal, then the batch holds at the gate. */
	p = (struct pollfd){.fd = region_zeroer_fd(r), .events = POLLIN};
	assert_int_equal(poll(&p, 1, 30000), 1);
	got = region_zeroer_collect(r);
	assert_true(got >= 1);
	assert_true(got < fresh);
	assert_int_equal(r->zeroer_outstanding, 1); /* the batch runs on */
	assert_int_equal(region_count_zeroed(r), st0.count[EXT_ZEROED] + got);
	assert_int_equal(region_sync(r) > 0, true);
	check_i3(r);

	pthread_mutex_lock(&t.lock);
	t.gate_open = true;
	pthread_cond_broadcast(&t.cond);
	pthread_mutex_unlock(&t.lock);
	wait_all_zeroed(r);
	region_get_stats(r, &st1);
	pstore_set_tracer(region_get_pstore(r), NULL);
	region_zeroer_set_urgent(r, false);

	assert_int_equal(check_trace_i5(r, &t, &st0), st1.zero_fences - st0.zero_fences);
	/* One fence per extent, the batch's last one its own. */
	assert_true(st1.zero_fences - st0.zero_fences >= fresh);
	assert_int_equal(st1.bytes_zeroed - st0.bytes_zeroed, fresh * f->rc.extent_size);
	free(t.ev);
	region_close(r);
}

/*
 * A waiter that lacks 4 extents: the batch hands back every 4 extents
 * (one fence each), not every one, and its last with the batch's fence.
 */
static void test_hand_back_group(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct region_stats st0, st1;
	uint64_t fresh;

	f->rc.batch_extents = 64; /* the whole region in one batch */
	r = open_ok(f);
	settle_zeroer(r);
	region_get_stats(r, &st0);
	fresh = st0.count[EXT_DIRTY];
	assert_true(fresh > 8);
	region_zeroer_set_need(r, 4);
	region_zeroer_set_urgent(r, true);
	region_zeroer_pause(r, false);
	wait_all_zeroed(r);
	region_get_stats(r, &st1);
	region_zeroer_set_urgent(r, false);
	assert_int_equal(st1.zero_batches - st0.zero_batches, 1);
	assert_int_equal(st1.zero_fences - st0.zero_fences, (fresh - 1) / 4 + 1);
	region_close(r);
}

static void test_rate_limit_and_urgent(void **state)
{
	struct fx *f = *state;
	struct region *r;
	uint64_t t0, ms;

	/* 16 MiB region, 64 KiB extents: ~15.7 MiB to zero at 32 MiB/s. */
	f->rc.extent_size = 64 * KiB;
	f->rc.zero_rate = 32 * MiB;
	t0 = pmemz_now_ns();
	r = open_ok(f);
	wait_all_zeroed(r);
	ms = (pmemz_now_ns() - t0) / 1000000;
	assert_true(ms >= 300); /* 3.2 MiB of burst, the rest at the rate: >= ~0.4 s */
	region_close(r);

	/* Unleased again at a crawl, then urgent: done quickly anyway. */
	{
		struct layout_header hd;
		read_header(f->path, 0, &hd);
		for (uint64_t i = 0; i < hd.extent_count; i++)
			write_rec(f->path, &hd, i, 0);
	}
	f->rc.zero_rate = 1 * MiB;
	t0 = pmemz_now_ns();
	r = open_ok(f);
	region_zeroer_set_urgent(r, true);
	wait_all_zeroed(r);
	ms = (pmemz_now_ns() - t0) / 1000000;
	assert_true(ms < 5000);
	region_zeroer_set_urgent(r, false);
	region_zeroer_set_rate(r, 0);
	region_close(r);
}

static void test_pause(void **state)
{
	struct fx *f = *state;
	struct region *r;
	uint64_t z;

	r = open_ok(f);
	assert_false(region_zeroer_paused(r));
	region_zeroer_pause(r, true);
	assert_true(region_zeroer_paused(r));
	/* Collect what was in flight, then nothing moves. */
	for (int i = 0; i < 20 && r->zeroer_outstanding; i++) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};
		(void)poll(&p, 1, 100);
		(void)region_zeroer_collect(r);
	}
	z = region_count_zeroed(r);
	assert_true(z < 63);
	usleep(200000);
	(void)region_zeroer_collect(r);
	assert_int_equal(region_count_zeroed(r), z);
	region_zeroer_pause(r, false);
	assert_false(region_zeroer_paused(r));
	wait_all_zeroed(r);
	region_close(r);
}

static int process_threads(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	int n = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Threads:", 8) == 0)
			n = atoi(line + 8);
	fclose(f);
	assert_true(n > 0);
	return n;
}

/*
 * Reload's zeroer_threads: workers start, and stop promptly even in the
 * middle of a rate-limited batch, which comes back unfinished (still
 * DIRTY) and is zeroed by the others; every byte ends zero (I1), I3 holds.
 */
static void test_zeroer_threads(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct layout_header hd;
	int base;

	f->rc.extent_size = 64 * KiB;
	f->rc.batch_extents = 16;
	make_stale(f, &hd, 0xcd);

	/* A crawl: the workers sit inside their batches. */
	f->rc.zero_rate = 64 * KiB;
	base = process_threads();
	r = open_ok(f);
	assert_int_equal(process_threads(), base + 1);
	assert_int_equal(region_zeroer_set_threads(r, 4), 0);
	assert_int_equal(r->zeroer_threads, 4);
	assert_int_equal(process_threads(), base + 4);
	usleep(100000);
	(void)region_zeroer_collect(r);
	check_i3(r);

	assert_int_equal(region_zeroer_set_threads(r, 1), 0);
	assert_int_equal(process_threads(), base + 1);
	assert_int_equal(r->zeroer_threads, 1);
	/*
	 * The stopped workers handed their batches back unfinished: had they
	 * finished them (16 extents each, 16 s at 64 KiB/s shared), 48 would
	 * be ZEROED now.
	 */
	(void)region_zeroer_collect(r);
	assert_true(count_of(r, EXT_ZEROED) < 3 * 16);
	check_i3(r);
	/* 0 and above the maximum are clamped. */
	assert_int_equal(region_zeroer_set_threads(r, 0), 0);
	assert_int_equal(r->zeroer_threads, 1);
	assert_int_equal(region_zeroer_set_threads(r, CONF_MAX_ZEROER_THREADS + 5), 0);
	assert_int_equal(r->zeroer_threads, CONF_MAX_ZEROER_THREADS);
	assert_int_equal(process_threads(), base + (int)CONF_MAX_ZEROER_THREADS);
	assert_int_equal(region_zeroer_set_threads(r, 2), 0);

	region_zeroer_set_rate(r, 0);
	wait_all_zeroed(r);
	check_i3(r);
	assert_int_equal(count_of(r, EXT_ZEROED), hd.extent_count);
	region_close(r);
	assert_int_equal(process_threads(), base);
	assert_data_zero(f->path, &hd);
}

/* The zeroer's door to the index: a batch leaves the ready set and comes back. */
static void test_index_batch(void **state)
{
	struct fx *f = *state;
	struct region *r;
	uint64_t ready, ext[3], again[3], k;
	uint8_t st[1];

	r = open_ok(f);
	region_zeroer_pause(r, true);
	while (r->zeroer_outstanding) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};
		(void)poll(&p, 1, 100);
		(void)region_zeroer_collect(r);
	}
	assert_int_equal(region_index_verify(r), 0);
	ready = region_index_ready(r);
	assert_int_equal(ready, region_count_free(r) - region_count_zeroed(r));
	assert_true(ready >= 3);

	k = region_index_take_batch(r, ext, 3);
	assert_int_equal(k, 3);
	assert_int_equal(region_index_ready(r), ready - 3);
	assert_int_equal(region_index_verify(r), 0);
	for (k = 0; k < 3; k++) {
		assert_int_equal(region_get_states(r, st, ext[k], 1), 0);
		assert_int_equal(st[0], EXT_MAP_ZEROING);
	}
	/* Not zeroed: all three are ready again, and taken again in turn. */
	region_index_return_batch(r, ext, 3, 0);
	assert_int_equal(region_index_ready(r), ready);
	assert_int_equal(region_index_verify(r), 0);
	assert_int_equal(region_get_states(r, st, ext[0], 1), 0);
	assert_int_equal(st[0], EXT_DIRTY);
	if (ready > 3) {
		assert_int_equal(region_index_take_batch(r, again, 1), 1);
		assert_true(again[0] != ext[0] && again[0] != ext[1] && again[0] != ext[2]);
		region_index_return_batch(r, again, 1, 0);
	}
	/* Nothing asked, nothing taken. */
	assert_int_equal(region_index_take_batch(r, NULL, 0), 0);
	region_zeroer_pause(r, false);
	wait_all_zeroed(r);
	assert_int_equal(region_index_ready(r), 0);
	assert_int_equal(region_index_take_batch(r, ext, 3), 0);
	assert_int_equal(region_index_verify(r), 0);
	region_close(r);
}

/* ---- flush, sync ---- */

static void test_flush_and_sync(void **state)
{
	struct fx *f = *state;
	struct region *r;
	struct region_info info;
	struct region_stats st;
	uint64_t d0;

	r = open_ok(f);
	region_get_info(r, &info);
	wait_all_zeroed(r);
	assert_int_equal(region_sync(r), 0);

	assert_int_equal(region_flush(r, 0, 4096), -ERANGE); /* metadata */
	assert_int_equal(region_flush(r, info.data_offset - 1, 2), -ERANGE);
	assert_int_equal(region_flush(r, info.size - 10, 11), -ERANGE);
	assert_int_equal(region_flush(r, info.data_offset, UINT64_MAX), -ERANGE);
	assert_int_equal(region_flush(r, UINT64_MAX - 1, 2), -ERANGE);
	assert_int_equal(region_flush(r, info.data_offset, 0), 0);
	assert_int_equal(region_sync(r), 0);
	assert_int_equal(region_flush(r, info.data_offset + 100, 5000), 0);
	region_get_stats(r, &st);
	d0 = st.drains;
	assert_int_equal(region_sync(r), 1); /* a flush needs its drain */
	region_get_stats(r, &st);
	assert_int_equal(st.drains, d0 + 1);
	assert_int_equal(region_deep_flush(r, 0, 4096), -ERANGE);
	assert_int_equal(region_deep_flush(r, info.data_offset, info.extent_size), 0);
	region_close(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
	    T(test_format_reopen),
	    T(test_create_and_size_rules),
	    T(test_primary_corrupt_uses_backup),
	    T(test_both_corrupt_refused),
	    T(test_foreign_refused),
	    T(test_geometry_mismatch_refused),
	    T(test_unsupported_version_refused),
	    T(test_layout_version_1_opens),
	    T(test_unknown_features),
	    T(test_refused_split_untouched),
	    T(test_one_daemon_per_region),
	    T(test_handed_fd_and_lock),
	    T(test_truncated_fails_region),
	    T(test_truncated_under_zeroer),
	    T(test_split_metadata),
	    T(test_lease_unlease),
	    T(test_lease_fragmented),
	    T(test_recovery_leases),
	    T(test_commit_durable),
	    T(test_commit_rolled_back),
	    T(test_free_atomic),
	    T(test_tags),
	    T(test_recovery_crafted),
	    T(test_zeroer_fills_zeroes),
	    T(test_zeroer_order),
	    T(test_hand_back),
	    T(test_hand_back_group),
	    T(test_rate_limit_and_urgent),
	    T(test_pause),
	    T(test_zeroer_threads),
	    T(test_index_batch),
	    T(test_flush_and_sync),
	};

	log_set_max_level(getenv("PMEMZ_TEST_DEBUG") ? LOG_DEBUG : LOG_CRIT);
	if (getenv("PMEMZ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("PMEMZ_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
