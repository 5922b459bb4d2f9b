/* SPDX-License-Identifier: MIT */
/*
 * Batches (since 1.4): commits and moves queued by the caller, sent in one
 * write (pmemz_wire_batch), answered while the caller does other
 * work.  The commits are COMMIT requests, each with its own answer; the
 * moves are one MOVE request, which the daemon makes durable all or
 * nothing.  A batch touches its handles only when its answers are
 * collected, under each handle's lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"
#include "vector.h"

enum batch_kind { BATCH_COMMIT, BATCH_MOVE };

struct batch_entry {
	enum batch_kind kind;
	struct pmemz_alloc *a; /* the lease to commit, or the tag to move from */
	char *tag;	       /* the new tag */
	unsigned flags;	       /* commit: PMEMZ_COMMIT_* */
	uint64_t extent;       /* move: extent index in the region */
	struct pmemz_alloc **out;
	struct pmemz_pending *ticket; /* commit: its own; moves share the batch's */
	int status;		      /* -EINPROGRESS until answered */
};

struct pmemz_batch {
	struct pmemz_region *r;
	struct batch_entry *v;
	size_t n, cap, n_moves;
	struct pmemz_pending *move_ticket;
	bool submitted, collected;
	int result; /* the first failure, once collected */
	char msg[256];
};

PMEMZ_EXPORT int pmemz_batch_new(struct pmemz_region *r, struct pmemz_batch **out)
{
	struct pmemz_batch *b;

	if (!out)
		return pmemz_err(-EINVAL, "pmemz_batch_new: out is NULL");
	*out = NULL;
	if (!r)
		return pmemz_err(-EINVAL, "pmemz_batch_new: region is NULL");
	b = calloc(1, sizeof(*b));
	if (!b)
		return pmemz_err(-ENOMEM, "out of memory");
	b->r = r;
	pmemz_region_ref(r);
	*out = b;
	return 0;
}

static int entry_push(struct pmemz_batch *b, const struct batch_entry *e)
{
	int r = PMEMZ_GROW(b->v, &b->cap, b->n + 1);

	if (r < 0)
		return pmemz_err(r, "out of memory");
	b->v[b->n++] = *e;
	return 0;
}

static int entry_check(struct pmemz_batch *b, struct pmemz_alloc *a, const char *tag,
		       const char *fn)
{
	if (!b)
		return pmemz_err(-EINVAL, "%s: batch is NULL", fn);
	if (b->submitted)
		return pmemz_err(-EALREADY, "%s: the batch was submitted already", fn);
	if (!a)
		return pmemz_err(-EINVAL, "%s: allocation is NULL", fn);
	if (a->r != b->r)
		return pmemz_err(-EINVAL, "%s: the allocation is of another region handle", fn);
	if (!tag || !*tag)
		return pmemz_err(-EINVAL, "%s: empty tag", fn);
	return 0;
}

PMEMZ_EXPORT int pmemz_batch_commit(struct pmemz_batch *b, struct pmemz_alloc *a, const char *tag,
				    unsigned flags)
{
	struct batch_entry e = {.kind = BATCH_COMMIT, .a = a, .flags = flags};
	int r = entry_check(b, a, tag, "pmemz_batch_commit");

	if (r < 0)
		return r;
	if (flags & ~PMEMZ_COMMIT_FLUSH)
		return pmemz_err(-EINVAL, "pmemz_batch_commit: unknown flags 0x%x", flags);
	if (a->committed)
		return pmemz_err(-EINVAL, "pmemz_batch_commit: already committed as tag '%s'",
				 a->tag);
	e.tag = strdup(tag);
	e.status = -EINPROGRESS;
	if (!e.tag)
		return pmemz_err(-ENOMEM, "out of memory");
	r = entry_push(b, &e);
	if (r < 0)
		free(e.tag);
	return r;
}

/* The index of the extent at addr, one of a's: 0, or -EINVAL. */
static int extent_of(const struct pmemz_alloc *a, const void *addr, uint64_t *out)
{
	const struct pmemz_region *r = a->r;
	const uint8_t *first = (const uint8_t *)r->base + r->data_offset, *p = addr;
	uint64_t i;

	if (p < first || (uint64_t)(p - first) % r->extent_size)
		return -EINVAL;
	i = (uint64_t)(p - first) / r->extent_size;
	for (size_t k = 0; k < a->n_runs; k++)
		if (i >= a->runs[k].first && i - a->runs[k].first < a->runs[k].count) {
			*out = i;
			return 0;
		}
	return -EINVAL;
}

