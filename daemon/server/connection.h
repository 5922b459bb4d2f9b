/* SPDX-License-Identifier: MIT */
/*
 * One client connection: peer credentials, framed input, a queue of
 * outgoing frames (each optionally carrying an fd by SCM_RIGHTS), the
 * leases and waiting allocations it owns.
 *
 * connection_close() may be called from anywhere, also from inside the
 * connection's own callbacks: it releases leases and waiters at once and
 * defers freeing the memory to a reaper event.
 */
#ifndef PMEMZ_CONNECTION_H
#define PMEMZ_CONNECTION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "lease.h"
#include "manager.h"

struct event;
struct evbuffer;

/* One reply frame, queued for the socket or held for the group commit. */
struct out_frame {
	TAILQ_ENTRY(out_frame) link;
	uint8_t *data;
	size_t len;
	size_t off;
	int fd; /* borrowed; sent with the frame's first byte */
};
TAILQ_HEAD(out_frame_list, out_frame);

/* Stop reading requests while this many reply bytes wait for the peer. */
#define CONNECTION_OUT_MAX (1u << 20)
/* Waiting allocations per connection. */
#define CONNECTION_WAITERS_MAX 256u

struct connection {
	struct manager *m;
	uint64_t serial; /* for log messages */
	int fd;
	struct event *read_ev;
	struct event *write_ev;
	struct evbuffer *in;
	struct out_frame_list out;
	size_t out_bytes;
	struct out_frame_list held; /* waitq.c's: released by the next group commit */
	size_t n_held;		    /* waitq.c's */

	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t *groups;
	size_t n_groups;
	bool admin;

	struct lease_list leases;
	struct waiter_list waiters; /* waitq.c's */
	unsigned n_waiters;	    /* waitq.c's */

	bool in_read;	  /* inside the read callback: flush at its end */
	bool read_paused; /* output backlog over CONNECTION_OUT_MAX */
	bool write_armed;
	bool on_held_list; /* waitq.c's */
	bool closing;
	bool more_runs_ok; /* rpc-allocate.c's: the peer reads long leases with RUNS */
	TAILQ_ENTRY(connection) link;	   /* m->connections, then m->dead */
	TAILQ_ENTRY(connection) held_link; /* waitq.c's: m->held */
};

/* Takes ownership of fd (also on failure). */
int connection_new(struct manager *m, int fd, struct connection **out);
void connection_close(struct connection *c);
/* Only for the reaper and manager_free: the connection must be closed. */
void connection_free(struct connection *c);

/*
 * Queue a packed frame (ownership passes, also on failure) with an optional
 * fd to pass on its first byte (borrowed: must stay open until sent).
 * With hold, the frame waits for the next group commit.  Frames queued
 * outside the connection's read callback are always held, so that the
 * commit pass sends them.
 */
int connection_queue(struct connection *c, uint8_t *frame, size_t len, int fd, bool hold);
/* Append a frame (ownership passes) to the output queue; connection_flush sends it. */
void connection_push(struct connection *c, struct out_frame *f);
/* Free a frame that is on no list. */
void connection_frame_free(struct out_frame *f);
/* Write what the socket takes now; closes the connection on a hard error. */
void connection_flush(struct connection *c);

bool connection_in_group(const struct connection *c, gid_t gid);

#endif
