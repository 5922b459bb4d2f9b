/* SPDX-License-Identifier: MIT */
/*
 * Scenario 9: no caller waits for more than its own extents' zeroing
 * (docs/DESIGN.md, "Performance targets": Xen's scrubber hands a chunk
 * back after any page).  A daemon of its own on a region of dirty space (8 GiB;
 * --quick 512 MiB; 2 MiB extents; one zeroer thread; batches of 128
 * extents, 256 MiB), re-created with stale data before every start, so
 * that every start finds it all DIRTY, as after a crash or a format:
 *   (a) the first ALLOCATE of one extent right after the start (its
 *       socket answers), timed from the request to the reply;
 *   (b) an ALLOCATE of 1, 8 and 64 extents 20 ms after the start, while
 *       the zeroer is inside its first batch of 128.
 * The floor, next to each: one fresh (never touched through this mapping)
 * 2 MiB extent NT-zeroed and drained by one thread, in this process, on a
 * file of the same kind, as it comes (a fault per 4 KiB page) and after
 * one madvise(MADV_POPULATE_WRITE) (what the daemon's zeroer does on a
 * file region); the ratios are to the faster of the two; N extents' floor
 * is N times it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "libpmemzclient.h"
#include "util.h"

#define S9 "hand-back"
#define HB_EXTENT (2 * MIB)
#define HB_BATCH 128u
#define HB_FLOOR_EXTENTS 32u

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static const unsigned hb_counts[] = {1, 8, 64};
#define HB_NCOUNTS (sizeof(hb_counts) / sizeof(hb_counts[0]))

static uint64_t hb_size(void)
{
	return opt.quick ? 512 * MIB : 8 * GIB;
}

/* The environment of this scenario's own daemon: the bench's, with other files. */
static int hb_env(const struct bench_env *e, struct bench_env *h, char img[PATH_MAX])
{
	FILE *f;

	*h = *e;
	if (snprintf(h->sock, sizeof(h->sock), "%s/hb.sock", e->dir) >= (int)sizeof(h->sock) ||
	    snprintf(h->conf, sizeof(h->conf), "%s/hb.conf", e->dir) >= (int)sizeof(h->conf) ||
	    snprintf(h->log, sizeof(h->log), "%s/hb.log", e->dir) >= (int)sizeof(h->log) ||
	    snprintf(img, PATH_MAX, "%s/hb.region", e->dir) >= PATH_MAX)
		return -ENAMETOOLONG;
	h->pid = 0;
	h->conf_written = true;
	f = fopen(h->conf, "we");
	if (!f)
		return -errno;
	fprintf(f,
		"[daemon]\nlog_level = %s\n\n[region hb]\npath = %s\nextent_size = 2M\n"
		"zeroer_threads = 1\nbatch_extents = %u\n",
		opt.verbose ? "info" : "notice", img, HB_BATCH);
	return fclose(f) == 0 ? 0 : -EIO;
}

/*
 * One fresh extent at a time through a new mapping: the first stores to
 * its pages included; every other one populated first (floor[1]).
 */
static int hb_floor(const char *dir, struct bench_samples floor[2])
{
	char path[PATH_MAX];
	struct bench_map m;
	int r;

	if (snprintf(path, sizeof(path), "%s/hb-floor.region", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	(void)unlink(path);
	r = bench_make_file(path, (HB_FLOOR_EXTENTS + 1) * HB_EXTENT);
	if (r < 0)
		return r;
	r = bench_map_open(path, &m);
	if (r < 0) {
		(void)unlink(path);
		return r;
	}
	for (unsigned i = 1; i <= HB_FLOOR_EXTENTS; i++) {
		uint8_t *p = m.base + i * HB_EXTENT;
		uint64_t t0 = bench_now_ns();

		if (i % 2 == 0 && madvise(p, HB_EXTENT, MADV_POPULATE_WRITE) < 0)
			r = -errno;
		kern_nt_zero(&m, p, HB_EXTENT, HB_EXTENT, 1);
		samples_add(&floor[i % 2 == 0], (double)(bench_now_ns() - t0) / 1e6);
	}
	bench_map_close(&m);
	(void)unlink(path);
	return r;
}

/*
 * A start on a region all DIRTY: a new file of stale data, the daemon,
 * delay_ms, then one ALLOCATE of n extents that waits for the zeroer.
 * *ms: from the request to the reply; *start_ms: from the exec to the
 * socket answering.
 */
static int hb_start(struct bench_env *h, const char *img, unsigned n, unsigned delay_ms,
		    double *ms, double *start_ms)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct pmemz_alloc *a = NULL;
	uint64_t t0;
	int ret;

	(void)unlink(img);
	ret = bench_make_file(img, hb_size());
	if (ret < 0)
		return ret;
	t0 = bench_now_ns();
	ret = bench_daemon_start(h);
	if (ret < 0)
		return ret;
	*start_ms = (double)(bench_now_ns() - t0) / 1e6;
	ret = bench_connect(h, "hb", &c, &r);
	if (ret >= 0) {
		if (delay_ms)
			(void)usleep(delay_ms * 1000u);
		t0 = bench_now_ns();
		ret = pmemz_alloc_new(r, (size_t)n * HB_EXTENT, 0, &a);
		*ms = (double)(bench_now_ns() - t0) / 1e6;
	}
	if (a)
		(void)pmemz_alloc_release(a);
	pmemz_region_close(r);
	pmemz_client_free(c);
	bench_daemon_stop(h);
	return ret;
}

/* The bench's own daemon zeroes its regions at its start: not beside these figures. */
static int hb_quiet(const struct bench_env *e)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	int ret = bench_connect(e, NULL, &c, &r);

	if (ret < 0)
		return ret;
	ret = bench_wait_zeroed(c, e->region, 600);
	if (ret >= 0 && e->small_region != e->region)
		ret = bench_wait_zeroed(c, e->small_region, 600);
	pmemz_client_free(c);
	return ret;
}

