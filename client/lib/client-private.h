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

/*
 * ---- the transport: client.c (connect, HELLO, lifetime), submit.c,
 * receive.c (the reader role), pending.c (requests in flight), call.c;
 * their own shared pieces are in transport.h.
 */

struct pmemz_pending; /* one request waiting for its response (a ticket) */

struct pmemz_hello {
	uint32_t version; /* the connection's protocol version; 0 before HELLO's answer */
	char *daemon_version;
	uint32_t uid, gid;
	bool admin;
	bool has_range; /* the daemon stated the versions it speaks */
	uint32_t min_version, max_version;
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
	struct pmemz_region_list regions; /* region.c's: every region handle, to re-open */

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
 * Has the daemon hung up on connection `epoch` (poll, no wait)?  Then the
 * connection is marked broken and -ECONNRESET returned with the message:
 * a lease granted on it is gone (the daemon, or its successor, may
 * already have re-zeroed it and granted it to someone else), so it must
 * not be written.  0 while the connection is up and still of that epoch.
 */
int pmemz_client_check_alive(struct pmemz_client *c, uint64_t epoch);
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

/*
 * ---- admin-stat.c, admin-usage.c: the admin API's handles over an answer
 * the caller keeps and frees (the unit tests make answers by hand).
 */
struct pmemz_stat;
struct pmemz_usage;
int pmemz_stat_borrow(const Pmemz__StatResp *s, struct pmemz_stat **out);
int pmemz_usage_borrow(const Pmemz__UsageResp *u, struct pmemz_usage **out);

/* ---- region-map.c: how a region handle maps its fd --------------------- */

struct pmemz_region;
/*
 * map: map fd whole (it is closed after), setting base, map_size and the
 * store functions (persist, memcpy_fn, drain_fn: NULL for a mapping that
 * cannot be stored into); 0 or -errno with the message.  unmap: undo it.
 */
struct pmemz_region_mapper {
	int (*map)(struct pmemz_region *r, int fd);
	void (*unmap)(struct pmemz_region *r);
};
/* libpmem2, read-write: what pmemz_region_open uses. */
extern const struct pmemz_region_mapper pmemz_region_pmem2_mapper;
/* mmap(PROT_READ): for tools that read a region and must carry no pmem writer. */
extern const struct pmemz_region_mapper pmemz_region_readonly_mapper;

/* ---- region.c: region handles, above the transport --------------------- */

struct pmemz_region;

/*
 * What a layer above region.c (claim.c, reserve.c) keeps on a region
 * handle is its own; region.c knows only these calls, which the layer
 * registers when it first attaches something to a handle
 * (pmemz_region_add_hooks).  So region.c calls none of them by name.
 */
struct pmemz_region_hooks {
	/*
	 * pmemz_client_reconnect replaced the connection: state 0, r was
	 * opened again on the new one; -ESTALE, r turned stale; another
	 * -errno, the new connection failed before r was opened again (r
	 * waits for the next reconnect).  Take again, or forget, what the
	 * daemon held for r on the old connection: 0, or -errno with the
	 * message set when something of r is lost (a claim taken meanwhile:
	 * -EBUSY) or the connection failed.
	 */
	int (*reconnected)(struct pmemz_region *r, int state);
	/* pmemz_region_close: give back what the daemon holds for r (best effort). */
	void (*close)(struct pmemz_region *r);
	/* r's last reference is gone: free the layer's state (nothing is sent). */
	void (*release)(struct pmemz_region *r);
};

#define PMEMZ_REGION_HOOKS_MAX 4

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

	const struct pmemz_region_mapper *mapper;
	struct pmem2_map *map; /* the libpmem2 mapper's */
	uint8_t *base;
	size_t map_size;
	void (*persist)(const void *ptr, size_t size);
	/* libpmem2's for the mapping (pmemz_memcpy, pmemz_drain); NULL when read-only */
	void *(*memcpy_fn)(void *dst, const void *src, size_t len, unsigned flags);
	void (*drain_fn)(void);

