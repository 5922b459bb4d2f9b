/* SPDX-License-Identifier: MIT */
/*
 * libpmemzclient without a daemon: argument checking, connection errors,
 * and the transport against a scripted fake daemon (a thread on a private
 * Unix socket) — HELLO version check, region mapping from a passed memfd,
 * extent address arithmetic, request contents, daemon error pass-through,
 * out-of-order and multi-threaded replies, fd routing, oversize and
 * undecodable frames; the region hooks the layers above region.c register.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "client-private.h"
#include "fake-daemon.h"
#include "libpmemzadmin.h"

/* ---- fake daemon ------------------------------------------------------ */

struct fake;
/* Answer one request (after HELLO); return -1 to close the connection. */
typedef int (*fake_handler)(struct fake *f, int cfd, Pmemz__Request *req);

struct fake {
	struct fake_listener l;
	pthread_t thread;
	uint32_t hello_version;
	bool hello_range; /* answer HELLO with the range below (a daemon since 1.0.0) */
	uint32_t hello_min, hello_max;
	/* the client's HELLO: its version and the range it stated */
	uint32_t req_version, req_min, req_max;
	bool req_range;
	fake_handler handler;
	/* what the handlers saw / use */
	Pmemz__Request **last; /* every request after HELLO, in order; freed at stop */
	size_t n_last, cap_last;
	int region_fd;
	uint64_t region_size, extent_size, extent_count, data_offset;
	void *priv;
};

static int srv_status(int cfd, uint64_t id, int status, const char *msg)
{
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;

	resp.id = id;
	resp.status = status;
	resp.message = (char *)(uintptr_t)msg;
	return fake_send_response(cfd, &resp, -1);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int cfd = accept4(f->l.fd, NULL, NULL, SOCK_CLOEXEC);
	Pmemz__Request *req;

	if (cfd < 0)
		return NULL;
	while ((req = fake_read_request(cfd))) {
		if (req->op_case == PMEMZ__REQUEST__OP_HELLO) {
			Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
			Pmemz__HelloResp h = PMEMZ__HELLO_RESP__INIT;

			f->req_version = req->version;
			f->req_range = req->hello && req->hello->has_min_version &&
				       req->hello->has_max_version;
			if (f->req_range) {
				f->req_min = req->hello->min_version;
				f->req_max = req->hello->max_version;
			}
			h.version = f->hello_version;
			h.has_min_version = h.has_max_version = f->hello_range;
			h.min_version = f->hello_min;
			h.max_version = f->hello_max;
			h.daemon_version = "fake-1";
			h.uid = 1000;
			h.gid = 1000;
			resp.id = req->id;
			resp.op_case = PMEMZ__RESPONSE__OP_HELLO;
			resp.hello = &h;
			pmemz__request__free_unpacked(req, NULL);
			if (fake_send_response(cfd, &resp, -1) < 0)
				break;
			continue;
		}
		if (f->n_last == f->cap_last) {
			f->cap_last = f->cap_last ? 2 * f->cap_last : 64;
			f->last = realloc(f->last, f->cap_last * sizeof(*f->last));
			if (!f->last)
				abort();
		}
		f->last[f->n_last++] = req;
		if (!f->handler || f->handler(f, cfd, req) < 0)
			break;
	}
	(void)close(cfd);
	return NULL;
}

static struct fake *fake_start(fake_handler handler)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->hello_version = PMEMZ_PROTO_VERSION;
	f->handler = handler;
	f->region_fd = -1;
	assert_int_equal(fake_listen(&f->l), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
	return f;
}

/* Call after the client is freed (the fake then sees EOF). */
static void fake_stop(struct fake *f)
{
	(void)shutdown(f->l.fd, SHUT_RDWR); /* wakes accept() if nobody connected */
	pthread_join(f->thread, NULL);
	for (size_t i = 0; i < f->n_last; i++)
		pmemz__request__free_unpacked(f->last[i], NULL);
	free(f->last);
	if (f->region_fd >= 0)
		(void)close(f->region_fd);
	fake_unlisten(&f->l);
	free(f);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	(void)closedir(d);
	return n - 1; /* the DIR's own fd */
}

/* ---- no daemon -------------------------------------------------------- */

static void test_connect_enoent(void **state)
{
	struct pmemz_client *c = (void *)1;

	assert_int_equal(pmemz_client_new("/nonexistent-pmemz/sock", &c), -ENOENT);
	assert_null(c);
	assert_non_null(strstr(pmemz_errormsg(), "cannot connect to /nonexistent-pmemz/sock"));
	assert_non_null(strstr(pmemz_errormsg(), "No such file or directory"));
}

static void test_connect_refused(void **state)
{
	char dir[] = "/tmp/pmemz-test-XXXXXX", path[128];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct pmemz_client *c;
	int fd;

	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/sock", dir);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0); /* not listening */
	assert_int_equal(pmemz_client_new(path, &c), -ECONNREFUSED);
	assert_non_null(strstr(pmemz_errormsg(), "Connection refused"));
	assert_non_null(strstr(pmemz_errormsg(), path));
	(void)close(fd);
	(void)unlink(path);
	(void)rmdir(dir);
}

