/* SPDX-License-Identifier: MIT */
/*
 * Scenario 8 (docs/SECURITY.md): a well-behaved client's 2 MiB ALLOCATE latency at
 * rest and while three attackers run, side by side:
 *   - idle: many connections that send nothing;
 *   - pipeliner: ALLOCATE(4 KiB, nowait) + MAP pairs on the small region,
 *     sent until the daemon stops reading, never read;
 *   - FLUSH storm: FLUSH frames of 256 overlapping ranges over 8-64 MiB
 *     the attacker owns (a tag), sent back to back by a thread.
 * Also the STAT round trip (what `pmemzctl status` does) during the storm.
 * Goals: ALLOCATE p99 under attack <= 2x at rest; STAT p99 <= 100 ms.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "attack.h"
#include "bench.h"
#include "frame.h"
#include "libpmemzclient.h"

#define S5 "under-attack"
#define IDLE_CONNS 200
#define FLUSH_RANGES 256
#define STORM_TAG "pmemz-bench-storm"

static double us_since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) / 1e3;
}

static int raw_connect(const char *sock)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(sock) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		(void)close(fd);
		return r;
	}
	return fd;
}

/* ---- the FLUSH storm: a thread that sends FLUSHes back to back, reading replies ---- */

struct storm {
	int fd;
	struct attack_stream frame; /* one FLUSH request */
	atomic_bool stop;
	_Atomic uint64_t sent, replies, errors; /* read by the main thread meanwhile */
	pthread_t thread;
};

static void *storm_main(void *arg)
{
	struct storm *s = arg;
	uint8_t in[4096];
	size_t in_len = 0, plen;

	while (!atomic_load(&s->stop)) {
		struct pollfd p = {.fd = s->fd, .events = POLLIN | POLLOUT};

		if (poll(&p, 1, 100) <= 0)
			continue;
		/* Keep a few in flight: the daemon works on one at a time per connection. */
		if ((p.revents & POLLOUT) && s->sent < s->replies + 4) {
			size_t off = 0;

			while (off < s->frame.len) {
				ssize_t w = send(s->fd, s->frame.buf + off, s->frame.len - off,
						 MSG_NOSIGNAL);

				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					return NULL;
				off += (size_t)w;
			}
			s->sent++;
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			ssize_t n = recv(s->fd, in + in_len, sizeof(in) - in_len, MSG_DONTWAIT);

			if (n == 0)
				return NULL;
			if (n > 0)
				in_len += (size_t)n;
		}
		while (pmemz_frame_peek(in, in_len, &plen) == 0 && plen &&
		       in_len >= PMEMZ_FRAME_HDR + plen) {
			Pmemz__Response *resp = NULL;

			if (pmemz_frame_unpack_response(in + PMEMZ_FRAME_HDR, plen, &resp) < 0)
				return NULL;
			s->replies++;
			s->errors += resp->status != 0;
			pmemz__response__free_unpacked(resp, NULL);
			memmove(in, in + PMEMZ_FRAME_HDR + plen, in_len - PMEMZ_FRAME_HDR - plen);
			in_len -= PMEMZ_FRAME_HDR + plen;
		}
	}
	return NULL;
}

/* The attacker's extents under a tag (so any of its connections may flush them). */
static int storm_setup(struct bench_env *e, struct storm *s, struct pmemz_region *ar)
{
	uint64_t offlen[2 * FLUSH_RANGES];
	struct pmemz_alloc *a = NULL;
	uint8_t *base = pmemz_region_address(ar), *p;
	size_t want = opt.quick ? 8 * MIB : 64 * MIB, len = 0;
	int r;

	r = pmemz_alloc_new(ar, want, 0, &a);
	if (r < 0)
		return r;
	p = pmemz_alloc_range(a, 0, &len);
	r = pmemz_alloc_commit(a, STORM_TAG, 0);
	pmemz_alloc_close(a);
	if (r < 0)
		return r;
	for (size_t i = 0; i < FLUSH_RANGES; i++) {
		offlen[2 * i] = (uint64_t)(p - base) + (i % 16) * 4096;
		offlen[2 * i + 1] = len - (i % 16) * 4096;
	}
	r = attack_stream_add_flush(&s->frame, e->small_region, offlen, FLUSH_RANGES, 1);
	if (r < 0)
		return r;
	s->fd = raw_connect(e->sock);
	return s->fd < 0 ? s->fd : 0;
}

