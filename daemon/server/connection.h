/* SPDX-License-Identifier: MIT */
/*
 * One client connection: peer credentials, framed input, a queue of
 * outgoing frames (each optionally carrying an fd by SCM_RIGHTS), the
 * leases and waiting allocations it owns.
 *
 * connection_close() may be called from anywhere, also from inside the
 * connection's own callbacks: it releases leases at once, tells its owner
 * (hooks.closed: waiters, a sliced request) and defers freeing the memory
 * to a reaper event.
 *
 * The transport knows nothing above it: what a request means, when the
 * group commit runs and what a closing connection leaves behind are its
 * owner's, given as a table of hooks (m->conn_hooks), as tmux hands its
 * transport the dispatcher.
 */
#ifndef PMEMZ_CONNECTION_H
#define PMEMZ_CONNECTION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "claim.h"
#include "frame.h" /* Pmemz__Request */
#include "lease.h"
#include "server.h"
#include "peer.h"

struct event;
struct evbuffer;

/* One reply frame, queued for the socket or held for the group commit. */
struct out_frame {
	TAILQ_ENTRY(out_frame) link;
	uint8_t *data;
	size_t len;
	size_t off;
	int fd; /* owned: sent with the frame's first byte, then closed; closed if dropped */
};
TAILQ_HEAD(out_frame_list, out_frame);

/*
 * Memory budgets (docs/SECURITY.md).  What a connection makes the daemon hold --
 * reply frames queued or held for a group commit, unread requests in the
 * input buffer, waiting allocations, a sliced request in progress -- is
 * charged to it; over its budget, or while the daemon-wide sum is over the
 * daemon's budget and it holds anything, the daemon stops reading it.  A
 * reply is at most one frame, so a connection overshoots by one frame.
 * Defaults for [daemon] max_connection_memory / max_total_connection_memory.
 */
#define CONNECTION_MEM_DEFAULT (1u << 20)
#define CONNECTION_TOTAL_MEM_DEFAULT (32u << 20)
/* Bookkeeping charged per queued frame and per waiter, over their payload. */
#define CONNECTION_FRAME_COST 96u
#define CONNECTION_WAITER_COST 96u
/* Waiting allocations per connection. */
#define CONNECTION_WAITERS_MAX 256u

struct rpc_job;
struct connection;

struct connection_hooks {
	/*
	 * A decoded request arrived (its version checked).  nul_field: the
	 * path of a string field whose wire bytes hold a NUL, which unpacking
	 * cut short (pmemz_frame_find_nul), or NULL.
	 */
	void (*request)(struct connection *c, const Pmemz__Request *req, const char *nul_field);
	/* c is closing; its leases are released already (released_leases: it had some). */
	void (*closed)(struct connection *c, bool released_leases);
	/* A reply frame went to c->held: it waits for the next group commit. */
	void (*held)(struct connection *c);
	/* A read callback is done (the moment to run a commit held back too long). */
	void (*read_done)(struct manager *m);
};

struct connection {
	struct manager *m;
	uint64_t serial; /* for log messages */
	int fd;
	struct event *read_ev;
	struct event *write_ev;
	struct evbuffer *in;
	struct out_frame_list out;
	size_t out_bytes;	    /* unsent bytes of out */
	size_t mem;		    /* charged: frames on out and held, with their cost */
	unsigned fds_queued;	    /* frames on out or held that still carry an fd */
	struct out_frame_list held; /* released by the next group commit (commit.c) */
	size_t n_held;
	struct rpc_job *job;	    /* rpc.c's: a sliced request in progress */
	size_t job_mem;		    /* rpc.c's: what job holds, charged to c */
	uint64_t partial_since_ns;  /* an incomplete frame waits in the input since */
	uint64_t accepted_ns;
	bool sent_any;		    /* the peer has sent at least one byte */

	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t *groups;
	size_t n_groups;
	bool admin;
	/* Taken at accept (peer.h) and kept for the connection's life, across reloads. */
	char *cgroup; /* NULL: unknown */
	uint64_t cgroup_id;
	enum peer_how how;

