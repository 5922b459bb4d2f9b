/* SPDX-License-Identifier: MIT */
/*
 * The regions' lifecycle (server.h has the struct): up, down, failed,
 * found by name; the region set and the configuration in force; who uses
 * a region (the connections that named one since the last commit pass,
 * those that opened it, whether a reload removed it).  Below the group commit
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

/*
 * c named mr in a request: its held replies may attest mr's state until
 * the next commit pass makes that durable (regions_touched_clear).
 */
void regions_touch(struct manager_region *mr, const struct connection *c);
/* Did the connection of that serial name mr since the last commit pass? */
bool regions_touched_by(const struct manager_region *mr, uint64_t serial);
/* A commit pass made mr's state durable, or mr failed: nobody touched it since. */
void regions_touched_clear(struct manager_region *mr);

/* c opened mr (OPEN_REGION): mr is in use while c lives; -ENOMEM. */
int regions_opened(struct manager_region *mr, const struct connection *c);
/* Live connections that opened mr (the closed ones are forgotten here). */
size_t regions_openers(struct manager_region *mr);
/*
 * Removed from the configuration but in use: refuses OPEN_REGION and
 * ALLOCATE, and goes down once unused (reload.c decides both).
 */
bool regions_removing(const struct manager_region *mr);
void regions_set_removing(struct manager_region *mr, bool removing);

/*
 * The region set, m->regions, written only through these: the index of a
 * region is its place (leases name it).  regions_add: -ENOMEM (mr not
 * added).  regions_replace and regions_remove take the old one down; after
 * a removal the regions behind move up one index (renumbering leases is
 * the caller's).
 */
int regions_add(struct manager *m, struct manager_region *mr);
void regions_replace(struct manager *m, size_t i, struct manager_region *fresh);
void regions_remove(struct manager *m, size_t i);
/* The daemon configuration now in force (m->conf): at start, then each reload. */
void regions_use_conf(struct manager *m, const struct daemon_conf *conf);

/*
 * mr (kept by a reload) points into rc of conf now: the storage takes the
 * values that may change, info is read again.
 */
void regions_reconf(struct manager_region *mr, const struct region_conf *rc,
		    const struct daemon_conf *conf);
/* The zeroer's rate in bytes/s (0: unlimited), as STAT reports it. */
void regions_set_rate(struct manager_region *mr, uint64_t rate);

/*
 * Take mr offline (not failed yet): log why, stop its zeroer, answer its
 * waiting allocations (their fail callbacks: -EIO), refresh STATUS.  Its
 * held replies are the group commit's: commit_fail_region does both.
 */
void regions_fail(struct manager_region *mr, const char *why);

#endif
