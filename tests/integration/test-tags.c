/* SPDX-License-Identifier: MIT */
/*
 * pmemz_tag_foreach, pmemz_alloc_tag, pmemz_memcpy / pmemz_drain.
 *
 *  - 3000 tags (more than one LIST frame holds): the walk sees each of
 *    the caller's tags exactly once, with the handle pmemz_alloc_open
 *    would give (its runs, its data), filtered by a name prefix; tags of
 *    another uid are not seen; a non-zero return of the callback stops the
 *    walk and is returned.  A LIST without paging is still refused with
 *    -EMSGSIZE (old clients see no change); paged LIST pages chain.
 *  - pmemz_memcpy: the bytes land in the mapping (read back through a
 *    second client's own mapping after COMMIT), NODRAIN + pmemz_drain,
 *    -EFAULT outside the mapping, -EINVAL for unknown flags.
 */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "tags"
#define EXTENT 4096u
#define N_DISK 2000  /* "nbd/disk/<i>" */
#define N_OTHER 1000 /* "other/<i>" */
#define OTHER_UID 65534
#define OTHER_GID 65534

static int setup(void **state)
{
	struct itest_env *e;
	int r = itest_setup(state);

	if (r)
		return r;
	e = *state;
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/tags.img\n"
			 "size = 32M\n"
			 "extent_size = 4K\n"
			 "allow_users = root, %d\n",
			 e->dir, OTHER_UID);
	itest_daemon_start(e);
	return 0;
}

/* One extent with "name" in its first bytes, committed under name. */
static void commit_tag(struct pmemz_region *r, const char *name)
{
	struct pmemz_alloc *a;
	size_t len;
	void *p;

	CHECK_RC(pmemz_alloc_new(r, EXTENT, 0, &a), 0);
	assert_null(pmemz_alloc_tag(a)); /* a lease has no tag */
	p = pmemz_alloc_range(a, 0, &len);
	assert_non_null(p);
	CHECK_RC(pmemz_memcpy(r, p, name, strlen(name) + 1, 0), 0);
	CHECK_RC(pmemz_alloc_commit(a, name, 0), 0);
	assert_string_equal(pmemz_alloc_tag(a), name);
	pmemz_alloc_close(a);
}

struct walk {
	struct pmemz_region *r;
	uint8_t *seen_disk; /* per index */
	uint8_t *seen_other;
	size_t calls;
	size_t stop_after; /* 0: never */
	char bad[256];	   /* the first problem */
};

static void walk_bad(struct walk *w, const char *what, const char *tag)
{
	if (!w->bad[0])
		(void)snprintf(w->bad, sizeof(w->bad), "tag '%s': %s", tag, what);
}

static int walk_cb(struct pmemz_alloc *a, const char *tag, void *arg)
{
	struct walk *w = arg;
	const char *data;
	size_t len;
	char *end;
	long i;

	w->calls++;
	if (!tag || !pmemz_alloc_tag(a) || strcmp(tag, pmemz_alloc_tag(a)) != 0)
		walk_bad(w, "not the handle's", tag ? tag : "(null)");
	data = pmemz_alloc_range(a, 0, &len);
	if (pmemz_alloc_count(a) != 1 || len != EXTENT || pmemz_alloc_size(a) != EXTENT)
		walk_bad(w, "not one extent", tag);
	else if (strcmp(data, tag) != 0)
		walk_bad(w, "does not hold its name", tag);
	if (strncmp(tag, "nbd/disk/", 9) == 0) {
		i = strtol(tag + 9, &end, 10);
		if (*end || i < 0 || i >= N_DISK || w->seen_disk[i]++)
			walk_bad(w, "unknown or seen twice", tag);
	} else if (strncmp(tag, "other/", 6) == 0) {
		i = strtol(tag + 6, &end, 10);
		if (*end || i < 0 || i >= N_OTHER || w->seen_other[i]++)
			walk_bad(w, "unknown or seen twice", tag);
	} else {
		walk_bad(w, "not ours", tag);
	}
	pmemz_alloc_close(a);
	return w->stop_after && w->calls == w->stop_after ? 42 : 0;
}

