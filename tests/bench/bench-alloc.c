/* SPDX-License-Identifier: MIT */
/*
 * Scenario 2: allocation latency against the transport floor, and zeroing
 * inline on the caller's thread for the same sizes.
 * Scenario 3: allocate -> commit -> release cycles per second with 1, 2 and
 * 4 connections, synchronous and pipelined, and drains per commit.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "client-private.h"
#include "libpmemzclient.h"

#define S2 "alloc-latency"
#define S3 "throughput"

static double us_since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) / 1e3;
}

/* NOOP payload whose request and reply frames are at least as big as ALLOCATE's. */
static size_t floor_payload(const char *region)
{
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__NoopResp noop = PMEMZ__NOOP_RESP__INIT;
	size_t req, rsp, empty;

	bench_alloc_frame_sizes(region, &req, &rsp);
	resp.id = 1000;
	resp.op_case = PMEMZ__RESPONSE__OP_NOOP;
	resp.noop = &noop;
	noop.has_payload = true;
	empty = PMEMZ_FRAME_HDR + pmemz__response__get_packed_size(&resp);
	return (req > rsp ? req : rsp) > empty ? (req > rsp ? req : rsp) - empty : 0;
}

struct lat_size {
	const char *label;
	size_t bytes;
	bool small; /* from the small-extent region */
	unsigned samples;
	struct bench_samples alloc, nt, clflush;
	struct bench_samples floor; /* NOOPs interleaved with this size's ALLOCATEs */
	struct bench_samples raw;   /* one-CPU socket round trips, interleaved too */
};

static void latency_row(const char *name, struct bench_samples *s, double floor_p99)
{
	double p99 = samples_pct(s, 99);

	report_latency_row(S2, name, samples_pct(s, 50), p99, samples_pct(s, 99.9),
			   floor_p99 > 0 ? p99 / floor_p99 : 0, "x floor p99");
}

/*
 * Collect ls->samples ALLOCATE latencies, each right after a floor NOOP on
 * the same connection.  Allocations are held until the zeroed pool runs
 * low, then released and the pool re-zeroed (untimed), so every timed
 * ALLOCATE is served from zeroed extents without waiting.
 */
static int measure_alloc(struct pmemz_client *c, struct pmemz_region *r, struct lat_size *ls,
			 size_t payload, struct bench_floor *fl)
{
	size_t per = (size_t)((ls->bytes + r->extent_size - 1) / r->extent_size), held = 0, cap;
	struct pmemz_alloc **hold;
	struct bench_stat st;
	unsigned done = 0;
	int ret;

	ret = bench_stat(c, r->name, &st);
	if (ret < 0)
		return ret;
	cap = (size_t)(st.extent_count / per);
	if (cap > 2)
		cap -= 1; /* leave a little slack */
	hold = calloc(cap, sizeof(*hold));
	if (!hold)
		return -ENOMEM;
	while (done < ls->samples && ret >= 0) {
		ret = bench_wait_zeroed(c, r->name, 600);
		for (held = 0; ret >= 0 && held < cap && done < ls->samples; held++, done++) {
			double raw = fl ? bench_floor_round_trip(fl) : -1;
			uint64_t t0;

			if (raw >= 0)
				samples_add(&ls->raw, raw);
			t0 = bench_now_ns();
			ret = bench_noop(c, payload);
			samples_add(&ls->floor, us_since(t0));
			if (ret < 0)
				break;
			t0 = bench_now_ns();
			ret = pmemz_alloc_new(r, ls->bytes, 0, &hold[held]);
			samples_add(&ls->alloc, us_since(t0));
			if (ret < 0)
				break;
		}
		for (size_t i = 0; i < held; i++)
			if (hold[i])
				pmemz_alloc_close(hold[i]);
		memset(hold, 0, cap * sizeof(*hold));
	}
	free(hold);
	if (ret < 0)
		fprintf(stderr, "pmemz-bench: ALLOCATE %s: %s\n", ls->label, pmemz_errormsg());
	return ret < 0 ? ret : bench_wait_zeroed(c, r->name, 600);
}

