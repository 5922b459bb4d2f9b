/* SPDX-License-Identifier: MIT */
/*
 * Integration test 6: robustness of the daemon's socket and RPC handlers.
 * Raw clients send an oversized frame, garbage, an empty frame, a wrong
 * protocol version, a request without an operation, half a frame; the daemon
 * answers with an error or closes that connection and keeps serving everybody
 * else.  Bad inputs through the library and raw frames get exact errors.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "libpmemzclient.h"

#define REGION "rb"
#define MIB ITEST_MIB

static void write_conf(struct itest_env *e)
{
	itest_write_conf(e,
			 "[region " REGION "]\n"
			 "path = %s/rb.img\n"
			 "size = 32M\n"
			 "extent_size = 1M\n",
			 e->dir);
}

/* A well-behaved client still works: HELLO, NOOP, STAT, and a library allocation. */
static void assert_serving(struct itest_env *e, struct pmemz_region *r, const char *after)
{
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	int fd = itest_raw_connect(e->sock);
	int rc;

	if (fd < 0)
		fail_msg("[%s] new connection refused: %s", after, strerror(-fd));
	assert_int_equal(itest_raw_hello(fd, NULL), 0);
	close(fd);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, after);
	rc = pmemz_alloc_new(r, MIB, 0, &a);
	if (rc)
		fail_msg("[%s] existing library connection broken: %s (%s)", after, strerror(-rc),
			 pmemz_errormsg());
	itest_assert_alloc_zero(r, a);
	assert_int_equal(pmemz_alloc_release(a), 0);
}

/* Send raw bytes; the daemon must answer with an error or close, within 5 s. */
static void bad_bytes(struct itest_env *e, struct pmemz_region *r, const char *what,
		      const void *buf, size_t len, bool must_close)
{
	int fd = itest_raw_connect(e->sock);
	int n_resp = 0, first = 0, wr;
	bool closed;

	assert_true(fd >= 0);
	wr = itest_raw_write(fd, buf, len);
	/* the daemon may close before it read everything: EPIPE/ECONNRESET are fine */
	if (wr && wr != -EPIPE && wr != -ECONNRESET)
		fail_msg("[%s] write: %s", what, strerror(-wr));
	closed = itest_raw_wait_closed(fd, 5000, &n_resp, &first);
	print_message("[%s] daemon %s the connection after %d response(s)%s%s\n", what,
		      closed ? "closed" : "kept", n_resp, n_resp ? ", first status " : "",
		      n_resp ? strerror(-first) : "");
	if (n_resp && first >= 0)
		fail_msg("[%s] answered with status %d, want an error", what, first);
	if (must_close && !closed)
		fail_msg("[%s] connection still open after 5 s", what);
	if (!closed && n_resp == 0)
		fail_msg("[%s] neither an error answer nor a close within 5 s", what);
	close(fd);
	assert_serving(e, r, what);
}

