/* SPDX-License-Identifier: MIT */
/*
 * Scenario 4: fill fresh space (the 2015 "8 GiB fresh pwrite" experiment,
 * sized to the machine).  An application writes --fill bytes into newly
 * allocated space in 2 MiB units and makes each unit durable (libpmem2 NT
 * copy + drain), under:
 *   (a) no zeroing at all (UNSAFE: stale data visible after a crash) - the reference
 *   (b) inline memset + clflush of each 4 KiB block before writing it (XFS+DAX, 2015)
 *   (c) inline libpmem2 NT zero + drain of the unit before writing it
 *   (d) units allocated from pmemzerod's pre-zeroed pool, the library's
 *       reserve taking the round trip off the write path
 *   (d') the same with one synchronous ALLOCATE round trip per unit
 *   (e) as (d), but the pool starts empty: the daemon zeroes while the
 *       application writes
 * Every variant writes through the same mapping (the client library's),
 * warmed once, so page-table and first-touch costs are the same for all;
 * (a)-(c) write into extents leased beforehand (untimed), so the daemon
 * never hands them out meanwhile.  Each repetition runs all variants in a
 * row; each is paired with an (a) run over the same units just before or
 * after it, and its ratio is to that run (the machine's noise comes and goes
 * within seconds).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"
#include "client-private.h"
#include "libpmemzclient.h"

#define S4 "fill"
#define UNIT (2 * MIB)

enum { V_A, V_B, V_C, V_DSYNC, V_D, V_E, NV };

struct fill {
	struct pmemz_client *c;
	struct pmemz_region *r;
	struct bench_map m;
	uint8_t *src;
	size_t units;
	uint8_t **dst;		   /* (a)-(c): unit addresses */
	struct pmemz_alloc **held; /* (a)-(c): the leases; (d), (e): one per unit */
	size_t n_held;
	uint64_t e_start_zeroed;      /* zeroed extents left in the pool when (e) started */
	struct bench_samples lat[NV]; /* per-unit pmemz_alloc_new times, all repetitions */
	pid_t daemon;		      /* our daemon (its main loop is thread `daemon`), 0: none */
	/* Summed over repetitions per variant: wall time, and the run / run-queue
	 * wait times of the writer (this thread) and of the daemon's main loop. */
	uint64_t wall_ns[NV], w_run[NV], w_wait[NV], d_run[NV], d_wait[NV];
	/* The reserve's depth over (d) and (e), summed over repetitions. */
	struct pmemz_reserve_stats rs_last;
	uint64_t a_wall, a_run, a_wait; /* the (a) runs paired with (d), as wall_ns etc. */
	size_t max_depth, d_depth;
	uint64_t stalls, cuts, d_stalls;
	uint64_t d_observe, d_collect, d_stall, d_refill; /* (d)'s time in the reserve, ns */
};

static void schedstat(pid_t pid, pid_t tid, uint64_t *run, uint64_t *wait)
{
	char path[96];
	unsigned long long r = 0, w = 0;
	FILE *fp;

	(void)snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	fp = fopen(path, "re");
	if (fp) {
		if (fscanf(fp, "%llu %llu", &r, &w) != 2)
			r = w = 0;
		(void)fclose(fp);
	}
	*run = r;
	*wait = w;
}

static double gbps(uint64_t bytes, uint64_t t0)
{
	return (double)bytes / 1e9 / ((double)(bench_now_ns() - t0) / 1e9);
}

static void write_unit(struct fill *f, uint8_t *p)
{
	kern_write_durable(&f->m, p, f->src, UNIT);
}

/* Release many leases with pipelined FREEs (a few ms, not one round trip each). */
static int release_all(struct fill *f)
{
	struct pmemz_pending **t = calloc(f->n_held, sizeof(*t));
	int ret = 0;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < f->n_held; i++) {
		Pmemz__Request req = PMEMZ__REQUEST__INIT;
		Pmemz__FreeReq fr = PMEMZ__FREE_REQ__INIT;

		if (!f->held[i])
			continue;
		fr.region = f->r->name;
		fr.has_lease = true;
		fr.lease = f->held[i]->lease;
		req.op_case = PMEMZ__REQUEST__OP_FREE;
		req.free = &fr;
		if (ret >= 0)
			ret = pmemz_client_submit(f->c, &req, &t[i]);
	}
	for (size_t i = 0; i < f->n_held; i++) {
		_cleanup_response_ Pmemz__Response *resp = NULL;

		if (t[i] && pmemz_client_wait(f->c, t[i], &resp, NULL) >= 0 && ret >= 0)
			ret = pmemz_check_response(PMEMZ__REQUEST__OP_FREE, resp);
		if (f->held[i]) {
			f->held[i]->committed = true; /* freed above: the handle only */
			pmemz_alloc_close(f->held[i]);
			f->held[i] = NULL;
		}
	}
	free(t);
	f->n_held = 0;
	return ret;
}

