/* SPDX-License-Identifier: MIT */
/*
 * Scenario 5: background zeroing as a waiting client sees it (docs/PERFORMANCE.md).
 * A client holding every extent of the main region releases it all and at
 * once asks for all of it again: that ALLOCATE waits for the zeroer, and
 * its wall time from the FREE to the reply is the figure.  The reference,
 * in the same repetition and on the same bytes through the client's own
 * (warm) mapping: one thread of libpmem2 NT memset, one drain per 64 MiB.
 * Measured with the default zeroer (1 thread, batch 64), then with the
 * daemon restarted with 2 zeroer threads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"
#include "client-private.h"
#include "libpmemzclient.h"

#define S5 "waiting-client zeroing"

/* Where one pass's wall time went, summed over the repetitions. */
struct pass_times {
	double wall, free_rt;		    /* s: the whole pass, the FREE's round trip */
	double zero_busy;		    /* s: the zeroer storing and draining (STAT) */
	double d_run, d_wait;		    /* s: daemon threads on CPU / waiting for one */
	double z_run;			    /* s: of d_run, the zeroer workers' */
	double ref_wall, ref_run, ref_wait; /* s: the reference thread's */
	double bytes;			    /* zeroed by each side, all passes */
	double grant;			    /* s: ALLOCATE of everything already zeroed (once) */
};

static void self_sched(uint64_t *run, uint64_t *wait)
{
	char path[64];
	unsigned long long r = 0, w = 0;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)gettid());
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%llu %llu", &r, &w) != 2)
			r = w = 0;
		(void)fclose(f);
	}
	*run = r;
	*wait = w;
}

/* The reference: NT memset of every range of a, 2 MiB chunks, drain per 64 MiB. */
static double ref_pass(struct bench_map *m, struct pmemz_alloc *a, struct pass_times *pt)
{
	uint64_t t0 = bench_now_ns(), r0, w0, r1, w1;
	double secs;

	self_sched(&r0, &w0);

	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		uint8_t *p = pmemz_alloc_range(a, i, &len);

		kern_nt_zero(m, p, len, 2 * MIB, 32);
	}
	secs = (double)(bench_now_ns() - t0) / 1e9;
	self_sched(&r1, &w1);
	if (pt) {
		pt->ref_wall += secs;
		pt->ref_run += (double)(r1 - r0) / 1e9;
		pt->ref_wait += (double)(w1 - w0) / 1e9;
	}
	return secs;
}

static double busy_s(const struct bench_stat *st)
{
	return st->zero_bytes_per_sec > 0 ? (double)st->bytes_zeroed / st->zero_bytes_per_sec : 0;
}

/* FREE everything, then one ALLOCATE of everything, which waits for the zeroer. */
static int daemon_pass(const struct bench_env *e, struct pmemz_region *r, struct pmemz_alloc **a,
		       size_t bytes, double *secs, struct pass_times *pt)
{
	struct bench_stat s0, s1;
	uint64_t t0, t1, run0 = 0, wait0 = 0, run1 = 0, wait1 = 0, zrun0 = 0, zrun1 = 0;
	int ret;

	ret = bench_stat(r->c, r->name, &s0);
	if (ret < 0)
		return ret;
	if (e->pid)
		bench_proc_sched(e->pid, &run0, &wait0, &zrun0);
	t0 = bench_now_ns();
	ret = pmemz_alloc_release(*a);
	*a = NULL;
	if (ret < 0)
		return ret;
	t1 = bench_now_ns();
	ret = pmemz_alloc_new(r, bytes, 0, a);
	*secs = (double)(bench_now_ns() - t0) / 1e9;
	if (ret < 0)
		return ret;
	if (e->pid)
		bench_proc_sched(e->pid, &run1, &wait1, &zrun1);
	ret = bench_stat(r->c, r->name, &s1);
	if (ret < 0 || !pt)
		return ret;
	pt->wall += *secs;
	pt->bytes += (double)bytes;
	pt->free_rt += (double)(t1 - t0) / 1e9;
	pt->zero_busy += busy_s(&s1) - busy_s(&s0);
	pt->d_run += (double)(run1 - run0) / 1e9;
	pt->d_wait += (double)(wait1 - wait0) / 1e9;
	pt->z_run += (double)(zrun1 - zrun0) / 1e9;
	if (opt.verbose)
		bench_log("%s: pass at %.6f: %.2f ms: FREE %.2f ms, zeroer storing %.2f ms, on a CPU "
			  "%.2f ms\n",
			  S5, (double)t0 / 1e9, *secs * 1e3, (double)(t1 - t0) / 1e6,
			  (busy_s(&s1) - busy_s(&s0)) * 1e3, (double)(zrun1 - zrun0) / 1e6);
	return 0;
}

