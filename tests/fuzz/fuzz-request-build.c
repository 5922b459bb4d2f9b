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

#define NUL_MARK "\x7fNUL"

/* Names with NUL_MARK appended, for one request (a MOVE's names are the most). */
struct nul_names {
	char buf[2 * FUZZ_REQ_MOVE_MAX + 4][96];
	size_t n;
};

/* s, with NUL_MARK appended when on. */
static char *name(struct nul_names *nn, const char *s, bool on)
{
	char *b;

	if (!on)
		return fuzz_mut(s);
	FUZZ_ASSERT(nn->n < sizeof(nn->buf) / sizeof(nn->buf[0]));
	b = nn->buf[nn->n++];
	(void)snprintf(b, sizeof(nn->buf[0]), "%s" NUL_MARK, s);
	return b;
}

/* Each NUL_MARK in the packed bytes gets its NUL; how many. */
static size_t put_nuls(uint8_t *buf, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i + strlen(NUL_MARK) <= len; i++)
		if (memcmp(buf + i, NUL_MARK, strlen(NUL_MARK)) == 0) {
			buf[i] = 0;
			n++;
		}
	return n;
}

/*
 * MOVE: from tags[a->tag], extents from a->num >> 3 on, a->num & 7 moves
 * (0 is refused), 257 with FUZZ_REQ_F_FLUSH; duplicate extents or
 * to_tags, or to_tags that name existing tags, by flag.
 */
static void build_move(const struct fuzz_req_args *a, Pmemz__MoveReq *mr, char *region,
		       struct nul_names *nn)
{
	static Pmemz__Move mv[FUZZ_REQ_MOVE_MAX];
	static Pmemz__Move *pv[FUZZ_REQ_MOVE_MAX];
	static char names[FUZZ_REQ_MOVE_MAX][8];
	size_t n = a->flags & FUZZ_REQ_F_FLUSH ? FUZZ_REQ_MOVE_MAX : a->num & 7u;
	size_t n_tags = sizeof(tags) / sizeof(tags[0]);
	bool nul = a->flags & FUZZ_REQ_F_NUL_NAME;

	for (size_t k = 0; k < n; k++) {
		const char *to;

		pmemz__move__init(&mv[k]);
		(void)snprintf(names[k], sizeof(names[k]), "m%zu", k);
		mv[k].from_tag = name(nn, tags[a->tag % n_tags], nul);
		mv[k].extent = (a->num >> 3) + (a->flags & FUZZ_REQ_F_NOWAIT ? 0 : k);
		to = a->flags & FUZZ_REQ_F_BY_TAG ? names[0] : names[k];
		if (a->flags & FUZZ_REQ_F_NO_REGION)
			to = tags[(a->tag + k) % n_tags];
		mv[k].to_tag = name(nn, to, nul);
		pv[k] = &mv[k];
	}
	mr->region = region;
	mr->n_moves = n;
	mr->moves = pv;
}

/* The sub-messages a request points into: one of them is used. */
struct msgs {
	Pmemz__HelloReq hello;
	Pmemz__OpenRegionReq open;
	Pmemz__AllocateReq alloc;
	Pmemz__CommitReq commit;
	Pmemz__FreeReq fr;
	Pmemz__FlushReq flush;
	Pmemz__ByteRange br;
	Pmemz__ByteRange *brs[1];
	Pmemz__ListReq list;
	Pmemz__StatReq stat;
	Pmemz__NoopReq noop;
	Pmemz__MapReq map;
	Pmemz__ZeroerReq zeroer;
	Pmemz__ClaimReq claim;
	Pmemz__MoveReq move;
	Pmemz__RunsReq runs;
	Pmemz__UsageReq usage;
};

