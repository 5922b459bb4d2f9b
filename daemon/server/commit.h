/* SPDX-License-Identifier: MIT */
/*
 * The group commit and the held replies, in one place (see manager.h):
 * handlers never make state durable themselves.  A reply that attests a
 * state change is held on its connection (connection_queue) and the
 * connection put on the commit's held list (commit_hold); the commit event, at the lowest
 * priority, runs once the loop iteration's request callbacks are done:
 * serves the waiting allocations (waitq_serve), calls region_sync() on
 * every region, then releases the held replies.
 */
#ifndef PMEMZ_COMMIT_H
#define PMEMZ_COMMIT_H

#include "server.h"

struct connection;

struct commit;

/* The commit event and the held list, for m->commit; -ENOMEM. */
int commit_new(struct manager *m, struct commit **out);
void commit_free(struct commit *cm);
/* A commit pass is asked for: a reply sent now would overtake held ones. */
bool commit_pending(const struct manager *m);
/* Commit passes that had work, since start (STAT). */
uint64_t commit_group_commits(const struct manager *m);
/* Schedule a group commit at the end of this loop iteration. */
void commit_request(struct manager *m);
/* Run a pending group commit now (before the regions change, or at shutdown). */
void commit_now(struct manager *m);
/*
 * Run a pending commit now if it has been held back for too long by a
 * stream of higher-priority events (bounds reply latency under load).
 */
void commit_if_overdue(struct manager *m);

/* c holds a reply frame for the next group commit (the connection's held hook). */
void commit_hold(struct connection *c);
/* c is closing (its held frames are dropped): off the held list. */
void commit_forget(struct connection *c);

/*
 * Take mr offline (regions_fail) and turn the held replies that attest its
 * state, not durable now, into -EIO error replies with the same request
 * ids; connections and other regions go on.
 */
void commit_fail_region(struct manager_region *mr, const char *why);

#endif
