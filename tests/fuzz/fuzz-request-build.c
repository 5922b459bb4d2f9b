/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fuzz-request.h"
#include "fuzz.h"

const char *const fuzz_req_regions[4] = {"a", "b", "nope", ""};

/* Valid, duplicate-prone, too long for the tag table, with a control character. */
static const char *const tags[] = {
    "t0", "t1", "t2", "",
    "a-tag-name-that-is-far-too-long-for-the-tag-table-of-any-region-at-all",
    "bad\001name",
};

/*
 * MOVE: from tags[a->tag], extents from a->num >> 3 on, a->num & 7 moves
 * (0 is refused), 257 with FUZZ_REQ_F_FLUSH; duplicate extents or
 * to_tags, or to_tags that name existing tags, by flag.
 */
static void build_move(const struct fuzz_req_args *a, Pmemz__MoveReq *mr, char *region)
{
	static Pmemz__Move mv[FUZZ_REQ_MOVE_MAX];
	static Pmemz__Move *pv[FUZZ_REQ_MOVE_MAX];
	static char names[FUZZ_REQ_MOVE_MAX][8];
	size_t n = a->flags & FUZZ_REQ_F_FLUSH ? FUZZ_REQ_MOVE_MAX : a->num & 7u;
	size_t n_tags = sizeof(tags) / sizeof(tags[0]);

	for (size_t k = 0; k < n; k++) {
		pmemz__move__init(&mv[k]);
		(void)snprintf(names[k], sizeof(names[k]), "m%zu", k);
		mv[k].from_tag = fuzz_mut(tags[a->tag % n_tags]);
		mv[k].extent = (a->num >> 3) + (a->flags & FUZZ_REQ_F_NOWAIT ? 0 : k);
		mv[k].to_tag = a->flags & FUZZ_REQ_F_BY_TAG ? names[0] : names[k];
		if (a->flags & FUZZ_REQ_F_NO_REGION)
			mv[k].to_tag = fuzz_mut(tags[(a->tag + k) % n_tags]);
		pv[k] = &mv[k];
	}
	mr->region = region;
	mr->n_moves = n;
	mr->moves = pv;
}

