/* SPDX-License-Identifier: MIT */
/*
 * Scenario 7: ALLOCATE against fragmentation (docs/PERFORMANCE.md), for 4 KiB extents
 * (region "frag", 1 GiB) and 2 MiB extents (the main region).  The free
 * space is made (a) whole: nothing held, (b) a 50 % checkerboard: every
 * extent leased one at a time, the even ones freed, (c) 90 % full at
 * random: a random tenth of the extents freed.  In each state: one-extent
 * ALLOCATE latency (p50/p99) and rate, each served from the zeroed pool,
 * and one ALLOCATE of all the free space (its runs arrive in as many
 * frames as they need: the reply, then RUNS).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "client-private.h"
#include "libpmemzclient.h"

#define S7 "fragmentation"
#define BATCH 64u	  /* pipelined requests per send */
#define SMALL_ALLOCS 200u /* one-extent ALLOCATEs timed per state */

struct held {
	uint64_t *lease; /* by extent index, 0: not held */
	uint64_t n;	 /* extents */
};

/* Lease every free extent one at a time (pipelined), recording which lease holds which. */
static int hold_all(struct pmemz_client *c, const char *region, struct held *h)
{
	Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__Request reqs[BATCH], *rp[BATCH];
	struct pmemz_pending *t[BATCH];
	struct bench_stat st;
	uint64_t left;
	int ret;

	ret = bench_wait_zeroed(c, region, 600);
	if (ret >= 0)
		ret = bench_stat(c, region, &st);
	if (ret < 0)
		return ret;
	h->n = st.extent_count;
	h->lease = calloc(h->n, sizeof(*h->lease));
	if (!h->lease)
		return -ENOMEM;
	al.region = (char *)(uintptr_t)region;
	al.bytes = st.extent_size;
	al.has_nowait = true;
	al.nowait = true;
	for (left = st.zeroed; left > 0;) {
		size_t k = (size_t)MIN((uint64_t)BATCH, left);

		for (size_t i = 0; i < k; i++) {
			reqs[i] = (Pmemz__Request)PMEMZ__REQUEST__INIT;
			reqs[i].op_case = PMEMZ__REQUEST__OP_ALLOCATE;
			reqs[i].allocate = &al;
			rp[i] = &reqs[i];
		}
		ret = pmemz_client_submit_many(c, rp, k, t);
		if (ret < 0)
			return ret;
		for (size_t i = 0; i < k; i++) {
			_cleanup_response_ Pmemz__Response *resp = NULL;
			int r2 = pmemz_client_wait(c, t[i], &resp, NULL);

			if (r2 >= 0)
				r2 = pmemz_check_response(PMEMZ__REQUEST__OP_ALLOCATE, resp);
			if (r2 >= 0 && resp->allocate->n_runs == 1 &&
			    resp->allocate->runs[0]->first < h->n)
				h->lease[resp->allocate->runs[0]->first] = resp->allocate->lease;
			if (r2 < 0 && ret >= 0)
				ret = r2;
		}
		if (ret < 0)
			return ret;
		left -= k;
	}
	return 0;
}

/* FREE the held extents `pick` selects (pipelined). */
static int free_some(struct pmemz_client *c, const char *region, struct held *h,
		     bool (*pick)(uint64_t i, void *arg), void *arg)
{
	Pmemz__FreeReq fr[BATCH];
	Pmemz__Request reqs[BATCH], *rp[BATCH];
	struct pmemz_pending *t[BATCH];
	uint64_t i = 0;
	int ret = 0;

	while (i < h->n && ret >= 0) {
		size_t k = 0;

		for (; i < h->n && k < BATCH; i++) {
			if (!h->lease[i] || (pick && !pick(i, arg)))
				continue;
			fr[k] = (Pmemz__FreeReq)PMEMZ__FREE_REQ__INIT;
			fr[k].region = (char *)(uintptr_t)region;
			fr[k].has_lease = true;
			fr[k].lease = h->lease[i];
			reqs[k] = (Pmemz__Request)PMEMZ__REQUEST__INIT;
			reqs[k].op_case = PMEMZ__REQUEST__OP_FREE;
			reqs[k].free = &fr[k];
			rp[k] = &reqs[k];
			h->lease[i] = 0;
			k++;
		}
		if (!k)
			break;
		ret = pmemz_client_submit_many(c, rp, k, t);
		for (size_t j = 0; ret >= 0 && j < k; j++) {
			_cleanup_response_ Pmemz__Response *resp = NULL;

			ret = pmemz_client_wait(c, t[j], &resp, NULL);
			if (ret >= 0)
				ret = pmemz_check_response(PMEMZ__REQUEST__OP_FREE, resp);
		}
	}
	return ret;
}

static bool pick_even(uint64_t i, void *arg)
{
	(void)arg;
	return i % 2 == 0;
}

