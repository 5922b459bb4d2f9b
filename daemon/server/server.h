/* SPDX-License-Identifier: MIT */
/*
 * The server's shared types, and nothing else: the main-loop state
 * (struct manager) and a region's (struct manager_region).  Functions are
 * declared by the file that defines them (manager.h, regions.h, commit.h,
 * ...); a module's state is an opaque object of that module, and a
 * comment names the file that writes each field.
 */
#ifndef PMEMZ_SERVER_H
#define PMEMZ_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "conf.h"
#include "region.h"
#include "util.h"

struct event;
struct event_base;
struct connection;
struct listener;
struct lease_table;
struct claim_table;
struct usage;
struct waitq;
struct region_users;
struct reload;
struct connections;
struct commit;
struct rpc_jobs;
struct status;

/* Event priorities: requests and zeroer completions first, group commit last. */
#define MANAGER_PRIO_IO 0
#define MANAGER_PRIO_COMMIT 1
#define MANAGER_NPRIO 2

/*
 * How long granted ALLOCATEs waited for zeroing, from waitq_add to the
 * grant: waitq.c's.  Bucket i counts the waits above bound i-1 and at most
 * bound i (waitq_wait_bounds_sec); waits above the last bound are only in
 * count.  STAT exports them cumulatively, as a Prometheus histogram.
 */
#define MANAGER_WAIT_BUCKETS 17
struct wait_histogram {
	uint64_t bucket[MANAGER_WAIT_BUCKETS];
	uint64_t count;
	uint64_t sum_ns;
};

/* An ALLOCATE waiting for the zeroer (FIFO per uid, uids in turn): waitq.c's. */
struct waiter;
TAILQ_HEAD(waiter_list, waiter);

struct manager_region {
	struct manager *m;
	unsigned index; /* its place in m->regions (regions.c renumbers) */
	struct region *r;
	const struct region_conf *rc;
	const struct daemon_conf *conf; /* what rc points into (kept while any region does) */
	struct region_info info;	 /* strings point into the region */
	struct event *zeroer_ev;	 /* m->region_zeroer_cb */
	struct usage *usage;		 /* usage.c's: per-uid accounting */
	struct waitq *waitq;		 /* waitq.c's: waiting allocations, their counters */
	struct region_users *users;	 /* regions.c's: who named, opened or removed it */
	uint64_t allocations, commits, frees; /* since start, counted by their handlers */
	uint64_t moves;			      /* MOVE requests served, since start */
	uint64_t zero_rate; /* bytes/s now: the configured rate, then ZEROER; 0 = unlimited */

	/*
	 * Offline (commit_fail_region): it did not open, or a fault hit its
	 * mapping.  Its RPCs fail with -EIO; r stays (NULL when it never
	 * opened) so that leases on it can still be dropped.
	 */
	bool failed;
	char failure[192];
};

TAILQ_HEAD(connection_list, connection);

/*
 * The main loop's state.  Each other module's state is an object defined
 * in that module's .c and reached through its functions; the manager
 * only creates and frees them (manager.c).
 */
struct manager {
	struct event_base *base;
	/* regions.c's (regions_use_conf): the configuration in force */
	const struct daemon_conf *conf;
	/*
	 * regions.c's (regions_add, regions_replace, regions_remove): one
	 * allocation per region, so that pointers to a region stay valid
	 * while a reload adds and removes others.
	 */
	struct manager_region **regions;
	size_t n_regions;

	struct reload *reload;	      /* reload.c's: command line, configurations, last error */
	struct listener *listener;    /* listener.c's */
	struct connections *conns;    /* connection.c's: connections, budgets, per uid */
	struct commit *commit;	      /* commit.c's: group commit, held replies */
	struct rpc_jobs *jobs;	      /* rpc.c's: sliced requests in progress */
	struct status *status;	      /* status.c's: the last STATUS sent */
	struct lease_table *leases;   /* lease.c's */
	struct claim_table *claims;   /* claim.c's */

	/* The rest is manager.c's. */
	/* a region's zeroer reported progress (regions_up watches it) */
	void (*region_zeroer_cb)(int fd, short what, void *mr);
	struct event *sig_ev[3];
	struct event *status_ev;
	struct event *watchdog_ev;
	uint64_t start_ns;
	int exit_status; /* 0 or -errno, returned by manager_run() */
	bool stopping;
};

#endif
