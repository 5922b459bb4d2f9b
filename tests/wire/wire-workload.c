/* SPDX-License-Identifier: MIT */
/*
 * The client side of the recorded wire frames (tests/wire/README.md): one
 * connection that makes every kind of request libpmemzclient 1.0 to 1.6
 * makes, in a fixed order, each checked.  record-baseline.sh builds it
 * against the baseline commit's library and records its frames with that
 * daemon; test-wire-compat builds it against this tree's library and runs
 * it against those recorded replies.  So it uses no call newer than 1.6,
 * nothing whose requests depend on timing (no allocation reserve), and
 * takes the region fresh and zeroed, alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libpmemzadmin.h"
#include "libpmemzclient.h"
#include "wire-workload.h"

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		(void)fprintf(stderr, "wire-workload: " __VA_ARGS__);                              \
		(void)fprintf(stderr, " (%s)\n", pmemz_errormsg());                                \
		return -1;                                                                         \
	} while (0)
#define RUN(call)                                                                                  \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ < 0)                                                                       \
			FAIL("%s = %d", #call, rc_);                                               \
	} while (0)

static void fill(struct pmemz_alloc *a, unsigned seed)
{
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		unsigned char *p = pmemz_alloc_range(a, i, &len);

		for (size_t j = 0; j < len; j += 4096)
			p[j] = (unsigned char)(seed + i + j / 4096);
	}
}

static int same(const struct pmemz_alloc *a, unsigned seed)
{
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		const unsigned char *p = pmemz_alloc_range(a, i, &len);

		for (size_t j = 0; j < len; j += 4096)
			if (p[j] != (unsigned char)(seed + i + j / 4096))
				return 0;
	}
	return 1;
}

static int count_tag(struct pmemz_alloc *a, const char *tag, void *arg)
{
	(void)tag;
	++*(int *)arg;
	pmemz_alloc_close(a);
	return 0;
}

/* Tags: lease, flush, commit, open, walk, claim, batch (commit + move), free. */
static int tags(struct pmemz_region *r, size_t ext)
{
	struct pmemz_alloc *a, *b, *moved = NULL;
	struct pmemz_batch *batch;
	size_t len;
	void *p;
	int n = 0;

	RUN(pmemz_alloc_new(r, 2 * ext, 0, &a));
	fill(a, 7);
	p = pmemz_alloc_range(a, 0, &len);
	RUN(pmemz_persist(r, p, len));
	RUN(pmemz_flush(r, p, len, 0));
	RUN(pmemz_alloc_commit(a, "wire-a", PMEMZ_COMMIT_FLUSH));
	pmemz_alloc_close(a);
	RUN(pmemz_alloc_open(r, "wire-a", &a));
	if (pmemz_alloc_size(a) != 2 * ext || !same(a, 7))
		FAIL("tag wire-a came back with %zu bytes, or other data", pmemz_alloc_size(a));
	RUN(pmemz_tag_foreach(r, "wire-", count_tag, &n));
	if (n != 1)
		FAIL("%d tags under wire-, want 1", n);
	RUN(pmemz_region_claim(r, "wire-claim"));
	RUN(pmemz_region_unclaim(r, "wire-claim"));

	RUN(pmemz_alloc_new(r, ext, PMEMZ_ALLOC_DIRECT, &b));
	RUN(pmemz_batch_new(r, &batch));
	RUN(pmemz_batch_commit(batch, b, "wire-b", 0));
	RUN(pmemz_batch_move(batch, a, pmemz_alloc_range(a, 0, NULL), "wire-c", &moved));
	RUN(pmemz_batch_wait(batch));
	pmemz_batch_free(batch);
	if (!moved || pmemz_alloc_size(moved) != ext || pmemz_alloc_size(a) != ext)
		FAIL("the move left %zu bytes in wire-a", pmemz_alloc_size(a));
	RUN(pmemz_alloc_release(moved));
	RUN(pmemz_alloc_release(b));
	RUN(pmemz_alloc_release(a));

	/* A lease given back uncommitted (FREE of the lease). */
	RUN(pmemz_alloc_new(r, ext, PMEMZ_ALLOC_NOWAIT, &a));
	pmemz_alloc_close(a);
	return 0;
}

/* The admin and status requests of libpmemzadmin.h (the workload runs as an admin). */
static int admin(struct pmemz_client *c, const char *region, size_t extents)
{
	struct pmemz_stat *s;
	struct pmemz_usage *u;
	struct pmemz_taglist *l;
	struct pmemz_map *m;
	struct pmemz_clients *cl;

	if (!pmemz_client_is_admin(c))
		FAIL("not an admin of the daemon (uid %u)", pmemz_client_uid(c));
	RUN(pmemz_admin_stat(c, NULL, &s));
	if (pmemz_stat_regions(s) != 1)
		FAIL("STAT has %zu regions, want 1", pmemz_stat_regions(s));
	pmemz_stat_free(s);
	RUN(pmemz_admin_usage(c, region, &u));
	pmemz_usage_free(u);
	RUN(pmemz_admin_list(c, region, NULL, PMEMZ_LIST_ALL_USERS, &l));
	if (pmemz_taglist_count(l) != 0)
		FAIL("%zu tags left, want none", pmemz_taglist_count(l));
	pmemz_taglist_free(l);
	RUN(pmemz_admin_map(c, region, &m));
	if (pmemz_map_extents(m) != extents)
		FAIL("MAP has %llu extents, want %zu", (unsigned long long)pmemz_map_extents(m),
		     extents);
	pmemz_map_free(m);
	RUN(pmemz_admin_clients(c, &cl));
	pmemz_clients_free(cl);
	RUN(pmemz_admin_zeroer_pause(c, region, true));
	RUN(pmemz_admin_zeroer_pause(c, region, false));
	return 0;
}

int wire_workload(const char *socket_path, const char *region)
{
	struct pmemz_client *c;
	struct pmemz_region *r;
	int ret;

	RUN(pmemz_client_new(socket_path, &c));
	ret = pmemz_region_open(c, region, &r);
	if (ret < 0) {
		pmemz_client_free(c);
		FAIL("pmemz_region_open(%s) = %d", region, ret);
	}
	ret = tags(r, pmemz_region_extent_size(r));
	if (ret == 0)
		ret = admin(c, region, pmemz_region_extent_count(r));
	pmemz_region_close(r);
	pmemz_client_free(c);
	return ret;
}

#ifdef WIRE_WORKLOAD_MAIN
int main(int argc, char **argv)
{
	if (argc != 3) {
		(void)fprintf(stderr, "usage: wire-workload SOCKET REGION\n");
		return 2;
	}
	return wire_workload(argv[1], argv[2]) == 0 ? 0 : 1;
}
#endif
