/* SPDX-License-Identifier: MIT */
/* Raw protocol client for the integration tests: frames built with protobuf-c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

static uint64_t next_id = 1000;

int itest_raw_connect(const char *sock)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(sock) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

int itest_raw_write(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

int itest_raw_send(int fd, const Pmemz__Request *req)
{
	uint8_t *frame = NULL;
	size_t len = 0;
	int r = pmemz_frame_pack_request(req, &frame, &len);

	if (r < 0)
		return r;
	r = itest_raw_write(fd, frame, len);
	free(frame);
	return r;
}

/* Read exactly len bytes; collects passed fds.  0, -ETIMEDOUT, -ECONNRESET. */
static int read_full(int fd, uint8_t *buf, size_t len, uint64_t deadline, int *fd_out)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)deadline - (int64_t)itest_now_ms();
		union {
			char buf[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} cbuf;
		struct iovec iov = {.iov_base = buf + got, .iov_len = len - got};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf.buf,
				    .msg_controllen = sizeof(cbuf.buf)};
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -ETIMEDOUT;
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno == ECONNRESET ? -ECONNRESET : -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int fds[8];

			memcpy(fds, CMSG_DATA(c), nfd * sizeof(int));
			for (size_t i = 0; i < nfd; i++) {
				if (fd_out && *fd_out < 0)
					*fd_out = fds[i];
				else
					close(fds[i]);
			}
		}
		got += (size_t)n;
	}
	return 0;
}

int itest_raw_recv(int fd, int timeout_ms, Pmemz__Response **resp, int *fd_out)
{
	uint64_t deadline = itest_now_ms() + (uint64_t)timeout_ms;
	uint8_t hdr[PMEMZ_FRAME_HDR];
	uint8_t *payload;
	size_t plen = 0;
	int r;

	if (fd_out)
		*fd_out = -1;
	r = read_full(fd, hdr, sizeof(hdr), deadline, fd_out);
	if (r < 0)
		return r;
	r = pmemz_frame_peek(hdr, sizeof(hdr), &plen);
	if (r < 0)
		return r;
	payload = malloc(plen);
	if (!payload)
		return -ENOMEM;
	r = read_full(fd, payload, plen, deadline, fd_out);
	if (r == 0)
		r = pmemz_frame_unpack_response(payload, plen, resp);
	free(payload);
	return r;
}

void itest_resp_free(Pmemz__Response *resp)
{
	if (resp)
		pmemz__response__free_unpacked(resp, NULL);
}

int itest_raw_call(int fd, Pmemz__Request *req, Pmemz__Response **resp)
{
	uint64_t deadline = itest_now_ms() + ITEST_RPC_TIMEOUT_MS;
	int r;

	if (!req->version)
		req->version = PMEMZ_PROTO_VERSION;
	if (!req->id)
		req->id = ++next_id;
	r = itest_raw_send(fd, req);
	if (r < 0)
		fail_msg("raw send (op %d): %s", req->op_case, strerror(-r));
	for (;;) {
		Pmemz__Response *rp = NULL;
		int64_t left = (int64_t)deadline - (int64_t)itest_now_ms();

		if (left <= 0)
			fail_msg("raw call (op %d, id %llu): no response within %d ms",
				 req->op_case, (unsigned long long)req->id, ITEST_RPC_TIMEOUT_MS);
		r = itest_raw_recv(fd, (int)left, &rp, NULL);
		if (r < 0)
			fail_msg("raw call (op %d, id %llu): receive failed: %s", req->op_case,
				 (unsigned long long)req->id, strerror(-r));
		if (rp->id != req->id) {
			/* a pipelined answer to something else: not ours */
			itest_resp_free(rp);
			continue;
		}
		r = rp->status;
		if (r > 0)
			fail_msg("raw call (op %d): positive status %d", req->op_case, r);
		if (resp)
			*resp = rp;
		else
			itest_resp_free(rp);
		return r;
	}
}

