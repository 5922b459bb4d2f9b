/* SPDX-License-Identifier: MIT */
/*
 * The server's shared types, and nothing else: the main-loop state
 * (struct manager) and a region's (struct manager_region).  Functions are
 * declared by the file that defines them (manager.h, regions.h, commit.h,
 * ...); a comment names the file that writes each group of fields.
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
struct uid_conns;
struct rpc_job;

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
	unsigned index;
	struct region *r;
	const struct region_conf *rc;
	struct region_info info; /* strings point into the region */
	struct event *zeroer_ev;	      /* m->region_zeroer_cb */
	struct usage *usage;		      /* usage.c's: per-uid accounting and waiters */
	uint64_t n_waiters;		      /* waitq.c's */
	bool urgent;			      /* waitq.c's: told the zeroer that allocations wait */
	struct wait_histogram wait_hist;      /* waitq.c's */
	uint64_t allocations, commits, frees; /* since start */
	uint64_t moves;			      /* MOVE requests served, since start */
	uint64_t zero_rate; /* bytes/s now: the configured rate, then ZEROER; 0 = unlimited */

	/*
	 * Offline (commit_fail_region): it did not open, or a fault hit its
	 * mapping.  Its RPCs fail with -EIO; r stays (NULL when it never
	 * opened) so that leases on it can still be dropped.
	 */
	bool failed;
	char failure[192];
	/*
	 * reload.c's.  removing: gone from the configuration but in use (leases,
	 * waiters, connections that opened it); refuses OPEN_REGION and
	 * ALLOCATE and goes down once unused.  conf: the configuration rc points
	 * into (kept while any region points into it).  openers: serials of the
	 * connections that opened the region (closed ones pruned as found).
	 */
	bool removing;
	const struct daemon_conf *conf;
	uint64_t *openers;
	size_t n_openers, cap_openers;
	/*
	 * Serials of the connections that named the region since the last
	 * commit pass: their held replies may attest its state, and are not
	 * sent if it fails before that pass makes the state durable.
	 */
	uint64_t *touched;
	size_t n_touched, cap_touched;
	bool touched_all; /* out of room (or memory): assume every connection */
};

TAILQ_HEAD(connection_list, connection);

struct manager {
	struct event_base *base;
	const struct daemon_conf *conf;
	/*
	 * One allocation per region, so that pointers to a region stay valid
	 * while a reload adds and removes others.  A region's index is its
	 * place here (leases name it); reload.c renumbers when one goes.
	 */
	struct manager_region **regions;
	size_t n_regions;

	/* reload.c's: the command line to parse again, configurations it loaded */
	int argc;
	char **argv;
	struct daemon_conf **confs; /* owned; the last is m->conf after a reload */
	size_t n_confs;
	char reload_error[192]; /* why the last reload changed nothing; "" */

	struct listener *listener;
	const struct connection_hooks *conn_hooks; /* what connections call up into */
	struct connection_list connections;
	uint64_t n_connections;
	uint64_t connection_serial;
	struct connection_list held; /* commit.c's: connections with held replies */
	struct connection_list dead; /* closed, freed by the reaper */
	struct event *reaper_ev;

	struct lease_table *leases;
	struct claim_table *claims; /* rpc-claim.c's */

	/* connection.c's: memory budgets (see connection.h) */
	size_t conn_mem_total;	   /* sum of the connections' mem */
	bool conn_mem_over;	   /* went over the daemon's budget: connections paused */
	struct uid_conns *uid_conns; /* connections per uid, for max_connections_per_uid */
	size_t n_uid_conns, cap_uid_conns;
	uint64_t max_connections; /* listener.c's: what the descriptor limit allows */
	TAILQ_HEAD(rpc_job_list, rpc_job) jobs; /* rpc.c's: sliced requests in progress */
	struct event *jobs_ev;	    /* rpc.c's: runs their next step */

	/* manager.c's: a region's zeroer reported progress (regions_up watches it) */
	void (*region_zeroer_cb)(int fd, short what, void *mr);

	struct event *commit_ev; /* commit.c's, and the rest of this block */
	bool commit_pending;
	uint64_t commit_since_ns;
	uint64_t group_commits; /* commit passes that had work */
	uint64_t group_commit_drains;
	uint64_t held_replies; /* replies released by a commit pass */

	struct event *sig_ev[3];
	struct event *status_ev;
	struct event *watchdog_ev;
	char status[256];

	uint64_t start_ns;
	int exit_status; /* 0 or -errno, returned by manager_run() */
	bool stopping;
};

#endif