static bool pick_tenth(uint64_t i, void *arg)
{
	uint64_t *seed = arg;

	(void)i;
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return (*seed >> 33) % 10 == 0;
}

struct state_fig {
	double p50, p99, rate; /* one-extent ALLOCATE: us, us, per second */
	double all_ms;	       /* one ALLOCATE of all the free space */
	size_t all_runs;
	uint64_t free_extents;
};

static int measure_state(struct pmemz_client *c, struct pmemz_region *r, const char *region,
			 struct state_fig *f)
{
	struct pmemz_alloc *small[SMALL_ALLOCS] = {0}, *all = NULL;
	struct bench_samples lat = {0};
	struct bench_stat st;
	uint64_t t0;
	unsigned n = 0;
	int ret;

	ret = bench_wait_zeroed(c, region, 600);
	if (ret >= 0)
		ret = bench_stat(c, region, &st);
	if (ret < 0)
		return ret;
	f->free_extents = st.zeroed;
	t0 = bench_now_ns();
	for (; n < SMALL_ALLOCS && n + 1 < st.zeroed; n++) {
		uint64_t a0 = bench_now_ns();

		ret = pmemz_alloc_new(r, (size_t)st.extent_size, PMEMZ_ALLOC_NOWAIT, &small[n]);
		if (ret < 0)
			break;
		samples_add(&lat, (double)(bench_now_ns() - a0) / 1e3);
	}
	if (n)
		f->rate = n / ((double)(bench_now_ns() - t0) / 1e9);
	f->p50 = lat.n ? samples_pct(&lat, 50) : 0;
	f->p99 = lat.n ? samples_pct(&lat, 99) : 0;
	samples_free(&lat);
	for (unsigned i = 0; i < n; i++)
		(void)pmemz_alloc_release(small[i]);
	if (ret < 0)
		return ret;
	/* All the free space in one allocation (waits for the re-zeroing of the above). */
	t0 = bench_now_ns();
	ret = pmemz_alloc_new(r, (size_t)(f->free_extents * st.extent_size), 0, &all);
	f->all_ms = (double)(bench_now_ns() - t0) / 1e6;
	if (ret < 0)
		return ret;
	f->all_runs = pmemz_alloc_count(all);
	return pmemz_alloc_release(all);
}

static int one_region(struct bench_env *e, const char *region, const char *label)
{
	static const char *const names[3] = {"none", "50 % checkerboard", "90 % full at random"};
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct held h = {0};
	struct state_fig f[3] = {0};
	uint64_t seed = 12;
	int ret;

	ret = bench_connect(e, region, &c, &r);
	if (ret < 0)
		return ret;
	if (e->own_daemon) {
		double warm = bench_daemon_warmup(c, r);

		if (warm < 0) {
			ret = (int)warm;
			goto out;
		}
	}
	ret = measure_state(c, r, region, &f[0]);
	if (ret >= 0)
		ret = hold_all(c, region, &h);
	if (ret >= 0)
		ret = free_some(c, region, &h, pick_even, NULL);
	if (ret >= 0)
		ret = measure_state(c, r, region, &f[1]);
	if (ret >= 0)
		ret = free_some(c, region, &h, NULL, NULL);
	free(h.lease);
	h = (struct held){0};
	if (ret >= 0)
		ret = hold_all(c, region, &h);
	if (ret >= 0)
		ret = free_some(c, region, &h, pick_tenth, &seed);
	if (ret >= 0)
		ret = measure_state(c, r, region, &f[2]);
	if (ret >= 0)
		ret = free_some(c, region, &h, NULL, NULL);
	for (int k = 0; k < 3 && ret >= 0; k++) {
		char name[128];

		(void)snprintf(name, sizeof(name), "%s, free space %s: 1 extent", label, names[k]);
		report_latency_row(S7, name, f[k].p50, f[k].p99, f[k].p99, 0, NULL);
		report_note("%s, %s: %.0f one-extent ALLOCATEs/s; one ALLOCATE of all %" PRIu64
			    " free extents: %.1f ms, %zu runs",
			    label, names[k], f[k].rate, f[k].free_extents, f[k].all_ms,
			    f[k].all_runs);
	}
out:
	free(h.lease);
	pmemz_region_close(r);
	pmemz_client_free(c);
	return ret;
}

int scenario_frag(struct bench_env *e)
{
	int ret;

	report_section("7. ALLOCATE against fragmentation (us)");
	if (!e->with_frag) {
		report_note("skipped: needs its own daemon (region 'frag', 4 KiB extents)");
		return 0;
	}
	ret = one_region(e, "frag", "4 KiB extents");
	if (ret >= 0)
		ret = one_region(e, e->region, "2 MiB extents");
	report_note("p99.9 column repeats p99 (%u samples per state); the one-extent "
		    "ALLOCATEs are served from the zeroed pool, the allocation of all the free "
		    "space waits for them to be re-zeroed",
		    SMALL_ALLOCS);
	return ret;
}
