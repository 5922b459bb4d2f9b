/* SPDX-License-Identifier: MIT */
/*
 * The data the kill -9 test and the soak client write and check: a
 * function of the tag name and the region offset, so that a tag found
 * after a crash (or a reconnect) can be verified without a copy of it.
 */
#ifndef PMEMZ_TEST_TAG_PATTERN_H
#define PMEMZ_TEST_TAG_PATTERN_H

#include <stdbool.h>
#include <stdint.h>

#include "libpmemzclient.h"

uint64_t splitmix(uint64_t *x);
/* A number below n (0 when n is 0). */
uint64_t rnd(uint64_t *x, uint64_t n);

uint64_t name_seed(const char *name);
void fill_alloc(const struct pmemz_region *r, const struct pmemz_alloc *a, uint64_t seed);
/* Offset (in the allocation) of the first wrong word, or -1. */
int64_t check_alloc(const struct pmemz_region *r, const struct pmemz_alloc *a, uint64_t seed,
		    bool zero);

#endif