/*
 * The 2 MiB ALLOCATEs again with the daemon's main thread and this thread
 * pinned to the raw floor's CPU: what the daemon's path costs without the
 * cross-CPU wake-ups the floor does not pay either.  Affinities are
 * restored (the daemon's to every CPU).
 */
static int measure_one_cpu(struct pmemz_client *c, struct pmemz_region *r, struct lat_size *ls,
			   size_t payload, struct bench_floor *fl, pid_t daemon)
{
	cpu_set_t one, all, mine;
	int ret;

	CPU_ZERO(&one);
	CPU_SET(bench_floor_cpu(fl), &one);
	CPU_ZERO(&all);
	for (int i = 0; i < CPU_SETSIZE && i < (int)sysconf(_SC_NPROCESSORS_CONF); i++)
		CPU_SET(i, &all);
	if (sched_getaffinity(0, sizeof(mine), &mine) < 0 ||
	    sched_setaffinity(daemon, sizeof(one), &one) < 0)
		return 0; /* not ours to pin: no 1-CPU run */
	if (sched_setaffinity(0, sizeof(one), &one) < 0) {
		(void)sched_setaffinity(daemon, sizeof(all), &all);
		return 0;
	}
	ret = measure_alloc(c, r, ls, payload, fl);
	(void)sched_setaffinity(0, sizeof(mine), &mine);
	(void)sched_setaffinity(daemon, sizeof(all), &all);
	return ret;
}

/* Zeroing inline: the same sizes, on the caller's thread, in a leased area. */
static void measure_inline(struct bench_map *m, uint8_t *area, size_t area_len, struct lat_size *ls)
{
	size_t off = 0;

	for (unsigned i = 0; i < ls->samples; i++) {
		uint8_t *p;
		uint64_t t0;

		if (off + ls->bytes > area_len)
			off = 0;
		p = area + off;
		off += ls->bytes;
		t0 = bench_now_ns();
		m->memset_fn(p, 0, ls->bytes, PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN);
		m->drain_fn();
		samples_add(&ls->nt, us_since(t0));
		t0 = bench_now_ns();
		for (size_t b = 0; b < ls->bytes; b += 4096)
			kern_memset_clflush(p + b, 4096);
		samples_add(&ls->clflush, us_since(t0));
	}
}