/* (a)-(c): lease the space first, untimed, in 64 MiB allocations. */
static int lease_units(struct fill *f)
{
	size_t u = 0;
	int ret = 0;

	f->n_held = 0;
	while (u < f->units && ret >= 0) {
		struct pmemz_alloc *a;
		size_t want = (f->units - u) * UNIT;

		ret = pmemz_alloc_new(f->r, want < 64 * MIB ? want : 64 * MIB, 0, &a);
		if (ret < 0)
			break;
		f->held[f->n_held++] = a;
		for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
			size_t len;
			uint8_t *p = pmemz_alloc_range(a, i, &len);

			for (size_t off = 0; off + UNIT <= len && u < f->units; off += UNIT)
				f->dst[u++] = p + off;
		}
	}
	return ret;
}

static double run_inline(struct fill *f, int v)
{
	uint64_t t0 = bench_now_ns();

	for (size_t u = 0; u < f->units; u++) {
		uint8_t *p = f->dst[u];

		if (v == V_B) {
			for (size_t b = 0; b < UNIT; b += 4096)
				kern_memset_clflush(p + b, 4096);
		} else if (v == V_C) {
			f->m.memset_fn(p, 0, UNIT, PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN);
			f->m.drain_fn();
		}
		write_unit(f, p);
	}
	return gbps(f->units * UNIT, t0);
}

/* (d), (e): each unit is a fresh allocation from the daemon.  *alloc_us:
 * the mean time per unit spent in pmemz_alloc_new; lat gets each one. */
static int run_pool(struct fill *f, int v, double *out, double *alloc_us, struct bench_samples *lat)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	uint64_t wr0, ww0, dr0 = 0, dw0 = 0, wr1, ww1, dr1 = 0, dw1 = 0;
	uint64_t t0, in_alloc = 0;
	int ret = 0;

	schedstat(getpid(), self, &wr0, &ww0);
	if (f->daemon)
		schedstat(f->daemon, f->daemon, &dr0, &dw0);
	t0 = bench_now_ns();

	for (size_t u = 0; u < f->units; u++) {
		struct pmemz_alloc *a;
		uint64_t a0 = bench_now_ns();
		size_t len;
		uint8_t *p;

		ret = pmemz_alloc_new(f->r, UNIT, 0, &a);
		in_alloc += bench_now_ns() - a0;
		samples_add(lat, (double)(bench_now_ns() - a0) / 1e3);
		if (ret < 0)
			return ret;
		f->held[f->n_held++] = a;
		p = pmemz_alloc_range(a, 0, &len);
		write_unit(f, p);
	}
	*out = gbps(f->units * UNIT, t0);
	f->wall_ns[v] += bench_now_ns() - t0;
	*alloc_us = (double)in_alloc / 1e3 / (double)f->units;
	schedstat(getpid(), self, &wr1, &ww1);
	if (f->daemon)
		schedstat(f->daemon, f->daemon, &dr1, &dw1);
	f->w_run[v] += wr1 - wr0;
	f->w_wait[v] += ww1 - ww0;
	f->d_run[v] += dr1 - dr0;
	f->d_wait[v] += dw1 - dw0;
	return 0;
}

/* The units (d), (d') or (e) just allocated, for the (a) run paired with it. */
static void units_from_held(struct fill *f)
{
	for (size_t u = 0; u < f->n_held && u < f->units; u++)
		f->dst[u] = pmemz_alloc_range(f->held[u], 0, NULL);
}

/*
 * One repetition.  Each variant is paired with an (a) run over the same
 * units right before it ((b), (c)) or right after it ((d'), (d), (e): over
 * the units it was given), and its ratio is to that run.
 */
