/* SPDX-License-Identifier: MIT */
/*
 * libpmemzclient internals, shared by the library sources, pmemzctl, the
 * demo and the tests (which link the static build, pmemzclient_static).
 * Nothing here is exported from libpmemzclient.so: only functions marked
 * PMEMZ_EXPORT and listed in libpmemzclient.sym are.
 */
#ifndef PMEMZ_CLIENT_PRIVATE_H
#define PMEMZ_CLIENT_PRIVATE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "frame.h"
#include "libpmemzclient.h"
#include "util.h"

#define PMEMZ_EXPORT __attribute__((visibility("default")))

struct pmem2_map;

/* ---- error.c ---------------------------------------------------------- */

/* Set the thread's last error message; returns err (a negative errno). */
int pmemz_err(int err, const char *fmt, ...) _printf_(2, 3);
void pmemz_err_clear(void);
/* Debug line to stderr when $PMEMZ_DEBUG is set; the library never prints otherwise. */
void pmemz_debug(const char *fmt, ...) _printf_(1, 2);
/* "Connection refused" for -ECONNREFUSED (thread-safe). */
const char *pmemz_strerror(int err);

/* ---- client.c: the transport ------------------------------------------ */

struct pmemz_pending; /* one request waiting for its response */

struct pmemz_hello {
	uint32_t version;
	char *daemon_version;
	uint32_t uid, gid;
	bool admin;
};

/* Received SCM_RIGHTS fd, with the stream offset of the byte it came with. */
struct pmemz_rxfd {
	int fd;
	uint64_t off;
};

struct pmemz_region;
LIST_HEAD(pmemz_region_list, pmemz_region);

struct pmemz_client {
	unsigned refs; /* user handle + regions + allocations (atomic) */
	int fd;
	char *path;
	struct pmemz_hello hello;

	pthread_mutex_t send_lock; /* one writer on the socket at a time */
	pthread_mutex_t lock;	   /* everything below */
	pthread_cond_t cond;	   /* a response was filed / the reader role is free */
	uint64_t next_id;
	bool reading; /* a thread is the reader (leader) */
	bool closed;  /* pmemz_client_free was called */
	int broken;   /* 0, or why the connection is unusable (-errno) */
	char broken_msg[160];
	struct pmemz_pending *pending; /* list of outstanding requests */
	/*
	 * Which connection: pmemz_client_reconnect() replaces it and counts
	 * up (with send_lock held too).  Requests, and the leases they got,
	 * belong to the connection of their epoch and die with it.
	 */
	uint64_t epoch;
	struct pmemz_region_list regions; /* every region handle, to re-open (reconnect.c) */

	/* Owned by the reader: the receive buffer and the received fds. */
	uint8_t *rbuf;
	size_t rpos, rlen;
	uint64_t rbuf_off; /* stream offset of rbuf[0] */
	struct pmemz_rxfd *rxfds;
	size_t n_rxfds, cap_rxfds;
};

void pmemz_client_ref(struct pmemz_client *c);
void pmemz_client_unref(struct pmemz_client *c);

/*
 * Send req (version and id are filled in) and wait for its response.
 * Returns 0 with *resp set (free with pmemz__response__free_unpacked), or a
 * negative errno with the message set: a transport failure, -EPROTO for a
 * response of the wrong kind, or the daemon's status with its message (then
 * *resp is NULL).  Thread-safe; responses may arrive in any order.
 */
int pmemz_client_call(struct pmemz_client *c, Pmemz__Request *req, Pmemz__Response **resp);
/* The same, also handing out the fd that came with an OPEN_REGION response (-1 if none). */
int pmemz_client_call_fd(struct pmemz_client *c, Pmemz__Request *req, Pmemz__Response **resp,
			 int *fd);

/*
 * Pipelining: submit sends the request and returns a ticket at once; wait
 * collects its response (in any order).  Each ticket must be waited for
 * exactly once.  pmemz_client_call = submit + wait.
 */
