/* SPDX-License-Identifier: MIT */
/*
 * Fixture of the damaged-media unit tests (test-media.c,
 * test-damage-recovery.c): a small formatted region file on /dev/shm whose
 * records, tag slots and data the tests edit directly, as media damage would.
 */
#ifndef PMEMZ_TEST_MEDIA_FIXTURE_H
#define PMEMZ_TEST_MEDIA_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "media.h"
#include "region.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

/* Region name (and temp file prefix) of this test program. */
extern const char *fx_region_name;

struct fx {
	char path[128];
	char name[16];
	struct region_conf rc;
	struct layout_header h;
};

const char *tmp_dir(void);
void read_at(const char *path, uint64_t off, void *buf, size_t len);
void write_at(const char *path, uint64_t off, const void *buf, size_t len);
int fx_setup_sized(void **state, uint64_t size, uint64_t extent);
int fx_setup(void **state);
int fx_setup_small(void **state);
int fx_teardown(void **state);
void set_rec(struct fx *f, uint64_t i, uint64_t rec);
uint64_t get_rec(struct fx *f, uint64_t i);
uint64_t slot_off(struct fx *f, uint32_t id);
void get_slot(struct fx *f, uint32_t id, struct layout_tag *t);
void set_slot(struct fx *f, uint32_t id, uint64_t state, uint32_t uid, const char *name,
	      uint64_t n);
void fill_extent(struct fx *f, uint64_t i, uint8_t v);
bool extent_is(struct fx *f, uint64_t i, uint8_t v);
uint64_t count_of(struct region *r, enum extent_state s);
void zero_all(struct region *r);
uint8_t *read_all(const struct fx *f);

#endif
