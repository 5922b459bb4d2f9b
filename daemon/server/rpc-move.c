/* SPDX-License-Identifier: MIT */
/*
 * MOVE: extents of the caller's tags, each to a new tag of the caller's
 * uid, all or nothing across a crash (proto/pmemz.proto, MoveReq; the
 * media protocol is storage/region-move.c's).  What a hostile caller can
 * name is checked by region_move: the request changes nothing unless all
 * of it is allowed.  Here: the region, the tenant (a from_tag committed
 * by another tenant of the same uid is refused as FREE refuses it), the
 * tag limit, and the accounting: the moved extents stay committed, now
 * under the caller's tenant; the new tags count for it, emptied from_tags
 * stop counting.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "connection.h"
#include "log.h"
#include "rpc.h"
#include "usage.h"

struct move_ctx {
	struct region_move mv[LAYOUT_MOVE_MAX];
	uint32_t ids[LAYOUT_MOVE_MAX];	      /* the new tags */
	uint32_t from[LAYOUT_MOVE_MAX];	      /* from_tag ids before the move (0: not found) */
	struct uid_usage *rows[LAYOUT_MOVE_MAX]; /* from_tags' accounting rows */
	size_t n;
};

/* The from_tags: their tenant, and how many tags the request adds (net of emptied ones). */
static int move_owners(struct rpc_call *call, struct manager_region *mr, struct uid_usage *u,
		       struct move_ctx *x, uint64_t *added)
{
	uint64_t emptied = 0;

	for (size_t k = 0; k < x->n; k++) {
		x->rows[k] = NULL;
		if (region_tag_lookup(mr->r, x->mv[k].from_tag, call->c->uid, &x->from[k]) < 0) {
			x->from[k] = 0; /* region_move says why */
			continue;
		}
		if (usage_tag_owner(mr, x->from[k], call->c->uid, &x->rows[k]) < 0)
			return rpc_fail(call, -ENOMEM, "usage accounting: out of memory");
		if (x->rows[k]->tenant && x->rows[k] != u && !call->c->admin)
			return rpc_fail(call, -EPERM, "tag '%.64s' belongs to another tenant",
					x->mv[k].from_tag);
	}
	/* one name, one id: the same from_tag is found by its id (no strcmp per pair) */
	for (size_t k = 0; k < x->n; k++) {
		uint64_t taken = 0;
		bool first = true;

		if (!x->from[k])
			continue;
		for (size_t j = 0; j < x->n; j++) {
			if (x->from[j] != x->from[k])
				continue;
			first &= j >= k;
			taken++;
		}
		if (first && taken >= region_tag_extents(mr->r, x->from[k]))
			emptied++;
	}
	*added = x->n > emptied ? x->n - emptied : 0;
	return 0;
}

static int move_failed(struct rpc_call *call, struct manager_region *mr,
		       const struct move_ctx *x, int r, size_t bad)
{
	const struct region_move *m = bad < x->n ? &x->mv[bad] : NULL;

	switch (r) {
	case -EINVAL:
		if (!m)
			return rpc_fail(call, r, "a MOVE takes 1..%u moves", LAYOUT_MOVE_MAX);
		return rpc_fail(call, r,
				"move %zu: a bad or repeated name, or extent %" PRIu64
				" is out of range, not of tag '%.64s' or named twice",
				bad, m->extent, m->from_tag);
	case -ENOENT:
		return rpc_fail(call, r, "move %zu: no tag '%.64s' of uid %u in region '%s'", bad,
				m ? m->from_tag : "", (unsigned)call->c->uid, mr->info.name);
	case -EEXIST:
		return rpc_fail(call, r, "move %zu: tag '%.64s' exists", bad, m ? m->to_tag : "");
	case -EBUSY:
		return rpc_fail(call, r,
				"move %zu: tag '%.64s' is being committed, freed or moved in this "
				"loop iteration; retry",
				bad, m ? m->from_tag : "");
	case -ENOSPC:
		return rpc_fail(call, r, "tag table of region '%s' has fewer than %zu free slots",
				mr->info.name, x->n + 1);
	default:
		return rpc_fail(call, r, "move failed: %s", strerror(-r));
	}
}