	struct lease_list leases;
	struct claim_list claims; /* rpc-claim.c's */
	unsigned n_claims;
	struct waiter_list waiters; /* waitq.c's */
	unsigned n_waiters;	    /* waitq.c's */

	bool in_read;	  /* inside the read callback: flush at its end */
	bool read_paused; /* over its memory budget, or the daemon's: no recv */
	bool stalled;	  /* requests wait in the input for the budget to allow */
	bool write_armed;
	bool on_held_list; /* commit.c's */
	bool closing;
	bool more_runs_ok; /* rpc-allocate.c's: the peer reads long leases with RUNS */
	TAILQ_ENTRY(connection) link;	   /* m->conns' live list, then its dead list */
	TAILQ_ENTRY(connection) held_link; /* commit.c's: its held list */
};

/* Takes ownership of fd (also on failure). */
struct connections;

/*
 * m->conns: the live connections (in accept order), the closed ones until
 * the reaper frees them, the daemon-wide memory budget and the count per
 * uid; hooks are what connections call up into.  -ENOMEM.
 */
int connections_new(struct manager *m, const struct connection_hooks *hooks,
		    struct connections **out);
/* Close every live connection (their leases go back, hooks called). */
void connections_close_all(struct manager *m);
/* Frees the closed connections too; close the live ones first. */
void connections_free(struct connections *cs);
/* The first live connection (TAILQ_NEXT(c, link) the next), or NULL. */
struct connection *connections_first(const struct manager *m);
/* The first closed one not freed yet, the same way. */
struct connection *connections_first_dead(const struct manager *m);
uint64_t connections_count(const struct manager *m);
/* The live connection with that serial, or NULL. */
struct connection *connections_find(const struct manager *m, uint64_t serial);

int connection_new(struct manager *m, int fd, struct connection **out);
/* The same for a peer already identified: takes p->cgroup too (also on failure). */
int connection_new_peer(struct manager *m, int fd, struct peer *p, struct connection **out);
/*
 * Refuse a peer: one error frame (id 0, status) with msg, then close fd.
 * For the listener, which accepts a connection over a limit only to say why.
 */
void connection_refuse(int fd, int status, const char *msg);
/* Open connections of uid (for max_connections_per_uid). */
unsigned connection_count_uid(struct manager *m, uid_t uid);
void connection_close(struct connection *c);
/* Only for the reaper and manager_free: the connection must be closed. */
void connection_free(struct connection *c);

/*
 * Queue a packed frame (ownership passes, also on failure) with an optional
 * fd to pass on its first byte (ownership passes too: closed once sent, or
 * when the frame is dropped, also on failure).
 * With hold, the frame waits for the next group commit.  Frames queued
 * outside the connection's read callback are always held, so that the
 * commit pass sends them.
 */
int connection_queue(struct connection *c, uint8_t *frame, size_t len, int fd, bool hold);
/* The group commit made c's held frames true: move them to the output queue and send. */
void connection_release_held(struct connection *c);
/*
 * The one error reply frame (id, status < 0, msg: NULL for strerror's),
 * whatever the message never more than a frame; -ENOMEM.
 */
int connection_pack_error(uint64_t id, int status, const char *msg, uint8_t **frame, size_t *len);
/* Replace an unsent frame's bytes (ownership of data passes), keeping c's budget exact. */
void connection_frame_replace(struct connection *c, struct out_frame *f, uint8_t *data, size_t len);
/* Write what the socket takes now; closes the connection on a hard error. */
void connection_flush(struct connection *c);
/* Go on with requests waiting in the input (after a sliced request ended). */
void connection_kick(struct connection *c);
/* Bytes charged to c now (see CONNECTION_MEM_DEFAULT). */
size_t connection_mem_used(const struct connection *c);
/*
 * Close the connections idle for idle_timeout_ns (a partial frame held that
 * long, or nothing sent since accepted); the listener's sweep timer calls it.
 */
void connection_sweep_idle(struct manager *m, uint64_t now_ns, uint64_t idle_timeout_ns);

#endif