/* ---- the pipeliner: sends until the daemon stops reading, never reads ---- */

static int pipeliner_start(struct bench_env *e, int *fd_out)
{
	struct attack_stream f = {0};
	ssize_t sent;
	int fd, r = 0;

	for (uint64_t i = 0; i < 6000 && r == 0; i++)
		r = attack_stream_add_alloc_map(&f, e->small_region, 2 * i + 1);
	fd = r == 0 ? raw_connect(e->sock) : r;
	if (fd < 0) {
		attack_stream_free(&f);
		return fd;
	}
	sent = attack_push_until_stalled(fd, &f, 0, 300);
	if (sent < 0)
		bench_log("pipeliner: the daemon hung up: %s", strerror((int)-sent));
	else
		bench_log("pipeliner: %zd of %zu bytes taken before the daemon stopped reading",
			  sent, f.len);
	attack_stream_free(&f);
	*fd_out = fd;
	return 0;
}

/*
 * n ALLOCATE(2 MiB) latencies.  Allocations are held until half the pool
 * is out, then released and the pool re-zeroed (untimed), so no timed
 * ALLOCATE waits for the zeroer or competes with it.
 */
static int measure(struct pmemz_client *c, struct pmemz_region *r, const char *region,
		   unsigned n, struct bench_samples *s)
{
	struct pmemz_alloc **hold;
	struct bench_stat st;
	size_t cap, held = 0;
	unsigned done = 0;
	int ret = bench_stat(c, region, &st);

	if (ret < 0)
		return ret;
	cap = st.extent_count * st.extent_size / (2 * MIB) / 2;
	if (cap == 0)
		cap = 1;
	hold = calloc(cap, sizeof(*hold));
	if (!hold)
		return -ENOMEM;
	while (done < n && ret >= 0) {
		ret = bench_wait_zeroed(c, region, 600);
		for (held = 0; ret >= 0 && held < cap && done < n; held++, done++) {
			uint64_t t0 = bench_now_ns();

			ret = pmemz_alloc_new(r, 2 * MIB, 0, &hold[held]);
			samples_add(s, us_since(t0));
		}
		for (size_t i = 0; i < held; i++)
			if (hold[i])
				pmemz_alloc_close(hold[i]);
		memset(hold, 0, cap * sizeof(*hold));
	}
	free(hold);
	if (ret < 0)
		fprintf(stderr, "pmemz-bench: ALLOCATE 2 MiB: %s\n", pmemz_errormsg());
	return ret;
}

/* n STAT round trips (what `pmemzctl status` asks). */
static int measure_stat(struct pmemz_client *c, const char *region, unsigned n,
			struct bench_samples *s)
{
	int ret = 0;

	for (unsigned i = 0; i < n && ret >= 0; i++) {
		struct bench_stat st;
		uint64_t t0 = bench_now_ns();

		ret = bench_stat(c, region, &st);
		samples_add(s, us_since(t0));
	}
	return ret;
}

