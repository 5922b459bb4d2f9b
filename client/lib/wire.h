/* SPDX-License-Identifier: MIT */
/*
 * wire.c: the one file of libpmemzclient that builds requests.  Above the
 * transport (call.c, submit.c); every other file of the library, and the
 * admin calls (admin-*.c), asks for a request by its plain C arguments
 * and gets the daemon's answer (or a ticket) back.  So the rules of a
 * request's fields -- which optional field is set, which flags a
 * daemon of this protocol understands (more_runs_ok, paging) -- are
 * written once.
 *
 * Every call returns 0 or -errno with pmemz_errormsg() set, as
 * pmemz_client_call does; resp may be NULL where the answer is not needed.
 */
#ifndef PMEMZ_CLIENT_WIRE_H
#define PMEMZ_CLIENT_WIRE_H

#include "client-private.h"

int pmemz_wire_hello(struct pmemz_client *c, const char *client_name, Pmemz__Response **resp);
/* OPEN_REGION; *fd: the region's file descriptor that came with the answer (-1 if none). */
int pmemz_wire_open_region(struct pmemz_client *c, const char *region, Pmemz__Response **resp,
			   int *fd);

/* n ALLOCATEs of bytes each, back to back in one send: tickets[0..n), all or none. */
int pmemz_wire_allocate(struct pmemz_client *c, const char *region, uint64_t bytes, bool nowait,
			size_t n, struct pmemz_pending **tickets);
/* Has ticket's answer come?  Never waits long (pmemz_client_poll); true also when the
 * connection broke.  The ticket must still be collected. */
bool pmemz_wire_answered(struct pmemz_client *c, struct pmemz_pending *ticket);
/* Collect an ALLOCATE's ticket for its lease only: 0, or -errno (refused, connection gone). */
int pmemz_wire_allocate_lease(struct pmemz_client *c, struct pmemz_pending *ticket,
			      uint64_t *lease);
/* Collect a ticket whose answer nobody needs (a FREE given back, a dead connection's). */
void pmemz_wire_forget(struct pmemz_client *c, struct pmemz_pending *ticket);
/* FREE a lease (tag NULL) or a tag; ticket NULL: wait for the answer, else only send. */
int pmemz_wire_free(struct pmemz_client *c, const char *region, uint64_t lease, const char *tag,
		    struct pmemz_pending **ticket);
/* RUNS of a lease (tag NULL) or a tag, from run start. */
int pmemz_wire_runs(struct pmemz_client *c, const char *region, uint64_t lease, const char *tag,
		    uint64_t start, Pmemz__Response **resp);

struct pmemz_wire_commit {
	uint64_t lease;
	const char *tag;
	bool flush; /* PMEMZ_COMMIT_FLUSH */
};
struct pmemz_wire_move {
	const char *from_tag, *to_tag;
	uint64_t extent;
};
/* One COMMIT, answered. */
int pmemz_wire_commit(struct pmemz_client *c, const char *region,
		      const struct pmemz_wire_commit *cm, Pmemz__Response **resp);
/*
 * A batch in one send: one COMMIT per commits[i] (tickets[i]), then, when
 * n_moves, one MOVE of all moves (tickets[n_commits]).  All sent or none.
 */
int pmemz_wire_batch(struct pmemz_client *c, const char *region,
		     const struct pmemz_wire_commit *commits, size_t n_commits,
		     const struct pmemz_wire_move *moves, size_t n_moves,
		     struct pmemz_pending **tickets);

/* LIST: one tag (tag set), or the page from start_slot of the tags under prefix. */
struct pmemz_wire_list {
	const char *tag;
	const char *prefix;
	bool paged; /* start_slot is sent */
	uint64_t start_slot;
	bool all_users;
	/* A tag of many runs comes with its first ones (the rest read with RUNS), rather
	 * than the daemon refusing a page that does not fit a frame (-EMSGSIZE). */
	bool more_runs_ok;
};
int pmemz_wire_list(struct pmemz_client *c, const char *region, const struct pmemz_wire_list *q,
		    Pmemz__Response **resp);

int pmemz_wire_claim(struct pmemz_client *c, const char *region, const char *name, bool release);
/* FLUSH one byte range of the region's mapping; deep: PMEMZ_FLUSH_DEEP. */
int pmemz_wire_flush(struct pmemz_client *c, const char *region, uint64_t offset, uint64_t length,
		     bool deep);

/* ---- the admin and status requests (admin-*.c) ---- */

/* STAT of one region, or of all (region NULL). */
int pmemz_wire_stat(struct pmemz_client *c, const char *region, Pmemz__Response **resp);
int pmemz_wire_usage(struct pmemz_client *c, const char *region, Pmemz__Response **resp);
int pmemz_wire_map(struct pmemz_client *c, const char *region, Pmemz__Response **resp);
/* ZEROER of one region (NULL: all): pause < 0 and !rate leave that unchanged. */
int pmemz_wire_zeroer(struct pmemz_client *c, const char *region, int pause, const uint64_t *rate);
/* One page of CLIENTS, the connections after serial `after` (0: from the first). */
int pmemz_wire_clients(struct pmemz_client *c, uint64_t after, Pmemz__Response **resp);

#endif