static void test_socket_env(void **state)
{
	struct pmemz_client *c;

	assert_int_equal(setenv(PMEMZ_SOCKET_ENV, "/nonexistent-pmemz/env.sock", 1), 0);
	assert_int_equal(pmemz_client_new(NULL, &c), -ENOENT);
	assert_non_null(strstr(pmemz_errormsg(), "/nonexistent-pmemz/env.sock"));
	assert_int_equal(unsetenv(PMEMZ_SOCKET_ENV), 0);

	assert_int_equal(pmemz_client_new("", &c), -EINVAL);
	assert_int_equal(
	    pmemz_client_new("/tmp/a-socket-path-that-is-much-too-long-for-sockaddr_un-"
			     "because-it-goes-on-and-on-and-on-past-108-bytes/sock",
			     &c),
	    -ENAMETOOLONG);
}

static void test_invalid_args(void **state)
{
	struct pmemz_region *r = (void *)1;
	struct pmemz_alloc *a = (void *)1;
	size_t len = 42;
	char x;

	assert_int_equal(pmemz_client_new(NULL, NULL), -EINVAL);
	assert_string_not_equal(pmemz_errormsg(), "");
	assert_int_equal(pmemz_region_open(NULL, "r", &r), -EINVAL);
	assert_null(r);
	assert_non_null(strstr(pmemz_errormsg(), "client is NULL"));
	assert_int_equal(pmemz_region_open(NULL, "r", NULL), -EINVAL);
	assert_int_equal(pmemz_alloc_new(NULL, 4096, 0, &a), -EINVAL);
	assert_null(a);
	assert_int_equal(pmemz_alloc_new(NULL, 4096, 0, NULL), -EINVAL);
	assert_int_equal(pmemz_alloc_open(NULL, "t", &a), -EINVAL);
	assert_int_equal(pmemz_alloc_commit(NULL, "t", 0), -EINVAL);
	assert_int_equal(pmemz_alloc_release(NULL), -EINVAL);
	assert_int_equal(pmemz_persist(NULL, &x, 1), -EINVAL);
	assert_int_equal(pmemz_flush(NULL, &x, 1, 0), -EINVAL);
	assert_int_equal(pmemz_alloc_count(NULL), 0);
	assert_int_equal(pmemz_alloc_size(NULL), 0);
	assert_null(pmemz_alloc_range(NULL, 0, &len));
	assert_int_equal(len, 0);
	assert_null(pmemz_alloc_range(NULL, 0, NULL));
	assert_int_equal(pmemz_region_extent_size(NULL), 0);
	assert_int_equal(pmemz_region_size(NULL), 0);
	assert_null(pmemz_region_address(NULL));
	/* 1.3 */
	assert_int_equal(pmemz_region_claim(NULL, "n"), -EINVAL);
	assert_int_equal(pmemz_region_unclaim(NULL, "n"), -EINVAL);
	assert_int_equal(pmemz_tag_foreach(NULL, "", NULL, NULL), -EINVAL);
	assert_null(pmemz_alloc_tag(NULL));
	assert_int_equal(pmemz_memcpy(NULL, &x, &x, 1, 0), -EINVAL);
	pmemz_drain(NULL);
	pmemz_alloc_close(NULL);
	pmemz_region_close(NULL);
	pmemz_client_free(NULL);
}

/* The loaded library against what a program needs: the same major, at least the minor. */
static void test_check_version(void **state)
{
	char want[32];
	const char *why;

	(void)snprintf(want, sizeof(want), "%d.%d.%d", PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR,
		       PMEMZ_CLIENT_PATCH);
	assert_string_equal(pmemz_library_version(), want);
	assert_string_equal(pmemz_library_version(), PMEMZ_CLIENT_VERSION);

	assert_null(pmemz_check_version(PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR));
	assert_null(pmemz_check_version(PMEMZ_CLIENT_MAJOR, 0));

	why = pmemz_check_version(PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR + 1);
	assert_non_null(why);
	assert_ptr_equal(why, pmemz_errormsg());
	(void)snprintf(want, sizeof(want), "libpmemzclient %d.%d or a later", PMEMZ_CLIENT_MAJOR,
		       PMEMZ_CLIENT_MINOR + 1);
	assert_non_null(strstr(why, want));
	assert_non_null(strstr(why, PMEMZ_CLIENT_VERSION " is loaded"));

	why = pmemz_check_version(PMEMZ_CLIENT_MAJOR + 1, 0);
	assert_non_null(why);
	assert_non_null(strstr(why, "major version mismatch"));
	why = pmemz_check_version(PMEMZ_CLIENT_MAJOR - 1, PMEMZ_CLIENT_MINOR);
	assert_non_null(why);
	assert_non_null(strstr(why, "major version mismatch"));
}

/* ---- against the fake daemon ------------------------------------------ */