size_t fuzz_req_build(const struct fuzz_req_args *a, Pmemz__Request *req, uint8_t *buf,
		      size_t cap)
{
	Pmemz__HelloReq hello = PMEMZ__HELLO_REQ__INIT;
	Pmemz__OpenRegionReq open = PMEMZ__OPEN_REGION_REQ__INIT;
	Pmemz__AllocateReq alloc = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__CommitReq commit = PMEMZ__COMMIT_REQ__INIT;
	Pmemz__FreeReq fr = PMEMZ__FREE_REQ__INIT;
	Pmemz__FlushReq flush = PMEMZ__FLUSH_REQ__INIT;
	Pmemz__ByteRange br = PMEMZ__BYTE_RANGE__INIT;
	Pmemz__ByteRange *brs[1] = {&br};
	Pmemz__ListReq list = PMEMZ__LIST_REQ__INIT;
	Pmemz__StatReq stat = PMEMZ__STAT_REQ__INIT;
	Pmemz__NoopReq noop = PMEMZ__NOOP_REQ__INIT;
	Pmemz__MapReq map = PMEMZ__MAP_REQ__INIT;
	Pmemz__ZeroerReq zeroer = PMEMZ__ZEROER_REQ__INIT;
	Pmemz__ClaimReq claim = PMEMZ__CLAIM_REQ__INIT;
	Pmemz__MoveReq move = PMEMZ__MOVE_REQ__INIT;
	char *region = fuzz_mut(fuzz_req_regions[a->region % 4]);
	char *tag = fuzz_mut(tags[a->tag % (sizeof(tags) / sizeof(tags[0]))]);
	static const uint8_t payload[64];
	size_t len;

	pmemz__request__init(req);
	req->version = a->flags & FUZZ_REQ_F_BAD_VERSION ? 2 : PMEMZ_PROTO_VERSION;
	req->id = a->num;
	switch (a->kind % FUZZ_REQ_N_KINDS) {
	case FUZZ_REQ_HELLO:
		hello.client_name = (char *)"fuzz";
		req->op_case = PMEMZ__REQUEST__OP_HELLO;
		req->hello = &hello;
		break;
	case FUZZ_REQ_OPEN_REGION:
		open.region = region;
		req->op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
		req->open_region = &open;
		break;
	case FUZZ_REQ_ALLOCATE:
		alloc.region = region;
		/* Extents of 4 KiB: 0 bytes, partial extents, more than a region has. */
		alloc.bytes = (uint64_t)a->num * 1024u;
		alloc.has_nowait = true;
		alloc.nowait = a->flags & FUZZ_REQ_F_NOWAIT;
		req->op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		req->allocate = &alloc;
		break;
	case FUZZ_REQ_COMMIT:
		commit.region = region;
		commit.lease = a->lease;
		commit.tag = tag;
		commit.has_flush_data = true;
		commit.flush_data = a->flags & FUZZ_REQ_F_FLUSH;
		req->op_case = PMEMZ__REQUEST__OP_COMMIT;
		req->commit = &commit;
		break;
	case FUZZ_REQ_FREE:
		fr.region = region;
		if (a->flags & FUZZ_REQ_F_BY_TAG) {
			fr.tag = tag;
		} else {
			fr.has_lease = true;
			fr.lease = a->lease;
		}
		if (a->flags & FUZZ_REQ_F_FLUSH) { /* both: refused */
			fr.tag = tag;
			fr.has_lease = true;
			fr.lease = a->lease;
		}
		req->op_case = PMEMZ__REQUEST__OP_FREE;
		req->free = &fr;
		break;
	case FUZZ_REQ_FLUSH:
		flush.region = region;
		br.offset = (uint64_t)a->tag * 4096u;
		br.length = (uint64_t)a->num * 512u;
		flush.n_ranges = a->flags & FUZZ_REQ_F_NO_REGION ? 0 : 1;
		flush.ranges = brs;
		flush.has_deep = true;
		flush.deep = a->flags & FUZZ_REQ_F_NOWAIT;
		req->op_case = PMEMZ__REQUEST__OP_FLUSH;
		req->flush = &flush;
		break;
	case FUZZ_REQ_LIST:
		list.region = region;
		list.tag = a->flags & FUZZ_REQ_F_NO_REGION ? NULL : tag;
		list.has_all_users = true;
		list.all_users = a->flags & FUZZ_REQ_F_NOWAIT;
		if (a->flags & FUZZ_REQ_F_FLUSH) { /* a page from slot num, names "t..." */
			list.prefix = (char *)"t";
			list.has_start_slot = true;
			list.start_slot = a->num;
			list.has_more_runs_ok = true;
			list.more_runs_ok = true;
		}
		req->op_case = PMEMZ__REQUEST__OP_LIST;
		req->list = &list;
		break;
	case FUZZ_REQ_STAT:
		stat.region = a->flags & FUZZ_REQ_F_NO_REGION ? NULL : region;
		req->op_case = PMEMZ__REQUEST__OP_STAT;
		req->stat = &stat;
		break;
	case FUZZ_REQ_NOOP:
		noop.has_payload = true;
		noop.payload.data = (uint8_t *)(uintptr_t)payload;
		noop.payload.len = a->num % sizeof(payload);
		req->op_case = PMEMZ__REQUEST__OP_NOOP;
		req->noop = &noop;
		break;
	case FUZZ_REQ_MAP:
		map.region = region;
		req->op_case = PMEMZ__REQUEST__OP_MAP;
		req->map = &map;
		break;
	case FUZZ_REQ_ZEROER:
		zeroer.region = region;
		zeroer.has_pause = a->flags & FUZZ_REQ_F_BY_TAG;
		zeroer.pause = a->flags & FUZZ_REQ_F_NOWAIT;
		zeroer.has_rate = a->flags & FUZZ_REQ_F_FLUSH;
		zeroer.rate = (uint64_t)a->num << 20;
		req->op_case = PMEMZ__REQUEST__OP_ZEROER;
		req->zeroer = &zeroer;
		break;
	case FUZZ_REQ_CLAIM:
		claim.region = region;
		claim.name = tag;
		claim.has_release = true;
		claim.release = a->flags & FUZZ_REQ_F_BY_TAG;
		req->op_case = PMEMZ__REQUEST__OP_CLAIM;
		req->claim = &claim;
		break;
	case FUZZ_REQ_MOVE:
		build_move(a, &move, region);
		req->op_case = PMEMZ__REQUEST__OP_MOVE;
		req->move = &move;
		break;
	}
	len = pmemz__request__get_packed_size(req);
	FUZZ_ASSERT(len <= cap);
	pmemz__request__pack(req, buf);
	return len;
}
