/* SPDX-License-Identifier: MIT */
/*
 * Scenario 6: what background zeroing costs the applications it serves
 * (docs/PERFORMANCE.md).  A memory-bound foreground writer (libpmem2 NT stores into a
 * private 256 MiB buffer, a drain per 64 MiB) runs on its own thread; its
 * rate is taken over windows alone (nothing to zero, or the zeroer
 * paused), beside the zeroer at full rate (the default policy zeroing a
 * released region) and beside the zeroer under the adaptive policy while
 * the reserve is above its low watermark (paced), each paired with an alone
 * window of the same repetition.  Then a fill through the client reserve
 * under each policy, counting the allocations that had to wait.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "client-private.h"
#include "libpmemzclient.h"

#define S6 "interference"
#define WBUF (256 * MIB)
#define WINDOW_NS 400000000ull
#define UNIT (2 * MIB)
#define WAITED_US 1000.0 /* a fill allocation this slow waited for something */

struct writer {
	pthread_t th;
	struct bench_map m;
	uint8_t *buf;
	atomic_uint_fast64_t bytes;
	atomic_bool stop;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned pass = 0;

	while (!atomic_load(&w->stop)) {
		for (size_t off = 0; off < WBUF && !atomic_load(&w->stop); off += UNIT) {
			w->m.memset_fn(w->buf + off, (int)(pass & 0xff), UNIT,
				       PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN);
			if ((off + UNIT) % (64 * MIB) == 0)
				w->m.drain_fn();
			atomic_fetch_add(&w->bytes, UNIT);
		}
		pass++;
	}
	return NULL;
}

/*
 * GB/s of the writer from now until done(arg) or max_ns; *ns gets the
 * window.  done() is a STAT every 2 ms in every window, alone or not, so
 * that the polling costs all of them the same.
 */
static double window(struct writer *w, bool (*done)(void *), void *arg, uint64_t max_ns,
		     uint64_t *ns)
{
	uint64_t b0 = atomic_load(&w->bytes), t0 = bench_now_ns(), t1;

	for (;;) {
		t1 = bench_now_ns();
		if (t1 - t0 >= max_ns || (done && done(arg)))
			break;
		(void)usleep(2000);
	}
	if (ns)
		*ns = t1 - t0;
	return (double)(atomic_load(&w->bytes) - b0) / (double)(t1 - t0);
}

struct ctx {
	struct pmemz_client *c;
	const char *region;
};

/* The same STAT polling as the other windows, for an alone window: never done. */
static bool never(void *arg)
{
	struct ctx *x = arg;
	struct bench_stat st;

	(void)bench_stat(x->c, x->region, &st);
	return false;
}

static bool all_zeroed(void *arg)
{
	struct ctx *x = arg;
	struct bench_stat st;

	return bench_stat(x->c, x->region, &st) < 0 || (st.dirty == 0 && st.zeroing == 0);
}

/* Below the low watermark again (zone "fast"): the window is over. */
static bool left_zone(void *arg)
{
	struct ctx *x = arg;
	struct bench_stat st;

	return bench_stat(x->c, x->region, &st) < 0 || strcmp(st.zone, "fast") == 0;
}

/* Wait for zone, or for either of "paced" and "idle" with zone "above-low". */
static int wait_zone(struct ctx *x, const char *zone, double timeout_s)
{
	uint64_t t0 = bench_now_ns();
	struct bench_stat st;
	int ret;

	for (;;) {
		ret = bench_stat(x->c, x->region, &st);
		if (ret < 0)
			return ret;
		if (!strcmp(st.zone, zone) ||
		    (!strcmp(zone, "above-low") && strcmp(st.zone, "fast") && st.zone[0]))
			return 0;
		if ((double)(bench_now_ns() - t0) / 1e9 > timeout_s)
			return -ETIMEDOUT;
		(void)usleep(5000);
	}
}