int scenario_alloc(struct bench_env *e)
{
	unsigned n = opt.quick ? 150 : 400 * opt.reps;
	struct lat_size sizes[] = {
	    {.label = "64 KiB", .bytes = 64 * KIB, .small = true, .samples = n},
	    {.label = "2 MiB", .bytes = 2 * MIB, .samples = n},
	    {.label = "64 MiB", .bytes = 64 * MIB, .samples = opt.quick ? 20 : 80 * opt.reps},
	};
	struct pmemz_client *c = NULL, *cs = NULL;
	struct pmemz_region *r = NULL, *rs = NULL;
	struct pmemz_alloc *area = NULL;
	struct bench_map m;
	size_t payload, area_len;
	double floor_p99, warm, ratio_2m = 0, ratio_raw = 0;
	struct lat_size one_cpu = {.label = "2 MiB, 1 CPU", .bytes = 2 * MIB, .samples = n};
	struct bench_floor *fl = NULL;
	char name[96];
	int ret;

	report_section("2. Allocation latency vs the transport floor (us)");
	ret = bench_connect(e, e->region, &c, &r);
	if (ret < 0)
		goto out;
	ret = bench_connect(e, e->small_region, &cs, &rs);
	if (ret < 0)
		goto out;
	if (e->own_daemon) {
		warm = bench_daemon_warmup(c, r);
		if (warm < 0) {
			ret = (int)warm;
			goto out;
		}
		if (warm > 0)
			report_note("daemon start: first zeroing pass of its fresh mapping, made "
				    "urgent by a waiting ALLOCATE: %.2f GiB/s",
				    warm);
		(void)bench_daemon_warmup(cs, rs);
	}
	ret = bench_wait_zeroed(c, e->region, 600);
	if (ret >= 0)
		ret = bench_wait_zeroed(cs, e->small_region, 600);
	if (ret < 0)
		goto out;
	payload = floor_payload(e->region);
	{
		size_t req_len, resp_len;

		bench_alloc_frame_sizes(e->region, &req_len, &resp_len);
		if (bench_floor_open(req_len, resp_len, &fl) < 0)
			fl = NULL;
	}

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && ret >= 0; i++) {
		ret = measure_alloc(sizes[i].small ? cs : c, sizes[i].small ? rs : r, &sizes[i],
				    payload, fl);
		bench_log("ALLOCATE %s: %zu samples", sizes[i].label, sizes[i].alloc.n);
	}
	if (ret >= 0 && fl && e->pid)
		ret = measure_one_cpu(c, r, &one_cpu, payload, fl, e->pid);
	if (ret < 0)
		goto out;

	/* Inline zeroing, in a leased 64 MiB area of the same mapping, warmed. */
	ret = pmemz_alloc_new(r, 64 * MIB, 0, &area);
	if (ret < 0)
		goto out;
	bench_map_from_region(r, &m);
	area_len = pmemz_alloc_size(area);
	if (pmemz_alloc_count(area) != 1) {
		ret = -EFBIG; /* want one contiguous range */
		goto out;
	}
	{
		uint8_t *p = pmemz_alloc_range(area, 0, NULL);

		bench_prefault(p, area_len);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			measure_inline(&m, p, area_len, &sizes[i]);
	}

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double raw_p99 = sizes[i].raw.n ? samples_pct(&sizes[i].raw, 99) : 0;

		if (raw_p99 > 0) {
			(void)snprintf(name, sizeof(name),
				       "floor: raw AF_UNIX echo, 1 CPU (with %s)", sizes[i].label);
			report_latency_row(S2, name, samples_pct(&sizes[i].raw, 50), raw_p99,
					   samples_pct(&sizes[i].raw, 99.9), 0, NULL);
		}
		floor_p99 = samples_pct(&sizes[i].floor, 99);
		(void)snprintf(name, sizeof(name), "floor: NOOP, %zu B payload (with %s)", payload,
			       sizes[i].label);
		report_latency_row(S2, name, samples_pct(&sizes[i].floor, 50), floor_p99,
				   samples_pct(&sizes[i].floor, 99.9), 0, NULL);
		(void)snprintf(name, sizeof(name), "ALLOCATE %s from the zeroed pool%s",
			       sizes[i].label, sizes[i].small ? " (64K ext)" : "");
		latency_row(name, &sizes[i].alloc, floor_p99);
		if (raw_p99 > 0)
			report_note("ALLOCATE %s: p99 %.2fx the raw 1-CPU floor's p99, p50 %.2fx "
				    "its p50",
				    sizes[i].label, samples_pct(&sizes[i].alloc, 99) / raw_p99,
				    samples_pct(&sizes[i].alloc, 50) /
					samples_pct(&sizes[i].raw, 50));
		if (i == 1) {
			ratio_2m = samples_pct(&sizes[i].alloc, 99) / floor_p99;
			ratio_raw = raw_p99 > 0 ? samples_pct(&sizes[i].alloc, 99) / raw_p99 : 0;
		}
	}
	floor_p99 = samples_pct(&sizes[1].floor, 99); /* inline rows: against the 2 MiB floor */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		(void)snprintf(name, sizeof(name), "inline NT zero + drain, %s", sizes[i].label);
		latency_row(name, &sizes[i].nt, floor_p99);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		(void)snprintf(name, sizeof(name), "inline memset + clflush, %s", sizes[i].label);
		latency_row(name, &sizes[i].clflush, floor_p99);
	}
	report_note("each ALLOCATE right after a NOOP on the same connection: %u per size (64 MiB: "
		    "%u); its ratio is to the p99 of those NOOPs; inline rows: to the 2 MiB floor",
		    sizes[0].samples, sizes[2].samples);
	if (one_cpu.alloc.n) {
		double raw_p99 = samples_pct(&one_cpu.raw, 99);

		report_latency_row(S2, "floor: raw AF_UNIX echo, 1 CPU (with 1-CPU run)",
				   samples_pct(&one_cpu.raw, 50), raw_p99,
				   samples_pct(&one_cpu.raw, 99.9), 0, NULL);
		report_latency_row(S2, "NOOP, client + daemon loop on that CPU",
				   samples_pct(&one_cpu.floor, 50), samples_pct(&one_cpu.floor, 99),
				   samples_pct(&one_cpu.floor, 99.9),
				   samples_pct(&one_cpu.floor, 99) / raw_p99, "x raw floor p99");
		latency_row("ALLOCATE 2 MiB, client + daemon loop on that CPU", &one_cpu.alloc,
			    raw_p99);
		report_note("1-CPU run: the daemon's main thread and this client pinned to the raw "
			    "floor's CPU (%u ALLOCATEs): the same path without cross-CPU wake-ups",
			    one_cpu.samples);
	}
	report_note("raw floor: %s frames as large as ALLOCATE's, over a socket pair to an "
		    "epoll echo thread, both ends pinned to one CPU, one before each NOOP",
		    fl ? "measured with" : "not measured:");
	report_target("ALLOCATE 2 MiB p99 <= 1.5 x floor p99", ratio_2m, 1.5, false);
	if (ratio_raw > 0)
		report_target("ALLOCATE 2 MiB p99 <= 1.2 x raw 1-CPU floor p99", ratio_raw, 1.2,
			      false);