int pmemz_client_submit(struct pmemz_client *c, Pmemz__Request *req, struct pmemz_pending **ticket);
/* n requests in one send (one wakeup of the daemon): tickets[i] for reqs[i], all or none. */
int pmemz_client_submit_many(struct pmemz_client *c, Pmemz__Request *const *reqs, size_t n,
			     struct pmemz_pending **tickets);
int pmemz_client_wait(struct pmemz_client *c, struct pmemz_pending *ticket, Pmemz__Response **resp,
		      int *fd);
/* The same, also telling which connection (epoch) the response came on. */
int pmemz_client_wait_epoch(struct pmemz_client *c, struct pmemz_pending *ticket,
			    Pmemz__Response **resp, int *fd, uint64_t *epoch);

/*
 * Has the ticket's response arrived?  Never blocks for long: when no other
 * thread is reading, it reads the frames that are already there.  true also
 * when the connection broke (pmemz_client_wait then reports why).  The
 * ticket must still be waited for.
 */
bool pmemz_client_poll(struct pmemz_client *c, struct pmemz_pending *ticket);
/* A response's status and kind against the request's op: 0, or -errno with the message set. */
int pmemz_check_response(int op, const Pmemz__Response *resp);

/* The HELLO answer received at connect. */
const struct pmemz_hello *pmemz_client_hello(const struct pmemz_client *c);
const char *pmemz_client_path(const struct pmemz_client *c);

/* The connection's epoch now (see struct pmemz_client). */
uint64_t pmemz_client_epoch(struct pmemz_client *c);
/* Is the connection unusable now (a transport failure, not a daemon's answer)? */
bool pmemz_client_broken(struct pmemz_client *c);
/*
 * pmemz_client_reconnect: c takes over fresh's connection (socket, HELLO
 * answer) and the next epoch; fresh gets c's old socket, to be freed.
 * Requests of the old epoch fail with -ECONNRESET; nothing of them is sent
 * on the new connection.
 */
void pmemz_client_adopt(struct pmemz_client *c, struct pmemz_client *fresh);

/* Free a response (NULL is fine); for _cleanup_. */
void pmemz_response_free(Pmemz__Response *resp);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pmemz__Response *, pmemz_response_free)
#define _cleanup_response_ _cleanup_(pmemz_response_freep)

/* ---- region.c --------------------------------------------------------- */

struct pmemz_reserve; /* reserve.c */

struct pmemz_region {
	unsigned refs; /* user handle + allocations (atomic) */
	struct pmemz_client *c;
	char *name;
	char *path;
	char *granularity; /* the daemon's mapping */
	uint64_t size, extent_size, extent_count, data_offset, alignment;
	uint8_t uuid[16];
	bool devdax;

	struct pmem2_map *map;
	uint8_t *base;
	size_t map_size;
	void (*persist)(const void *ptr, size_t size);
	/* libpmem2's for the mapping (pmemz_memcpy, pmemz_drain) */
	void *(*memcpy_fn)(void *dst, const void *src, size_t len, unsigned flags);
	void (*drain_fn)(void);

	struct pmemz_reserve *rsv; /* pmemz_region_set_reserve */

	/* reconnect.c, under c->lock: */
	LIST_ENTRY(pmemz_region) link; /* c->regions */
	bool tracked;		       /* on c->regions */
	int stale;		       /* 0, or -ESTALE: re-open found another region */
	char stale_msg[192];

	/* claim.c, under c->lock: the names this handle claimed (malloc'ed) */
	char **claims;
	size_t n_claims, cap_claims;
};

void pmemz_region_ref(struct pmemz_region *r);
void pmemz_region_unref(struct pmemz_region *r);
/* 0, or -ESTALE with the message when reconnecting found another region under r's name. */
int pmemz_region_check(struct pmemz_region *r);

/* ---- claim.c ---------------------------------------------------------- */

/*
 * Claim r's names again on a new connection (pmemz_client_reconnect): 0,
 * or the first failure (-EBUSY: another connection took one meanwhile;
 * that name is no longer r's).  The others are claimed all the same.
 */