/*
 * The end of every pass, alone: the ALLOCATE of everything when all of it
 * is zeroed already (leases stored, one drain, the reply), no zeroer in it.
 */
static int grant_cost(struct pmemz_client *c, struct pmemz_region *r, const char *region,
		      struct pmemz_alloc **a, size_t bytes, struct pass_times *pt)
{
	uint64_t t0;
	int ret = pmemz_alloc_release(*a);

	*a = NULL;
	if (ret >= 0)
		ret = bench_wait_zeroed(c, region, 120);
	if (ret < 0)
		return ret;
	t0 = bench_now_ns();
	ret = pmemz_alloc_new(r, bytes, PMEMZ_ALLOC_NOWAIT, a);
	pt->grant = (double)(bench_now_ns() - t0) / 1e9;
	return ret;
}

static int measure(struct bench_env *e, unsigned threads, struct bench_samples *fig,
		   struct bench_samples *ref, struct bench_samples *ratio, struct pass_times *pt)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct bench_stat st;
	struct bench_map m;
	size_t bytes;
	double secs;
	int ret;

	ret = bench_connect(e, e->region, &c, &r);
	if (ret < 0)
		return ret;
	ret = bench_stat(c, e->region, &st);
	if (ret < 0)
		goto out;
	if (st.zeroer_threads != threads)
		bench_log("%s: the daemon runs %" PRIu64 " zeroer threads, not %u\n", S5,
			  st.zeroer_threads, threads);
	bytes = (size_t)((st.zeroed + st.dirty) * st.extent_size);
	ret = pmemz_alloc_new(r, bytes, 0, &a);
	if (ret < 0)
		goto out;
	bench_map_from_region(r, &m);
	/* Untimed: the first stores to each page of both mappings (see PERFORMANCE.md). */
	(void)ref_pass(&m, a, NULL);
	ret = daemon_pass(e, r, &a, bytes, &secs, NULL);
	if (ret < 0)
		goto out;
	for (unsigned i = 0; i < opt.reps; i++) {
		double rs = 0, ds = 0;

		/* Alternate which goes first, so neither always follows the other. */
		if (i % 2 == 0)
			rs = ref_pass(&m, a, pt);
		ret = daemon_pass(e, r, &a, bytes, &ds, pt);
		if (ret < 0)
			goto out;
		if (i % 2 == 1)
			rs = ref_pass(&m, a, pt);
		samples_add(ref, (double)bytes / (double)GIB / rs);
		samples_add(fig, (double)bytes / (double)GIB / ds);
		samples_add(ratio, rs / ds);
		if (opt.verbose)
			bench_log("%s, %u thread(s): %.3f s vs reference %.3f s (%s first)\n", S5,
				  threads, ds, rs, i % 2 == 0 ? "reference" : "daemon");
	}
	ret = grant_cost(c, r, e->region, &a, bytes, pt);
out:
	if (a)
		(void)pmemz_alloc_release(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	return ret;
}