/* Fill through the client reserve; counts the allocations slower than WAITED_US. */
static int fill_through_reserve(struct pmemz_region *r, struct bench_map *m, size_t units,
				double *gbps, double *p99, unsigned *waited)
{
	struct pmemz_alloc **held = calloc(units, sizeof(*held));
	struct bench_samples lat = {0};
	uint8_t *src = aligned_alloc(4096, UNIT);
	uint64_t t0;
	size_t n = 0;
	int ret = 0;

	if (!held || !src) {
		free(held);
		free(src);
		return -ENOMEM;
	}
	memset(src, 0xa5, UNIT);
	*waited = 0;
	ret = pmemz_region_set_reserve(r, (size_t)opt.reserve);
	t0 = bench_now_ns();
	for (; ret >= 0 && n < units; n++) {
		uint64_t a0 = bench_now_ns();
		double us;

		ret = pmemz_alloc_new(r, UNIT, 0, &held[n]);
		us = (double)(bench_now_ns() - a0) / 1e3;
		if (ret < 0)
			break;
		samples_add(&lat, us);
		*waited += us > WAITED_US;
		kern_write_durable(m, pmemz_alloc_range(held[n], 0, NULL), src, UNIT);
	}
	*gbps = (double)(n * UNIT) / (double)(bench_now_ns() - t0);
	*p99 = lat.n ? samples_pct(&lat, 99) : 0;
	(void)pmemz_region_set_reserve(r, 0);
	for (size_t i = 0; i < n; i++)
		(void)pmemz_alloc_release(held[i]);
	samples_free(&lat);
	free(held);
	free(src);
	return ret;
}

/*
 * The first store to each page of a new mapping is slow on this VM (see
 * PERFORMANCE.md): lease everything, store zeroes through the client's
 * mapping, give it back.  Zeroes on zeroed extents change nothing.
 */
static int warm_mapping(struct pmemz_client *c, struct pmemz_region *r, const char *region)
{
	struct pmemz_alloc *a = NULL;
	struct bench_stat st;
	struct bench_map m;
	int ret;

	ret = bench_stat(c, region, &st);
	if (ret < 0)
		return ret;
	ret = pmemz_alloc_new(r, (size_t)((st.zeroed + st.dirty) * st.extent_size), 0, &a);
	if (ret < 0)
		return ret;
	bench_map_from_region(r, &m);
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		uint8_t *p = pmemz_alloc_range(a, i, &len);

		kern_nt_zero(&m, p, len, UNIT, 32);
	}
	return pmemz_alloc_release(a);
}

struct phase {
	struct bench_samples alone, busy, ratio;
	uint64_t busy_ns;
	double fill_gbps, fill_p99;
	unsigned fill_waited;
	size_t fill_units;
};

static void phase_add(struct phase *ph, double alone, double busy, uint64_t ns)
{
	samples_add(&ph->alone, alone);
	samples_add(&ph->busy, busy);
	samples_add(&ph->ratio, busy / alone);
	ph->busy_ns += ns;
}

/* A client of the main region, its mapping warmed; x polls STAT through it. */
static int phase_connect(struct bench_env *e, struct pmemz_client **c, struct pmemz_region **r,
			 struct ctx *x)
{
	int ret = bench_connect(e, e->region, c, r);

	if (ret < 0)
		return ret;
	x->c = *c;
	x->region = e->region;
	return warm_mapping(*c, *r, e->region);
}