PMEMZ_EXPORT int pmemz_batch_move(struct pmemz_batch *b, struct pmemz_alloc *from, void *addr,
				  const char *tag, struct pmemz_alloc **out)
{
	struct batch_entry e = {.kind = BATCH_MOVE, .a = from, .out = out};
	int r = entry_check(b, from, tag, "pmemz_batch_move");

	if (r < 0)
		return r;
	if (!from->committed)
		return pmemz_err(-EINVAL, "pmemz_batch_move: a lease has no tag to move from");
	if (b->n_moves == PMEMZ_BATCH_MOVES_MAX)
		return pmemz_err(-E2BIG, "pmemz_batch_move: a batch holds at most %u moves",
				 PMEMZ_BATCH_MOVES_MAX);
	pthread_mutex_lock(&from->lock);
	r = extent_of(from, addr, &e.extent);
	pthread_mutex_unlock(&from->lock);
	if (r < 0)
		return pmemz_err(r, "pmemz_batch_move: %p is not the start of an extent of tag '%s'",
				 addr, from->tag);
	e.tag = strdup(tag);
	e.status = -EINPROGRESS;
	if (!e.tag)
		return pmemz_err(-ENOMEM, "out of memory");
	r = entry_push(b, &e);
	if (r < 0) {
		free(e.tag);
		return r;
	}
	if (out)
		*out = NULL;
	b->n_moves++;
	return 0;
}

PMEMZ_EXPORT size_t pmemz_batch_count(const struct pmemz_batch *b)
{
	return b ? b->n : 0;
}

/* What b sends (wire.c builds the requests): its commits in order, and its moves. */
struct batch_wire {
	struct pmemz_wire_commit *commits;
	struct pmemz_wire_move *moves;
	struct pmemz_pending **tickets;
	size_t n_commits;
};

static void wire_free(struct batch_wire *w)
{
	free(w->commits);
	free(w->moves);
	free(w->tickets);
}

static int wire_build(struct pmemz_batch *b, struct batch_wire *w)
{
	size_t n_commits = b->n - b->n_moves, c = 0, m = 0;

	w->commits = calloc(n_commits ? n_commits : 1, sizeof(*w->commits));
	w->moves = calloc(b->n_moves ? b->n_moves : 1, sizeof(*w->moves));
	w->tickets = calloc(n_commits + 1, sizeof(*w->tickets));
	if (!w->commits || !w->moves || !w->tickets)
		return pmemz_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < b->n; i++) {
		struct batch_entry *e = &b->v[i];

		if (e->kind == BATCH_MOVE)
			w->moves[m++] = (struct pmemz_wire_move){
			    .from_tag = e->a->tag, .to_tag = e->tag, .extent = e->extent};
		else
			w->commits[c++] = (struct pmemz_wire_commit){
			    .lease = e->a->lease,
			    .tag = e->tag,
			    .flush = !!(e->flags & PMEMZ_COMMIT_FLUSH)};
	}
	w->n_commits = c;
	return 0;
}

/* Leases of a connection that pmemz_client_reconnect() replaced cannot be committed. */
static int leases_alive(struct pmemz_batch *b)
{
	uint64_t epoch = pmemz_client_epoch(b->r->c);

	for (size_t i = 0; i < b->n; i++) {
		const struct pmemz_alloc *a = b->v[i].a;

		if (b->v[i].kind == BATCH_COMMIT && a->epoch != epoch)
			return pmemz_err(-ESTALE,
					 "pmemz_batch_submit: lease %llu of region '%s' was lost "
					 "with the connection that pmemz_client_reconnect() replaced",
					 (unsigned long long)a->lease, a->r->name);
	}
	return 0;
}

PMEMZ_EXPORT int pmemz_batch_submit(struct pmemz_batch *b)
{
	struct batch_wire w = {0};
	int r;

	if (!b)
		return pmemz_err(-EINVAL, "pmemz_batch_submit: batch is NULL");
	if (b->submitted)
		return pmemz_err(-EALREADY, "pmemz_batch_submit: submitted already");
	if (b->n == 0)
		return pmemz_err(-EINVAL, "pmemz_batch_submit: the batch is empty");
	r = pmemz_region_check(b->r);
	if (r == 0)
		r = leases_alive(b);
	if (r == 0)
		r = wire_build(b, &w);
	if (r == 0)
		r = pmemz_wire_batch(b->r->c, b->r->name, w.commits, w.n_commits, w.moves,
				     b->n_moves, w.tickets);
	if (r == 0) {
		size_t c = 0;

		for (size_t i = 0; i < b->n; i++)
			if (b->v[i].kind == BATCH_COMMIT)
				b->v[i].ticket = w.tickets[c++];
		if (b->n_moves)
			b->move_ticket = w.tickets[c];
		b->submitted = true;
	}
	wire_free(&w);
	return r;
}

/* Take extent i out of a's runs (a run may split in two): 0 or -ENOMEM. */
static int runs_remove(struct pmemz_alloc *a, uint64_t i)
{
	for (size_t k = 0; k < a->n_runs; k++) {
		struct pmemz_run *ru = &a->runs[k];
		uint64_t end = ru->first + ru->count;

		if (i < ru->first || i >= end)
			continue;
		if (i == ru->first) {
			ru->first++;
			ru->count--;
		} else if (i == end - 1) {
			ru->count--;
		} else {
			/* a->runs is exactly n_runs long: no capacity kept. */
			if (PMEMZ_GROW(a->runs, NULL, a->n_runs + 1) < 0)
				return -ENOMEM;
			ru = &a->runs[k];
			memmove(ru + 2, ru + 1, (a->n_runs - k - 1) * sizeof(*ru));
			ru[1] = (struct pmemz_run){i + 1, end - i - 1};
			ru->count = i - ru->first;
			a->n_runs++;
		}
		if (a->runs[k].count == 0) {
			memmove(&a->runs[k], &a->runs[k + 1], (a->n_runs - k - 1) * sizeof(*ru));
			a->n_runs--;
		}
		a->bytes -= a->r->extent_size;
		return 0;
	}
	return 0; /* not there: a batch moved it already */
}

