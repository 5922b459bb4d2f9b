/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "util.h"
#include "rpc.h"
#include "vector.h"

struct tag_list {
	/* the request, copied: a sliced LIST outlives it */
	struct manager_region *mr; /* stable: reload keeps a region a job names (rpc_job_region) */
	bool all;
	uid_t uid;
	char *tag;
	char *prefix; /* only names starting with it; NULL: all */
	size_t prefix_len;
	bool more_runs_ok; /* the client reads a tag's further runs with RUNS */
	uint32_t next;	   /* the last tag id looked at */
	/*
	 * Paging (start_slot): gather what fits in one frame, then reply with
	 * next_slot.  page_bytes: a bound on the packed size of the tags so far.
	 */
	bool paged;
	bool done; /* start_slot past every slot: an empty page */
	bool page_full;
	uint64_t next_slot; /* valid when page_full */
	size_t page_bytes;

	Pmemz__TagInfo *info;
	Pmemz__TagInfo **ptrs;
	Pmemz__Run **run_storage; /* per tag, freed with the list */
	size_t n, cap, cap_storage;
};

static void tag_list_done(struct tag_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->run_storage[i]);
		free(l->info[i].runs);
		free(l->info[i].name);
	}
	free(l->info);
	free(l->ptrs);
	free(l->run_storage);
	free(l->tag);
	free(l->prefix);
}

static void tag_list_free(void *p)
{
	if (!p)
		return;
	tag_list_done(p);
	free(p);
}

static void tag_list_freep(struct tag_list **p)
{
	tag_list_free(*p);
}

/*
 * Add a tag with its runs (read by the caller): all n_runs of them, or,
 * with total_runs > n_runs, the first n_runs of a tag too fragmented for a
 * frame.
 */
static int tag_list_push(struct tag_list *l, const struct manager_region *mr, const char *name,
			 uid_t uid, const struct run *runs, size_t n_runs, uint64_t total_runs,
			 uint64_t n_extents)
{
	Pmemz__TagInfo *ti;
	int r;

	/* 16 at first: most lists are short, and need no second growth. */
	if (PMEMZ_GROW(l->info, &l->cap, MAX(l->n + 1, 16)) < 0 ||
	    PMEMZ_GROW(l->run_storage, &l->cap_storage, MAX(l->n + 1, 16)) < 0)
		return -ENOMEM;
	ti = &l->info[l->n];
	pmemz__tag_info__init(ti);
	/* A copy: the tag may be freed before a sliced LIST replies. */
	ti->name = strdup(name);
	if (!ti->name)
		return -ENOMEM;
	r = rpc_runs_to_pb(runs, n_runs, &l->run_storage[l->n], &ti->runs);
	if (r < 0) {
		free(ti->name);
		return r;
	}
	ti->n_runs = n_runs;
	if (total_runs > n_runs) {
		ti->has_total_runs = true;
		ti->total_runs = total_runs;
	}
	ti->uid = (uint32_t)uid;
	ti->bytes = n_extents * mr->info.extent_size;
	l->n++;
	return 0;
}

static int tag_list_add(struct tag_list *l, struct manager_region *mr, uint32_t id,
			const char *name, uid_t uid)
{
	_cleanup_free_ struct run *runs = NULL;
	size_t n_runs = 0;
	uint64_t n_extents = 0;
	int r;

	r = region_tag_runs(mr->r, id, &runs, &n_runs, &n_extents);
	if (r < 0)
		return r;
	return tag_list_push(l, mr, name, uid, runs, n_runs, n_runs, n_extents);
}

/*
 * A bound on a TagInfo's packed size in a ListResp without its runs: the
 * field key and length, name, uid, bytes and total_runs.  Runs are
 * counted as rpc_runs_fitting counts them.
 */
static size_t tag_info_overhead(const char *name)
{
	return 48 + strlen(name);
}

/*
 * Paging: add the tag if it fits in what is left of the frame.  0 when
 * added, 1 when the page is full (the tag goes first on the next page),
 * 2 when added and the page is full (a tag too fragmented for any frame
 * fills a page alone: its first runs, and total_runs for the client's RUNS
 * requests), -errno.
 */