out:
	if (ret < 0)
		fprintf(stderr, "pmemz-bench: scenario 2: %s (%s)\n", strerror(-ret),
			pmemz_errormsg());
	if (area)
		pmemz_alloc_close(area);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		samples_free(&sizes[i].alloc);
		samples_free(&sizes[i].nt);
		samples_free(&sizes[i].clflush);
		samples_free(&sizes[i].floor);
		samples_free(&sizes[i].raw);
	}
	samples_free(&one_cpu.alloc);
	samples_free(&one_cpu.floor);
	samples_free(&one_cpu.raw);
	samples_free(&one_cpu.nt);
	samples_free(&one_cpu.clflush);
	bench_floor_close(fl);
	pmemz_region_close(rs);
	pmemz_region_close(r);
	pmemz_client_free(cs);
	pmemz_client_free(c);
	return ret < 0 ? ret : 0;
}

/* ---- scenario 3 ---- */

struct tp_worker {
	pthread_t th;
	const struct bench_env *e;
	unsigned id;
	bool pipelined;
	unsigned window;
	uint64_t stop_ns;
	pthread_barrier_t *start;
	uint64_t cycles;
	int ret;
	char err[256];
};

enum cyc_state { CY_ALLOC, CY_COMMIT, CY_FREE };

struct cycle {
	struct pmemz_pending *t;
	enum cyc_state st;
	char tag[48];
};

static int submit_step(struct pmemz_client *c, const char *region, struct cycle *cy, uint64_t bytes,
		       uint64_t lease)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__CommitReq cm = PMEMZ__COMMIT_REQ__INIT;
	Pmemz__FreeReq fr = PMEMZ__FREE_REQ__INIT;

	switch (cy->st) {
	case CY_ALLOC:
		al.region = (char *)(uintptr_t)region;
		al.bytes = bytes;
		req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
		req.allocate = &al;
		break;
	case CY_COMMIT:
		cm.region = (char *)(uintptr_t)region;
		cm.lease = lease;
		cm.tag = cy->tag;
		req.op_case = PMEMZ__REQUEST__OP_COMMIT;
		req.commit = &cm;
		break;
	case CY_FREE:
		fr.region = (char *)(uintptr_t)region;
		fr.tag = cy->tag;
		req.op_case = PMEMZ__REQUEST__OP_FREE;
		req.free = &fr;
		break;
	}
	return pmemz_client_submit(c, &req, &cy->t);
}