static int one_rep(struct fill *f, double v[NV], double pair[NV], double au[NV])
{
	struct pmemz_reserve_stats rs = {0}, rs_before = {0};
	struct bench_stat st;
	uint64_t blocker = 0;
	bool has_blocker = false;
	int ret;

	/* (a)-(c) */
	ret = bench_wait_zeroed(f->c, f->r->name, 600);
	if (ret >= 0)
		ret = lease_units(f);
	if (ret < 0)
		return ret;
	pair[V_B] = run_inline(f, V_A);
	v[V_B] = run_inline(f, V_B);
	pair[V_C] = run_inline(f, V_A);
	v[V_C] = run_inline(f, V_C);
	ret = release_all(f);

	/* (d'): a round trip per unit */
	if (ret >= 0)
		ret = bench_wait_zeroed(f->c, f->r->name, 600);
	if (ret >= 0)
		ret = run_pool(f, V_DSYNC, &v[V_DSYNC], &au[V_DSYNC], &f->lat[V_DSYNC]);
	if (ret >= 0) {
		units_from_held(f);
		pair[V_DSYNC] = run_inline(f, V_A);
		ret = release_all(f);
	}

	/* (d): the reserve */
	if (ret >= 0)
		ret = bench_wait_zeroed(f->c, f->r->name, 600);
	if (ret >= 0)
		ret = pmemz_region_set_reserve(f->r, (size_t)opt.reserve);
	pmemz_reserve_get_stats(f->r, &rs_before);
	if (ret >= 0)
		ret = run_pool(f, V_D, &v[V_D], &au[V_D], &f->lat[V_D]);
	if (ret >= 0) {
		pid_t self = (pid_t)syscall(SYS_gettid);
		uint64_t r0, w0, r1, w1, t0;

		pmemz_reserve_get_stats(f->r, &rs);
		f->d_observe += rs.observe_ns - rs_before.observe_ns;
		f->d_collect += rs.collect_ns - rs_before.collect_ns;
		f->d_stall += rs.stall_ns - rs_before.stall_ns;
		f->d_refill += rs.refill_ns - rs_before.refill_ns;
		f->d_stalls += rs.stalls;
		f->d_depth = MAX(f->d_depth, rs.max_target);
		units_from_held(f);
		t0 = bench_now_ns();
		schedstat(getpid(), self, &r0, &w0);
		pair[V_D] = run_inline(f, V_A);
		schedstat(getpid(), self, &r1, &w1);
		f->a_wall += bench_now_ns() - t0;
		f->a_run += r1 - r0;
		f->a_wait += w1 - w0;
	}

	/* (e): everything (d) wrote is freed at once, DIRTY, and written again
	 * while the daemon zeroes it; the rest of the zeroed pool is held by a
	 * blocker lease, so the pool starts empty. */
	if (ret >= 0)
		ret = release_all(f);
	if (ret >= 0)
		ret = bench_stat(f->c, f->r->name, &st);
	if (ret >= 0) {
		/* Leave (e) exactly the free extents it needs (its units and a full
		 * reserve); the blocker takes zeroed ones beyond that. */
		uint64_t need = f->units + MIN(DIV_ROUND_UP(opt.reserve, UNIT), 64),
			 free_n = st.zeroed + st.dirty;
		uint64_t n = free_n > need ? MIN(st.zeroed, free_n - need) : 0;

		if (n) {
			ret = bench_raw_alloc(f->c, f->r->name, n * UNIT, true, &blocker);
			has_blocker = ret >= 0;
		}
	}
	if (ret >= 0)
		ret = bench_stat(f->c, f->r->name, &st);
	if (ret >= 0) {
		f->e_start_zeroed = st.zeroed;
		ret = run_pool(f, V_E, &v[V_E], &au[V_E], &f->lat[V_E]);
	}
	if (ret >= 0) {
		units_from_held(f);
		pair[V_E] = run_inline(f, V_A);
		ret = release_all(f);
	}
	if (has_blocker)
		(void)bench_raw_free(f->c, f->r->name, blocker);
	/* set_reserve(0) starts the depth over: keep what it learnt first. */
	pmemz_reserve_get_stats(f->r, &rs);
	f->rs_last = rs;
	f->max_depth = MAX(f->max_depth, rs.max_target);
	f->stalls += rs.stalls;
	f->cuts += rs.cuts;
	(void)pmemz_region_set_reserve(f->r, 0);
	pair[V_A] = v[V_A] = pair[V_B];
	return ret;
}