static void put_le32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static void test_bad_frames(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	uint8_t *big;
	int half;

	write_conf(e);
	itest_daemon_start(e);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);

	/* a client that sends half a header and then nothing: must not block anybody */
	half = itest_raw_connect(e->sock);
	assert_true(half >= 0);
	assert_int_equal(itest_raw_write(half, "\x10\x00", 2), 0);
	assert_serving(e, r, "half a frame header pending");

	/* header announcing 64 KiB + 1, followed by that much data */
	big = malloc(PMEMZ_FRAME_HDR + PMEMZ_FRAME_MAX + 1);
	assert_non_null(big);
	memset(big, 0x08, PMEMZ_FRAME_HDR + PMEMZ_FRAME_MAX + 1);
	put_le32(big, PMEMZ_FRAME_MAX + 1);
	bad_bytes(e, r, "frame of 64 KiB + 1", big, PMEMZ_FRAME_HDR + PMEMZ_FRAME_MAX + 1, true);
	/* a header announcing 4 GiB - 1 and nothing else */
	put_le32(big, UINT32_MAX);
	bad_bytes(e, r, "frame of 4 GiB - 1 (header only)", big, PMEMZ_FRAME_HDR, true);
	free(big);

	{
		static const uint8_t zero_len[] = {0, 0, 0, 0};

		bad_bytes(e, r, "empty frame", zero_len, sizeof(zero_len), true);
	}
	{
		/* 16 bytes that are not protobuf (wire type 7 does not exist) */
		uint8_t garbage[PMEMZ_FRAME_HDR + 16];

		memset(garbage, 0xff, sizeof(garbage));
		put_le32(garbage, 16);
		bad_bytes(e, r, "garbage payload", garbage, sizeof(garbage), false);
	}
	{
		/* 4 KiB of random bytes without any framing */
		uint8_t junk[4096];
		uint64_t x = 0x1234567;

		for (size_t i = 0; i < sizeof(junk); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			junk[i] = (uint8_t)x;
		}
		bad_bytes(e, r, "random bytes", junk, sizeof(junk), false);
	}
	{
		/* valid protobuf, missing the required id: unpack fails */
		uint8_t frame[PMEMZ_FRAME_HDR + 2] = {0, 0, 0, 0, 0x08, 0x01};

		put_le32(frame, 2);
		bad_bytes(e, r, "request without its required id", frame, sizeof(frame), false);
	}
	{
		/* wrong protocol version: an error answer (with our id) or a close */
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__HelloReq h = PMEMZ__HELLO_REQ__INIT;
		uint8_t *frame;
		size_t len;

		req.version = 999;
		req.id = 77;
		req.op_case = PMEMZ__REQUEST__OP_HELLO;
		req.hello = &h;
		assert_int_equal(pmemz_frame_pack_request(&req, &frame, &len), 0);
		bad_bytes(e, r, "protocol version 999", frame, len, false);
		free(frame);

		req.version = 0;
		assert_int_equal(pmemz_frame_pack_request(&req, &frame, &len), 0);
		bad_bytes(e, r, "protocol version 0", frame, len, false);
		free(frame);
	}
	{
		/* no operation set */
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__Response *resp = NULL;
		int fd = itest_raw_connect(e->sock);
		int rc;

		assert_true(fd >= 0);
		req.version = PMEMZ_PROTO_VERSION;
		req.id = 78;
		assert_int_equal(itest_raw_send(fd, &req), 0);
		rc = itest_raw_recv(fd, 5000, &resp, NULL);
		if (rc == 0) {
			print_message("[no operation] status %d (%s)\n", resp->status,
				      resp->message ? resp->message : "");
			assert_int_equal(resp->id, 78);
			assert_true(resp->status < 0);
			itest_resp_free(resp);
		} else {
			print_message("[no operation] connection closed (%s)\n", strerror(-rc));
			assert_int_equal(rc, -ECONNRESET);
		}
		close(fd);
		assert_serving(e, r, "no operation");
	}

	/* the half-frame client is still connected and harmless; finish it now */
	assert_int_equal(itest_raw_write(half, "\x00\x00", 2), 0); /* a 16-byte frame... */
	close(half);						   /* ...cut short */
	assert_serving(e, r, "half frame closed");

	/* pipelining: three NOOPs in one write, three answers with their ids */
	{
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__NoopReq no = PMEMZ__NOOP_REQ__INIT;
		uint8_t payload[100];
		uint8_t *frames = NULL, *f;
		size_t total = 0, len;
		bool seen[3] = {false, false, false};
		int fd = itest_raw_connect(e->sock);

		assert_true(fd >= 0);
		memset(payload, 0x5a, sizeof(payload));
		no.has_payload = true;
		no.payload.data = payload;
		no.payload.len = sizeof(payload);
		req.version = PMEMZ_PROTO_VERSION;
		req.op_case = PMEMZ__REQUEST__OP_NOOP;
		req.noop = &no;
		for (int i = 0; i < 3; i++) {
			req.id = 900 + (uint64_t)i;
			assert_int_equal(pmemz_frame_pack_request(&req, &f, &len), 0);
			frames = realloc(frames, total + len);
			memcpy(frames + total, f, len);
			total += len;
			free(f);
		}
		assert_int_equal(itest_raw_write(fd, frames, total), 0);
		free(frames);
		for (int i = 0; i < 3; i++) {
			Pmemz__Response *resp = NULL;

			assert_int_equal(itest_raw_recv(fd, 5000, &resp, NULL), 0);
			assert_int_equal(resp->status, 0);
			assert_true(resp->id >= 900 && resp->id < 903);
			assert_false(seen[resp->id - 900]);
			seen[resp->id - 900] = true;
			assert_int_equal(resp->op_case, PMEMZ__RESPONSE__OP_NOOP);
			if (resp->noop->has_payload) {
				assert_int_equal(resp->noop->payload.len, sizeof(payload));
				assert_memory_equal(resp->noop->payload.data, payload,
						    sizeof(payload));
			}
			itest_resp_free(resp);
		}
		close(fd);
	}

	/* a NOOP as large as a frame may be (just under the cap) is fine */
	{
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__NoopReq no = PMEMZ__NOOP_REQ__INIT;
		size_t plen = PMEMZ_FRAME_MAX - 64;
		uint8_t *payload = malloc(plen);
		int fd = itest_raw_connect(e->sock);
		int rc;

		assert_non_null(payload);
		memset(payload, 0x11, plen);
		no.has_payload = true;
		no.payload.data = payload;
		no.payload.len = plen;
		req.op_case = PMEMZ__REQUEST__OP_NOOP;
		req.noop = &no;
		rc = itest_raw_call(fd, &req, NULL);
		assert_int_equal(rc, 0);
		free(payload);
		close(fd);
	}

	/* many connections at once */
	{
		int fds[64];

		for (int i = 0; i < 64; i++) {
			fds[i] = itest_raw_connect(e->sock);
			assert_true(fds[i] >= 0);
		}
		for (int i = 0; i < 64; i += 7)
			assert_int_equal(itest_raw_hello(fds[i], NULL), 0);
		for (int i = 0; i < 64; i++)
			close(fds[i]);
	}
	assert_serving(e, r, "after everything");
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

