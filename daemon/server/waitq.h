/* SPDX-License-Identifier: MIT */
/*
 * Waiting allocations: an ALLOCATE that found too few ZEROED extents
 * waits, first come first served per uid and the uids of a region in turn
 * (round robin), until the zeroer has made enough.  The region's zeroer is
 * urgent while any wait.  The commit pass serves them (waitq_serve), so
 * the leases they get are durable with that same pass; a closing
 * connection's go (waitq_cancel).  Each waiter carries its own grant and
 * fail callbacks: waitq.c knows nothing of what is granted.
 *
 * A region's queue (struct waitq, mr->waitq) is waitq.c's alone; others
 * read its counters through the functions below.  waitq.c also writes the
 * fields named "waitq.c's" in connection.h and usage.h.
 */
#ifndef PMEMZ_WAITQ_H
#define PMEMZ_WAITQ_H

#include <stdint.h>

#include <stdbool.h>

#include "server.h" /* MANAGER_WAIT_BUCKETS */

struct connection;
struct manager;
struct manager_region;
struct waitq;
struct uid_usage;

/* A region's empty queue, for mr->waitq (regions_up); -ENOMEM. */
int waitq_new(struct waitq **out);
void waitq_free(struct waitq *q);
/* Allocations waiting in mr. */
uint64_t waitq_count(const struct manager_region *mr);
/* How long mr's granted allocations waited (STAT). */
const struct wait_histogram *waitq_histogram(const struct manager_region *mr);

/*
 * Lease n_extents of mr to c (of tenant row u) and answer ALLOCATE req_id (a reply, or an
 * error reply).  -EAGAIN when too few extents are zeroed: then nothing
 * happened and the waiter stays first.
 */
typedef int (*waitq_grant_fn)(struct manager *m, struct connection *c, struct manager_region *mr,
			      struct uid_usage *u, uint64_t n_extents, uint64_t req_id);

/* mr has failed: answer ALLOCATE req_id of c (an error reply); 0. */
typedef int (*waitq_fail_fn)(struct manager *m, struct connection *c, struct manager_region *mr,
			     uint64_t req_id);

/*
 * c's ALLOCATE req_id waits behind its tenant's others in mr: 0, -EBUSY
 * (CONNECTION_WAITERS_MAX), -ENOMEM.  u is c's tenant row (usage_tenant),
 * resolved once by the caller, who checks its limits; the row stays while
 * it has waiters (a tenant key changes only without them), and grant gets it.
 */
int waitq_add(struct manager_region *mr, struct connection *c, struct uid_usage *u,
	      uint64_t req_id, uint64_t n_extents, waitq_grant_fn grant, waitq_fail_fn fail);
/* Commit pass, after zeroing progress: grant mr's waiters in turn until one must wait on. */
void waitq_serve(struct manager_region *mr);
/* mr failed (mr->failed): every waiter's fail callback, and they go. */
void waitq_fail(struct manager_region *mr);

/* Upper bounds (seconds, ascending) of waitq_histogram's buckets; fixed, a metrics contract. */
extern const double waitq_wait_bounds_sec[MANAGER_WAIT_BUCKETS];

/* c is closing: its waiters go; true when others wait behind them (they may fit now). */
bool waitq_cancel(struct connection *c);

#endif