static void hb_report(struct bench_samples *first, struct bench_samples *starts,
		      struct bench_samples mid[HB_NCOUNTS], struct bench_samples floor[2])
{
	double fl = MIN(samples_median(&floor[0]), samples_median(&floor[1]));
	char buf[64], name[96];

	report_samples(S9, "floor: one fresh 2 MiB extent, NT zero + drain, one thread", "ms",
		       &floor[0], 0, NULL);
	report_samples(S9, "floor, its pages populated first (MADV_POPULATE_WRITE)", "ms",
		       &floor[1], samples_median(&floor[0]), "floor");
	report_row(S9, "(a) first ALLOCATE of 1 extent after a start on dirty space", "ms",
		   samples_median(first), samples_min(first), samples_max(first),
		   samples_median(first) / fl, "floor");
	for (unsigned k = 0; k < HB_NCOUNTS; k++) {
		if (!mid[k].n)
			continue;
		(void)snprintf(name, sizeof(name),
			       "(b) ALLOCATE of %u extent%s, zeroer inside a %u-extent batch",
			       hb_counts[k], hb_counts[k] > 1 ? "s" : "", HB_BATCH);
		report_row(S9, name, "ms", samples_median(&mid[k]), samples_min(&mid[k]),
			   samples_max(&mid[k]), samples_median(&mid[k]) / (fl * hb_counts[k]),
			   "N floors");
	}
	report_note("ratios to the faster floor, %.3f ms", fl);
	report_note("each figure from its own start on %s of dirty space (a new file of stale "
		    "data), 2 MiB extents, one zeroer thread, batches of %u; (b) asks 20 ms after "
		    "the socket answers; the daemon's start (exec to socket) took %.0f ms (median)",
		    pmemz_format_size(hb_size(), buf, sizeof(buf)), HB_BATCH,
		    samples_median(starts));
	report_target("first allocation after a start on dirty space <= 4 x one extent's zeroing",
		      samples_median(first) / fl, 4.0, false);
}

int scenario_handback(struct bench_env *e)
{
	struct bench_samples first = {0}, starts = {0}, floor[2] = {{0}}, mid[HB_NCOUNTS] = {{0}};
	struct bench_env h;
	char img[PATH_MAX];
	unsigned reps = opt.reps < 3 ? 3 : opt.reps;
	int ret;

	report_section("9. Hand-back: allocations on dirty space wait for their own extents (ms)");
	if (!e->own_daemon) {
		report_note("skipped: needs a daemon of its own (not --socket)");
		return 0;
	}
	ret = hb_quiet(e);
	if (ret >= 0)
		ret = hb_env(e, &h, img);
	if (ret >= 0)
		ret = hb_floor(e->dir, floor);
	for (unsigned i = 0; i < reps && ret >= 0; i++) {
		double ms = 0, st = 0;

		ret = hb_start(&h, img, 1, 0, &ms, &st);
		samples_add(&first, ms);
		samples_add(&starts, st);
		if (opt.verbose)
			bench_log("%s: first ALLOCATE %.2f ms (start %.0f ms)\n", S9, ms, st);
	}
	for (unsigned k = 0; k < HB_NCOUNTS && ret >= 0; k++) {
		for (unsigned i = 0; i < reps && ret >= 0; i++) {
			double ms = 0, st = 0;

			ret = hb_start(&h, img, hb_counts[k], 20, &ms, &st);
			samples_add(&mid[k], ms);
			if (opt.verbose)
				bench_log("%s: ALLOCATE of %u: %.2f ms\n", S9, hb_counts[k], ms);
		}
	}
	/* The bench's cleanup removes only its own files: the directory must end empty of ours. */
	(void)unlink(img);
	(void)unlink(h.conf);
	(void)unlink(h.log);
	(void)unlink(h.sock);
	if (ret >= 0)
		hb_report(&first, &starts, mid, floor);
	samples_free(&first);
	samples_free(&starts);
	samples_free(&floor[0]);
	samples_free(&floor[1]);
	for (unsigned k = 0; k < HB_NCOUNTS; k++)
		samples_free(&mid[k]);
	return ret < 0 ? ret : 0;
}