static void walk_reset(struct walk *w)
{
	w->calls = 0;
	w->stop_after = 0;
	w->bad[0] = '\0';
	memset(w->seen_disk, 0, N_DISK);
	memset(w->seen_other, 0, N_OTHER);
}

static size_t count_set(const uint8_t *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += v[i] == 1;
	return k;
}

/* LIST over a raw connection: status, and next_slot / tag count of the reply. */
static int raw_list(int fd, const char *prefix, bool paged, uint64_t start, size_t *n_tags,
		    bool *has_next, uint64_t *next)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ListReq ls = PMEMZ__LIST_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int rc;

	ls.region = UNCONST(REGION);
	ls.prefix = UNCONST(prefix);
	ls.has_start_slot = paged;
	ls.start_slot = start;
	req.op_case = PMEMZ__REQUEST__OP_LIST;
	req.list = &ls;
	rc = itest_raw_call(fd, &req, &resp);
	if (rc == 0) {
		*n_tags = resp->list->n_tags;
		*has_next = resp->list->has_next_slot;
		*next = resp->list->next_slot;
	}
	itest_resp_free(resp);
	return rc;
}

/* Lines of text that contain needle. */
static size_t count_lines(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *l = text; l && *l;) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);
		const char *hit = strstr(l, needle);

		n += hit && hit < l + len;
		l = eol ? eol + 1 : NULL;
	}
	return n;
}

/* pmemzctl tags: every tag, over as many LIST pages as it takes. */
static void check_ctl_tags(const struct itest_env *e, bool all, size_t disk, size_t other)
{
	char *argv[] = {UNCONST(itest_ctl_path()),
			UNCONST("--socket"),
			UNCONST(e->sock),
			UNCONST("tags"),
			UNCONST(REGION),
			all ? UNCONST("--all") : NULL,
			NULL};
	char *out = NULL, *err = NULL;
	int status = itest_run(argv, 30000, &out, &err);

	if (status != 0)
		fail_msg("pmemzctl tags: status %d: %s", status, err ? err : "");
	assert_int_equal(count_lines(out, "nbd/disk/"), disk);
	assert_int_equal(count_lines(out, "other/"), other);
	free(out);
	free(err);
}