/* A moved extent: its new handle, and the source's runs without it. */
static int move_done(struct pmemz_batch *b, struct batch_entry *e)
{
	struct pmemz_alloc *n = NULL;
	Pmemz__Run run = PMEMZ__RUN__INIT, *runs[1] = {&run};
	int r = 0;

	if (e->out) {
		run.first = e->extent;
		run.count = 1;
		r = pmemz_alloc_from_runs(b->r, runs, 1, e->tag, &n);
		if (r == 0)
			e->tag = NULL; /* the handle owns it now */
	}
	pthread_mutex_lock(&e->a->lock);
	if (runs_remove(e->a, e->extent) < 0 && r == 0)
		r = pmemz_err(-ENOMEM, "out of memory");
	pthread_mutex_unlock(&e->a->lock);
	if (r < 0) {
		pmemz_alloc_close(n);
		return r;
	}
	if (e->out)
		*e->out = n;
	return 0;
}

static int collect(struct pmemz_client *c, struct pmemz_pending *ticket, int op)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	int r = pmemz_client_wait(c, ticket, &resp, NULL);

	return r < 0 ? r : pmemz_check_response(op, resp);
}

static void note(struct pmemz_batch *b, int r)
{
	if (r < 0 && b->result == 0) {
		b->result = r;
		(void)snprintf(b->msg, sizeof(b->msg), "%s", pmemz_errormsg());
	}
}

static void collect_all(struct pmemz_batch *b)
{
	int mr = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct batch_entry *e = &b->v[i];

		if (e->kind != BATCH_COMMIT)
			continue;
		e->status = collect(b->r->c, e->ticket, PMEMZ__REQUEST__OP_COMMIT);
		e->ticket = NULL;
		note(b, e->status);
		if (e->status == 0) {
			pthread_mutex_lock(&e->a->lock);
			e->a->tag = e->tag;
			e->a->committed = true;
			pthread_mutex_unlock(&e->a->lock);
			e->tag = NULL;
		}
	}
	if (b->move_ticket) {
		mr = collect(b->r->c, b->move_ticket, PMEMZ__REQUEST__OP_MOVE);
		b->move_ticket = NULL;
		note(b, mr);
	}
	for (size_t i = 0; i < b->n; i++) {
		struct batch_entry *e = &b->v[i];

		if (e->kind != BATCH_MOVE)
			continue;
		e->status = mr < 0 ? mr : move_done(b, e);
		note(b, e->status);
	}
	b->collected = true;
}

static int result(const struct pmemz_batch *b)
{
	return b->result < 0 ? pmemz_err(b->result, "%s", b->msg) : 0;
}

PMEMZ_EXPORT int pmemz_batch_wait(struct pmemz_batch *b)
{
	int r;

	if (!b)
		return pmemz_err(-EINVAL, "pmemz_batch_wait: batch is NULL");
	if (!b->submitted) {
		r = pmemz_batch_submit(b);
		if (r < 0)
			return r;
	}
	if (!b->collected)
		collect_all(b);
	return result(b);
}

PMEMZ_EXPORT int pmemz_batch_poll(struct pmemz_batch *b)
{
	if (!b)
		return pmemz_err(-EINVAL, "pmemz_batch_poll: batch is NULL");
	if (!b->submitted)
		return pmemz_err(-EINVAL, "pmemz_batch_poll: the batch was not submitted");
	if (!b->collected) {
		for (size_t i = 0; i < b->n; i++)
			if (b->v[i].ticket && !pmemz_client_poll(b->r->c, b->v[i].ticket))
				return -EINPROGRESS;
		if (b->move_ticket && !pmemz_client_poll(b->r->c, b->move_ticket))
			return -EINPROGRESS;
		collect_all(b);
	}
	return result(b);
}

PMEMZ_EXPORT int pmemz_batch_status(const struct pmemz_batch *b, size_t i)
{
	if (!b || i >= b->n)
		return -EINVAL;
	return b->v[i].status;
}

PMEMZ_EXPORT void pmemz_batch_free(struct pmemz_batch *b)
{
	if (!b)
		return;
	if (b->submitted && !b->collected) {
		char msg[512];

		/* every ticket is waited for once; keep the caller's last error */
		(void)snprintf(msg, sizeof(msg), "%s", pmemz_errormsg());
		collect_all(b);
		(void)pmemz_err(0, "%s", msg);
	}
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i].tag);
	free(b->v);
	pmemz_region_unref(b->r);
	free(b);
}