int scenario_attack(struct bench_env *e)
{
	unsigned n = opt.quick ? 150 : 400 * opt.reps;
	struct bench_samples rest = {0}, attack = {0}, stat_rest = {0}, stat = {0};
	struct pmemz_client *c = NULL, *ac = NULL, *sc = NULL;
	struct pmemz_region *r = NULL, *ar = NULL, *sr = NULL;
	struct storm storm = {.fd = -1};
	int idle[IDLE_CONNS], pipe_fd = -1, ret;
	bool storm_running = false;
	double p99_rest, p99_attack, ratio, stat_p99;

	for (size_t i = 0; i < IDLE_CONNS; i++)
		idle[i] = -1;
	report_section("5. Under attack: 2 MiB ALLOCATE of a well-behaved client (us)");
	ret = bench_connect(e, e->region, &c, &r);
	if (ret >= 0)
		ret = bench_connect(e, e->small_region, &ac, &ar);
	if (ret >= 0)
		ret = bench_connect(e, e->small_region, &sc, &sr);
	if (ret >= 0)
		ret = bench_wait_zeroed(ac, e->small_region, 600);
	if (ret < 0)
		goto out;

	ret = measure(c, r, e->region, n, &rest);
	if (ret >= 0)
		ret = measure_stat(sc, e->region, n, &stat_rest);
	if (ret < 0)
		goto out;

	/* The attackers. */
	for (size_t i = 0; i < IDLE_CONNS && ret >= 0; i++) {
		idle[i] = raw_connect(e->sock);
		if (idle[i] < 0)
			ret = idle[i];
	}
	if (ret >= 0)
		ret = storm_setup(e, &storm, ar);
	if (ret >= 0)
		ret = -pthread_create(&storm.thread, NULL, storm_main, &storm);
	storm_running = ret >= 0;
	if (ret >= 0)
		ret = pipeliner_start(e, &pipe_fd);
	if (ret < 0)
		goto out;

	ret = measure(c, r, e->region, n, &attack);
	/* STAT round trips while the storm goes on. */
	if (ret >= 0)
		ret = measure_stat(sc, e->region, n, &stat);
	if (ret < 0)
		goto out;

	p99_rest = samples_pct(&rest, 99);
	p99_attack = samples_pct(&attack, 99);
	ratio = p99_rest > 0 ? p99_attack / p99_rest : 0;
	report_latency_row(S5, "ALLOCATE 2 MiB at rest", samples_pct(&rest, 50), p99_rest,
			   samples_pct(&rest, 99.9), 0, NULL);
	report_latency_row(S5, "ALLOCATE 2 MiB under attack", samples_pct(&attack, 50),
			   p99_attack, samples_pct(&attack, 99.9), ratio, "x at rest p99");
	stat_p99 = samples_pct(&stat, 99) / 1e3;
	report_latency_row(S5, "STAT (pmemzctl status) at rest", samples_pct(&stat_rest, 50),
			   samples_pct(&stat_rest, 99), samples_pct(&stat_rest, 99.9), 0, NULL);
	report_latency_row(S5, "STAT (pmemzctl status) during the FLUSH storm",
			   samples_pct(&stat, 50), samples_pct(&stat, 99), samples_pct(&stat, 99.9),
			   samples_pct(&stat_rest, 99) > 0
			       ? samples_pct(&stat, 99) / samples_pct(&stat_rest, 99)
			       : 0,
			   "x at rest p99");
	report_note("attackers: %d idle connections; a pipeliner of 6000 ALLOCATE(4 KiB)+MAP "
		    "pairs that never reads; a FLUSH storm of %u-range frames over %s MiB it "
		    "owns (%llu FLUSHes answered meanwhile, %llu of them errors)",
		    IDLE_CONNS, FLUSH_RANGES, opt.quick ? "8" : "64",
		    (unsigned long long)atomic_load(&storm.replies),
		    (unsigned long long)atomic_load(&storm.errors));
	report_target("under attack: ALLOCATE 2 MiB p99 / at rest p99", ratio, 2.0, false);
	report_target("under attack: STAT p99 during the FLUSH storm (ms)", stat_p99, 100.0, false);

out:
	if (storm_running) {
		atomic_store(&storm.stop, true);
		(void)pthread_join(storm.thread, NULL);
	}
	if (storm.fd >= 0)
		(void)close(storm.fd);
	attack_stream_free(&storm.frame);
	if (pipe_fd >= 0)
		(void)close(pipe_fd);
	for (size_t i = 0; i < IDLE_CONNS; i++)
		if (idle[i] >= 0)
			(void)close(idle[i]);
	if (ar) {
		struct pmemz_alloc *a = NULL;

		if (pmemz_alloc_open(ar, STORM_TAG, &a) == 0)
			(void)pmemz_alloc_release(a);
	}
	samples_free(&rest);
	samples_free(&attack);
	samples_free(&stat_rest);
	samples_free(&stat);
	if (sr)
		pmemz_region_close(sr);
	if (ar)
		pmemz_region_close(ar);
	if (r)
		pmemz_region_close(r);
	pmemz_client_free(sc);
	pmemz_client_free(ac);
	pmemz_client_free(c);
	return ret;
}
