/* SPDX-License-Identifier: MIT */
/*
 * The cheapest round trip this machine has (docs/PERFORMANCE.md): an AF_UNIX stream
 * socket pair, an echo thread on epoll at the other end, both ends pinned
 * to one CPU, frames as large as ALLOCATE's request and reply.  No daemon,
 * no protobuf: what any RPC over a Unix socket pays at least, without the
 * cross-CPU wake-ups the real client and daemon may take.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

struct bench_floor {
	int fd[2]; /* [0] the client's end, [1] the echo thread's */
	int cpu;
	size_t req_len, resp_len;
	pthread_t th;
	bool running;
	uint8_t buf[2][PMEMZ_BENCH_FLOOR_MAX];
};

static int pin(pthread_t th, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(th, sizeof(set), &set);
}

static int io_full(int fd, uint8_t *p, size_t len, bool out)
{
	while (len) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The echo end: epoll as the daemon has it, one reply per request. */
static void *echo_main(void *arg)
{
	struct bench_floor *f = arg;
	struct epoll_event ev = {.events = EPOLLIN};
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, f->fd[1], &ev) < 0)
		goto out;
	for (;;) {
		if (epoll_wait(ep, &ev, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (io_full(f->fd[1], f->buf[1], f->req_len, false) < 0 ||
		    io_full(f->fd[1], f->buf[1], f->resp_len, true) < 0)
			break;
	}
out:
	if (ep >= 0)
		(void)close(ep);
	return NULL;
}

int bench_floor_open(size_t req_len, size_t resp_len, struct bench_floor **out)
{
	struct bench_floor *f;
	int r;

	if (req_len > PMEMZ_BENCH_FLOOR_MAX || resp_len > PMEMZ_BENCH_FLOOR_MAX || !req_len ||
	    !resp_len)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->req_len = req_len;
	f->resp_len = resp_len;
	f->cpu = sched_getcpu();
	if (f->cpu < 0)
		f->cpu = 0;
	memset(f->buf[0], 0x5a, sizeof(f->buf[0]));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->fd) < 0) {
		r = -errno;
		free(f);
		return r;
	}
	r = -pthread_create(&f->th, NULL, echo_main, f);
	if (r == 0)
		r = pin(f->th, f->cpu);
	if (r < 0) {
		*out = f;
		bench_floor_close(f);
		*out = NULL;
		return r;
	}
	f->running = true;
	*out = f;
	return 0;
}

double bench_floor_round_trip(struct bench_floor *f)
{
	cpu_set_t old;
	uint64_t t0, t1;
	int r;

	if (pthread_getaffinity_np(pthread_self(), sizeof(old), &old) != 0 ||
	    pin(pthread_self(), f->cpu) < 0)
		return -1;
	t0 = bench_now_ns();
	r = io_full(f->fd[0], f->buf[0], f->req_len, true);
	if (r == 0)
		r = io_full(f->fd[0], f->buf[0], f->resp_len, false);
	t1 = bench_now_ns();
	(void)pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	return r < 0 ? -1 : (double)(t1 - t0) / 1e3;
}

int bench_floor_cpu(const struct bench_floor *f)
{
	return f->cpu;
}

void bench_floor_close(struct bench_floor *f)
{
	if (!f)
		return;
	/* EOF ends the echo thread. */
	(void)shutdown(f->fd[0], SHUT_RDWR);
	if (f->running)
		(void)pthread_join(f->th, NULL);
	(void)close(f->fd[0]);
	(void)close(f->fd[1]);
	free(f);
}
