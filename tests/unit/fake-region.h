/* SPDX-License-Identifier: MIT */
/*
 * An in-memory stand-in for the storage core (daemon/storage/region.h) so the
 * server can be tested without pmem: extent states in an array, a
 * "zeroer" the test drives through an eventfd, and a region_sync() that
 * publishes the durable state only after a delay, so a reply sent before
 * its group commit is caught.
 */
#ifndef PMEMZ_FAKE_REGION_H
#define PMEMZ_FAKE_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "region.h"

/* The n-th region opened since start (0-based), NULL if none. */
struct region *fake_region_get(unsigned i);
/* Thread-safe: let the zeroer turn n more DIRTY extents ZEROED. */
void fake_region_zero(struct region *r, uint64_t n);
/* Thread-safe: extent counts per state as of the last region_sync(). */
uint64_t fake_region_durable(struct region *r, enum extent_state s);
bool fake_region_urgent(struct region *r);
uint64_t fake_region_syncs(struct region *r);
void fake_region_reset(void);
/*
 * region_sync()'s delay before it publishes (default 2 ms); 0 for the
 * fuzzer, which checks the state itself and needs speed.
 */
void fake_region_set_sync_delay(long ns);
/*
 * Thread-safe: region_tag_get() sleeps ns first (0: not), so that a walk
 * of the tag table (LIST) takes more than one step.
 */
void fake_region_set_tag_delay(long ns);
/* A fault in the region: region_failed() says so, region_sync() fails with -EIO. */
void fake_region_fail(struct region *r);

#endif