/* The default policy: windows while the zeroer re-zeroes the whole released region. */
static int phase_full(struct bench_env *e, struct writer *w, struct phase *ph)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	struct ctx x = {0};
	struct bench_stat st;
	size_t bytes;
	int ret;

	ret = phase_connect(e, &c, &r, &x);
	if (ret >= 0)
		ret = bench_wait_zeroed(c, e->region, 600);
	if (ret >= 0)
		ret = bench_stat(c, e->region, &st);
	if (ret < 0)
		goto out;
	bytes = (size_t)((st.zeroed + st.dirty) * st.extent_size);
	ret = pmemz_alloc_new(r, bytes, 0, &a);
	for (unsigned i = 0; ret >= 0 && i < opt.reps; i++) {
		double alone = window(w, never, &x, WINDOW_NS, NULL);
		uint64_t b0 = atomic_load(&w->bytes), t0 = bench_now_ns(), ns = 0;

		/* Whole passes of the zeroer over the region, until the window is long enough. */
		while (ret >= 0 && ns < WINDOW_NS) {
			ret = pmemz_alloc_release(a);
			a = NULL;
			if (ret < 0)
				break;
			(void)window(w, all_zeroed, &x, 60ull * 1000000000ull, NULL);
			ns = bench_now_ns() - t0;
			ret = pmemz_alloc_new(r, bytes, 0, &a);
		}
		if (ret < 0)
			break;
		phase_add(ph, alone, (double)(atomic_load(&w->bytes) - b0) / (double)ns, ns);
	}
	if (a)
		(void)pmemz_alloc_release(a);
	if (ret >= 0) {
		struct bench_map m;

		bench_map_from_region(r, &m);
		ret = bench_wait_zeroed(c, e->region, 600);
		if (ret >= 0)
			ret = fill_through_reserve(r, &m, ph->fill_units, &ph->fill_gbps,
						   &ph->fill_p99, &ph->fill_waited);
	}
out:
	pmemz_region_close(r);
	pmemz_client_free(c);
	return ret;
}

/*
 * The adaptive policy: each repetition takes the reserve below its low
 * watermark (a held lease), waits until the zeroer has refilled it and is
 * pacing, and measures while it paces; the alone window has the zeroer
 * paused.
 */
static int phase_adaptive(struct bench_env *e, struct writer *w, struct phase *ph)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct ctx x = {0};
	struct bench_stat st;
	int ret;

	ret = phase_connect(e, &c, &r, &x);
	if (ret >= 0)
		ret = bench_stat(c, e->region, &st);
	if (ret >= 0 && strcmp(st.zone, "fast") != 0 && strcmp(st.zone, "paced") != 0 &&
	    strcmp(st.zone, "idle") != 0)
		ret = -EOPNOTSUPP; /* not a daemon with the adaptive policy */
	for (unsigned i = 0; ret >= 0 && i < opt.reps; i++) {
		struct pmemz_alloc *hold = NULL;
		double alone, busy;
		uint64_t ns;

		ret = bench_zeroer_pause(c, e->region, true);
		if (ret < 0)
			break;
		alone = window(w, never, &x, WINDOW_NS, NULL);
		ret = bench_zeroer_pause(c, e->region, false);
		if (ret >= 0)
			ret = bench_stat(c, e->region, &st);
		if (ret < 0)
			break;
		/* Down to half the low watermark: full speed, then paced from the low one. */
		if (st.zeroed > st.reserve_low / 2)
			ret = pmemz_alloc_new(
			    r, (size_t)((st.zeroed - st.reserve_low / 2) * st.extent_size),
			    PMEMZ_ALLOC_NOWAIT, &hold);
		if (ret >= 0)
			ret = wait_zone(&x, "above-low", 30);
		if (ret >= 0) {
			busy = window(w, left_zone, &x, WINDOW_NS, &ns);
			phase_add(ph, alone, busy, ns);
		}
		if (hold)
			(void)pmemz_alloc_release(hold);
	}
	if (ret >= 0) {
		struct bench_map m;

		/* The steady state between bursts: the reserve at its high watermark. */
		bench_map_from_region(r, &m);
		ret = wait_zone(&x, "idle", 120);
		if (ret >= 0)
			ret = fill_through_reserve(r, &m, ph->fill_units, &ph->fill_gbps,
						   &ph->fill_p99, &ph->fill_waited);
	}
	pmemz_region_close(r);
	pmemz_client_free(c);
	return ret;
}

static void phase_free(struct phase *ph)
{
	samples_free(&ph->alone);
	samples_free(&ph->busy);
	samples_free(&ph->ratio);
}