static void test_hello_version_mismatch(void **state)
{
	struct fake *f = fake_start(NULL);
	struct pmemz_client *c;

	f->hello_version = PMEMZ_PROTO_VERSION_MAX + 1;
	assert_int_equal(pmemz_client_new(f->l.path, &c), -EPROTO);
	assert_non_null(strstr(pmemz_errormsg(), "protocol version"));
	fake_stop(f);

	/* A version outside the range the daemon states itself. */
	f = fake_start(NULL);
	f->hello_range = true;
	f->hello_min = PMEMZ_PROTO_VERSION_MAX + 1;
	f->hello_max = PMEMZ_PROTO_VERSION_MAX + 5;
	f->hello_version = PMEMZ_PROTO_VERSION_MAX;
	assert_int_equal(pmemz_client_new(f->l.path, &c), -EPROTO);
	assert_non_null(strstr(pmemz_errormsg(), "picked protocol version"));
	fake_stop(f);
}

/*
 * HELLO goes out at the version every daemon accepts, stating the
 * library's range; the daemon's pick is the connection's version, and
 * every later request carries it.
 */
static void test_hello_version_range(void **state)
{
	struct fake *f = fake_start(NULL);
	struct pmemz_client *c;
	unsigned min = 0, max = 0;

	f->hello_range = true;
	f->hello_min = PMEMZ_PROTO_VERSION_MIN;
	f->hello_max = PMEMZ_PROTO_VERSION_MAX + 3;
	f->hello_version = PMEMZ_PROTO_VERSION_MAX;
	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	assert_int_equal(f->req_version, PMEMZ_PROTO_VERSION);
	assert_true(f->req_range);
	assert_int_equal(f->req_min, PMEMZ_PROTO_VERSION_MIN);
	assert_int_equal(f->req_max, PMEMZ_PROTO_VERSION_MAX);
	assert_int_equal(pmemz_client_protocol(c), PMEMZ_PROTO_VERSION_MAX);
	assert_int_equal(pmemz_client_protocol_range(c, &min, &max), 0);
	assert_int_equal(min, PMEMZ_PROTO_VERSION_MIN);
	assert_int_equal(max, PMEMZ_PROTO_VERSION_MAX + 3);
	assert_int_equal(pmemz_client_protocol_range(c, NULL, &max), -EINVAL);
	/* The fake hangs up after the first request it has no handler for, and keeps it. */
	assert_true(pmemz_admin_zeroer_pause(c, NULL, true) < 0);
	assert_int_equal(f->n_last, 1);
	assert_int_equal(f->last[0]->version, PMEMZ_PROTO_VERSION_MAX);
	pmemz_client_free(c);
	fake_stop(f);

	/* A daemon from before the ranges: version 1, no range (-ENODATA, nothing set). */
	f = fake_start(NULL);
	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	assert_int_equal(pmemz_client_protocol(c), 1);
	min = max = 42;
	assert_int_equal(pmemz_client_protocol_range(c, &min, &max), -ENODATA);
	assert_int_equal(min, 42);
	assert_int_equal(max, 42);
	pmemz_client_free(c);
	fake_stop(f);
}