/* The kinds that name a region at most (HELLO: a client name). */
static void build_plain(const struct fuzz_req_args *a, Pmemz__Request *req, struct msgs *m,
			char *region, bool nul)
{
	static const uint8_t payload[64];

	switch (a->kind % FUZZ_REQ_N_KINDS) {
	case FUZZ_REQ_HELLO:
		m->hello.client_name = nul ? region : (char *)"fuzz";
		req->op_case = PMEMZ__REQUEST__OP_HELLO;
		req->hello = &m->hello;
		break;
	case FUZZ_REQ_OPEN_REGION:
		m->open.region = region;
		req->op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
		req->open_region = &m->open;
		break;
	case FUZZ_REQ_ALLOCATE:
		m->alloc.region = region;
		/* Extents of 4 KiB: 0 bytes, partial extents, more than a region has. */
		m->alloc.bytes = (uint64_t)a->num * 1024u;
		m->alloc.has_nowait = true;
		m->alloc.nowait = a->flags & FUZZ_REQ_F_NOWAIT;
		req->op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		req->allocate = &m->alloc;
		break;
	case FUZZ_REQ_FLUSH:
		m->flush.region = region;
		m->br.offset = (uint64_t)a->tag * 4096u;
		m->br.length = (uint64_t)a->num * 512u;
		m->brs[0] = &m->br;
		m->flush.n_ranges = a->flags & FUZZ_REQ_F_NO_REGION ? 0 : 1;
		m->flush.ranges = m->brs;
		m->flush.has_deep = true;
		m->flush.deep = a->flags & FUZZ_REQ_F_NOWAIT;
		req->op_case = PMEMZ__REQUEST__OP_FLUSH;
		req->flush = &m->flush;
		break;
	case FUZZ_REQ_STAT:
		m->stat.region = a->flags & FUZZ_REQ_F_NO_REGION ? NULL : region;
		req->op_case = PMEMZ__REQUEST__OP_STAT;
		req->stat = &m->stat;
		break;
	case FUZZ_REQ_NOOP:
		m->noop.has_payload = true;
		m->noop.payload.data = (uint8_t *)(uintptr_t)payload;
		m->noop.payload.len = a->num % sizeof(payload);
		req->op_case = PMEMZ__REQUEST__OP_NOOP;
		req->noop = &m->noop;
		break;
	case FUZZ_REQ_MAP:
		m->map.region = region;
		req->op_case = PMEMZ__REQUEST__OP_MAP;
		req->map = &m->map;
		break;
	case FUZZ_REQ_ZEROER:
		m->zeroer.region = region;
		m->zeroer.has_pause = a->flags & FUZZ_REQ_F_BY_TAG;
		m->zeroer.pause = a->flags & FUZZ_REQ_F_NOWAIT;
		m->zeroer.has_rate = a->flags & FUZZ_REQ_F_FLUSH;
		m->zeroer.rate = (uint64_t)a->num << 20;
		req->op_case = PMEMZ__REQUEST__OP_ZEROER;
		req->zeroer = &m->zeroer;
		break;
	case FUZZ_REQ_USAGE:
		m->usage.region = region;
		req->op_case = PMEMZ__REQUEST__OP_USAGE;
		req->usage = &m->usage;
		break;
	}
}

