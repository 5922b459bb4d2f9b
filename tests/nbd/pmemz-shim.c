/* SPDX-License-Identifier: MIT */
/*
 * pmemz-nbd-shim: the refusals, partial moves and lease delays that the
 * nbd tests need, put in front of libpmemzclient in nbdkit's process
 * (LD_PRELOAD; tests/nbd/nbdtest.py does it when a PMEMZ_SHIM_* variable
 * is set), so that the plugin carries no test knob.  An nbdkit filter
 * could not do this: it sits on the NBD side, and the MOVEs are the
 * plugin's own requests to pmemzerod.
 *
 *   PMEMZ_SHIM_REFUSE_MOVES=1        every MOVE request is refused as at the
 *                                    uid's tag limit (-EDQUOT)
 *   PMEMZ_SHIM_REFUSE_MOVES_AFTER=K  of every K + 1 MOVE requests, the last
 *   PMEMZ_SHIM_MOVES_MAX=N           a MOVE request of more than N moves is
 *                                    refused as in a nearly full tag table
 *                                    (-ENOSPC): the plugin sends smaller ones,
 *                                    and with _AFTER a fold or a start moves
 *                                    some chunks and is refused the rest
 *   PMEMZ_SHIM_LEASE_DELAY_MS=MS     every allocation answers MS later, so
 *                                    that requests racing for one fresh chunk
 *                                    lose the race
 *
 * A refused MOVE request never reaches the daemon (a MOVE is all or
 * nothing there too): its batch answers with the refusal, in
 * pmemz_batch_wait, _poll and _status, and pmemz_errormsg says why.
 * Batches of commits alone pass through.  The counts are per process, as
 * the plugin's were.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "libpmemzclient.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

/* A batch the plugin made: its moves, and what the shim decided for it. */
struct shim_batch {
	struct pmemz_batch *b;
	size_t moves;
	bool decided;
	int verdict; /* 0: sent as it is; -EDQUOT, -ENOSPC: refused here */
	struct shim_batch *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_batch *batches;
static unsigned long attempts;	     /* MOVE requests that fit (PMEMZ_SHIM_REFUSE_MOVES_AFTER) */
static __thread const char *message; /* the last refusal returned on this thread */

/* libpmemzclient's own functions, found once (pthread_once: any thread may be first). */
static struct {
	const char *(*errormsg)(void);
	int (*batch_new)(struct pmemz_region *, struct pmemz_batch **);
	int (*batch_move)(struct pmemz_batch *, struct pmemz_alloc *, void *, const char *,
			  struct pmemz_alloc **);
	int (*batch_submit)(struct pmemz_batch *);
	int (*batch_wait)(struct pmemz_batch *);
	int (*batch_poll)(struct pmemz_batch *);
	int (*batch_status)(const struct pmemz_batch *, size_t);
	void (*batch_free)(struct pmemz_batch *);
	int (*alloc_new)(struct pmemz_region *, size_t, unsigned, struct pmemz_alloc **);
} lib;
static pthread_once_t resolved = PTHREAD_ONCE_INIT;

static void *real(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (!fn) {
		(void)fprintf(stderr, "pmemz-nbd-shim: %s: %s\n", name, dlerror());
		abort();
	}
	return fn;
}

static void resolve(void)
{
	lib.errormsg = real("pmemz_errormsg");
	lib.batch_new = real("pmemz_batch_new");
	lib.batch_move = real("pmemz_batch_move");
	lib.batch_submit = real("pmemz_batch_submit");
	lib.batch_wait = real("pmemz_batch_wait");
	lib.batch_poll = real("pmemz_batch_poll");
	lib.batch_status = real("pmemz_batch_status");
	lib.batch_free = real("pmemz_batch_free");
	lib.alloc_new = real("pmemz_alloc_new");
}

static long setting(const char *name)
{
	const char *v = getenv(name);

	return v ? strtol(v, NULL, 10) : 0;
}

/* The entry of batch b (lock held); NULL when the shim did not see it made. */
static struct shim_batch *find(const struct pmemz_batch *b)
{
	for (struct shim_batch *s = batches; s; s = s->next)
		if (s->b == b)
			return s;
	return NULL;
}

/* What happens to batch b's MOVE request: 0 (sent) or the refusal. */
static int decide(const struct pmemz_batch *b)
{
	long max = setting("PMEMZ_SHIM_MOVES_MAX"),
	     after = setting("PMEMZ_SHIM_REFUSE_MOVES_AFTER");
	struct shim_batch *s;
	int r = 0;

	pthread_mutex_lock(&lock);
	s = find(b);
	if (s && !s->decided && s->moves) {
		s->decided = true;
		if (max > 0 && s->moves > (size_t)max)
			s->verdict = -ENOSPC;
		else if (setting("PMEMZ_SHIM_REFUSE_MOVES") ||
			 (after > 0 &&
			  attempts++ % (unsigned long)(after + 1) == (unsigned long)after))
			s->verdict = -EDQUOT;
	}
	if (s)
		r = s->verdict;
	pthread_mutex_unlock(&lock);
	return r;
}

static int refused(int r)
{
	message = r == -ENOSPC ? "pmemz-nbd-shim: too many moves in one request "
				 "(PMEMZ_SHIM_MOVES_MAX)"
			       : "pmemz-nbd-shim: MOVE refused as at the tag limit "
				 "(PMEMZ_SHIM_REFUSE_MOVES*)";
	return r;
}

SHIM_EXPORT const char *pmemz_errormsg(void)
{
	if (message)
		return message;
	(void)pthread_once(&resolved, resolve);
	return lib.errormsg();
}

SHIM_EXPORT int pmemz_batch_new(struct pmemz_region *r, struct pmemz_batch **out)
{
	struct shim_batch *s = calloc(1, sizeof(*s));
	int ret;

	message = NULL;
	(void)pthread_once(&resolved, resolve);
	if (!s)
		return -ENOMEM;
	ret = lib.batch_new(r, out);
	if (ret < 0) {
		free(s);
		return ret;
	}
	s->b = *out;
	pthread_mutex_lock(&lock);
	s->next = batches;
	batches = s;
	pthread_mutex_unlock(&lock);
	return 0;
}

SHIM_EXPORT int pmemz_batch_move(struct pmemz_batch *b, struct pmemz_alloc *from, void *addr,
				 const char *tag, struct pmemz_alloc **out)
{
	struct shim_batch *s;
	int ret;

	message = NULL;
	(void)pthread_once(&resolved, resolve);
	ret = lib.batch_move(b, from, addr, tag, out);
	pthread_mutex_lock(&lock);
	s = find(b);
	if (ret == 0 && s)
		s->moves++;
	pthread_mutex_unlock(&lock);
	return ret;
}

/* A refused request is not sent: the batch answers with the refusal. */
SHIM_EXPORT int pmemz_batch_submit(struct pmemz_batch *b)
{
	(void)pthread_once(&resolved, resolve);
	return decide(b) < 0 ? 0 : lib.batch_submit(b);
}

SHIM_EXPORT int pmemz_batch_wait(struct pmemz_batch *b)
{
	int r = decide(b);

	(void)pthread_once(&resolved, resolve);
	return r < 0 ? refused(r) : lib.batch_wait(b);
}

SHIM_EXPORT int pmemz_batch_poll(struct pmemz_batch *b)
{
	int r = decide(b);

	(void)pthread_once(&resolved, resolve);
	return r < 0 ? refused(r) : lib.batch_poll(b);
}

SHIM_EXPORT int pmemz_batch_status(const struct pmemz_batch *b, size_t i)
{
	int r = decide(b);

	(void)pthread_once(&resolved, resolve);
	return r < 0 ? r : lib.batch_status(b, i);
}

SHIM_EXPORT void pmemz_batch_free(struct pmemz_batch *b)
{
	struct shim_batch **p, *s = NULL;

	(void)pthread_once(&resolved, resolve);
	pthread_mutex_lock(&lock);
	for (p = &batches; *p; p = &(*p)->next)
		if ((*p)->b == b) {
			s = *p;
			*p = s->next;
			break;
		}
	pthread_mutex_unlock(&lock);
	free(s);
	lib.batch_free(b);
}

SHIM_EXPORT int pmemz_alloc_new(struct pmemz_region *r, size_t size, unsigned flags,
				struct pmemz_alloc **out)
{
	long ms = setting("PMEMZ_SHIM_LEASE_DELAY_MS");
	int ret;

	message = NULL;
	(void)pthread_once(&resolved, resolve);
	ret = lib.alloc_new(r, size, flags, out);
	if (ret == 0 && ms > 0) {
		struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	return ret;
}
