/* SPDX-License-Identifier: MIT */
/*
 What the RPC handlers share: replies, access checks, runs, sliced
 * requests.  Each rpc-*.c file exports one const descriptor; the table in
 * dispatch.c maps a request's op to it.  A handler either sends its reply
 * (rpc_reply) and returns 0, defers it (a waiting ALLOCATE) and returns 0,
 * or returns -errno after rpc_fail() set the message, and the dispatcher
 * (or the sliced request's end) sends the error reply (rpc_fail_reply).
 */
#ifndef PMEMZ_RPC_H
#define PMEMZ_RPC_H

#include <stdbool.h>
#include <stdint.h>

#include "frame.h"
#include "server.h"
#include "util.h"

struct connection;

static inline void pmemz__request__free_unpackedp(Pmemz__Request **p)
{
	if (*p)
		pmemz__request__free_unpacked(*p, NULL);
}

static inline void pmemz__response__free_unpackedp(Pmemz__Response **p)
{
	if (*p)
		pmemz__response__free_unpacked(*p, NULL);
}

#define RPC_MSG_MAX 256
#define RPC_TAG_MAX 4096 /* sanity bound; the tag table sets the real limit */

enum rpc_reply_mode {
	RPC_REPLY_NOW,	   /* attests nothing about extent state (HELLO, NOOP) */
	RPC_REPLY_ORDERED, /* reads state: after a pending group commit, if any */
	RPC_REPLY_COMMIT,  /* attests a state change: after the group commit */
};

struct rpc_call {
	struct manager *m;
	struct connection *c;
	const Pmemz__Request *req;
	const char *name; /* the op's, for log messages */
	uint64_t id;
	char msg[RPC_MSG_MAX];
};

struct rpc_descriptor {
	const char *name;
	Pmemz__Request__OpCase op;
	bool admin_only;
	int (*handler)(struct rpc_call *call);
};

extern const struct rpc_descriptor rpc_clients;
extern const struct rpc_descriptor rpc_hello;
extern const struct rpc_descriptor rpc_open_region;
extern const struct rpc_descriptor rpc_allocate;
extern const struct rpc_descriptor rpc_commit;
extern const struct rpc_descriptor rpc_free;
extern const struct rpc_descriptor rpc_flush;
extern const struct rpc_descriptor rpc_list;
extern const struct rpc_descriptor rpc_stat;
extern const struct rpc_descriptor rpc_noop;
extern const struct rpc_descriptor rpc_map;
extern const struct rpc_descriptor rpc_zeroer;
extern const struct rpc_descriptor rpc_usage;
extern const struct rpc_descriptor rpc_runs;
extern const struct rpc_descriptor rpc_claim;
extern const struct rpc_descriptor rpc_move;

/* Set the error message of the call; returns r (a negative errno). */
int rpc_fail(struct rpc_call *call, int r, const char *fmt, ...) _printf_(3, 4);
/* The one place a failed call's error reply is made: logged (debug) and sent, ordered. */
void rpc_fail_reply(struct rpc_call *call, int r);

/*
 * Pack resp (id and status 0 are filled in) and queue it with fd to pass on
 * its first byte (< 0 for none): the reply owns fd and closes it once sent,
 * or when it is dropped (also on failure).
 */
int rpc_reply(struct rpc_call *call, Pmemz__Response *resp, int fd, enum rpc_reply_mode mode);
int rpc_send(struct manager *m, struct connection *c, uint64_t id, Pmemz__Response *resp, int fd,
	     enum rpc_reply_mode mode);
int rpc_send_error(struct manager *m, struct connection *c, uint64_t id, int status,
		   const char *msg, enum rpc_reply_mode mode);
/* Would resp fit in one frame? */
bool rpc_response_fits(const Pmemz__Response *resp);

/*
 * Find a region by name and check the caller may use it (-ENOENT / -EACCES;
 * -EIO when it has failed).  Remembers that the connection named it
 * (manager_region_touch).
 */
int rpc_region(struct rpc_call *call, const char *name, struct manager_region **out);
bool rpc_region_allowed(const struct connection *c, const struct manager_region *mr);
/* May the caller see the region's details (path, uuid, usage)?  Allowed peers and admins. */
bool rpc_region_visible(const struct connection *c, const struct manager_region *mr);

/* This connection's lease id in region mr: -ENOENT, -EPERM, -EINVAL . */
struct lease;
int rpc_own_lease(struct rpc_call *call, const struct manager_region *mr, uint64_t id,
		  struct lease **out);

/* The caller's uid's tag of that name in mr: -EINVAL (bad name), -ENOENT. */
int rpc_own_tag(struct rpc_call *call, const struct manager_region *mr, const char *tag,
		uint32_t *id);

/* Runs <-> protobuf.  The arrays are malloc'ed; free both with free(). */
int rpc_runs_to_pb(const struct run *runs, size_t n_runs, Pmemz__Run **storage, Pmemz__Run ***ptrs);
/*
 * A lease or tag too fragmented for one reply goes out in slices: the
 * first with the ALLOCATE / LIST reply, the rest in RUNS replies, each one
 * frame.  RPC_RUNS_BUDGET is the packed size of runs one frame carries,
 * with room left for the rest of the reply; rpc_runs_fitting says how many
 * of runs (from the first) pack into budget bytes, at least 0.
 */
#define RPC_RUNS_BUDGET (PMEMZ_FRAME_MAX - 1024u)
size_t rpc_runs_fitting(const struct run *runs, size_t n_runs, size_t budget);
/* The bytes rpc_runs_fitting counts for n_runs runs. */
size_t rpc_runs_packed(const struct run *runs, size_t n_runs);

void rpc_region_info_to_pb(const struct region_info *info, Pmemz__RegionInfo *pb);

/*
 * Sliced requests (docs/SECURITY.md): work that grows with the region, the tag
 * table or the request (FLUSH, MAP, LIST) runs in steps of at most about
 * RPC_SLICE_NS on the main loop.  The daemon's jobs take turns (round
 * robin), and after each step the loop pauses long work for as long as the
 * step took: long work gets at most half of the loop, and requests that
 * arrive meanwhile are served at once.  While a connection's job runs, its
 * further requests wait, so a connection has at most one, and the job's
 * memory is charged to it.
 *
 * step() works until deadline_ns (a monotonic pmemz_now_ns value), then
 * returns 1 for more, 0 once it has replied, or -errno after rpc_fail(); it
 * must leave the request's protobuf alone (the job outlives it: copy what
 * it needs into its state).  free_state() frees the state, also when the
 * connection goes away mid-way.
 */
#define RPC_SLICE_NS 1000000ull
struct rpc_job;
struct rpc_jobs;

/* The jobs' list and the event that steps them, for m->jobs; -ENOMEM. */
int rpc_jobs_new(struct manager *m, struct rpc_jobs **out);
/* Close the connections first: their jobs go with them. */
void rpc_jobs_free(struct rpc_jobs *js);

typedef int (*rpc_step_fn)(struct rpc_call *call, void *state, uint64_t deadline_ns);

/* Queue a job of call->c; its first step runs at once when no other job waits. */
int rpc_job_start(struct rpc_call *call, struct manager_region *mr, rpc_step_fn step,
		  void (*free_state)(void *), void *state, size_t mem);
/* Does a job work on mr?  (A reload keeps such a region until it is done.) */
bool rpc_job_region(const struct manager *m, const struct manager_region *mr);
/* The connection is closing: its job goes without a reply. */
void rpc_job_cancel(struct connection *c);

#endif