int scenario_fill(struct bench_env *e)
{
	static const char *const names[NV] = {
	    "(a) no zeroing (UNSAFE), reference",
	    "(b) inline memset + clflush per 4 KiB, then write",
	    "(c) inline NT zero + drain, then write",
	    "(d') pre-zeroed pool, 1 ALLOCATE round trip/unit",
	    "(d) pre-zeroed pool + client reserve",
	    "(e) empty pool at start: zeroer competes",
	};
	struct bench_samples val[NV] = {{0}}, ratio[NV] = {{0}}, db = {0}, alloc_us[NV] = {{0}};
	struct pmemz_reserve_stats rs0, rs1;
	struct fill f = {0};
	char buf[128];
	int ret;

	(void)snprintf(buf, sizeof(buf), "4. Fill fresh space: %s in 2 MiB units, durable (GB/s)",
		       pmemz_format_size(opt.fill_bytes, buf + 100, 28));
	report_section(buf);
	ret = bench_connect(e, e->region, &f.c, &f.r);
	if (ret < 0)
		return ret;
	if (f.r->extent_size != UNIT) {
		fprintf(stderr,
			"pmemz-bench: region '%s' has %" PRIu64 " byte extents, not 2 MiB\n",
			f.r->name, f.r->extent_size);
		ret = -EINVAL;
		goto out;
	}
	f.units = (size_t)(opt.fill_bytes / UNIT);
	if (f.units + DIV_ROUND_UP(opt.reserve, UNIT) + 1 > f.r->extent_count) {
		fprintf(stderr,
			"pmemz-bench: region '%s' (%" PRIu64 " extents) cannot hold %zu units\n",
			f.r->name, f.r->extent_count, f.units);
		ret = -ENOSPC;
		goto out;
	}
	bench_map_from_region(f.r, &f.m);
	f.daemon = e->pid;
	f.src = aligned_alloc(4096, UNIT);
	f.dst = calloc(f.units, sizeof(*f.dst));
	f.held = calloc(f.units + 64, sizeof(*f.held));
	if (!f.src || !f.dst || !f.held) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < UNIT; i++)
		f.src[i] = (uint8_t)(i * 7 + 1);
	bench_warm_region(f.r); /* one mapping for every variant, warmed once */

	pmemz_reserve_get_stats(f.r, &rs0);
	for (unsigned rep = 0; rep < opt.reps && ret >= 0; rep++) {
		double v[NV], pair[NV], au[NV] = {0};

		ret = one_rep(&f, v, pair, au);
		if (ret < 0)
			break;
		for (int k = 0; k < NV; k++) {
			samples_add(&val[k], k == V_A ? pair[V_B] : v[k]);
			samples_add(&ratio[k], v[k] / pair[k]);
			if (k != V_A && k != V_B)
				samples_add(&val[V_A],
					    pair[k]); /* every (a) run is an (a) sample */
		}
		samples_add(&db, (v[V_D] / pair[V_D]) / (v[V_B] / pair[V_B]));
		for (int k = V_DSYNC; k < NV; k++)
			samples_add(&alloc_us[k], au[k]);
		bench_log(
		    "fill rep %u: b %.2f/%.2f c %.2f/%.2f d' %.2f/%.2f d %.2f/%.2f e %.2f/%.2f "
		    "GB/s (variant/paired a)",
		    rep + 1, v[V_B], pair[V_B], v[V_C], pair[V_C], v[V_DSYNC], pair[V_DSYNC],
		    v[V_D], pair[V_D], v[V_E], pair[V_E]);
	}
	if (ret < 0) {
		fprintf(stderr, "pmemz-bench: scenario 4: %s (%s)\n", strerror(-ret),
			pmemz_errormsg());
		goto out;
	}
	pmemz_reserve_get_stats(f.r, &rs1);

	for (int k = 0; k < NV; k++)
		report_row(S4, names[k], "GB/s", samples_median(&val[k]), samples_min(&val[k]),
			   samples_max(&val[k]), k == V_A ? 0 : samples_median(&ratio[k]),
			   "x paired (a)");
	report_note("reserve %s (a floor of %zu leases of 2 MiB): %" PRIu64
		    " allocations served from it, "
		    "%" PRIu64 " not, %" PRIu64 " refill requests",
		    pmemz_format_size(opt.reserve, buf, sizeof(buf)),
		    (size_t)DIV_ROUND_UP(opt.reserve, UNIT), rs1.hits - rs0.hits,
		    rs1.misses - rs0.misses, rs1.refills - rs0.refills);
	report_note("reserve depth: %zu leases asked for, up to %zu in (d), %zu in (d)+(e) (cap "
		    "%zu); allocations that waited for a refill's answer: %" PRIu64
		    " in (d), %" PRIu64 " in (d)+(e); %" PRIu64
		    " refusals cut the depth; last rep: refill latency %.0f "
		    "us, caller's gap per allocation %.0f us",
		    f.rs_last.floor, f.d_depth, f.max_depth, f.rs_last.cap, f.d_stalls, f.stalls,
		    f.cuts, (double)f.rs_last.latency_ns / 1e3, (double)f.rs_last.gap_ns / 1e3);
	report_note("(e) started with %" PRIu64 " zeroed extents in the pool (last repetition); "
		    "the rest was DIRTY",
		    f.e_start_zeroed);
	report_note("pmemz_alloc_new per 2 MiB unit, mean (median of repetitions) / p50 / p99 "
		    "over all units: (d') %.1f / %.1f / %.1f us, (d) %.1f / %.1f / %.1f us, "
		    "(e) %.1f / %.1f / %.1f us; writing one unit at (a)'s rate takes %.1f us",
		    samples_median(&alloc_us[V_DSYNC]), samples_pct(&f.lat[V_DSYNC], 50),
		    samples_pct(&f.lat[V_DSYNC], 99), samples_median(&alloc_us[V_D]),
		    samples_pct(&f.lat[V_D], 50), samples_pct(&f.lat[V_D], 99),
		    samples_median(&alloc_us[V_E]), samples_pct(&f.lat[V_E], 50),
		    samples_pct(&f.lat[V_E], 99), (double)UNIT / 1e3 / samples_median(&val[V_A]));
	if (f.daemon)
		for (int k = V_DSYNC; k < NV; k += 1)
			report_note(
			    "%s: over %.0f ms of filling, the writer ran %.0f ms and waited "
			    "%.0f ms for a CPU; the daemon's main loop ran %.0f ms and waited "
			    "%.0f ms for a CPU (all repetitions)",
			    k == V_DSYNC ? "(d')"
			    : k == V_D	 ? "(d)"
					 : "(e)",
			    (double)f.wall_ns[k] / 1e6, (double)f.w_run[k] / 1e6,
			    (double)f.w_wait[k] / 1e6, (double)f.d_run[k] / 1e6,
			    (double)f.d_wait[k] / 1e6);
	if (f.daemon) {
		/* Where (d)'s time went next to its (a): a writer asleep was
		 * waiting for the daemon (the reserve ran dry), a writer waiting for
		 * a CPU was the machine's. */
		uint64_t d_sleep =
		    f.wall_ns[V_D] - MIN(f.wall_ns[V_D], f.w_run[V_D] + f.w_wait[V_D]);
		uint64_t a_sleep = f.a_wall - MIN(f.a_wall, f.a_run + f.a_wait);

		report_note(
		    "(d) vs its paired (a), all repetitions: wall %.0f / %.0f ms, writer on "
		    "CPU %.0f / %.0f ms, waiting for a CPU %.0f / %.0f ms, asleep %.0f / %.0f "
		    "ms; on-CPU ratio (a)/(d) %.3f",
		    (double)f.wall_ns[V_D] / 1e6, (double)f.a_wall / 1e6,
		    (double)f.w_run[V_D] / 1e6, (double)f.a_run / 1e6, (double)f.w_wait[V_D] / 1e6,
		    (double)f.a_wait / 1e6, (double)d_sleep / 1e6, (double)a_sleep / 1e6,
		    f.w_run[V_D] ? (double)f.a_run / (double)f.w_run[V_D] : 0.0);
	}
	report_note("(d)'s time in the reserve, all repetitions: reading answers %.1f ms, taking "
		    "answered leases %.1f ms, waiting for unanswered ones %.1f ms, sending refills "
		    "%.1f ms (wall clock: a preemption inside counts)",
		    (double)f.d_observe / 1e6, (double)f.d_collect / 1e6, (double)f.d_stall / 1e6,
		    (double)f.d_refill / 1e6);
	report_target("fill (d) >= 0.95 x (a)", samples_median(&ratio[V_D]), 0.95, true);
	report_target("fill (d) >= 2 x (b)", samples_median(&db), 2.0, true);

out:
	if (f.held)
		(void)release_all(&f);
	for (int k = 0; k < NV; k++) {
		samples_free(&val[k]);
		samples_free(&ratio[k]);
		samples_free(&alloc_us[k]);
		samples_free(&f.lat[k]);
	}
	samples_free(&db);
	free(f.src);
	free(f.dst);
	free(f.held);
	pmemz_region_close(f.r);
	pmemz_client_free(f.c);
	return ret < 0 ? ret : 0;
}
