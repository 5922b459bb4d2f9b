/* SPDX-License-Identifier: MIT */
/*
 * The requests in flight on a connection (tickets), and what decides their
 * fate: the epoch they went out on and whether the connection broke.
 *
 * A ticket is on c->pending from its submit until its waiter takes it off;
 * the reader files each response by id into it.  A connection that breaks
 * fails the tickets waiting then with its reason (-EBADMSG, -ECONNRESET),
 * later submits with -ENOTCONN; pmemz_client_adopt (client.c) starts the
 * next epoch, whose tickets never see the old one's answers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport.h"

void pmemz_response_free(Pmemz__Response *resp)
{
	if (resp)
		pmemz__response__free_unpacked(resp, NULL);
}

void pmemz_pending_free(struct pmemz_pending *p)
{
	if (!p)
		return;
	pmemz_response_free(p->resp);
	if (p->fd >= 0)
		(void)close(p->fd);
	free(p);
}

void pmemz_pending_unlink(struct pmemz_client *c, struct pmemz_pending *p)
{
	for (struct pmemz_pending **pp = &c->pending; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			p->next = NULL;
			return;
		}
	}
}

static void tickets_free(struct pmemz_pending **tickets, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pmemz_pending_free(tickets[i]);
		tickets[i] = NULL;
	}
}

int pmemz_pending_add(struct pmemz_client *c, Pmemz__Request *const *reqs, size_t n,
		      struct pmemz_pending **tickets)
{
	char why[sizeof(c->broken_msg)];

	for (size_t i = 0; i < n; i++)
		tickets[i] = NULL;
	for (size_t i = 0; i < n; i++) {
		struct pmemz_pending *p = calloc(1, sizeof(*p));

		if (!p) {
			tickets_free(tickets, n);
			return pmemz_err(-ENOMEM, "out of memory");
		}
		p->fd = -1;
		p->op = (int)reqs[i]->op_case;
		tickets[i] = p;
	}

	pthread_mutex_lock(&c->lock);
	if (c->broken) {
		memcpy(why, c->broken_msg, sizeof(why));
		pthread_mutex_unlock(&c->lock);
		tickets_free(tickets, n);
		return pmemz_err(
		    -ENOTCONN,
		    "not connected to the daemon: %s (pmemz_client_reconnect() reconnects)", why);
	}
	for (size_t i = 0; i < n; i++) {
		tickets[i]->epoch = c->epoch;
		/* HELLO goes out at the version every daemon accepts, the rest at the agreed one. */
		tickets[i]->version = c->hello.version ? c->hello.version : PMEMZ_PROTO_VERSION;
		tickets[i]->id = ++c->next_id;
		tickets[i]->next = c->pending;
		c->pending = tickets[i];
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void pmemz_pending_cancel(struct pmemz_client *c, struct pmemz_pending **tickets, size_t n)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		pmemz_pending_unlink(c, tickets[i]);
	pthread_mutex_unlock(&c->lock);
	tickets_free(tickets, n);
}

void pmemz_pending_file(struct pmemz_client *c, Pmemz__Response *resp, int fd)
{
	for (struct pmemz_pending *p = c->pending; p; p = p->next) {
		if (p->id == resp->id && !p->done) {
			p->resp = resp;
			p->fd = fd;
			p->done = true;
			return;
		}
	}
	pmemz_debug("dropping response to unknown request id %llu", (unsigned long long)resp->id);
	pmemz_response_free(resp);
	if (fd >= 0)
		(void)close(fd);
}

void pmemz_pending_free_all(struct pmemz_client *c)
{
	while (c->pending) {
		struct pmemz_pending *p = c->pending;

		c->pending = p->next;
		pmemz_pending_free(p);
	}
}

void pmemz_pending_break_locked(struct pmemz_client *c, int err, const char *why)
{
	if (c->broken)
		return;
	c->broken = err;
	(void)snprintf(c->broken_msg, sizeof(c->broken_msg), "%s", why);
	pmemz_debug("connection to %s broken (%d): %s", c->path, err, why);
	/* Wake a reader blocked in recvmsg; the fd itself stays valid until the last unref. */
	(void)shutdown(c->fd, SHUT_RDWR);
	pthread_cond_broadcast(&c->cond);
}

void pmemz_pending_break(struct pmemz_client *c, int err, const char *why)
{
	pthread_mutex_lock(&c->lock);
	pmemz_pending_break_locked(c, err, why);
	pthread_mutex_unlock(&c->lock);
}

uint64_t pmemz_client_epoch(struct pmemz_client *c)
{
	return __atomic_load_n(&c->epoch, __ATOMIC_ACQUIRE);
}

bool pmemz_client_broken(struct pmemz_client *c)
{
	bool b;

	pthread_mutex_lock(&c->lock);
	b = c->broken != 0;
	pthread_mutex_unlock(&c->lock);
	return b;
}
