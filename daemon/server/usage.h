/* SPDX-License-Identifier: MIT */
/*
 * Per-uid accounting of one region, and the per-uid limits of its
 * [region] section (uid_quota, uid_max_tags, uid_max_waiters; SECURITY.md).
 *
 * A uid's row counts what it holds now: leased and committed extents, tags,
 * waiting allocations, and what the zeroer has done for it: the bytes
 * zeroed again after its frees (DESIGN.md 6: zeroing work is accounted to
 * the uid that freed the space).  Committed extents and tags are on media
 * (tags carry their owner's uid), so the table is rebuilt from the tag
 * table on first use after a start; leases and waiters live no longer
 * than the daemon; the zeroing counter starts at 0 with every daemon run.
 *
 * Tenants (tenant = cgroup in the region's section): rows are then keyed by
 * the peer's cgroup (or its first levels), and every count above is per
 * cgroup.  Tags on media name only their owner's uid: a tag committed
 * during this daemon run is remembered as its tenant's (tag_rows); one
 * committed before the start counts for a row of its owner uid with no
 * cgroup (tenant NULL) until it is freed.
 *
 * Main loop only.  Rows are never removed (uids are few: only those a
 * region allows reach it; cgroups: those allowed, and the table of a
 * region is rebuilt when its tenant key changes, reload.c).
 */
#ifndef PMEMZ_USAGE_H
#define PMEMZ_USAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "server.h"

struct lease;

struct uid_usage {
	uid_t uid;	    /* with a tenant: the uid that first used the row */
	char *tenant;	    /* the cgroup key (tenant = cgroup); NULL: a uid's row */
	uint64_t leased;    /* extents */
	uint64_t committed; /* extents */
	uint64_t waiting;   /* extents asked for by this uid's waiting allocations */
	uint64_t tags;
	uint64_t waiters;
	uint64_t zeroed_bytes;		  /* zeroed again after this uid freed them */
	struct waiter_list waitq;	  /* waitq.c's: this uid's waiters, oldest first */
	TAILQ_ENTRY(uid_usage) turn_link; /* waitq.c's: its turns list */
	bool has_turn;			  /* waitq.c's: on its turns list */
};
TAILQ_HEAD(uid_usage_list, uid_usage);

struct usage {
	struct uid_usage **rows; /* in order of first use */
	size_t n_rows, cap_rows;
	/* Per extent: 1 + the row of the uid that freed it last, 0 = not known. */
	uint16_t *freed_by;
	uint64_t extent_count;
	uint64_t extent_size;
	/* Per tag id: 1 + the row of the tenant that committed it in this run, 0 = its uid's. */
	uint32_t *tag_rows;
	size_t n_tag_rows;
};

/* mr's table, rebuilt from the region's tags on first use: -ENOMEM, -ENODEV (no region). */
int usage_get(struct manager_region *mr, struct usage **out);
/* uid's row in mr, created when missing: -ENOMEM, -ENODEV. */
int usage_row(struct manager_region *mr, uid_t uid, struct uid_usage **out);
/*
 * The row of c's tenant in mr (its uid, or with tenant = cgroup its cgroup
 * key), created when missing: -ENOMEM, -ENODEV; -EACCES when the region is
 * keyed by cgroup and c's cgroup is unknown.
 */
struct connection;
int usage_tenant(struct manager_region *mr, const struct connection *c, struct uid_usage **out);
/* The same without creating it: NULL when c's tenant has no row. */
struct uid_usage *usage_tenant_find(const struct manager_region *mr, const struct connection *c);
/* Who tag id (owned by uid on media) is charged to: -ENOMEM, -ENODEV. */
int usage_tag_owner(struct manager_region *mr, uint32_t id, uid_t uid, struct uid_usage **out);
/* A tag id committed by row u (its extents moved from u's leased). */
void usage_tag_committed(struct manager_region *mr, struct uid_usage *u, uint32_t id,
			 uint64_t n_extents);
/* "uid 1000" or "tenant '/a/b'", for messages. */
const char *usage_row_name(const struct uid_usage *u, char *buf, size_t len);
/* uid's row if it has one. */
struct uid_usage *usage_find(const struct manager_region *mr, uid_t uid);
void usage_free(struct manager_region *mr);

/*
 * The limits, checked before a change: 0, or -EDQUOT with a message that
 * names the limit and the usage.  n_extents more leased (or waited for);
 * one more tag; one more waiting allocation.
 */
int usage_check_bytes(const struct manager_region *mr, const struct uid_usage *u,
		      uint64_t n_extents, char *msg, size_t len);
int usage_check_tags(const struct manager_region *mr, const struct uid_usage *u, char *msg,
		     size_t len);
/* The same limit for more (>= 1) new tags at once (MOVE): -EDQUOT with the message. */
int usage_check_tags_more(const struct manager_region *mr, const struct uid_usage *u,
			  uint64_t more, char *msg, size_t len);
int usage_check_waiters(const struct manager_region *mr, const struct uid_usage *u, char *msg,
			size_t len);

/* Lease l (of a connection of uid l->uid) goes back to the free pool and out of the table. */
void usage_release_lease(struct manager *m, struct lease *l);
/* Tag of u's uid freed: its runs (before region_tag_free) are DIRTY now. */
void usage_tag_freed(struct manager_region *mr, struct uid_usage *u, uint32_t id,
		     const struct run *runs, size_t n_runs, uint64_t n_extents);

#endif
