/* SPDX-License-Identifier: MIT */
/*
 * The transport's files among themselves.  Above them (region.c and up)
 * only client-private.h is seen, and a ticket is opaque.
 *
 * Inside the transport the calls run one way too (-> is "calls"):
 *
 *   client.c    connect, HELLO, the handle's lifetime, adopt
 *               -> call.c, receive.c, pending.c
 *   call.c      submit + wait + check: one request, one answer
 *               -> submit.c, receive.c, pending.c
 *   submit.c    frames out, under send_lock       -> pending.c
 *   receive.c   the reader role, frames and fds   -> pending.c
 *   pending.c   the requests in flight, the epoch, the broken state
 */
#ifndef PMEMZ_CLIENT_TRANSPORT_H
#define PMEMZ_CLIENT_TRANSPORT_H

#include "client-private.h"

/* One request waiting for its response (a ticket). */
struct pmemz_pending {
	struct pmemz_pending *next;
	uint64_t id;
	int op;		/* request op case: the response must be of the same kind */
	uint64_t epoch; /* the connection it went out on */
	uint32_t version; /* the protocol version of that connection */
	bool done;
	Pmemz__Response *resp;
	int fd;
};

/* ---- pending.c -------------------------------------------------------- */

/*
 * Tickets for reqs[0..n) on c's connection now: ids and the epoch given,
 * on c->pending.  All or none: -ENOMEM, or -ENOTCONN when the connection
 * is broken (message set, tickets[] NULL).
 */
int pmemz_pending_add(struct pmemz_client *c, Pmemz__Request *const *reqs, size_t n,
		      struct pmemz_pending **tickets);
/* Take tickets[0..n) off c->pending and free them (the request failed). */
void pmemz_pending_cancel(struct pmemz_client *c, struct pmemz_pending **tickets, size_t n);
/* Caller holds c->lock: take p off c->pending (its waiter has it). */
void pmemz_pending_unlink(struct pmemz_client *c, struct pmemz_pending *p);
void pmemz_pending_free(struct pmemz_pending *p);
/* Caller holds c->lock: give a response (and its fd) to its waiter; an unknown id is dropped. */
void pmemz_pending_file(struct pmemz_client *c, Pmemz__Response *resp, int fd);
/* The handle is being destroyed: free every ticket left. */
void pmemz_pending_free_all(struct pmemz_client *c);
/*
 * The connection is unusable (err, why): every waiter wakes and fails, a
 * reader blocked in recvmsg returns.  The first reason sticks.
 */
void pmemz_pending_break_locked(struct pmemz_client *c, int err, const char *why);
void pmemz_pending_break(struct pmemz_client *c, int err, const char *why);

/* ---- receive.c -------------------------------------------------------- */

/* The receive buffer of a new handle: 0, or -ENOMEM with the message set. */
int pmemz_receive_init(struct pmemz_client *c);
/* Caller holds c->lock and nobody reads: forget the half-read stream and its fds (adopt). */
void pmemz_receive_reset(struct pmemz_client *c);
void pmemz_receive_free(struct pmemz_client *c);

#endif