/* A region of 8 MiB: 1 MiB of metadata, 6 extents of 1 MiB, 1 MiB slack. */
static int region_handler(struct fake *f, int cfd, Pmemz__Request *req)
{
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__Run r0 = PMEMZ__RUN__INIT, r1 = PMEMZ__RUN__INIT;
	Pmemz__Run *runs[2] = {&r0, &r1};
	uint8_t uuid[16] = {1, 2, 3};

	resp.id = req->id;
	resp.op_case = (Pmemz__Response__OpCase)req->op_case;
	switch (req->op_case) {
	case PMEMZ__REQUEST__OP_OPEN_REGION: {
		Pmemz__OpenRegionResp o = PMEMZ__OPEN_REGION_RESP__INIT;
		Pmemz__RegionInfo in = PMEMZ__REGION_INFO__INIT;

		if (strcmp(req->open_region->region, "r") != 0)
			return srv_status(cfd, req->id, -ENOENT, "no region 'nope'");
		in.name = "r";
		in.path = "/fake/r";
		in.size = f->region_size;
		in.extent_size = f->extent_size;
		in.extent_count = f->extent_count;
		in.data_offset = f->data_offset;
		in.uuid.data = uuid;
		in.uuid.len = sizeof(uuid);
		in.alignment = 4096;
		in.granularity = "page";
		o.info = &in;
		o.fd_follows = true;
		resp.open_region = &o;
		return fake_send_response(cfd, &resp, f->region_fd);
	}
	case PMEMZ__REQUEST__OP_ALLOCATE: {
		Pmemz__AllocateResp a = PMEMZ__ALLOCATE_RESP__INIT;

		if (req->allocate->bytes > 3 * f->extent_size)
			return srv_status(cfd, req->id, -ENOSPC, "region 'r' is full");
		r0.first = 2;
		r0.count = 2;
		r1.first = 5;
		r1.count = 1;
		a.lease = 77;
		a.n_runs = 2;
		a.runs = runs;
		resp.allocate = &a;
		return fake_send_response(cfd, &resp, -1);
	}
	case PMEMZ__REQUEST__OP_COMMIT: {
		Pmemz__CommitResp cm = PMEMZ__COMMIT_RESP__INIT;

		resp.commit = &cm;
		return fake_send_response(cfd, &resp, -1);
	}
	case PMEMZ__REQUEST__OP_FREE: {
		Pmemz__FreeResp fr = PMEMZ__FREE_RESP__INIT;

		fr.extents = 3;
		resp.free = &fr;
		return fake_send_response(cfd, &resp, -1);
	}
	case PMEMZ__REQUEST__OP_FLUSH: {
		Pmemz__FlushResp fl = PMEMZ__FLUSH_RESP__INIT;

		resp.flush = &fl;
		return fake_send_response(cfd, &resp, -1);
	}
	case PMEMZ__REQUEST__OP_LIST: {
		Pmemz__ListResp l = PMEMZ__LIST_RESP__INIT;
		Pmemz__TagInfo other = PMEMZ__TAG_INFO__INIT, t = PMEMZ__TAG_INFO__INIT;
		Pmemz__TagInfo *tags[2] = {&other, &t};

		r0.first = 5;
		r0.count = 1;
		r1.first = 2;
		r1.count = 2;
		other.name = "prefix-of-mine";
		other.uid = 1000;
		other.n_runs = 1;
		other.runs = runs;
		other.bytes = f->extent_size;
		t.name = "mine";
		t.uid = 1000;
		t.n_runs = 2;
		t.runs = runs;
		t.bytes = 3 * f->extent_size;
		l.n_tags = req->list->tag && strcmp(req->list->tag, "mine") == 0 ? 2 : 0;
		l.tags = tags;
		resp.list = &l;
		return fake_send_response(cfd, &resp, -1);
	}
	default:
		return srv_status(cfd, req->id, -EOPNOTSUPP, "not in the fake");
	}
}

static struct fake *region_fake(void)
{
	struct fake *f = fake_start(region_handler);

	f->extent_size = 1 << 20;
	f->extent_count = 6;
	f->data_offset = 1 << 20;
	f->region_size = 8 << 20;
	f->region_fd = memfd_create("pmemz-test-region", MFD_CLOEXEC);
	assert_true(f->region_fd >= 0);
	assert_int_equal(ftruncate(f->region_fd, (off_t)f->region_size), 0);
	return f;
}