/* The kinds that also name a tag, a claim or a prefix. */
static void build_named(const struct fuzz_req_args *a, Pmemz__Request *req, struct msgs *m,
			char *region, struct nul_names *nn)
{
	bool nul = a->flags & FUZZ_REQ_F_NUL_NAME;
	char *tag = name(nn, tags[a->tag % (sizeof(tags) / sizeof(tags[0]))], nul);

	switch (a->kind % FUZZ_REQ_N_KINDS) {
	case FUZZ_REQ_COMMIT:
		m->commit.region = region;
		m->commit.lease = a->lease;
		m->commit.tag = tag;
		m->commit.has_flush_data = true;
		m->commit.flush_data = a->flags & FUZZ_REQ_F_FLUSH;
		req->op_case = PMEMZ__REQUEST__OP_COMMIT;
		req->commit = &m->commit;
		break;
	case FUZZ_REQ_FREE:
		m->fr.region = region;
		m->fr.tag = a->flags & (FUZZ_REQ_F_BY_TAG | FUZZ_REQ_F_FLUSH) ? tag : NULL;
		/* FUZZ_REQ_F_FLUSH: both lease and tag, refused */
		m->fr.has_lease = !(a->flags & FUZZ_REQ_F_BY_TAG) || (a->flags & FUZZ_REQ_F_FLUSH);
		m->fr.lease = a->lease;
		req->op_case = PMEMZ__REQUEST__OP_FREE;
		req->free = &m->fr;
		break;
	case FUZZ_REQ_LIST:
		m->list.region = region;
		m->list.tag = a->flags & FUZZ_REQ_F_NO_REGION ? NULL : tag;
		m->list.has_all_users = true;
		m->list.all_users = a->flags & FUZZ_REQ_F_NOWAIT;
		if (a->flags & FUZZ_REQ_F_FLUSH) { /* a page from slot num, names "t..." */
			m->list.prefix = name(nn, "t", nul);
			m->list.has_start_slot = true;
			m->list.start_slot = a->num;
			m->list.has_more_runs_ok = true;
			m->list.more_runs_ok = true;
		}
		req->op_case = PMEMZ__REQUEST__OP_LIST;
		req->list = &m->list;
		break;
	case FUZZ_REQ_CLAIM:
		m->claim.region = region;
		m->claim.name = tag;
		m->claim.has_release = true;
		m->claim.release = a->flags & FUZZ_REQ_F_BY_TAG;
		req->op_case = PMEMZ__REQUEST__OP_CLAIM;
		req->claim = &m->claim;
		break;
	case FUZZ_REQ_MOVE:
		build_move(a, &m->move, region, nn);
		req->op_case = PMEMZ__REQUEST__OP_MOVE;
		req->move = &m->move;
		break;
	case FUZZ_REQ_RUNS:
		m->runs.region = region;
		m->runs.tag = a->flags & FUZZ_REQ_F_BY_TAG ? tag : NULL;
		m->runs.has_lease = !(a->flags & FUZZ_REQ_F_BY_TAG);
		m->runs.lease = a->lease;
		m->runs.start = a->num;
		req->op_case = PMEMZ__REQUEST__OP_RUNS;
		req->runs = &m->runs;
		break;
	default:
		build_plain(a, req, m, region, a->flags & FUZZ_REQ_F_NUL_REGION);
		break;
	}
}

size_t fuzz_req_build(const struct fuzz_req_args *a, Pmemz__Request *req, uint8_t *buf,
		      size_t cap)
{
	static struct nul_names nn;
	struct msgs m = {
	    .hello = PMEMZ__HELLO_REQ__INIT,   .open = PMEMZ__OPEN_REGION_REQ__INIT,
	    .alloc = PMEMZ__ALLOCATE_REQ__INIT, .commit = PMEMZ__COMMIT_REQ__INIT,
	    .fr = PMEMZ__FREE_REQ__INIT,	   .flush = PMEMZ__FLUSH_REQ__INIT,
	    .br = PMEMZ__BYTE_RANGE__INIT,	   .list = PMEMZ__LIST_REQ__INIT,
	    .stat = PMEMZ__STAT_REQ__INIT,	   .noop = PMEMZ__NOOP_REQ__INIT,
	    .map = PMEMZ__MAP_REQ__INIT,	   .zeroer = PMEMZ__ZEROER_REQ__INIT,
	    .claim = PMEMZ__CLAIM_REQ__INIT,   .move = PMEMZ__MOVE_REQ__INIT,
	    .runs = PMEMZ__RUNS_REQ__INIT,	   .usage = PMEMZ__USAGE_REQ__INIT,
	};
	size_t len;

	nn.n = 0;
	pmemz__request__init(req);
	req->version = a->flags & FUZZ_REQ_F_BAD_VERSION ? 2 : PMEMZ_PROTO_VERSION;
	req->id = a->num;
	build_named(a, req, &m, name(&nn, fuzz_req_regions[a->region % 4],
				     a->flags & FUZZ_REQ_F_NUL_REGION),
		    &nn);
	len = pmemz__request__get_packed_size(req);
	FUZZ_ASSERT(len <= cap);
	pmemz__request__pack(req, buf);
	/* A name with a NUL made it into the request: marked, packed again. */
	if (put_nuls(buf, len)) {
		req->id |= FUZZ_REQ_ID_NUL;
		len = pmemz__request__get_packed_size(req);
		FUZZ_ASSERT(len <= cap);
		pmemz__request__pack(req, buf);
		FUZZ_ASSERT(put_nuls(buf, len) > 0);
	}
	return len;
}
