/* SPDX-License-Identifier: MIT */
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

#include "media-fixture.h"
#include "region-internal.h"
#include "util.h"

const char *tmp_dir(void)
{
	struct stat st;

	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
}

void read_at(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

void write_at(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

/* A formatted region (every extent DIRTY) of size bytes in extents of extent bytes. */
int fx_setup_sized(void **state, uint64_t size, uint64_t extent)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct region *r = NULL;
	uint8_t block[LAYOUT_BLOCK];
	int fd;

	assert_non_null(f);
	snprintf(f->path, sizeof(f->path), "%s/pmemz-%s-XXXXXX", tmp_dir(), fx_region_name);
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	close(fd);
	/* A unique name, no file: region_open creates it (an empty one it refuses). */
	(void)unlink(f->path);
	snprintf(f->name, sizeof(f->name), "%s", fx_region_name);
	f->rc.name = f->name;
	f->rc.path = f->path;
	f->rc.size = size;
	f->rc.extent_size = extent;
	f->rc.zeroer_threads = 1;
	f->rc.batch_extents = 8;
	f->rc.source = f->name;
	assert_int_equal(region_open(&f->rc, &r), 0);
	region_close_abandon(r); /* no zeroing: the table stays as formatted */
	read_at(f->path, 0, block, sizeof(block));
	assert_int_equal(layout_header_check(block, &f->h, NULL, 0), HDR_OK);
	*state = f;
	return 0;
}

int fx_setup(void **state)
{
	return fx_setup_sized(state, 16 * MiB, 256 * KiB); /* 63 extents */
}

int fx_setup_small(void **state)
{
	return fx_setup_sized(state, 2 * MiB, 64 * KiB); /* 31 extents */
}

int fx_teardown(void **state)
{
	struct fx *f = *state;

	(void)unlink(f->path);
	free(f);
	return 0;
}

void set_rec(struct fx *f, uint64_t i, uint64_t rec)
{
	write_at(f->path, f->h.extent_table_off + i * 8, &rec, sizeof(rec));
}

uint64_t get_rec(struct fx *f, uint64_t i)
{
	uint64_t rec;

	read_at(f->path, f->h.extent_table_off + i * 8, &rec, sizeof(rec));
	return rec;
}

uint64_t slot_off(struct fx *f, uint32_t id)
{
	return f->h.tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE;
}

void get_slot(struct fx *f, uint32_t id, struct layout_tag *t)
{
	read_at(f->path, slot_off(f, id), t, sizeof(*t));
}

void set_slot(struct fx *f, uint32_t id, uint64_t state, uint32_t uid, const char *name, uint64_t n)
{
	struct layout_tag t;

	memset(&t, 0, sizeof(t));
	t.uid = uid;
	t.ctime = 1700000000;
	t.n_extents = n;
	snprintf(t.name, sizeof(t.name), "%s", name);
	t.checksum = layout_tag_checksum(&t);
	t.state = state;
	write_at(f->path, slot_off(f, id), &t, sizeof(t));
}

void fill_extent(struct fx *f, uint64_t i, uint8_t v)
{
	static uint8_t buf[256 * KiB];

	assert_true(f->h.extent_size <= sizeof(buf));
	memset(buf, v, f->h.extent_size);
	write_at(f->path, f->h.data_off + i * f->h.extent_size, buf, f->h.extent_size);
}

bool extent_is(struct fx *f, uint64_t i, uint8_t v)
{
	static uint8_t buf[256 * KiB];

	read_at(f->path, f->h.data_off + i * f->h.extent_size, buf, f->h.extent_size);
	for (uint64_t k = 0; k < f->h.extent_size; k++)
		if (buf[k] != v)
			return false;
	return true;
}

uint64_t count_of(struct region *r, enum extent_state s)
{
	struct region_stats st;

	region_get_stats(r, &st);
	return st.count[s];
}

/* Let the zeroer zero everything it may, durably. */
void zero_all(struct region *r)
{
	uint64_t deadline = pmemz_now_ns() + 30ull * 1000000000ull;

	while (region_count_zeroed(r) < region_count_free(r)) {
		struct pollfd p = {.fd = region_zeroer_fd(r), .events = POLLIN};
		(void)poll(&p, 1, 100);
		(void)region_zeroer_collect(r);
		(void)region_sync(r);
		assert_true(pmemz_now_ns() < deadline);
	}
	(void)region_sync(r);
	assert_int_equal(region_index_verify(r), 0);
}

uint8_t *read_all(const struct fx *f)
{
	uint8_t *b = malloc(f->rc.size);

	assert_non_null(b);
	read_at(f->path, 0, b, f->rc.size);
	return b;
}