static void test_foreach(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c;
	struct pmemz_region *r;
	struct walk w = {0};
	char name[64];
	pid_t pid;

	CHECK_RC(pmemz_client_new(e->sock, &c), 0);
	CHECK_RC(pmemz_region_open(c, REGION, &r), 0);
	CHECK_RC(pmemz_region_set_reserve(r, 16 * EXTENT), 0);
	for (int i = 0; i < N_DISK; i++) {
		(void)snprintf(name, sizeof(name), "nbd/disk/%d", i);
		commit_tag(r, name);
		if (i % 2 == 0 && i < 2 * N_OTHER) { /* interleaved slots */
			(void)snprintf(name, sizeof(name), "other/%d", i / 2);
			commit_tag(r, name);
		}
	}

	/* A tag of another uid, with our prefix: not ours to see. */
	if (getuid() == 0) {
		assert_int_equal(chmod(e->dir, 0711), 0);
		assert_int_equal(chmod(e->sock, 0666), 0);
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct pmemz_client *oc;
			struct pmemz_region *orr;
			struct pmemz_alloc *a;
			int rc;

			CHILD_CHECK(setgroups(0, NULL) == 0 && setgid(OTHER_GID) == 0 &&
					setuid(OTHER_UID) == 0,
				    "drop privileges: %s", strerror(errno));
			rc = pmemz_client_new(e->sock, &oc);
			CHILD_CHECK(rc == 0, "connect: %s", pmemz_errormsg());
			rc = pmemz_region_open(oc, REGION, &orr);
			CHILD_CHECK(rc == 0, "open: %s", pmemz_errormsg());
			rc = pmemz_alloc_new(orr, EXTENT, 0, &a);
			CHILD_CHECK(rc == 0, "alloc: %s", pmemz_errormsg());
			rc = pmemz_alloc_commit(a, "nbd/disk/7", 0);
			CHILD_CHECK(rc == 0, "commit: %s", pmemz_errormsg());
			pmemz_alloc_close(a);
			pmemz_region_close(orr);
			pmemz_client_free(oc);
			_exit(0);
		}
		itest_wait_child_ok(pid, 30000, "uid 65534 client");
	}

	w.r = r;
	w.seen_disk = calloc(N_DISK, 1);
	w.seen_other = calloc(N_OTHER, 1);
	assert_non_null(w.seen_disk);
	assert_non_null(w.seen_other);

	/* Every tag, once. */
	CHECK_RC(pmemz_tag_foreach(r, NULL, walk_cb, &w), 0);
	if (w.bad[0])
		fail_msg("%s", w.bad);
	assert_int_equal(w.calls, N_DISK + N_OTHER);
	assert_int_equal(count_set(w.seen_disk, N_DISK), N_DISK);
	assert_int_equal(count_set(w.seen_other, N_OTHER), N_OTHER);

	/* A prefix. */
	walk_reset(&w);
	CHECK_RC(pmemz_tag_foreach(r, "nbd/disk/", walk_cb, &w), 0);
	if (w.bad[0])
		fail_msg("%s", w.bad);
	assert_int_equal(w.calls, N_DISK);
	assert_int_equal(count_set(w.seen_disk, N_DISK), N_DISK);
	assert_int_equal(count_set(w.seen_other, N_OTHER), 0);

	/* A narrower one: nbd/disk/1, 1x, 1xx, 1xxx */
	walk_reset(&w);
	CHECK_RC(pmemz_tag_foreach(r, "nbd/disk/1", walk_cb, &w), 0);
	if (w.bad[0])
		fail_msg("%s", w.bad);
	assert_int_equal(w.calls, 1 + 10 + 100 + 1000);
	walk_reset(&w);
	CHECK_RC(pmemz_tag_foreach(r, "no such prefix", walk_cb, &w), 0);
	assert_int_equal(w.calls, 0);

	/* The callback stops the walk. */
	walk_reset(&w);
	w.stop_after = 2500;
	CHECK_RC(pmemz_tag_foreach(r, "", walk_cb, &w), 42);
	assert_int_equal(w.calls, 2500);

	check_ctl_tags(e, false, N_DISK, N_OTHER);
	if (getuid() == 0)
		check_ctl_tags(e, true, N_DISK + 1, N_OTHER);

	/* The protocol: unpaged, refused as before; paged, pages that chain. */
	{
		int fd = itest_raw_connect(e->sock);
		size_t n = 0, total = 0, pages = 0;
		bool has_next = false;
		uint64_t start = 0, next = 0;

		assert_true(fd >= 0);
		assert_int_equal(raw_list(fd, "", false, 0, &n, &has_next, &next), -EMSGSIZE);
		assert_int_equal(raw_list(fd, "other/1", false, 0, &n, &has_next, &next), 0);
		assert_int_equal(n, 1 + 10 + 100);
		assert_false(has_next);
		do {
			assert_int_equal(raw_list(fd, "", true, start, &n, &has_next, &next), 0);
			total += n;
			pages++;
			if (has_next) {
				assert_true(next > start);
				start = next;
			}
		} while (has_next);
		assert_int_equal(total, N_DISK + N_OTHER);
		print_message("%zu tags in %zu pages\n", total, pages);
		assert_true(pages > 1);
		/* Past every slot: an empty last page. */
		assert_int_equal(raw_list(fd, "", true, UINT64_MAX, &n, &has_next, &next), 0);
		assert_int_equal(n, 0);
		assert_false(has_next);
		close(fd);
	}

	free(w.seen_disk);
	free(w.seen_other);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