static int raw_free(int fd, bool has_lease, uint64_t lease, const char *tag)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FreeReq f = PMEMZ__FREE_REQ__INIT;

	f.region = REGION;
	f.has_lease = has_lease;
	f.lease = lease;
	f.tag = UNCONST(tag);
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &f;
	return itest_raw_call(fd, &req, NULL);
}

static int raw_flush(int fd, const char *region, uint64_t off, uint64_t len)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FlushReq f = PMEMZ__FLUSH_REQ__INIT;
	Pmemz__ByteRange br = PMEMZ__BYTE_RANGE__INIT;
	Pmemz__ByteRange *brs[1] = {&br};

	br.offset = off;
	br.length = len;
	f.region = UNCONST(region);
	f.n_ranges = 1;
	f.ranges = brs;
	req.op_case = PMEMZ__REQUEST__OP_FLUSH;
	req.flush = &f;
	return itest_raw_call(fd, &req, NULL);
}

static void test_bad_rpc_inputs(void **state)
{
	struct itest_env *e = *state;
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL, *r2 = NULL;
	struct pmemz_alloc *a = NULL;
	struct itest_stat st;
	char *base;
	size_t size;
	uint64_t lease = 0;
	char longtag[300];
	int fd;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	assert_int_equal(pmemz_client_new(e->sock, &c), 0);

	/* unknown region */
	assert_int_equal(pmemz_region_open(c, "no-such-region", &r2), -ENOENT);
	assert_null(r2);
	/* an empty name is -EINVAL (daemon/server/rpc.c rpc_region) */
	assert_int_equal(pmemz_region_open(c, "", &r2), -EINVAL);
	assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
	base = pmemz_region_address(r);
	size = pmemz_region_size(r);

	/* allocate 0 bytes */
	assert_int_equal(pmemz_alloc_new(r, 0, 0, &a), -EINVAL);
	assert_null(a);

	/* flush outside the region (library) */
	assert_int_equal(pmemz_flush(r, base + size, 4096, 0), -ERANGE);
	assert_int_equal(pmemz_flush(r, base + size - 4096, 8192, 0), -ERANGE);
	assert_int_equal(pmemz_flush(r, base - 4096, 4096, 0), -ERANGE);
	/* The daemon flushes only the caller's own extents (docs/SECURITY.md). */
	{
		struct pmemz_alloc *own = NULL;
		char *p, *other;

		assert_int_equal(pmemz_alloc_new(r, MIB, 0, &own), 0);
		p = pmemz_alloc_range(own, 0, NULL);
		other = p == base + st.data_offset ? p + MIB : base + st.data_offset;
		assert_int_equal(pmemz_flush(r, p, MIB, 0), 0);
		assert_int_equal(pmemz_flush(r, p, MIB, PMEMZ_FLUSH_DEEP), 0);
		assert_int_equal(pmemz_flush(r, other, 4096, 0), -EPERM);
		assert_int_equal(pmemz_flush(r, p, MIB + 1, 0), -EPERM);
		assert_int_equal(pmemz_alloc_release(own), 0);
		assert_int_equal(pmemz_flush(r, p, MIB, 0), -EPERM);
	}
	/* local persist outside the mapping */
	assert_int_equal(pmemz_persist(r, base + size, 4096), -ERANGE);
	assert_int_equal(pmemz_persist(r, base + size - 4096, 8192), -ERANGE);
	assert_int_equal(pmemz_persist(r, base + st.data_offset, MIB), 0);

	fd = itest_raw_connect(e->sock);
	assert_true(fd >= 0);
	assert_int_equal(itest_raw_open(fd, REGION), 0);

	/* raw: the daemon checks ranges itself */
	assert_int_equal(raw_flush(fd, REGION, size, 4096), -ERANGE);
	assert_int_equal(raw_flush(fd, REGION, size - 4096, 8192), -ERANGE);
	assert_int_equal(raw_flush(fd, REGION, UINT64_MAX - 100, 4096), -ERANGE); /* wraps */
	assert_int_equal(raw_flush(fd, REGION, 4096, UINT64_MAX), -ERANGE);
	/* only the data area may be flushed (daemon/storage/region-alloc.c data_range) */
	assert_int_equal(raw_flush(fd, REGION, 0, 4096), -ERANGE);
	assert_int_equal(raw_flush(fd, REGION, st.data_offset - 4096, 8192), -ERANGE);
	{
		uint64_t own = itest_raw_lease_one_run(fd, REGION, MIB, &st, &lease);

		assert_int_equal(raw_flush(fd, REGION, own, 4096), 0);
		assert_int_equal(raw_flush(fd, REGION, own + 4096, MIB - 4096), 0);
		assert_int_equal(raw_flush(fd, REGION, own + MIB - 1, 2), -EPERM);
		assert_int_equal(itest_raw_free_lease(fd, REGION, lease), 0);
		assert_int_equal(raw_flush(fd, REGION, own, 4096), -EPERM);
	}
	assert_int_equal(raw_flush(fd, "no-such-region", 0, 4096), -ENOENT);

	/* raw: allocate 0 bytes, unknown region, huge */
	assert_int_equal(itest_raw_alloc(fd, REGION, 0, false, NULL), -EINVAL);
	assert_int_equal(itest_raw_alloc(fd, "no-such-region", MIB, false, NULL), -ENOENT);
	assert_int_equal(itest_raw_alloc(fd, REGION, UINT64_MAX, false, NULL), -ENOSPC);
	assert_int_equal(itest_raw_alloc(fd, REGION, UINT64_MAX - MIB + 2, true, NULL), -ENOSPC);

	/* commit with an unknown lease */
	assert_int_equal(itest_raw_commit(fd, REGION, 0xdeadbeefull, "t", false), -ENOENT);
	assert_int_equal(itest_raw_commit(fd, REGION, 0, "t", false), -ENOENT);

	/* free with neither lease nor tag, or both */
	assert_int_equal(raw_free(fd, false, 0, NULL), -EINVAL);
	assert_int_equal(itest_raw_alloc(fd, REGION, MIB, false, &lease), 0);
	assert_int_equal(raw_free(fd, true, lease, "t"), -EINVAL);
	assert_int_equal(raw_free(fd, true, 0xdeadbeefull, NULL), -ENOENT);
	assert_int_equal(raw_free(fd, false, 0, "no-such-tag"), -ENOENT);

	/* bad tag names; the lease survives each failed commit */
	memset(longtag, 'x', sizeof(longtag) - 1);
	longtag[sizeof(longtag) - 1] = 0;
	assert_int_equal(itest_raw_commit(fd, REGION, lease, "", false), -EINVAL);
	assert_int_equal(itest_raw_commit(fd, REGION, lease, longtag, false), -ENAMETOOLONG);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after bad commits");
	assert_int_equal(st.leased, 1);
	assert_int_equal(st.committed, 0);
	/* commit on another region name than the lease's */
	assert_int_equal(itest_raw_commit(fd, "no-such-region", lease, "t", false), -ENOENT);
	assert_int_equal(itest_raw_commit(fd, REGION, lease, "t", true), 0);
	/* the lease is gone now: a second commit or free of it fails */
	assert_int_equal(itest_raw_commit(fd, REGION, lease, "t2", false), -ENOENT);
	assert_int_equal(itest_raw_free_lease(fd, REGION, lease), -ENOENT);
	assert_int_equal(itest_raw_free_tag(fd, REGION, "t"), 0);
	assert_int_equal(itest_raw_free_tag(fd, REGION, "t"), -ENOENT);

	/* library: unknown tag; double use of a released handle is the caller's bug */
	assert_int_equal(pmemz_alloc_open(r, "no-such-tag", &a), -ENOENT);
	assert_int_equal(pmemz_alloc_new(r, MIB, 0, &a), 0);
	assert_int_equal(pmemz_alloc_commit(a, "", 0), -EINVAL);
	assert_int_equal(pmemz_alloc_commit(a, longtag, 0), -ENAMETOOLONG);
	assert_int_equal(pmemz_alloc_commit(a, "ok", 0), 0);
	assert_int_equal(pmemz_alloc_release(a), 0);

	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "end");
	assert_int_equal(st.leased, 0);
	assert_int_equal(st.committed, 0);
	close(fd);
	pmemz_region_close(r);
	pmemz_client_free(c);
	itest_daemon_stop(e);
}

