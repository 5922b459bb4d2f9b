/* SPDX-License-Identifier: MIT */
/*
 * What waits in the main loop for the storage to catch up, in one place:
 *
 *  - waiting allocations: an ALLOCATE that found too few ZEROED extents
 *    waits, first come first served per uid and the uids of a region in
 *    turn (round robin), until the zeroer has made
 *    enough.  The region's zeroer is urgent while any wait.  The commit pass
 *    serves them (waitq_serve), so the leases they get are durable with that
 *    same pass; a closing connection's go (waitq_cancel).
 *
 *  - held replies: a reply that attests state (RPC_REPLY_COMMIT, or
 *    RPC_REPLY_ORDERED behind a pending commit, or anything queued outside
 *    the connection's read callback) is held until the group commit has made
 *    the state durable (region_sync on every region); waitq_release then
 *    hands it to the connection's output queue.
 *
 * waitq.c is the only writer of the lists and counters named "waitq.c's" in
 * manager.h and connection.h; others may read the counters.
 */
#ifndef PMEMZ_WAITQ_H
#define PMEMZ_WAITQ_H

#include <stdint.h>

#include "manager.h" /* MANAGER_WAIT_BUCKETS */

struct connection;
struct manager;
struct manager_region;
struct out_frame;

/*
 * Lease n_extents of mr to c and answer ALLOCATE req_id (a reply, or an
 * error reply).  -EAGAIN when too few extents are zeroed: then nothing
 * happened and the waiter stays first.
 */
typedef int (*waitq_grant_fn)(struct manager *m, struct connection *c, struct manager_region *mr,
			      uint64_t n_extents, uint64_t req_id);

/*
 * c's ALLOCATE req_id waits behind its uid's others in mr: 0, -EBUSY
 * (CONNECTION_WAITERS_MAX), -ENOMEM.  The uid's limits are the caller's to check.
 */
int waitq_add(struct manager_region *mr, struct connection *c, uint64_t req_id, uint64_t n_extents);
/* Commit pass, after zeroing progress: grant mr's waiters in turn until one must wait on. */
void waitq_serve(struct manager_region *mr, waitq_grant_fn grant);

/* Upper bounds (seconds, ascending) of mr->wait_hist's buckets; fixed, a metrics contract. */
extern const double waitq_wait_bounds_sec[MANAGER_WAIT_BUCKETS];

/* c holds a reply frame for the next group commit (connection_queue): ask for one. */
void waitq_hold(struct connection *c);
/* Commit pass, after region_sync: queue every held reply to its connection and send. */
void waitq_release(struct manager *m);

/* c is closing: its waiters go (those behind them may fit now); its held frames went. */
void waitq_cancel(struct connection *c);

#endif