/* Pipelined: `window` independent cycles in flight on one connection. */
static int run_pipelined(struct tp_worker *w, struct pmemz_client *c, struct pmemz_region *r)
{
	struct cycle *cy = calloc(w->window, sizeof(*cy));
	uint64_t seq = 0;
	unsigned active = 0;
	int ret = 0;

	if (!cy)
		return -ENOMEM;
	for (unsigned i = 0; i < w->window && ret >= 0; i++, active++) {
		cy[i].st = CY_ALLOC;
		ret = submit_step(c, r->name, &cy[i], r->extent_size, 0);
	}
	while (active && ret >= 0) {
		for (unsigned i = 0; i < w->window && ret >= 0; i++) {
			_cleanup_response_ Pmemz__Response *resp = NULL;
			uint64_t lease = 0;

			if (!cy[i].t)
				continue;
			ret = pmemz_client_wait(c, cy[i].t, &resp, NULL);
			cy[i].t = NULL;
			if (ret >= 0)
				ret = pmemz_check_response(
				    cy[i].st == CY_ALLOC    ? PMEMZ__REQUEST__OP_ALLOCATE
				    : cy[i].st == CY_COMMIT ? PMEMZ__REQUEST__OP_COMMIT
							    : PMEMZ__REQUEST__OP_FREE,
				    resp);
			if (ret < 0)
				break;
			switch (cy[i].st) {
			case CY_ALLOC:
				lease = resp->allocate->lease;
				(void)snprintf(cy[i].tag, sizeof(cy[i].tag), "b%u-%" PRIu64, w->id,
					       seq++);
				cy[i].st = CY_COMMIT;
				break;
			case CY_COMMIT:
				cy[i].st = CY_FREE;
				break;
			case CY_FREE:
				w->cycles++;
				if (bench_now_ns() >= w->stop_ns) {
					active--;
					continue;
				}
				cy[i].st = CY_ALLOC;
				break;
			}
			ret = submit_step(c, r->name, &cy[i], r->extent_size, lease);
		}
	}
	/* On error: collect what is still in flight. */
	for (unsigned i = 0; i < w->window; i++) {
		_cleanup_response_ Pmemz__Response *resp = NULL;

		if (cy[i].t)
			(void)pmemz_client_wait(c, cy[i].t, &resp, NULL);
	}
	free(cy);
	return ret;
}

static int run_sync(struct tp_worker *w, struct pmemz_region *r)
{
	uint64_t seq = 0;
	int ret = 0;

	while (bench_now_ns() < w->stop_ns && ret >= 0) {
		struct pmemz_alloc *a;
		char tag[48];

		ret = pmemz_alloc_new(r, (size_t)r->extent_size, 0, &a);
		if (ret < 0)
			break;
		(void)snprintf(tag, sizeof(tag), "b%u-%" PRIu64, w->id, seq++);
		ret = pmemz_alloc_commit(a, tag, 0);
		if (ret < 0) {
			pmemz_alloc_close(a);
			break;
		}
		ret = pmemz_alloc_release(a);
		if (ret >= 0)
			w->cycles++;
	}
	return ret;
}

static void *tp_thread(void *arg)
{
	struct tp_worker *w = arg;
	struct pmemz_client *c;
	struct pmemz_region *r;

	w->ret = bench_connect(w->e, w->e->small_region, &c, &r);
	(void)pthread_barrier_wait(w->start);
	(void)pthread_barrier_wait(w->start); /* the main thread set stop_ns */
	if (w->ret < 0) {
		(void)snprintf(w->err, sizeof(w->err), "%s", pmemz_errormsg());
		return NULL;
	}
	w->ret = w->pipelined ? run_pipelined(w, c, r) : run_sync(w, r);
	if (w->ret < 0)
		(void)snprintf(w->err, sizeof(w->err), "%s", pmemz_errormsg());
	pmemz_region_close(r);
	pmemz_client_free(c);
	return NULL;
}