bool itest_raw_wait_closed(int fd, int timeout_ms, int *n_resp, int *first_status)
{
	uint64_t deadline = itest_now_ms() + (uint64_t)timeout_ms;

	if (n_resp)
		*n_resp = 0;
	for (;;) {
		Pmemz__Response *rp = NULL;
		int64_t left = (int64_t)deadline - (int64_t)itest_now_ms();
		int r;

		if (left <= 0)
			return false;
		r = itest_raw_recv(fd, (int)left, &rp, NULL);
		if (r == -ETIMEDOUT)
			return false;
		if (r == 0) {
			if (n_resp && (*n_resp)++ == 0 && first_status)
				*first_status = rp->status;
			itest_resp_free(rp);
			continue;
		}
		/* EOF, reset, or an unparsable frame followed by close */
		if (r == -ECONNRESET || r == -EPIPE)
			return true;
		/* keep reading until EOF */
	}
}

int itest_raw_hello(int fd, Pmemz__Response **resp)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__HelloReq h = PMEMZ__HELLO_REQ__INIT;

	h.client_name = "itest";
	req.op_case = PMEMZ__REQUEST__OP_HELLO;
	req.hello = &h;
	return itest_raw_call(fd, &req, resp);
}

int itest_raw_open(int fd, const char *region)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__OpenRegionReq o = PMEMZ__OPEN_REGION_REQ__INIT;

	o.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_OPEN_REGION;
	req.open_region = &o;
	return itest_raw_call(fd, &req, NULL);
}

int itest_raw_alloc(int fd, const char *region, uint64_t bytes, bool nowait, uint64_t *lease)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__Response *resp = NULL;
	int r;

	a.region = UNCONST(region);
	a.bytes = bytes;
	a.has_nowait = true;
	a.nowait = nowait;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &a;
	r = itest_raw_call(fd, &req, &resp);
	if (r == 0) {
		assert_int_equal(resp->op_case, PMEMZ__RESPONSE__OP_ALLOCATE);
		if (lease)
			*lease = resp->allocate->lease;
	}
	itest_resp_free(resp);
	return r;
}

int itest_raw_commit(int fd, const char *region, uint64_t lease, const char *tag, bool flush)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__CommitReq c = PMEMZ__COMMIT_REQ__INIT;

	c.region = UNCONST(region);
	c.lease = lease;
	c.tag = UNCONST(tag);
	c.has_flush_data = true;
	c.flush_data = flush;
	req.op_case = PMEMZ__REQUEST__OP_COMMIT;
	req.commit = &c;
	return itest_raw_call(fd, &req, NULL);
}

int itest_raw_free_lease(int fd, const char *region, uint64_t lease)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FreeReq f = PMEMZ__FREE_REQ__INIT;

	f.region = UNCONST(region);
	f.has_lease = true;
	f.lease = lease;
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &f;
	return itest_raw_call(fd, &req, NULL);
}

int itest_raw_free_tag(int fd, const char *region, const char *tag)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FreeReq f = PMEMZ__FREE_REQ__INIT;

	f.region = UNCONST(region);
	f.tag = UNCONST(tag);
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &f;
	return itest_raw_call(fd, &req, NULL);
}

void itest_zeroer_pause(const char *sock, const char *region, bool pause)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq z = PMEMZ__ZEROER_REQ__INIT;
	int fd = itest_raw_connect(sock), r;

	if (fd < 0)
		fail_msg("ZEROER: connect %s: %s", sock, strerror(-fd));
	z.region = UNCONST(region);
	z.has_pause = true;
	z.pause = pause;
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &z;
	r = itest_raw_call(fd, &req, NULL);
	close(fd);
	if (r)
		fail_msg("ZEROER %s pause=%d: %s", region, pause, strerror(-r));
}