static void test_region_and_alloc(void **state)
{
	struct fake *f = region_fake();
	struct pmemz_client *c;
	struct pmemz_region *r;
	struct pmemz_alloc *a;
	uint8_t *base, *p;
	size_t len;
	int fds;

	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	assert_string_equal(pmemz_client_hello(c)->daemon_version, "fake-1");

	assert_int_equal(pmemz_region_open(c, "nope", &r), -ENOENT);
	assert_string_equal(pmemz_errormsg(), "no region 'nope'"); /* passed through */

	fds = count_fds();
	assert_int_equal(pmemz_region_open(c, "r", &r), 0);
	assert_int_equal(count_fds(), fds); /* the region fd is closed after mapping */
	assert_int_equal(pmemz_region_extent_size(r), 1 << 20);
	assert_int_equal(pmemz_region_size(r), 8 << 20);
	base = pmemz_region_address(r);
	assert_non_null(base);

	/* arguments */
	assert_int_equal(pmemz_alloc_new(r, 0, 0, &a), -EINVAL);
	assert_int_equal(pmemz_alloc_new(r, 1, 0x80, &a), -EINVAL);
	assert_non_null(strstr(pmemz_errormsg(), "flags"));
	assert_int_equal(pmemz_alloc_new(r, 4 << 20, PMEMZ_ALLOC_NOWAIT, &a), -ENOSPC);
	assert_string_equal(pmemz_errormsg(), "region 'r' is full");
	assert_true(f->last[f->n_last - 1]->allocate->nowait);

	/* ALLOCATE: runs {2,2},{5,1} -> addresses from data_offset */
	assert_int_equal(pmemz_alloc_new(r, 3 << 20, 0, &a), 0);
	assert_false(f->last[f->n_last - 1]->allocate->nowait);
	assert_int_equal(pmemz_alloc_count(a), 2);
	assert_int_equal(pmemz_alloc_size(a), 3 << 20);
	p = pmemz_alloc_range(a, 0, &len);
	assert_ptr_equal(p, base + (1 << 20) + 2 * (1 << 20));
	assert_int_equal(len, 2 << 20);
	p = pmemz_alloc_range(a, 1, &len);
	assert_ptr_equal(p, base + (1 << 20) + 5 * (1 << 20));
	assert_int_equal(len, 1 << 20);
	len = 99;
	assert_null(pmemz_alloc_range(a, 2, &len));
	assert_int_equal(len, 0);
	assert_non_null(strstr(pmemz_errormsg(), "does not exist"));

	/* the mapping is shared with the daemon's fd */
	memset(p, 0xab, 4096);
	assert_int_equal(pmemz_persist(r, p, 4096), 0);
	assert_int_equal(pmemz_persist(r, base, 0), 0);
	assert_int_equal(pmemz_persist(r, base + (8 << 20) - 1, 2), -ERANGE);
	assert_int_equal(pmemz_persist(r, base - 1, 1), -ERANGE);
	assert_int_equal(pmemz_persist(r, (void *)UINTPTR_MAX, 2), -ERANGE);
	{
		uint8_t b;

		assert_int_equal(pread(f->region_fd, &b, 1, 6 << 20), 1);
		assert_int_equal(b, 0xab);
	}

	/* FLUSH carries region offsets */
	assert_int_equal(pmemz_flush(r, p + 100, 200, PMEMZ_FLUSH_DEEP), 0);
	{
		const Pmemz__FlushReq *fl = f->last[f->n_last - 1]->flush;

		assert_string_equal(fl->region, "r");
		assert_int_equal(fl->n_ranges, 1);
		assert_int_equal(fl->ranges[0]->offset, (6 << 20) + 100);
		assert_int_equal(fl->ranges[0]->length, 200);
		assert_true(fl->deep);
	}
	assert_int_equal(pmemz_flush(r, p, 1, 0x10), -EINVAL);
	assert_int_equal(pmemz_flush(r, base + (8 << 20), 1, 0), -ERANGE);

	/* COMMIT */
	assert_int_equal(pmemz_alloc_commit(a, "", 0), -EINVAL);
	assert_int_equal(pmemz_alloc_commit(a, NULL, 0), -EINVAL);
	assert_int_equal(pmemz_alloc_commit(a, "mine", 0x4), -EINVAL);
	assert_int_equal(pmemz_alloc_commit(a, "mine", PMEMZ_COMMIT_FLUSH), 0);
	{
		const Pmemz__CommitReq *cm = f->last[f->n_last - 1]->commit;

		assert_int_equal(cm->lease, 77);
		assert_string_equal(cm->tag, "mine");
		assert_true(cm->flush_data);
	}
	assert_int_equal(pmemz_alloc_commit(a, "again", 0), -EINVAL);
	assert_non_null(strstr(pmemz_errormsg(), "already committed"));
	pmemz_alloc_close(a); /* committed: no FREE */
	assert_int_equal(f->last[f->n_last - 1]->op_case, PMEMZ__REQUEST__OP_COMMIT);

	/* LIST finds the exact tag, not a similar one */
	assert_int_equal(pmemz_alloc_open(r, "missing", &a), -ENOENT);
	assert_non_null(strstr(pmemz_errormsg(), "missing"));
	assert_int_equal(pmemz_alloc_open(r, "mine", &a), 0);
	assert_string_equal(f->last[f->n_last - 1]->list->tag, "mine");
	assert_int_equal(pmemz_alloc_count(a), 2);
	assert_int_equal(pmemz_alloc_size(a), 3 << 20);
	assert_ptr_equal(pmemz_alloc_range(a, 0, &len), base + (6 << 20));
	assert_int_equal(len, 1 << 20);

	/* closing the region keeps the mapping while handles live */
	pmemz_region_close(r);
	assert_int_equal(((uint8_t *)pmemz_alloc_range(a, 0, &len))[0], 0xab);

	/* RELEASE of a tag */
	assert_int_equal(pmemz_alloc_release(a), 0);
	assert_string_equal(f->last[f->n_last - 1]->free->tag, "mine");
	assert_false(f->last[f->n_last - 1]->free->has_lease);

	/* an uncommitted lease is freed by close, by release too */
	assert_int_equal(pmemz_region_open(c, "r", &r), 0);
	assert_int_equal(pmemz_alloc_new(r, 1, 0, &a), 0);
	pmemz_alloc_close(a);
	assert_int_equal(f->last[f->n_last - 1]->op_case, PMEMZ__REQUEST__OP_FREE);
	assert_true(f->last[f->n_last - 1]->free->has_lease);
	assert_int_equal(f->last[f->n_last - 1]->free->lease, 77);
	assert_null(f->last[f->n_last - 1]->free->tag);
	assert_int_equal(pmemz_alloc_new(r, 1, 0, &a), 0);
	assert_int_equal(pmemz_alloc_release(a), 0);
	assert_int_equal(f->last[f->n_last - 1]->free->lease, 77);

	/* the client handle goes first: regions and allocations keep it alive */
	assert_int_equal(pmemz_alloc_new(r, 1, 0, &a), 0);
	pmemz_client_free(c);
	assert_int_equal(pmemz_alloc_commit(a, "late", 0), -ENOTCONN);
	pmemz_alloc_close(a);
	pmemz_region_close(r);
	fake_stop(f);
}