static int tag_list_add_paged(struct tag_list *l, struct rpc_call *call, struct manager_region *mr,
			      uint32_t id, const char *name, uid_t uid)
{
	_cleanup_free_ struct run *runs = NULL;
	size_t n_runs = 0, fit, overhead = tag_info_overhead(name), left;
	uint64_t n_extents = 0;
	int r;

	if (l->page_bytes + overhead > RPC_RUNS_BUDGET)
		return 1;
	left = RPC_RUNS_BUDGET - l->page_bytes - overhead;
	r = region_tag_runs(mr->r, id, &runs, &n_runs, &n_extents);
	if (r < 0)
		return r;
	fit = rpc_runs_fitting(runs, n_runs, left);
	if (fit < n_runs) {
		if (l->n > 0)
			return 1;
		if (!l->more_runs_ok)
			return rpc_fail(call, -EMSGSIZE,
					"tag '%.64s' has too many runs for one reply; ask with "
					"more_runs_ok and read the rest with RUNS",
					name);
		if (fit == 0) /* a name and one run always fit in a frame */
			return rpc_fail(call, -EMSGSIZE, "tag '%.64s' does not fit a reply", name);
	}
	r = tag_list_push(l, mr, name, uid, runs, fit, n_runs, n_extents);
	if (r < 0)
		return r;
	l->page_bytes += overhead + rpc_runs_packed(runs, fit);
	return fit < n_runs ? 2 : 0;
}

/* One tag with more runs than a frame holds: its first runs and the total (RUNS has the rest). */
static void list_first_slice(Pmemz__TagInfo *ti)
{
	size_t n = 0, used = 0;

	for (; n < ti->n_runs; n++) {
		size_t one = protobuf_c_message_get_packed_size(&ti->runs[n]->base) + 4;

		if (used + one > RPC_RUNS_BUDGET)
			break;
		used += one;
	}
	ti->has_total_runs = true;
	ti->total_runs = ti->n_runs;
	ti->n_runs = n;
}

/* The reply, once the tags are gathered. */
static int list_reply(struct rpc_call *call, struct tag_list *tags, const char *region_name, int r)
{
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__ListResp lr = PMEMZ__LIST_RESP__INIT;

	if (tags->tag && (r == -ENOENT || (r >= 0 && tags->n == 0)))
		return rpc_fail(call, -ENOENT, "no tag '%.64s' in region '%s'", tags->tag,
				region_name);
	if (r < 0 && call->msg[0])
		return r; /* said why already */
	if (r < 0)
		return rpc_fail(call, r, "listing tags failed: %s", strerror(-r));

	if (tags->n) {
		tags->ptrs = calloc(tags->n, sizeof(*tags->ptrs));
		if (!tags->ptrs)
			return rpc_fail(call, -ENOMEM, "out of memory");
		for (size_t i = 0; i < tags->n; i++)
			tags->ptrs[i] = &tags->info[i];
	}
	lr.n_tags = tags->n;
	lr.tags = tags->ptrs;
	lr.has_next_slot = tags->paged && tags->page_full;
	lr.next_slot = tags->next_slot;
	resp.op_case = PMEMZ__RESPONSE__OP_LIST;
	resp.list = &lr;
	/* One named tag too fragmented for a frame: its first runs, RUNS has the rest. */
	if (!rpc_response_fits(&resp) && tags->n == 1 && tags->tag && tags->more_runs_ok)
		list_first_slice(&tags->info[0]);
	if (!rpc_response_fits(&resp))
		return rpc_fail(call, -EMSGSIZE,
				"%zu tags are too many for one reply; ask for one tag", tags->n);
	return rpc_reply(call, &resp, -1, RPC_REPLY_ORDERED);
}