int scenario_waitzero(struct bench_env *e)
{
	struct bench_samples fig[2] = {0}, ref[2] = {0}, ratio[2] = {0};
	struct pass_times pt[2] = {0};
	static const unsigned threads[2] = {1, 2};
	unsigned n = e->own_daemon ? 2 : 1;
	char buf[64];
	int ret = 0;

	report_section("5. Zeroing as a waiting client sees it: release all, allocate all (GiB/s)");
	for (unsigned k = 0; k < n && ret >= 0; k++) {
		if (k > 0) {
			/* The same region, the daemon restarted with more zeroer threads. */
			bench_daemon_stop(e);
			e->zeroer_threads = threads[k];
			ret = bench_daemon_start(e);
			if (ret < 0)
				break;
		}
		ret = measure(e, threads[k], &fig[k], &ref[k], &ratio[k], &pt[k]);
	}
	if (e->own_daemon && e->zeroer_threads != 1) {
		int r2;

		bench_daemon_stop(e);
		e->zeroer_threads = 1;
		r2 = bench_daemon_start(e);
		if (ret >= 0)
			ret = r2;
	}
	for (unsigned k = 0; k < n; k++) {
		char name[96];

		if (!fig[k].n)
			continue;
		(void)snprintf(name, sizeof(name),
			       "reference: NT memset, drain per 64 MiB (run %u)", k + 1);
		report_samples(S5, name, "GiB/s", &ref[k], 0, NULL);
		(void)snprintf(name, sizeof(name),
			       "FREE all -> waiting ALLOCATE, %u zeroer thread%s", threads[k],
			       threads[k] > 1 ? "s" : "");
		report_row(S5, name, "GiB/s", samples_median(&fig[k]), samples_min(&fig[k]),
			   samples_max(&fig[k]), samples_median(&ratio[k]), "x ref (paired)");
		report_note(
		    "%u thread%s: paired ratio %.3f [%.3f .. %.3f]; of the passes' wall "
		    "time: FREE round trip %.1f %%, zeroer storing + draining %.1f %% "
		    "(per thread), daemon threads on CPU %.0f %% and waiting for a CPU "
		    "%.0f %%; the reference's thread on CPU %.0f %%, waiting %.0f %% of its "
		    "time",
		    threads[k], threads[k] > 1 ? "s" : "", samples_median(&ratio[k]),
		    samples_min(&ratio[k]), samples_max(&ratio[k]),
		    100 * pt[k].free_rt / pt[k].wall,
		    100 * pt[k].zero_busy / threads[k] / pt[k].wall, 100 * pt[k].d_run / pt[k].wall,
		    100 * pt[k].d_wait / pt[k].wall, 100 * pt[k].ref_run / pt[k].ref_wall,
		    100 * pt[k].ref_wait / pt[k].ref_wall);
		/*
		 * The zeroer's share of the pass, split: storing and draining
		 * (its own clock around the stores, so a preemption inside
		 * them counts there, and "otherwise" can come out below
		 * zero), on a CPU outside that, and off a CPU (waiting for
		 * work, a wake-up or a CPU), per thread.
		 */
		report_note("%u thread%s: the zeroer thread%s, per thread, of the passes' wall time: "
			    "storing + draining %.1f %%, on a CPU otherwise %.1f %%, off a CPU "
			    "%.1f %%; the other daemon threads on a CPU %.1f %%",
			    threads[k], threads[k] > 1 ? "s" : "", threads[k] > 1 ? "s" : "",
			    100 * pt[k].zero_busy / threads[k] / pt[k].wall,
			    100 * (pt[k].z_run - pt[k].zero_busy) / threads[k] / pt[k].wall,
			    100 * (1 - pt[k].z_run / threads[k] / pt[k].wall),
			    100 * (pt[k].d_run - pt[k].z_run) / pt[k].wall);
		report_note("%u thread%s: the ALLOCATE of everything already zeroed (a pass's end "
			    "without zeroing) %.2f ms, %.1f %% of a pass",
			    threads[k], threads[k] > 1 ? "s" : "", 1e3 * pt[k].grant,
			    100 * pt[k].grant * (double)fig[k].n / pt[k].wall);
		report_note("%u thread%s per CPU-second: daemon (all threads) %.2f GiB/cpu-s, "
			    "reference %.2f GiB/cpu-s: %.3fx",
			    threads[k], threads[k] > 1 ? "s" : "",
			    pt[k].d_run > 0 ? pt[k].bytes / (double)GIB / pt[k].d_run : 0,
			    pt[k].ref_run > 0 ? pt[k].bytes / (double)GIB / pt[k].ref_run : 0,
			    pt[k].d_run > 0 && pt[k].ref_run > 0 ? pt[k].ref_run / pt[k].d_run : 0);
	}
	report_note("one repetition = FREE of a lease of every extent, then at once one ALLOCATE "
		    "of all of them, which waits for the zeroer; timed from the FREE to the "
		    "ALLOCATE's reply, on %s; the reference zeroes the same ranges through the "
		    "client's mapping in the same repetition (order alternates)",
		    pmemz_format_size(opt.region_size, buf, sizeof(buf)));
	if (fig[0].n)
		report_target("waiting-client zeroing, default zeroer >= 0.95 x NT memset",
			      samples_median(&ratio[0]), 0.95, true);
	if (n > 1 && fig[1].n)
		report_target("waiting-client zeroing, 2 zeroer threads >= 1.0 x NT memset",
			      samples_median(&ratio[1]), 1.0, true);
	for (unsigned k = 0; k < 2; k++) {
		samples_free(&fig[k]);
		samples_free(&ref[k]);
		samples_free(&ratio[k]);
	}
	return ret < 0 ? ret : 0;
}