/* Answers NOOPs in batches of `batch`, last request first. */
struct batch {
	size_t batch;
	Pmemz__Request *held[64]; /* owned by f->last */
	size_t n;
	int fds[2]; /* for the OPEN_REGION answers */
};

static int noop_reverse_handler(struct fake *f, int cfd, Pmemz__Request *req)
{
	struct batch *b = f->priv;

	b->held[b->n++] = req;
	if (b->n < b->batch)
		return 0;
	while (b->n > 0) {
		Pmemz__Request *q = b->held[--b->n];
		Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
		Pmemz__NoopResp no = PMEMZ__NOOP_RESP__INIT;

		no.has_payload = q->noop->has_payload;
		no.payload = q->noop->payload;
		resp.id = q->id;
		resp.op_case = PMEMZ__RESPONSE__OP_NOOP;
		resp.noop = &no;
		if (fake_send_response(cfd, &resp, -1) < 0)
			return -1;
	}
	return 0;
}

static void submit_noop(struct pmemz_client *c, uint64_t v, struct pmemz_pending **t)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__NoopReq no = PMEMZ__NOOP_REQ__INIT;

	no.has_payload = true;
	no.payload.data = (uint8_t *)&v;
	no.payload.len = sizeof(v);
	req.op_case = PMEMZ__REQUEST__OP_NOOP;
	req.noop = &no;
	assert_int_equal(pmemz_client_submit(c, &req, t), 0);
}

static uint64_t noop_value(const Pmemz__Response *resp)
{
	uint64_t v;

	assert_int_equal(resp->op_case, PMEMZ__RESPONSE__OP_NOOP);
	assert_int_equal(resp->noop->payload.len, sizeof(v));
	memcpy(&v, resp->noop->payload.data, sizeof(v));
	return v;
}

static void test_out_of_order(void **state)
{
	struct batch b = {.batch = 4};
	struct fake *f = fake_start(noop_reverse_handler);
	struct pmemz_pending *t[4];
	struct pmemz_client *c;

	f->priv = &b;
	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	for (uint64_t i = 0; i < 4; i++)
		submit_noop(c, 100 + i, &t[i]);
	/* The responses come back 3, 2, 1, 0: wait for them in submit order. */
	for (uint64_t i = 0; i < 4; i++) {
		Pmemz__Response *resp;

		assert_int_equal(pmemz_client_wait(c, t[i], &resp, NULL), 0);
		assert_int_equal(noop_value(resp), 100 + i);
		pmemz_response_free(resp);
	}
	pmemz_client_free(c);
	fake_stop(f);
}

#define THREADS 8
#define CALLS 300

struct worker {
	struct pmemz_client *c;
	unsigned idx;
	int errors;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (uint64_t i = 0; i < CALLS; i++) {
		uint64_t v = (uint64_t)w->idx << 32 | i, got;
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__NoopReq no = PMEMZ__NOOP_REQ__INIT;
		Pmemz__Response *resp;

		no.has_payload = true;
		no.payload.data = (uint8_t *)&v;
		no.payload.len = sizeof(v);
		req.op_case = PMEMZ__REQUEST__OP_NOOP;
		req.noop = &no;
		if (pmemz_client_call(w->c, &req, &resp) < 0) {
			w->errors++;
			continue;
		}
		memcpy(&got, resp->noop->payload.data, sizeof(got));
		w->errors += got != v;
		pmemz_response_free(resp);
	}
	return NULL;
}

static void test_threads(void **state)
{
	/* Batches of THREADS, answered in reverse: every thread waits for the others. */
	struct batch b = {.batch = THREADS};
	struct fake *f = fake_start(noop_reverse_handler);
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct pmemz_client *c;

	f->priv = &b;
	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.c = c, .idx = i};
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].errors, 0);
	}
	pmemz_client_free(c);
	fake_stop(f);
}

/* Two OPEN_REGIONs pipelined, answered in reverse: each gets its own fd. */
static int two_regions_handler(struct fake *f, int cfd, Pmemz__Request *req)
{
	struct batch *b = f->priv;
	static const char *const names[] = {"a", "b"};

	b->held[b->n++] = req;
	if (b->n < 2)
		return 0;
	for (int i = 1; i >= 0; i--) {
		Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
		Pmemz__OpenRegionResp o = PMEMZ__OPEN_REGION_RESP__INIT;
		Pmemz__RegionInfo in = PMEMZ__REGION_INFO__INIT;
		uint64_t size = (uint64_t)(i + 1) << 20;
		in.name = (char *)(uintptr_t)names[i];
		in.path = "/fake";
		in.size = size;
		in.extent_size = 4096;
		in.extent_count = size / 4096;
		in.granularity = "page";
		o.info = &in;
		o.fd_follows = true;
		resp.id = b->held[i]->id;
		resp.op_case = PMEMZ__RESPONSE__OP_OPEN_REGION;
		resp.open_region = &o;
		if (fake_send_response(cfd, &resp, b->fds[i]) < 0)
			return -1;
	}
	b->n = 0;
	return 0;
}