int pmemz_region_reclaim(struct pmemz_region *r);
/* Give back every claim of r (pmemz_region_close), best effort. */
void pmemz_region_unclaim_all(struct pmemz_region *r);
/* r turned stale: its claims died with the old connection, forget them (nothing is sent). */
void pmemz_region_claims_forget(struct pmemz_region *r);
/* Forget r's claim names (its last reference is gone). */
void pmemz_region_claims_free(struct pmemz_region *r);

/* ---- reconnect.c ------------------------------------------------------ */

/* Put a newly opened region on / take a dying one off c->regions. */
void pmemz_client_track_region(struct pmemz_region *r);
void pmemz_client_untrack_region(struct pmemz_region *r);

/* ---- alloc.c ---------------------------------------------------------- */

struct pmemz_run {
	uint64_t first, count;
};

struct pmemz_alloc {
	pthread_mutex_t lock; /* serialises commits of this handle */
	struct pmemz_region *r;
	uint64_t lease; /* valid while !committed, on connection `epoch` only */
	uint64_t epoch;
	char *tag; /* set once committed */
	bool committed;
	size_t n_runs;
	struct pmemz_run *runs;
	size_t bytes;
};

/*
 * The handle of a committed tag from a LIST reply's TagInfo: its runs
 * (the rest read with RUNS when the reply held only the first), checked.
 */
int pmemz_alloc_from_taginfo(struct pmemz_region *r, const Pmemz__TagInfo *t,
			     struct pmemz_alloc **out);
/* Runs from the wire, checked against the region's extent count (-EPROTO). */
int pmemz_runs_from_wire(const struct pmemz_region *r, Pmemz__Run *const *wr, size_t n,
			 struct pmemz_run **out, size_t *total_extents);

/* ---- reserve.c: the allocation reserve (pmemz_region_set_reserve) ---- */

/*
 * The reserve keeps pipelined ALLOCATE tickets of one size per region.  It
 * uses the transport only; region.c owns its lifetime, alloc.c takes from
 * it.  Neither reserve.c nor region.c calls into alloc.c.
 */
int pmemz_reserve_new(struct pmemz_reserve **out);
/* The region's last reference is gone: nothing may be outstanding (pmemz_reserve_drop). */
void pmemz_reserve_free(struct pmemz_reserve *v);
/* Release every reserved lease and switch the reserve off (pmemz_region_close, set_reserve 0). */
void pmemz_reserve_drop(struct pmemz_region *r);
/*
 * The connection was replaced (pmemz_client_reconnect): the reserved
 * leases died with the old one; forget them (nothing is sent) and refill on
 * the new one.
 */
void pmemz_reserve_forget(struct pmemz_region *r);
/* Wait for an ALLOCATE ticket and make its handle (alloc.c's allocate_collect). */
typedef int (*pmemz_reserve_collect_fn)(struct pmemz_region *r, struct pmemz_pending *ticket,
					struct pmemz_alloc **out);
/*
 * Serve an allocation of n extents from the reserve: 1 when *out is set,
 * 0 when the caller must ask the daemon itself (reserve off, another size,
 * empty, failed, or NOWAIT and the oldest answer has not arrived).
 */
int pmemz_reserve_take(struct pmemz_region *r, uint64_t n, unsigned flags,
		       pmemz_reserve_collect_fn collect, struct pmemz_alloc **out);
/*
 * After an ALLOCATE made for the caller succeeded: refill again; two
 * allocations in a row of another size than the reserve's move the
 * reserve to that size (its leases of the old size are given back).
 */
void pmemz_reserve_after_direct(struct pmemz_region *r, uint64_t n);
struct pmemz_reserve_stats {
	size_t bytes, target, outstanding;
	uint64_t unit_bytes, hits, misses, refills, refill_failures;
};
void pmemz_reserve_get_stats(struct pmemz_region *r, struct pmemz_reserve_stats *st);

#endif
