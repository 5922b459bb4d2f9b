/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "rpc.h"

struct tag_list {
	Pmemz__TagInfo *info;
	Pmemz__TagInfo **ptrs;
	Pmemz__Run **run_storage; /* per tag, freed with the list */
	size_t n, cap;
};

static void tag_list_done(struct tag_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->run_storage[i]);
		free(l->info[i].runs);
	}
	free(l->info);
	free(l->ptrs);
	free(l->run_storage);
}

static int tag_list_add(struct tag_list *l, struct manager_region *mr, uint32_t id,
			const char *name, uid_t uid)
{
	_cleanup_free_ struct run *runs = NULL;
	Pmemz__TagInfo *ti;
	size_t n_runs = 0;
	uint64_t n_extents = 0;
	int r;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		Pmemz__TagInfo *info = reallocarray(l->info, cap, sizeof(*info));
		Pmemz__Run **rs;

		if (!info)
			return -ENOMEM;
		l->info = info;
		rs = reallocarray(l->run_storage, cap, sizeof(*rs));
		if (!rs)
			return -ENOMEM;
		l->run_storage = rs;
		l->cap = cap;
	}
	r = region_tag_runs(mr->r, id, &runs, &n_runs, &n_extents);
	if (r < 0)
		return r;
	ti = &l->info[l->n];
	pmemz__tag_info__init(ti);
	r = rpc_runs_to_pb(runs, n_runs, &l->run_storage[l->n], &ti->runs);
	if (r < 0)
		return r;
	ti->n_runs = n_runs;
	ti->name = (char *)(uintptr_t)name;
	ti->uid = (uint32_t)uid;
	ti->bytes = n_extents * mr->info.extent_size;
	l->n++;
	return 0;
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

/* LIST: tags of the caller's uid (all users' for admins), with their runs. */
static int rpc_list_handler(struct rpc_call *call)
{
	const Pmemz__ListReq *req = call->req->list;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__ListResp lr = PMEMZ__LIST_RESP__INIT;
	_cleanup_(tag_list_done) struct tag_list tags = {0};
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

	if (req->tag && !all) {
		const char *name;
		uid_t uid;
		uint32_t id;

		r = region_tag_lookup(mr->r, req->tag, c->uid, &id);
		if (r >= 0)
			r = region_tag_get(mr->r, id, &name, &uid);
		if (r >= 0)
			r = tag_list_add(&tags, mr, id, name, uid);
	} else {
		for (uint32_t id = region_tag_next(mr->r, 0); id; id = region_tag_next(mr->r, id)) {
			const char *name;
			uid_t uid;

			if (region_tag_get(mr->r, id, &name, &uid) < 0)
				continue;
			if (!all && uid != c->uid)
				continue;
			if (req->tag && strcmp(name, req->tag) != 0)
				continue;
			r = tag_list_add(&tags, mr, id, name, uid);
			if (r < 0)
				break;
		}
	}
	if (req->tag && (r == -ENOENT || (r >= 0 && tags.n == 0)))
		return rpc_fail(call, -ENOENT, "no tag '%.64s' in region '%s'", req->tag,
				mr->info.name);
	if (r < 0)
		return rpc_fail(call, r, "listing tags failed: %s", strerror(-r));

	if (tags.n) {
		tags.ptrs = calloc(tags.n, sizeof(*tags.ptrs));
		if (!tags.ptrs)
			return rpc_fail(call, -ENOMEM, "out of memory");
		for (size_t i = 0; i < tags.n; i++)
			tags.ptrs[i] = &tags.info[i];
	}
	lr.n_tags = tags.n;
	lr.tags = tags.ptrs;
	resp.op_case = PMEMZ__RESPONSE__OP_LIST;
	resp.list = &lr;
	if (!rpc_response_fits(&resp) && tags.n == 1 && req->tag && req->has_more_runs_ok &&
	    req->more_runs_ok)
		list_first_slice(&tags.info[0]);
	if (!rpc_response_fits(&resp))
		return rpc_fail(call, -EMSGSIZE,
				"%zu tags are too many for one reply; ask for one tag", tags.n);
	return rpc_reply(call, &resp, -1, RPC_REPLY_ORDERED);
}

const struct rpc_descriptor rpc_list = {
    .name = "LIST",
    .op = PMEMZ__REQUEST__OP_LIST,
    .admin_only = false,
    .handler = rpc_list_handler,
};