int scenario_interfere(struct bench_env *e)
{
	struct phase ph[2] = {0};
	struct writer w = {0};
	char extra[256], buf[32];
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	uint64_t quarter;
	int ret, r2;

	report_section("6. Interference: a memory-bound writer beside the zeroer (GB/s)");
	if (!e->own_daemon) {
		report_note("skipped: needs its own daemon (restarted with the adaptive policy)");
		return 0;
	}
	w.buf = aligned_alloc(4096, WBUF);
	if (!w.buf)
		return -ENOMEM;
	memset(w.buf, 1, WBUF);
	ret = bench_connect(e, e->region, &c, &r);
	if (ret < 0) {
		free(w.buf);
		return ret;
	}
	bench_map_from_region(r, &w.m); /* libpmem2's kernels, on any memory */
	ret = -pthread_create(&w.th, NULL, writer_main, &w);
	if (ret < 0) {
		pmemz_region_close(r);
		pmemz_client_free(c);
		free(w.buf);
		return ret;
	}
	quarter = ALIGN_UP(opt.region_size / 4, 2 * MIB);
	/* A burst the size of the low watermark's floor: what the adaptive reserve is
	 * configured to absorb. */
	ph[0].fill_units = ph[1].fill_units = (size_t)(MIN(opt.fill_bytes, quarter) / UNIT);

	ret = phase_full(e, &w, &ph[0]);
	if (ret >= 0) {
		/* The same region, the daemon restarted with the adaptive policy. */
		bench_daemon_stop(e);
		(void)snprintf(extra, sizeof(extra),
			       "zero_policy = adaptive\nreserve_min = %" PRIu64
			       "\nzero_pace_rate = 256M\n",
			       quarter);
		e->main_extra = extra;
		ret = bench_daemon_start(e);
		if (ret >= 0)
			ret = phase_adaptive(e, &w, &ph[1]);
		bench_daemon_stop(e);
		e->main_extra = NULL;
		r2 = bench_daemon_start(e);
		if (ret >= 0)
			ret = r2;
	}
	atomic_store(&w.stop, true);
	(void)pthread_join(w.th, NULL);
	pmemz_region_close(r);
	pmemz_client_free(c);
	free(w.buf);

	for (int k = 0; k < 2; k++) {
		const char *what = k ? "paced (adaptive, above the low watermark)"
				     : "zeroer at full rate (default policy)";
		char name[128];

		if (!ph[k].ratio.n)
			continue;
		(void)snprintf(name, sizeof(name), "writer alone (paired with %s)",
			       k ? "paced" : "full rate");
		report_samples(S6, name, "GB/s", &ph[k].alone, 0, NULL);
		(void)snprintf(name, sizeof(name), "writer beside the %s", what);
		report_row(S6, name, "GB/s", samples_median(&ph[k].busy), samples_min(&ph[k].busy),
			   samples_max(&ph[k].busy), samples_median(&ph[k].ratio),
			   "x alone (paired)");
		report_note("%s: paired ratio %.3f [%.3f .. %.3f] over %u windows, %.0f ms in all",
			    what, samples_median(&ph[k].ratio), samples_min(&ph[k].ratio),
			    samples_max(&ph[k].ratio), (unsigned)ph[k].ratio.n,
			    (double)ph[k].busy_ns / 1e6);
	}
	for (int k = 0; k < 2; k++)
		if (ph[k].fill_units)
			report_note(
			    "fill through a %s client reserve, %zu units of 2 MiB, %s policy: "
			    "%.2f GB/s, pmemz_alloc_new p99 %.1f us, %u over %.0f us",
			    pmemz_format_size(opt.reserve, buf, sizeof(buf)), ph[k].fill_units,
			    k ? "adaptive" : "default", ph[k].fill_gbps, ph[k].fill_p99,
			    ph[k].fill_waited, WAITED_US);
	report_note("adaptive: reserve_min = %s (a quarter of the region), zero_pace_rate = "
		    "256M, watermarks from the allocation rate (defaults)",
		    pmemz_format_size(quarter, buf, sizeof(buf)));
	if (ph[1].ratio.n)
		report_target("writer beside paced zeroing >= 0.95 x alone",
			      samples_median(&ph[1].ratio), 0.95, true);
	if (ph[0].fill_units && ph[1].fill_units && ph[1].ratio.n)
		report_target("fill waits, adaptive <= default", (double)ph[1].fill_waited,
			      (double)ph[0].fill_waited, false);
	phase_free(&ph[0]);
	phase_free(&ph[1]);
	return ret < 0 ? ret : 0;
}
