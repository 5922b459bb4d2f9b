/* SPDX-License-Identifier: MIT */
/*
 * A hostile tenant puts a NUL inside the names of its requests.
 * protobuf-c ends a string at its first NUL and keeps no length, so the
 * daemon would read "t1\0x" as "t1": it must refuse every such request.
 *
 * A child running as uid 65534 (not an admin) holds a tag "t1", a second
 * lease and a claim, then sends every request that carries a string with
 * a NUL after a name that would be accepted, one field at a time: each is
 * refused with -EINVAL naming the field, on a connection that stays open.
 * Then nothing was allocated, committed, freed, moved or claimed (the
 * region's counters, the lease still committable, the claim still free,
 * "t1" still whole), and the daemon serves that connection and root.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define OTHER_UID 65534
#define N_CASES (sizeof(cases) / sizeof(cases[0]))
#define MARK "\x7fNUL" /* its first byte becomes the NUL once packed */

/* One string field of one request. */
struct nul_case {
	Pmemz__Request__OpCase op;
	const char *field; /* as the daemon's message names it */
};

static const struct nul_case cases[] = {
    {PMEMZ__REQUEST__OP_HELLO, "hello.client_name"},
    {PMEMZ__REQUEST__OP_OPEN_REGION, "open_region.region"},
    {PMEMZ__REQUEST__OP_ALLOCATE, "allocate.region"},
    {PMEMZ__REQUEST__OP_COMMIT, "commit.region"},
    {PMEMZ__REQUEST__OP_COMMIT, "commit.tag"},
    {PMEMZ__REQUEST__OP_FREE, "free.region"},
    {PMEMZ__REQUEST__OP_FREE, "free.tag"},
    {PMEMZ__REQUEST__OP_FLUSH, "flush.region"},
    {PMEMZ__REQUEST__OP_LIST, "list.region"},
    {PMEMZ__REQUEST__OP_LIST, "list.tag"},
    {PMEMZ__REQUEST__OP_LIST, "list.prefix"},
    {PMEMZ__REQUEST__OP_STAT, "stat.region"},
    {PMEMZ__REQUEST__OP_MAP, "map.region"},
    {PMEMZ__REQUEST__OP_ZEROER, "zeroer.region"},
    {PMEMZ__REQUEST__OP_USAGE, "usage.region"},
    {PMEMZ__REQUEST__OP_RUNS, "runs.region"},
    {PMEMZ__REQUEST__OP_RUNS, "runs.tag"},
    {PMEMZ__REQUEST__OP_CLAIM, "claim.region"},
    {PMEMZ__REQUEST__OP_CLAIM, "claim.name"},
    {PMEMZ__REQUEST__OP_MOVE, "move.region"},
    {PMEMZ__REQUEST__OP_MOVE, "move.moves.from_tag"},
    {PMEMZ__REQUEST__OP_MOVE, "move.moves.to_tag"},
};

/* What the tenant holds: the tag "t1" (its first extent), a lease. */
struct held {
	uint64_t t1_extent, lease, t1_offset;
};

/* Every sub-message a case may use, and the one marked name. */
struct msgs {
	Pmemz__HelloReq hello;
	Pmemz__OpenRegionReq open;
	Pmemz__AllocateReq alloc;
	Pmemz__CommitReq commit;
	Pmemz__FreeReq fr;
	Pmemz__FlushReq flush;
	Pmemz__ByteRange br, *brs[1];
	Pmemz__ListReq list;
	Pmemz__StatReq stat;
	Pmemz__MapReq map;
	Pmemz__ZeroerReq zeroer;
	Pmemz__UsageReq usage;
	Pmemz__RunsReq runs;
	Pmemz__ClaimReq claim;
	Pmemz__MoveReq move;
	Pmemz__Move mv, *mvs[1];
	char marked[64];
};

/* s, with MARK appended when field is the case's. */
static char *name(const struct nul_case *nc, struct msgs *m, const char *field, const char *s)
{
	if (strcmp(nc->field, field) != 0)
		return UNCONST(s);
	(void)snprintf(m->marked, sizeof(m->marked), "%s" MARK, s);
	return m->marked;
}

