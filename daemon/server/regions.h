/* SPDX-License-Identifier: MIT */
/*
 * The regions' lifecycle (manager.h has the struct): up, down, failed,
 * found by name; the connections that named one since the last commit
 * pass (their held replies may attest its state).  Below the group commit
 * (commit.c), which fails a region together with its held replies.
 */
#ifndef PMEMZ_REGIONS_H
#define PMEMZ_REGIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server.h"

struct connection;

struct manager_region *regions_find(struct manager *m, const char *name);
/* Regions that serve (not failed). */
size_t regions_online(const struct manager *m);

/*
 * A new region of m (not in m->regions yet) for rc, which lives in conf:
 * opened, recovered, its zeroer watched (m->region_zeroer_cb); one that
 * does not open is failed (mr->failed, the reason in mr->failure), as at
 * start.  -ENOMEM only.
 */
int regions_up(struct manager *m, const struct region_conf *rc, const struct daemon_conf *conf,
	       unsigned index, struct manager_region **out);
/* Zeroer stopped, state synced (unless failed), closed and unlocked; mr freed. */
void regions_down(struct manager_region *mr);

/* c named mr in a request: see manager_region.touched. */
void regions_touch(struct manager_region *mr, const struct connection *c);
/* Did the connection of that serial name mr since the last commit pass? */
bool regions_touched_by(const struct manager_region *mr, uint64_t serial);

/*
 * Take mr offline (not failed yet): log why, stop its zeroer, answer its
 * waiting allocations (their fail callbacks: -EIO), refresh STATUS.  Its
 * held replies are the group commit's: commit_fail_region does both.
 */
void regions_fail(struct manager_region *mr, const char *why);

#endif