/* One run: cycles per second over all connections. */
static int tp_run(const struct bench_env *e, unsigned conns, bool pipelined, double secs,
		  double *rate, uint64_t *cycles)
{
	struct tp_worker w[4];
	pthread_barrier_t start;
	uint64_t t0, stop, total = 0;
	int ret = 0;

	(void)pthread_barrier_init(&start, NULL, conns + 1);
	for (unsigned i = 0; i < conns; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].e = e;
		w[i].id = i;
		w[i].pipelined = pipelined;
		w[i].window = 16;
		w[i].start = &start;
		if (pthread_create(&w[i].th, NULL, tp_thread, &w[i]) != 0)
			bench_die("pthread_create failed");
	}
	(void)pthread_barrier_wait(&start); /* all connected */
	t0 = bench_now_ns();
	stop = t0 + (uint64_t)(secs * 1e9);
	for (unsigned i = 0; i < conns; i++)
		w[i].stop_ns = stop;
	(void)pthread_barrier_wait(&start);
	for (unsigned i = 0; i < conns; i++) {
		(void)pthread_join(w[i].th, NULL);
		total += w[i].cycles;
		if (w[i].ret < 0 && ret >= 0) {
			ret = w[i].ret;
			fprintf(stderr, "pmemz-bench: connection %u: %s\n", i, w[i].err);
		}
	}
	(void)pthread_barrier_destroy(&start);
	*rate = (double)total / ((double)(bench_now_ns() - t0) / 1e9);
	*cycles = total;
	return ret;
}

int scenario_throughput(struct bench_env *e)
{
	static const unsigned conns[] = {1, 2, 4};
	struct bench_samples rate[2][3] = {{{0}}}, dpc[2][3] = {{{0}}};
	double secs = opt.quick ? 0.25 : 1.0, ref;
	struct pmemz_client *c;
	struct pmemz_region *r;
	struct bench_stat st;
	char name[96];
	int ret;

	report_section("3. Throughput: allocate -> commit -> release cycles (cycles/s)");
	ret = bench_connect(e, e->small_region, &c, &r);
	if (ret < 0)
		return ret;
	ret = bench_stat(c, e->small_region, &st);
	if (ret < 0)
		goto out;
	for (unsigned rep = 0; rep < opt.reps && ret >= 0; rep++) {
		for (int p = 0; p < 2 && ret >= 0; p++) {
			for (size_t k = 0; k < 3 && ret >= 0; k++) {
				struct bench_stat s0, s1;
				uint64_t cycles;
				double v;

				ret = bench_wait_zeroed(c, e->small_region, 600);
				if (ret >= 0)
					ret = bench_stat(c, e->small_region, &s0);
				if (ret >= 0)
					ret = tp_run(e, conns[k], p == 1, secs, &v, &cycles);
				if (ret >= 0)
					ret = bench_stat(c, e->small_region, &s1);
				if (ret < 0)
					break;
				samples_add(&rate[p][k], v);
				if (s1.commits > s0.commits)
					samples_add(&dpc[p][k],
						    (double)(s1.drains - s0.drains) /
							(double)(s1.commits - s0.commits));
			}
		}
		bench_log("throughput rep %u done", rep + 1);
	}
	if (ret < 0)
		goto out;
	ref = samples_median(&rate[0][0]);
	for (int p = 0; p < 2; p++)
		for (size_t k = 0; k < 3; k++) {
			(void)snprintf(name, sizeof(name), "%s, %u connection%s%s",
				       p ? "pipelined (16 in flight each)" : "synchronous",
				       conns[k], conns[k] > 1 ? "s" : "", "");
			report_samples(S3, name, "cycles/s", &rate[p][k], p || k ? ref : 0,
				       "x sync 1 conn");
		}
	for (int p = 0; p < 2; p++)
		for (size_t k = 0; k < 3; k++) {
			(void)snprintf(name, sizeof(name), "drains per commit, %s, %u conn",
				       p ? "pipelined" : "synchronous", conns[k]);
			report_samples(S3, name, "drains", &dpc[p][k], 0, NULL);
		}
	report_note("one cycle = ALLOCATE one %" PRIu64 " KiB extent, COMMIT it under a new tag, "
		    "FREE the tag; drains = the daemon's state drains (leases, commits, frees, "
		    "ZEROED states) per committed cycle",
		    (uint64_t)(st.extent_size / KIB));

out:
	pmemz_region_close(r);
	pmemz_client_free(c);
	for (int p = 0; p < 2; p++)
		for (size_t k = 0; k < 3; k++) {
			samples_free(&rate[p][k]);
			samples_free(&dpc[p][k]);
		}
	return ret < 0 ? ret : 0;
}