/* The requests that name the region only (HELLO: a client). */
static void build_plain(const struct nul_case *nc, struct msgs *m, const struct held *h,
			Pmemz__Request *req)
{
	switch (nc->op) {
	case PMEMZ__REQUEST__OP_HELLO:
		m->hello.client_name = name(nc, m, "hello.client_name", "tenant");
		req->hello = &m->hello;
		break;
	case PMEMZ__REQUEST__OP_OPEN_REGION:
		m->open.region = name(nc, m, "open_region.region", "r");
		req->open_region = &m->open;
		break;
	case PMEMZ__REQUEST__OP_ALLOCATE:
		m->alloc.region = name(nc, m, "allocate.region", "r");
		m->alloc.bytes = ITEST_MIB;
		m->alloc.has_nowait = true;
		m->alloc.nowait = true;
		req->allocate = &m->alloc;
		break;
	case PMEMZ__REQUEST__OP_FLUSH:
		m->flush.region = name(nc, m, "flush.region", "r");
		m->br.offset = h->t1_offset;
		m->br.length = 4096;
		m->brs[0] = &m->br;
		m->flush.ranges = m->brs;
		m->flush.n_ranges = 1;
		req->flush = &m->flush;
		break;
	case PMEMZ__REQUEST__OP_STAT:
		m->stat.region = name(nc, m, "stat.region", "r");
		req->stat = &m->stat;
		break;
	case PMEMZ__REQUEST__OP_MAP:
		m->map.region = name(nc, m, "map.region", "r");
		req->map = &m->map;
		break;
	case PMEMZ__REQUEST__OP_ZEROER:
		/* "" is every region: a NUL first would still pause them all */
		m->zeroer.region = name(nc, m, "zeroer.region", "");
		m->zeroer.has_pause = true;
		m->zeroer.pause = true;
		req->zeroer = &m->zeroer;
		break;
	default:
		m->usage.region = name(nc, m, "usage.region", "r");
		req->usage = &m->usage;
		break;
	}
}

/* Case nc's request: every name one the daemon would act on, the case's with a NUL. */
static void build(const struct nul_case *nc, struct msgs *m, const struct held *h,
		  Pmemz__Request *req)
{
	req->op_case = nc->op;
	switch (nc->op) {
	case PMEMZ__REQUEST__OP_COMMIT:
		m->commit.region = name(nc, m, "commit.region", "r");
		m->commit.lease = h->lease;
		m->commit.tag = name(nc, m, "commit.tag", "t2");
		req->commit = &m->commit;
		break;
	case PMEMZ__REQUEST__OP_FREE:
		m->fr.region = name(nc, m, "free.region", "r");
		m->fr.tag = name(nc, m, "free.tag", "t1");
		req->free = &m->fr;
		break;
	case PMEMZ__REQUEST__OP_LIST:
		m->list.region = name(nc, m, "list.region", "r");
		m->list.tag = strcmp(nc->field, "list.prefix") ? name(nc, m, "list.tag", "t1") : NULL;
		m->list.prefix = name(nc, m, "list.prefix", "t");
		req->list = &m->list;
		break;
	case PMEMZ__REQUEST__OP_RUNS:
		m->runs.region = name(nc, m, "runs.region", "r");
		m->runs.tag = name(nc, m, "runs.tag", "t1");
		req->runs = &m->runs;
		break;
	case PMEMZ__REQUEST__OP_CLAIM:
		m->claim.region = name(nc, m, "claim.region", "r");
		m->claim.name = name(nc, m, "claim.name", "c1");
		req->claim = &m->claim;
		break;
	case PMEMZ__REQUEST__OP_MOVE:
		m->move.region = name(nc, m, "move.region", "r");
		m->mv.from_tag = name(nc, m, "move.moves.from_tag", "t1");
		m->mv.extent = h->t1_extent;
		m->mv.to_tag = name(nc, m, "move.moves.to_tag", "m1");
		m->mvs[0] = &m->mv;
		m->move.moves = m->mvs;
		m->move.n_moves = 1;
		req->move = &m->move;
		break;
	default:
		build_plain(nc, m, h, req);
		break;
	}
}

/* ---- the tenant's side: a child, no cmocka ---- */

/*
 * Send req (its MARK turned into a NUL, there must be one unless nul is
 * false) and wait for its reply: the status, the message in msg, and
 * whether an fd came with it.
 */