static void test_fd_routing(void **state)
{
	struct batch b = {.batch = 2};
	struct fake *f = fake_start(two_regions_handler);
	struct pmemz_pending *t[2];
	struct pmemz_client *c;
	const char *names[] = {"a", "b"};
	int fds;

	f->priv = &b;
	for (int i = 0; i < 2; i++) {
		b.fds[i] = memfd_create(names[i], MFD_CLOEXEC);
		assert_true(b.fds[i] >= 0);
		assert_int_equal(ftruncate(b.fds[i], (off_t)(i + 1) << 20), 0);
	}
	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	fds = count_fds();
	for (int i = 0; i < 2; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__OpenRegionReq o = PMEMZ__OPEN_REGION_REQ__INIT;

		o.region = (char *)(uintptr_t)names[i];
		req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
		req.open_region = &o;
		assert_int_equal(pmemz_client_submit(c, &req, &t[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		Pmemz__Response *resp;
		int fd;

		assert_int_equal(pmemz_client_wait(c, t[i], &resp, &fd), 0);
		assert_true(fd >= 0);
		assert_string_equal(resp->open_region->info->name, names[i]);
		/* the fd is the one sent with this response: its size tells */
		assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)(i + 1) << 20);
		(void)close(fd);
		pmemz_response_free(resp);
	}
	assert_int_equal(count_fds(), fds);
	pmemz_client_free(c);
	fake_stop(f);
	(void)close(b.fds[0]);
	(void)close(b.fds[1]);
}

/* NOOP answered with an fd nobody asked for. */
static int stray_fd_handler(struct fake *f, int cfd, Pmemz__Request *req)
{
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__NoopResp no = PMEMZ__NOOP_RESP__INIT;

	/* f->region_fd is opened by the test before it counts fds (same process) */
	resp.id = req->id;
	resp.op_case = PMEMZ__RESPONSE__OP_NOOP;
	resp.noop = &no;
	return fake_send_response(cfd, &resp, f->region_fd);
}

static void test_stray_fd_closed(void **state)
{
	struct fake *f = fake_start(stray_fd_handler);
	struct pmemz_client *c;
	int fds;

	f->region_fd = memfd_create("stray", MFD_CLOEXEC);
	assert_true(f->region_fd >= 0);
	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	fds = count_fds();
	for (int i = 0; i < 5; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__NoopReq no = PMEMZ__NOOP_REQ__INIT;
		Pmemz__Response *resp;

		req.op_case = PMEMZ__REQUEST__OP_NOOP;
		req.noop = &no;
		assert_int_equal(pmemz_client_call(c, &req, &resp), 0);
		pmemz_response_free(resp);
	}
	assert_int_equal(count_fds(), fds);
	pmemz_client_free(c);
	fake_stop(f);
}

/* Bad frames: kind selected by f->priv. */
enum bad { BAD_OVERSIZE, BAD_GARBAGE, BAD_CLOSE, BAD_WRONG_KIND, BAD_STATUS };

static int bad_handler(struct fake *f, int cfd, Pmemz__Request *req)
{
	enum bad kind = *(enum bad *)f->priv;
	static const uint8_t oversize[] = {0x00, 0x00, 0x10, 0x00, 0x08}; /* 1 MiB */
	static const uint8_t garbage[] = {0x03, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff};

	switch (kind) {
	case BAD_OVERSIZE:
		return fake_send_raw(cfd, oversize, sizeof(oversize), -1);
	case BAD_GARBAGE:
		return fake_send_raw(cfd, garbage, sizeof(garbage), -1);
	case BAD_CLOSE:
		return -1;
	case BAD_WRONG_KIND: {
		Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
		Pmemz__FlushResp fl = PMEMZ__FLUSH_RESP__INIT;

		resp.id = req->id;
		resp.op_case = PMEMZ__RESPONSE__OP_FLUSH;
		resp.flush = &fl;
		return fake_send_response(cfd, &resp, -1);
	}
	case BAD_STATUS:
		return srv_status(cfd, req->id, 5, "positive status");
	}
	return -1;
}

static void check_bad(enum bad kind, int first_err, int later_err)
{
	struct fake *f = fake_start(bad_handler);
	struct pmemz_client *c;

	f->priv = &kind;
	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	for (int i = 0; i < 2; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__NoopReq no = PMEMZ__NOOP_REQ__INIT;
		Pmemz__Response *resp = (void *)1;

		req.op_case = PMEMZ__REQUEST__OP_NOOP;
		req.noop = &no;
		assert_int_equal(pmemz_client_call(c, &req, &resp), i == 0 ? first_err : later_err);
		assert_null(resp);
		assert_string_not_equal(pmemz_errormsg(), "");
	}
	pmemz_client_free(c);
	fake_stop(f);
}

static void test_bad_frames(void **state)
{
	check_bad(BAD_OVERSIZE, -EBADMSG, -ENOTCONN);
	check_bad(BAD_GARBAGE, -EBADMSG, -ENOTCONN);
	check_bad(BAD_CLOSE, -ECONNRESET, -ENOTCONN);
	/* a well-formed but wrong answer fails the call, not the connection */
	check_bad(BAD_WRONG_KIND, -EPROTO, -EPROTO);
	check_bad(BAD_STATUS, -EPROTO, -EPROTO);
}

/* ---- region hooks: how region.c reaches the layers above it ----------- */

static char hook_log[32];

static void hook_note(char what)
{
	size_t n = strlen(hook_log);

	if (n + 1 < sizeof(hook_log)) {
		hook_log[n] = what;
		hook_log[n + 1] = '\0';
	}
}

static int hook_a_reconnected(struct pmemz_region *r, int state)
{
	(void)r;
	hook_note(state == 0 ? 'A' : 'a');
	return 0;
}

static void hook_a_close(struct pmemz_region *r)
{
	(void)r;
	hook_note('c');
}

static void hook_a_release(struct pmemz_region *r)
{
	(void)r;
	hook_note('r');
}

static int hook_b_reconnected(struct pmemz_region *r, int state)
{
	(void)r;
	(void)state;
	hook_note('B');
	return pmemz_err(-EBUSY, "b lost a name");
}

static int hook_c_reconnected(struct pmemz_region *r, int state)
{
	(void)r;
	(void)state;
	hook_note('C');
	return pmemz_err(-EIO, "c failed too");
}

static const struct pmemz_region_hooks hooks_a = {
    .reconnected = hook_a_reconnected,
    .close = hook_a_close,
    .release = hook_a_release,
};
static const struct pmemz_region_hooks hooks_b = {.reconnected = hook_b_reconnected};
static const struct pmemz_region_hooks hooks_c = {.reconnected = hook_c_reconnected};

static void test_region_hooks(void **state)
{
	static const struct pmemz_region_hooks empty[PMEMZ_REGION_HOOKS_MAX];
	struct pmemz_reserve_stats st;
	struct fake *f = region_fake();
	struct pmemz_client *c;
	struct pmemz_region *r;
	struct pmemz_alloc *a;
	size_t n = 3;

	(void)state;
	assert_int_equal(pmemz_client_new(f->l.path, &c), 0);
	assert_int_equal(pmemz_region_open(c, "r", &r), 0);
	/* No reserve until the first pmemz_region_set_reserve: empty statistics. */
	memset(&st, 0xff, sizeof(st));
	pmemz_reserve_get_stats(r, &st);
	assert_int_equal(st.bytes + st.target + st.outstanding + st.hits + st.misses, 0);

	hook_log[0] = '\0';
	assert_int_equal(pmemz_region_add_hooks(r, &hooks_a), 0);
	assert_int_equal(pmemz_region_add_hooks(r, &hooks_a), 0); /* once */
	/* No layer failed: the caller's message (why re-opening failed) stays. */
	(void)pmemz_err(-ESTALE, "why re-opening failed");
	assert_int_equal(pmemz_region_reconnected(r, -ESTALE), 0);
	assert_string_equal(pmemz_errormsg(), "why re-opening failed");
	assert_string_equal(hook_log, "a");

	assert_int_equal(pmemz_region_add_hooks(r, &hooks_b), 0);
	assert_int_equal(pmemz_region_add_hooks(r, &hooks_c), 0);
	for (size_t i = 0; n < PMEMZ_REGION_HOOKS_MAX; i++, n++)
		assert_int_equal(pmemz_region_add_hooks(r, &empty[i]), 0);
	assert_int_equal(pmemz_region_add_hooks(r, &empty[PMEMZ_REGION_HOOKS_MAX - 1]), -ENOSPC);
	/* Every layer hears of it; the first failure is the one reported. */
	hook_log[0] = '\0';
	assert_int_equal(pmemz_region_reconnected(r, 0), -EBUSY);
	assert_string_equal(pmemz_errormsg(), "b lost a name");
	assert_string_equal(hook_log, "ABC");

	/* close runs the close hooks; release waits for the last reference. */
	assert_int_equal(pmemz_alloc_new(r, 1 << 20, 0, &a), 0);
	hook_log[0] = '\0';
	pmemz_region_close(r);
	assert_string_equal(hook_log, "c");
	pmemz_alloc_close(a);
	assert_string_equal(hook_log, "cr");

	pmemz_client_free(c);
	fake_stop(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_connect_enoent),
	    cmocka_unit_test(test_connect_refused),
	    cmocka_unit_test(test_socket_env),
	    cmocka_unit_test(test_invalid_args),
	    cmocka_unit_test(test_check_version),
	    cmocka_unit_test(test_hello_version_mismatch),
	    cmocka_unit_test(test_hello_version_range),
	    cmocka_unit_test(test_region_and_alloc),
	    cmocka_unit_test(test_region_hooks),
	    cmocka_unit_test(test_out_of_order),
	    cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_fd_routing),
	    cmocka_unit_test(test_stray_fd_closed),
	    cmocka_unit_test(test_bad_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