static void test_memcpy(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c, *c2;
	struct pmemz_region *r, *r2;
	struct pmemz_alloc *a, *b;
	uint8_t *src, *p, *base;
	size_t len, size;

	CHECK_RC(pmemz_client_new(e->sock, &c), 0);
	CHECK_RC(pmemz_region_open(c, REGION, &r), 0);
	CHECK_RC(pmemz_alloc_new(r, 2 * EXTENT, 0, &a), 0);
	src = malloc(2 * EXTENT);
	assert_non_null(src);
	itest_fill_pattern(src, 2 * EXTENT, 99);

	/* Into the lease (1 or 2 runs), with and without the drain. */
	p = pmemz_alloc_range(a, 0, &len);
	assert_non_null(p);
	CHECK_RC(pmemz_memcpy(r, p, src, EXTENT, 0), 0);
	CHECK_RC(pmemz_memcpy(r, p + 100, src + 100, 1000, PMEMZ_MEM_NODRAIN), 0);
	pmemz_drain(r);
	if (pmemz_alloc_count(a) == 1) {
		CHECK_RC(pmemz_memcpy(r, p + EXTENT, src + EXTENT, EXTENT, PMEMZ_MEM_NODRAIN), 0);
	} else {
		uint8_t *q = pmemz_alloc_range(a, 1, &len);

		CHECK_RC(pmemz_memcpy(r, q, src + EXTENT, EXTENT, PMEMZ_MEM_NODRAIN), 0);
	}
	pmemz_drain(r);
	CHECK_RC(pmemz_memcpy(r, p, src, 0, 0), 0); /* nothing */
	assert_int_equal(memcmp(p, src, EXTENT), 0);

	/* Outside the mapping. */
	base = pmemz_region_address(r);
	size = pmemz_region_size(r);
	CHECK_RC(pmemz_memcpy(r, base + size - 10, src, 20, 0), -EFAULT);
	CHECK_RC(pmemz_memcpy(r, base - 1, src, 1, 0), -EFAULT);
	CHECK_RC(pmemz_memcpy(r, base + size, src, 1, 0), -EFAULT);
	CHECK_RC(pmemz_memcpy(r, p, src, SIZE_MAX, 0), -EFAULT);
	CHECK_RC(pmemz_memcpy(r, src, src, 1, 0), -EFAULT); /* heap memory */
	CHECK_RC(pmemz_memcpy(r, p, src, 1, 0x80), -EINVAL);
	CHECK_RC(pmemz_memcpy(NULL, p, src, 1, 0), -EINVAL);

	/* Another client's own mapping sees the committed bytes. */
	CHECK_RC(pmemz_alloc_commit(a, "copied", 0), 0);
	CHECK_RC(pmemz_client_new(e->sock, &c2), 0);
	CHECK_RC(pmemz_region_open(c2, REGION, &r2), 0);
	CHECK_RC(pmemz_alloc_open(r2, "copied", &b), 0);
	assert_string_equal(pmemz_alloc_tag(b), "copied");
	assert_int_equal(pmemz_alloc_size(b), 2 * EXTENT);
	{
		size_t off = 0;

		for (size_t i = 0; i < pmemz_alloc_count(b); i++) {
			uint8_t *q = pmemz_alloc_range(b, i, &len);

			assert_int_equal(memcmp(q, src + off, len), 0);
			off += len;
		}
		assert_int_equal(off, 2 * EXTENT);
	}
	pmemz_alloc_close(b);
	pmemz_region_close(r2);
	pmemz_client_free(c2);
	CHECK_RC(pmemz_alloc_release(a), 0);
	assert_null(pmemz_alloc_tag(NULL));
	free(src);
	pmemz_region_close(r);
	pmemz_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_foreach, setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_memcpy, setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