/* After the move: the extents now count for u, emptied from_tags for nobody. */
static void move_account(struct manager_region *mr, struct uid_usage *u, const struct move_ctx *x)
{
	for (size_t k = 0; k < x->n; k++) {
		struct uid_usage *row = x->rows[k];

		row->committed -= MIN(row->committed, 1u);
		usage_tag_committed(mr, u, x->ids[k], 1);
	}
	for (size_t k = 0; k < x->n; k++) {
		bool first = true;

		for (size_t j = 0; j < k; j++)
			first &= x->from[j] != x->from[k];
		if (first && region_tag_extents(mr->r, x->from[k]) == 0)
			usage_tag_freed(mr, x->rows[k], x->from[k], NULL, 0, 0);
	}
}

static int rpc_move_handler(struct rpc_call *call)
{
	const Pmemz__MoveReq *req = call->req->move;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__MoveResp mresp = PMEMZ__MOVE_RESP__INIT;
	_cleanup_free_ struct move_ctx *x = NULL;
	struct manager_region *mr;
	struct uid_usage *u;
	uint64_t added = 0;
	size_t bad = 0;
	int r;

	r = rpc_region(call, req->region, &mr);
	if (r < 0)
		return r;
	if (req->n_moves == 0 || req->n_moves > LAYOUT_MOVE_MAX)
		return rpc_fail(call, -EINVAL, "a MOVE takes 1..%u moves, not %zu", LAYOUT_MOVE_MAX,
				req->n_moves);
	x = calloc(1, sizeof(*x));
	if (!x)
		return rpc_fail(call, -ENOMEM, "out of memory");
	x->n = req->n_moves;
	for (size_t k = 0; k < x->n; k++) {
		const Pmemz__Move *m = req->moves[k];

		/* The media rules for names (new ones: layout_tag_name_new_valid), all -EINVAL. */
		if (!m->from_tag || !m->to_tag || strlen(m->from_tag) > RPC_TAG_MAX ||
		    strlen(m->to_tag) > RPC_TAG_MAX || layout_tag_name_valid(m->from_tag) < 0)
			return rpc_fail(call, -EINVAL, "move %zu: invalid tag name", k);
		if (layout_tag_name_new_valid(m->to_tag) < 0)
			return rpc_fail(call, -EINVAL,
					"move %zu: invalid new tag name: empty, longer than %u bytes, "
					"not UTF-8, or holds control or bidirectional formatting "
					"characters",
					k, LAYOUT_TAG_NAME_MAX);
		x->mv[k] = (struct region_move){m->from_tag, m->extent, m->to_tag};
	}
	r = usage_tenant(mr, call->c, &u);
	if (r < 0)
		return rpc_fail(call, r, "usage accounting: %s", strerror(-r));
	r = move_owners(call, mr, u, x, &added);
	if (r < 0)
		return r;
	if (added) {
		r = usage_check_tags_more(mr, u, added, call->msg, sizeof(call->msg));
		if (r < 0)
			return r;
	}
	r = region_move(mr->r, x->mv, x->n, call->c->uid, x->ids, &bad);
	if (r < 0)
		return move_failed(call, mr, x, r, bad);
	move_account(mr, u, x);
	log_debug("connection %" PRIu64 ": %zu extents moved to new tags (uid %u)",
		  call->c->serial, x->n, (unsigned)call->c->uid);
	mr->moves++;
	commit_request(call->m);

	mresp.moved = x->n;
	resp.op_case = PMEMZ__RESPONSE__OP_MOVE;
	resp.move = &mresp;
	return rpc_reply(call, &resp, -1, RPC_REPLY_COMMIT);
}

const struct rpc_descriptor rpc_move = {
    .name = "MOVE",
    .op = PMEMZ__REQUEST__OP_MOVE,
    .admin_only = false,
    .handler = rpc_move_handler,
};