	/* region.c's, under c->lock: */
	LIST_ENTRY(pmemz_region) link; /* c->regions */
	bool tracked;		       /* on c->regions */
	int stale;		       /* 0, or -ESTALE: re-open found another region */
	char stale_msg[192];
	const struct pmemz_region_hooks *hooks[PMEMZ_REGION_HOOKS_MAX];
	size_t n_hooks;

	/* reserve.c's (set once, atomic): made by the first pmemz_region_set_reserve */
	struct pmemz_reserve *rsv;

	/* claim.c's, under c->lock: the names this handle claimed (malloc'ed) */
	char **claims;
	size_t n_claims, cap_claims;
};

/* pmemz_region_open with the given mapper (pmemz_region_open: the libpmem2 one). */
int pmemz_region_open_mapped(struct pmemz_client *c, const char *name,
			     const struct pmemz_region_mapper *mapper, struct pmemz_region **out);
void pmemz_region_ref(struct pmemz_region *r);
void pmemz_region_unref(struct pmemz_region *r);
/* 0, or -ESTALE with the message when reconnecting found another region under r's name. */
int pmemz_region_check(struct pmemz_region *r);
/* Register h on r (once; registering it again does nothing): 0, or -ENOSPC. */
int pmemz_region_add_hooks(struct pmemz_region *r, const struct pmemz_region_hooks *h);

/*
 * For pmemz_client_reconnect: every region handle of c that is still
 * alive, each with a reference for the caller (*out malloc'ed; NULL when
 * none): 0, or -ENOMEM with the message set.
 */
int pmemz_region_list_live(struct pmemz_client *c, struct pmemz_region ***out, size_t *n);
/* r is not the region it mapped any more: -ESTALE from now on, with this message. */
int pmemz_region_mark_stale(struct pmemz_region *r, const char *fmt, ...) _printf_(2, 3);
/*
 * Tell r's layers how reconnecting went for r (their reconnected hooks,
 * see there for state): 0, or the first layer's failure, message set;
 * with 0 the message is the caller's still (why re-opening failed).
 */
int pmemz_region_reconnected(struct pmemz_region *r, int state);

/* ---- reserve.c: the allocation reserve (pmemz_region_set_reserve) ---- */

/*
 * The reserve keeps a queue of pipelined ALLOCATE tickets of one size per
 * region.  It uses wire.c and region.c; region.c reaches it only through
 * the hooks it registers (close, reconnected, release).  alloc.c consumes
 * its tickets: the reserve hands out tickets, never handles, and calls
 * nothing above it.
 *
 *   pmemz_reserve_begin(r, n, flags, &tk)     false: ask the daemon yourself
 *   while ((t = pmemz_reserve_next(r, &tk)))  the oldest ticket, NULL when
 *       pmemz_reserve_collected(r, &tk, ret)    served, empty, or NOWAIT and
 *   pmemz_reserve_end(r, &tk)                   unanswered; ret: collecting t
 *                                               (0: a handle was made)
 *
 * Between begin and end the reserve is locked: one allocation at a time
 * takes from it.  end refills and says whether the allocation was served.
 */
struct pmemz_reserve_take {
	struct pmemz_reserve *v; /* locked; NULL: the reserve does not take part */
	unsigned flags;
	bool serves;   /* the reserve's size: tickets may be taken */
	bool served;   /* a ticket made the caller's handle */
	bool stop;     /* NOWAIT and the oldest answer has not come */
	bool answered; /* the ticket handed out had its answer already */
	uint64_t t1;   /* when it was handed out */
	uint64_t sent; /* when its request went out */
};
bool pmemz_reserve_begin(struct pmemz_region *r, uint64_t n, unsigned flags,
			 struct pmemz_reserve_take *tk);
