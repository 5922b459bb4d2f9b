/* SPDX-License-Identifier: MIT */
/*
 * The lease table: every uncommitted allocation handed to a live
 * connection, by id (hash) and by owner (a list the owner keeps, so a
 * disconnect can release everything it held).  Lease ids are monotonic
 * and never reused within a daemon run.  The table only keeps records:
 * changing extent state (region_unlease, region_commit) is the caller's job.
 */
#ifndef PMEMZ_LEASE_H
#define PMEMZ_LEASE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "hashtab.h"
#include "region.h"
#include "util.h"

struct uid_usage;

struct lease {
	uint64_t id;
	const void *owner; /* the connection; compared, never dereferenced */
	uid_t uid;	   /* the owner's, for usage.c's accounting */
	struct uid_usage *row; /* usage.c's: the tenant charged for it (NULL: uid's row) */
	unsigned region;   /* index into the manager's regions */
	struct run *runs;  /* owned */
	size_t n_runs;
	uint64_t n_extents;
	struct htab_node hnode;	      /* lease.c's: the table, by id */
	LIST_ENTRY(lease) owner_link; /* the owner's lease_list */
};

LIST_HEAD(lease_list, lease);

struct lease_table;

int lease_table_new(struct lease_table **out);
/* Frees the table and every lease still in it (extent state untouched). */
void lease_table_free(struct lease_table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct lease_table *, lease_table_free)

/*
 * Record a lease of runs (malloc'ed; ownership passes to the table on
 * success) for owner, linked into owner_list.  -EINVAL for no runs.
 */
int lease_table_add(struct lease_table *t, struct lease_list *owner_list, const void *owner,
		    unsigned region, struct run *runs, size_t n_runs, struct lease **out);
struct lease *lease_table_find(const struct lease_table *t, uint64_t id);
/* Unlink from the table and the owner's list, and free. */
void lease_table_remove(struct lease_table *t, struct lease *l);
size_t lease_table_count(const struct lease_table *t);
/* The id the next lease_table_add() will hand out. */
uint64_t lease_table_next_id(const struct lease_table *t);

#endif