static int count_fds(pid_t pid)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Connections, region opens (fd passing) and abrupt hang-ups leak no daemon fds. */
static void test_no_fd_leak(void **state)
{
	struct itest_env *e = *state;
	struct itest_stat st;
	int before, after = -1;
	uint64_t deadline;

	write_conf(e);
	itest_daemon_start(e);
	itest_wait_zeroed(e->sock, REGION, 10000, &st);
	before = count_fds(e->pid);
	for (int i = 0; i < 100; i++) {
		struct pmemz_client *c = NULL;
		struct pmemz_region *r = NULL;
		struct pmemz_alloc *a = NULL;

		assert_int_equal(pmemz_client_new(e->sock, &c), 0);
		assert_int_equal(pmemz_region_open(c, REGION, &r), 0);
		if (i % 10 == 0)
			assert_int_equal(pmemz_alloc_new(r, MIB, 0, &a), 0);
		pmemz_alloc_close(a);
		pmemz_region_close(r);
		pmemz_client_free(c);
	}
	for (int i = 0; i < 50; i++) {
		/* OPEN_REGION sent, connection closed before the reply (and its fd) is read */
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__OpenRegionReq o = PMEMZ__OPEN_REGION_REQ__INIT;
		int fd = itest_raw_connect(e->sock);

		assert_true(fd >= 0);
		o.region = REGION;
		req.version = PMEMZ_PROTO_VERSION;
		req.id = 1;
		req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
		req.open_region = &o;
		assert_int_equal(itest_raw_send(fd, &req), 0);
		close(fd);
	}
	/* hang-ups are noticed asynchronously: give the daemon a moment */
	deadline = itest_now_ms() + 5000;
	while (itest_now_ms() < deadline) {
		after = count_fds(e->pid);
		if (after <= before)
			break;
		itest_msleep(20);
	}
	if (after > before)
		fail_msg("daemon fds: %d before, %d after 150 short connections", before, after);
	itest_stat(e->sock, REGION, &st);
	itest_assert_accounting(&st, "after the short connections");
	assert_int_equal(st.leased, 0);
	itest_daemon_stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_bad_frames, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_bad_rpc_inputs, itest_setup, itest_teardown),
	    cmocka_unit_test_setup_teardown(test_no_fd_leak, itest_setup, itest_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