struct pmemz_pending *pmemz_reserve_next(struct pmemz_region *r, struct pmemz_reserve_take *tk);
void pmemz_reserve_collected(struct pmemz_region *r, struct pmemz_reserve_take *tk, int ret);
bool pmemz_reserve_end(struct pmemz_region *r, struct pmemz_reserve_take *tk);
/*
 * After an ALLOCATE made for the caller succeeded: refill again; two
 * allocations in a row of another size than the reserve's move the
 * reserve to that size (its leases of the old size are given back).
 */
void pmemz_reserve_after_direct(struct pmemz_region *r, uint64_t n);
struct pmemz_reserve_stats {
	size_t bytes, target, outstanding;
	uint64_t unit_bytes, hits, misses, refills, refill_failures;
	/* The adaptive depth (leases): its floor (bytes), cap, deepest so far;
	 * allocations that waited for a refill's answer; refusals that cut it;
	 * the latency and caller's gap it is working from. */
	size_t floor, cap, max_target;
	uint64_t stalls, cuts, latency_ns, gap_ns;
	/* Time in pmemz_reserve_take (wall clock, since the handle opened):
	 * reading answers, taking answered / unanswered leases, sending refills. */
	uint64_t observe_ns, collect_ns, stall_ns, refill_ns;
};
void pmemz_reserve_get_stats(struct pmemz_region *r, struct pmemz_reserve_stats *st);

/*
 * The reserve's depth policy, apart from the I/O so that tests can drive
 * it with simulated time: depth >= 2 x refill latency / caller's gap per
 * allocation, doubled when an allocation had to wait, lowered by an eighth
 * of its excess over that after each depth's worth of answers in time;
 * never below floor nor above cap (nor the ceiling a quota refusal left).
 */
struct pmemz_depth {
	size_t floor, cap, ceiling, target, max_target; /* leases */
	uint64_t gap_ns;  /* smoothed caller time between allocations */
	uint64_t lat_ns;  /* refill latency: a slowly decaying maximum */
	uint64_t last_ns; /* when the last allocation returned; 0: none yet */
	size_t calm;	  /* latency samples since the target last rose */
	uint64_t stalls, cuts;
};
void pmemz_depth_reset(struct pmemz_depth *d, size_t floor, size_t cap);
/* The reserve is set anew: new floor and cap, counters and ceiling cleared,
 * the latency and gap kept (they are the daemon's and the caller's). */
void pmemz_depth_resize(struct pmemz_depth *d, size_t floor, size_t cap);
/* An allocation starts (now_ns) / returns to the caller. */
void pmemz_depth_begin(struct pmemz_depth *d, uint64_t now_ns);
void pmemz_depth_end(struct pmemz_depth *d, uint64_t now_ns);
/* A reserved ALLOCATE was answered lat_ns after it went out; stalled: a caller waited for it. */
void pmemz_depth_answered(struct pmemz_depth *d, uint64_t lat_ns, bool stalled);
/* The oldest unanswered reserved ALLOCATE went out age_ns ago. */
void pmemz_depth_pending(struct pmemz_depth *d, uint64_t age_ns);
/* The daemon refused a reserved ALLOCATE (-EDQUOT, -ENOSPC) while `held` others were out. */
void pmemz_depth_refused(struct pmemz_depth *d, size_t held);
/* Leases per refill request batch: refill when this many are missing. */
size_t pmemz_depth_batch(const struct pmemz_depth *d);

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
/* A committed handle of tag (which it takes on success) over runs from the wire, checked. */
int pmemz_alloc_from_runs(struct pmemz_region *r, Pmemz__Run *const *wr, size_t n, char *tag,
			  struct pmemz_alloc **out);
/* Runs from the wire, checked against the region's extent count (-EPROTO). */
int pmemz_runs_from_wire(const struct pmemz_region *r, Pmemz__Run *const *wr, size_t n,
			 struct pmemz_run **out, size_t *total_extents);

#endif