static int child_call(int fd, Pmemz__Request *req, bool nul, char *msg, size_t msg_size,
		      Pmemz__Response **out)
{
	static uint64_t id = 100;
	Pmemz__Response *resp = NULL;
	uint8_t *frame = NULL;
	size_t len = 0, marks = 0;
	int r, passed = -1;

	req->version = PMEMZ_PROTO_VERSION;
	req->id = ++id;
	CHILD_CHECK(pmemz_frame_pack_request(req, &frame, &len) == 0, "pack");
	for (size_t i = 0; i + strlen(MARK) <= len; i++)
		if (memcmp(frame + i, MARK, strlen(MARK)) == 0) {
			frame[i] = 0;
			marks++;
		}
	CHILD_CHECK(marks == (nul ? 1u : 0u), "%zu NULs in op %d", marks, req->op_case);
	CHILD_CHECK(itest_raw_write(fd, frame, len) == 0, "send");
	free(frame);
	do {
		itest_resp_free(resp);
		resp = NULL;
		r = itest_raw_recv(fd, ITEST_RPC_TIMEOUT_MS, &resp, &passed);
		CHILD_CHECK(r == 0, "recv (op %d): %s", req->op_case, strerror(-r));
		if (passed >= 0)
			(void)close(passed);
	} while (resp->id != req->id);
	CHILD_CHECK(!nul || passed < 0, "a region fd came with a refused request");
	r = resp->status;
	(void)snprintf(msg, msg_size, "%s", resp->message ? resp->message : "");
	if (out)
		*out = resp;
	else
		itest_resp_free(resp);
	return r;
}

static int plain_call(int fd, Pmemz__Request *req, Pmemz__Response **out)
{
	char msg[256];
	int r = child_call(fd, req, false, msg, sizeof(msg), out);

	if (r)
		fprintf(stderr, "  op %d: %s (%s)\n", req->op_case, strerror(-r), msg);
	return r;
}

static int child_commit(int fd, uint64_t lease, const char *tag)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__CommitReq c = PMEMZ__COMMIT_REQ__INIT;

	c.region = UNCONST("r");
	c.lease = lease;
	c.tag = UNCONST(tag);
	req.op_case = PMEMZ__REQUEST__OP_COMMIT;
	req.commit = &c;
	return plain_call(fd, &req, NULL);
}

/* The region's counters that any accepted request of the cases would move. */
struct counts {
	uint64_t allocations, commits, frees, moves, leased, committed, tags;
};

static void child_counts(int fd, struct counts *c)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq s = PMEMZ__STAT_REQ__INIT;
	Pmemz__Response *resp = NULL;
	const Pmemz__RegionStat *rs;

	s.region = UNCONST("r");
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &s;
	CHILD_CHECK(plain_call(fd, &req, &resp) == 0, "STAT");
	CHILD_CHECK(resp->stat->n_regions == 1, "STAT: %zu regions", resp->stat->n_regions);
	rs = resp->stat->regions[0];
	*c = (struct counts){rs->allocations, rs->commits, rs->frees, rs->moves,
			     rs->leased,      rs->committed, rs->tags};
	itest_resp_free(resp);
}

/* uid 65534 takes "t1" (4 extents), a lease of 2 and the claim "c0". */
static void child_hold(int fd, struct held *h, const struct itest_stat *st)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__ClaimReq cl = PMEMZ__CLAIM_REQ__INIT;
	Pmemz__Response *resp = NULL;
	uint64_t lease;

	a.region = UNCONST("r");
	a.bytes = 4 * ITEST_MIB;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &a;
	CHILD_CHECK(plain_call(fd, &req, &resp) == 0, "ALLOCATE");
	lease = resp->allocate->lease;
	h->t1_extent = resp->allocate->runs[0]->first;
	h->t1_offset = st->data_offset + h->t1_extent * st->extent_size;
	itest_resp_free(resp);
	CHILD_CHECK(child_commit(fd, lease, "t1") == 0, "COMMIT t1");
	a.bytes = 2 * ITEST_MIB;
	CHILD_CHECK(plain_call(fd, &req, &resp) == 0, "ALLOCATE");
	h->lease = resp->allocate->lease;
	itest_resp_free(resp);
	cl.region = UNCONST("r");
	cl.name = UNCONST("c0");
	req = (Pmemz__Request)PMEMZ__REQUEST__INIT;
	req.op_case = PMEMZ__REQUEST__OP_CLAIM;
	req.claim = &cl;
	CHILD_CHECK(plain_call(fd, &req, NULL) == 0, "CLAIM c0");
}