void itest_stat(const char *sock, const char *region, struct itest_stat *st)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq s = PMEMZ__STAT_REQ__INIT;
	Pmemz__Response *resp = NULL;
	const Pmemz__RegionStat *rs = NULL;
	int fd = itest_raw_connect(sock);
	int r;

	if (fd < 0)
		fail_msg("STAT: connect %s: %s", sock, strerror(-fd));
	s.region = UNCONST(region);
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &s;
	r = itest_raw_call(fd, &req, &resp);
	close(fd);
	if (r < 0)
		fail_msg("STAT %s: %s (%s)", region, strerror(-r),
			 resp && resp->message ? resp->message : "");
	assert_int_equal(resp->op_case, PMEMZ__RESPONSE__OP_STAT);
	for (size_t i = 0; i < resp->stat->n_regions; i++)
		if (resp->stat->regions[i]->info && resp->stat->regions[i]->info->name &&
		    strcmp(resp->stat->regions[i]->info->name, region) == 0)
			rs = resp->stat->regions[i];
	if (!rs)
		fail_msg("STAT: region '%s' missing from the answer (%zu regions)", region,
			 resp->stat->n_regions);
	memset(st, 0, sizeof(*st));
	st->zeroed = rs->zeroed;
	st->dirty = rs->dirty;
	st->leased = rs->leased;
	st->committed = rs->committed;
	st->bad = rs->bad;
	st->zeroing = rs->zeroing;
	st->bytes_zeroed = rs->bytes_zeroed;
	st->zero_batches = rs->zero_batches;
	st->zero_fences = rs->has_zero_fences ? rs->zero_fences : rs->zero_batches;
	st->drains = rs->drains;
	st->allocations = rs->allocations;
	st->commits = rs->commits;
	st->frees = rs->frees;
	st->waiters = rs->waiters;
	st->tags = rs->tags;
	st->zero_rate_limit = rs->zero_rate_limit;
	st->zeroer_threads = rs->zeroer_threads;
	st->size = rs->info->size;
	st->extent_size = rs->info->extent_size;
	st->extent_count = rs->info->extent_count;
	st->data_offset = rs->info->data_offset;
	snprintf(st->granularity, sizeof(st->granularity), "%s",
		 rs->info->granularity ? rs->info->granularity : "");
	itest_resp_free(resp);
}

void itest_assert_accounting(const struct itest_stat *st, const char *when)
{
	uint64_t sum = st->zeroed + st->dirty + st->leased + st->committed + st->bad;

	if (sum != st->extent_count)
		fail_msg("I3 violated (%s): zeroed %llu + dirty %llu + leased %llu + committed "
			 "%llu + bad %llu = %llu != extent_count %llu",
			 when, (unsigned long long)st->zeroed, (unsigned long long)st->dirty,
			 (unsigned long long)st->leased, (unsigned long long)st->committed,
			 (unsigned long long)st->bad, (unsigned long long)sum,
			 (unsigned long long)st->extent_count);
	if (st->zeroing > st->dirty)
		fail_msg("STAT (%s): zeroing %llu > dirty %llu", when,
			 (unsigned long long)st->zeroing, (unsigned long long)st->dirty);
}

void itest_wait_zeroed(const char *sock, const char *region, int timeout_ms, struct itest_stat *st)
{
	uint64_t deadline = itest_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		itest_stat(sock, region, st);
		itest_assert_accounting(st, "waiting for zeroing");
		if (st->dirty == 0 && st->zeroing == 0)
			return;
		if (itest_now_ms() > deadline)
			fail_msg("region %s: still %llu DIRTY (%llu zeroing) after %d ms", region,
				 (unsigned long long)st->dirty, (unsigned long long)st->zeroing,
				 timeout_ms);
		itest_msleep(10);
	}
}

int itest_child_call(int fd, Pmemz__Request *req)
{
	static uint64_t id = 5000;
	Pmemz__Response *resp = NULL;
	int r;

	req->version = PMEMZ_PROTO_VERSION;
	req->id = ++id;
	r = itest_raw_send(fd, req);
	CHILD_CHECK(r == 0, "send: %s", strerror(-r));
	do {
		itest_resp_free(resp);
		resp = NULL;
		r = itest_raw_recv(fd, ITEST_RPC_TIMEOUT_MS, &resp, NULL);
		CHILD_CHECK(r == 0, "recv (op %d): %s", req->op_case, strerror(-r));
	} while (resp->id != req->id);
	r = resp->status;
	fprintf(stderr, "  uid %u: op %d -> %d (%s) %s\n", (unsigned)getuid(), req->op_case, r,
		r ? strerror(-r) : "ok", resp->message ? resp->message : "");
	itest_resp_free(resp);
	return r;
}

uint64_t itest_raw_lease_one_run(int fd, const char *region, uint64_t bytes,
				 const struct itest_stat *st, uint64_t *lease)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq a = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__Response *resp = NULL;
	uint64_t off;

	a.region = UNCONST(region);
	a.bytes = bytes;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &a;
	assert_int_equal(itest_raw_call(fd, &req, &resp), 0);
	assert_int_equal(resp->allocate->n_runs, 1);
	if (lease)
		*lease = resp->allocate->lease;
	off = st->data_offset + resp->allocate->runs[0]->first * st->extent_size;
	itest_resp_free(resp);
	return off;
}