/* A walk over the tag table, in slices (rpc.h). */
static int list_step(struct rpc_call *call, void *state, uint64_t deadline_ns)
{
	struct tag_list *tags = state;
	struct manager_region *mr = tags->mr;
	bool first = true;
	int r = 0;

	for (uint32_t id = tags->done ? 0 : region_tag_next(mr->r, tags->next); id;
	     id = region_tag_next(mr->r, id)) {
		const char *name;
		uid_t uid;

		/*
		 * Before the tag, after at least one: tags->next is the last tag
		 * done, so the next step starts with this one.
		 */
		if (!first && pmemz_now_ns() >= deadline_ns)
			return 1;
		first = false;
		tags->next = id;
		if (region_tag_get(mr->r, id, &name, &uid) < 0)
			continue;
		if (!tags->all && uid != tags->uid)
			continue;
		if (tags->tag && strcmp(name, tags->tag) != 0)
			continue;
		if (tags->prefix && strncmp(name, tags->prefix, tags->prefix_len) != 0)
			continue;
		if (!tags->paged) {
			r = tag_list_add(tags, mr, id, name, uid);
			if (r < 0)
				break;
			/*
			 * A whole list that cannot fit a reply: say so now, not after
			 * the walk (a lower bound of each tag's packed size).
			 */
			tags->page_bytes += strlen(name) + 8;
			if (!tags->tag && tags->page_bytes > PMEMZ_FRAME_MAX)
				break;
		} else {
			r = tag_list_add_paged(tags, call, mr, id, name, uid);
			if (r < 0)
				break;
			if (r > 0) {
				/* 1: this tag starts the next page; 2: it ends this one */
				uint64_t next = r == 1 ? id : region_tag_next(mr->r, id);

				tags->page_full = next != 0;
				tags->next_slot = next;
				r = 0;
				break;
			}
		}
	}
	return list_reply(call, tags, mr->info.name, r);
}

/*
 * LIST: tags of the caller's uid (all users' for admins), with their runs;
 * with start_slot, a page of them that fits a frame, and next_slot.
 */
static int rpc_list_handler(struct rpc_call *call)
{
	const Pmemz__ListReq *req = call->req->list;
	_cleanup_(tag_list_freep) struct tag_list *tags = NULL;
	struct connection *c = call->c;
	bool all = req->has_all_users && req->all_users;
	struct manager_region *mr;
	int r;

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	if (all && !c->admin)
		return rpc_fail(call, -EPERM,
				"listing every user's tags needs root or the admin group");
	if (req->tag && (!*req->tag || strlen(req->tag) > RPC_TAG_MAX))
		return rpc_fail(call, -EINVAL, "invalid tag name");
	if (req->prefix && strlen(req->prefix) > RPC_TAG_MAX)
		return rpc_fail(call, -EINVAL, "invalid tag name prefix");

	tags = calloc(1, sizeof(*tags));
	if (!tags || (req->tag && !(tags->tag = strdup(req->tag))) ||
	    (req->prefix && *req->prefix && !(tags->prefix = strdup(req->prefix))))
		return rpc_fail(call, -ENOMEM, "out of memory");
	tags->prefix_len = tags->prefix ? strlen(tags->prefix) : 0;
	tags->mr = mr;
	tags->all = all;
	tags->uid = c->uid;
	tags->more_runs_ok = req->has_more_runs_ok && req->more_runs_ok;
	if (req->has_start_slot) {
		tags->paged = true;
		/* Slot ids are 32-bit: a start past them is an empty last page. */
		tags->done = req->start_slot > UINT32_MAX;
		tags->next =
		    tags->done || req->start_slot == 0 ? 0 : (uint32_t)(req->start_slot - 1);
	}

	if (req->tag && !all) {
		const char *name;
		uid_t uid;
		uint32_t id;

		r = region_tag_lookup(mr->r, req->tag, c->uid, &id);
		if (r >= 0)
			r = region_tag_get(mr->r, id, &name, &uid);
		if (r >= 0 && tags->prefix && strncmp(name, tags->prefix, tags->prefix_len) != 0)
			r = -ENOENT;
		if (r >= 0)
			r = tag_list_add(tags, mr, id, name, uid);
		return list_reply(call, tags, mr->info.name, r);
	}
	return rpc_job_start(call, mr, list_step, tag_list_free, TAKE_PTR(tags),
			     sizeof(*tags) + PMEMZ_FRAME_MAX);
}

const struct rpc_descriptor rpc_list = {
    .name = "LIST",
    .op = PMEMZ__REQUEST__OP_LIST,
    .admin_only = false,
    .handler = rpc_list_handler,
};