/* Nothing the refused requests named was taken: the claim, the lease, the tag. */
static void child_check_untouched(const char *sock, int fd, const struct held *h)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ClaimReq cl = PMEMZ__CLAIM_REQ__INIT;
	Pmemz__FreeReq f = PMEMZ__FREE_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int other = itest_raw_connect(sock);

	CHILD_CHECK(other >= 0, "connect");
	/* "c1\0NUL" did not claim "c1": another connection of the uid gets it */
	cl.region = UNCONST("r");
	cl.name = UNCONST("c1");
	req.op_case = PMEMZ__REQUEST__OP_CLAIM;
	req.claim = &cl;
	CHILD_CHECK(plain_call(other, &req, NULL) == 0, "CLAIM c1 from another connection");
	(void)close(other);
	/* the lease was not committed as "t2" */
	CHILD_CHECK(child_commit(fd, h->lease, "t2") == 0, "COMMIT t2");
	/* "t1" was neither freed nor moved: all 4 extents free by its name */
	f.region = UNCONST("r");
	f.tag = UNCONST("t1");
	req = (Pmemz__Request)PMEMZ__REQUEST__INIT;
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &f;
	CHILD_CHECK(plain_call(fd, &req, &resp) == 0, "FREE t1");
	CHILD_CHECK(resp->free->extents == 4, "FREE t1: %llu extents",
		    (unsigned long long)resp->free->extents);
	itest_resp_free(resp);
}

static void child_tenant(const char *sock, const struct itest_stat *st)
{
	struct counts before, after;
	struct held h;
	int fd;

	CHILD_CHECK(setgid(OTHER_UID) == 0 && setuid(OTHER_UID) == 0, "setuid");
	fd = itest_raw_connect(sock);
	CHILD_CHECK(fd >= 0, "connect: %s", strerror(-fd));
	child_hold(fd, &h, st);
	child_counts(fd, &before);
	for (size_t i = 0; i < N_CASES; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		struct msgs m;
		char msg[256];
		int r;

		memset(&m, 0, sizeof(m));
		pmemz__hello_req__init(&m.hello);
		pmemz__open_region_req__init(&m.open);
		pmemz__allocate_req__init(&m.alloc);
		pmemz__commit_req__init(&m.commit);
		pmemz__free_req__init(&m.fr);
		pmemz__flush_req__init(&m.flush);
		pmemz__byte_range__init(&m.br);
		pmemz__list_req__init(&m.list);
		pmemz__stat_req__init(&m.stat);
		pmemz__map_req__init(&m.map);
		pmemz__zeroer_req__init(&m.zeroer);
		pmemz__usage_req__init(&m.usage);
		pmemz__runs_req__init(&m.runs);
		pmemz__claim_req__init(&m.claim);
		pmemz__move_req__init(&m.move);
		pmemz__move__init(&m.mv);
		build(&cases[i], &m, &h, &req);
		r = child_call(fd, &req, true, msg, sizeof(msg), NULL);
		fprintf(stderr, "  %s with a NUL: %d (%s)\n", cases[i].field, r, msg);
		CHILD_CHECK(r == -EINVAL, "%s: status %d (%s)", cases[i].field, r, msg);
		CHILD_CHECK(strstr(msg, cases[i].field) != NULL, "%s: message '%s'",
			    cases[i].field, msg);
	}
	child_counts(fd, &after);
	CHILD_CHECK(memcmp(&before, &after, sizeof(after)) == 0,
		    "counters moved: allocations %llu -> %llu, commits %llu -> %llu, frees %llu -> "
		    "%llu, moves %llu -> %llu, tags %llu -> %llu",
		    (unsigned long long)before.allocations, (unsigned long long)after.allocations,
		    (unsigned long long)before.commits, (unsigned long long)after.commits,
		    (unsigned long long)before.frees, (unsigned long long)after.frees,
		    (unsigned long long)before.moves, (unsigned long long)after.moves,
		    (unsigned long long)before.tags, (unsigned long long)after.tags);
	child_check_untouched(sock, fd, &h);
	(void)close(fd);
	_exit(0);
}

static void test_nul_in_every_name(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	pid_t pid;

	if (getuid() != 0) {
		print_message("SKIP: needs root to run the tenant as uid %d\n", OTHER_UID);
		skip();
	}
	itest_write_conf(e,
			 "[region r]\n"
			 "path = %s/r.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n"
			 "allow_users = %d\n",
			 e->dir, OTHER_UID);
	assert_int_equal(chmod(e->dir, 0711), 0); /* the socket, for the tenant */
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, "r", 60000, &st);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_tenant(e->sock, &st);
	itest_wait_child_ok(pid, 60000, "the tenant's requests with NULs in names");
	/* the zeroer was not paused: it zeroes what the tenant freed */
	itest_wait_zeroed(e->sock, "r", 60000, &st);
	/* root is served */
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, "r", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, ITEST_MIB, PMEMZ_ALLOC_NOWAIT, &a), 0);
	itest_assert_alloc_zero(r, a);
	assert_int_equal(pmemz_alloc_release(a), 0);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_stat(e->sock, "r", &st);
	itest_assert_accounting(&st, "after the NUL names");
	assert_int_equal(st.committed, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_nul_in_every_name, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
