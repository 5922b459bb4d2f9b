/* SPDX-License-Identifier: MIT */
/*
 * Scenario 1: zeroing bandwidth against the machine's limit.
 *
 * The daemon's zeroer runs in this process (pmemzd_storage): region_open on
 * the bench's region file, whose extents start DIRTY, and a loop that does
 * what the daemon's main loop does (wait on the zeroer fd, collect the
 * finished batches, group-commit the ZEROED states).  Between repetitions
 * the whole region is made DIRTY again the way clients do it (lease every
 * extent, unlease, region_sync), so every pass zeroes the same pages of the
 * same, already faulted-in mapping.  The reference and the historical
 * kernels write the same data area through the bench's own libpmem2
 * mapping of the same file, faulted in beforehand.  All of them run
 * interleaved, repetition by repetition, so the machine's noise is shared.
 *
 * The first pass after region_open is also reported, with where its time
 * went (zeroer CPU time, run-queue wait, minor page faults: from
 * /proc/self/task/TID), because that is the pass an operator sees at start.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include "bench.h"
#include "conf.h"
#include "log.h"
#include "region-internal.h"
#include "region.h"

#define S1 "zeroing"

/* CPU time, run-queue wait and minor faults of every thread but the caller. */
struct task_times {
	uint64_t run_ns, wait_ns, minflt;
};

static void other_tasks(struct task_times *t)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	memset(t, 0, sizeof(*t));
	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[300], buf[1024];
		unsigned long long run = 0, wait = 0, minflt = 0;
		FILE *f;
		char *p;

		if (de->d_name[0] == '.' || atoi(de->d_name) == self)
			continue;
		(void)snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", de->d_name);
		if ((f = fopen(path, "re"))) {
			if (fscanf(f, "%llu %llu", &run, &wait) != 2)
				run = wait = 0;
			(void)fclose(f);
		}
		(void)snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
		if ((f = fopen(path, "re"))) {
			/* after "(comm)": state ppid pgrp session tty tpgid flags minflt */
			if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
				(void)sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %llu", &minflt);
			(void)fclose(f);
		}
		t->run_ns += run;
		t->wait_ns += wait;
		t->minflt += minflt;
	}
	(void)closedir(d);
}

/* The daemon main loop's part: until every extent is ZEROED and durable. */
static int run_to_zeroed(struct region *r)
{
	struct pollfd pfd = {.fd = region_zeroer_fd(r), .events = POLLIN};
	uint64_t t0 = bench_now_ns();

	while (region_count_zeroed(r) < r->extent_count) {
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			return -errno;
		if (region_zeroer_collect(r))
			(void)region_sync(r);
		if (bench_now_ns() - t0 > 600ull * 1000000000ull)
			return -ETIMEDOUT;
	}
	(void)region_sync(r);
	return 0;
}

/* Every extent DIRTY again, as after clients freed it all; the zeroer has it
 * from the region_sync on, which the caller times. */
static int redirty(struct region *r)
{
	struct run *runs = NULL;
	size_t n_runs = 0;
	int ret;

	ret = region_lease(r, r->extent_count, &runs, &n_runs);
	if (ret < 0)
		return ret;
	region_unlease(r, runs, n_runs);
	free(runs);
	return 0;
}

struct zcfg {
	const char *name;
	unsigned threads, batch;
	bool idle; /* background priority (SCHED_IDLE) instead of urgent */
	struct bench_samples gbps, ratio;
};

#define NZ 5 /* zeroer configurations */
#define NK 5 /* kernels: the reference and four others */

static int set_threads(struct region *r, unsigned threads)
{
	if (r->zeroer_threads == threads)
		return 0;
	region_zeroer_stop(r);
	r->zeroer_threads = threads;
	return region_zeroer_start(r);
}

/* One timed pass of the zeroer over the whole region: GiB/s. */
static double zeroer_pass(struct region *r, const struct zcfg *c, uint64_t bytes)
{
	uint64_t t0, t1;
	int ret;

	ret = set_threads(r, c->threads);
	if (ret < 0)
		bench_die("cannot restart the zeroer: %s", strerror(-ret));
	r->batch_extents = c->batch;
	region_zeroer_set_urgent(r, !c->idle);
	ret = redirty(r);
	if (ret < 0)
		bench_die("cannot re-dirty the region: %s", strerror(-ret));
	t0 = bench_now_ns();
	(void)region_sync(r); /* DIRTY records durable: the zeroer takes them */
	ret = run_to_zeroed(r);
	t1 = bench_now_ns();
	if (ret < 0)
		bench_die("zeroer pass: %s", strerror(-ret));
	return (double)bytes / (double)GIB / ((double)(t1 - t0) / 1e9);
}

static double kernel_pass(struct bench_map *m, uint8_t *p, uint64_t len, uint64_t es, int kind)
{
	uint64_t t0 = bench_now_ns(), t1;

	switch (kind) {
	case 0:
		kern_nt_zero(m, p, len, es, 64); /* the reference: a drain per 64 extents */
		break;
	case 1:
		kern_nt_zero(m, p, len, es, 1);
		break;
	case 2:
		for (uint64_t off = 0; off < len; off += es)
			kern_memset_clflush(p + off, es);
		break;
	case 3:
		for (uint64_t off = 0; off < len; off += es)
			kern_memset_clwb(p + off, es);
		break;
	default:
		kern_memset_plain(p, len);
		break;
	}
	t1 = bench_now_ns();
	return (double)len / (double)GIB / ((double)(t1 - t0) / 1e9);
}

static void zero_conf(struct bench_env *e, struct region_conf *rc)
{
	memset(rc, 0, sizeof(*rc));
	rc->name = (char *)"zbench";
	rc->path = e->zero_path;
	rc->extent_size = 2 * MIB;
	rc->zeroer_threads = 1;
	rc->batch_extents = 64;
	rc->source = (char *)"pmemz-bench";
}

int scenario_zero(struct bench_env *e)
{
	struct region_conf rc;
	struct zcfg cfgs[NZ] = {
	    {.name = "zeroer 1 thread, fence per 64 extents", .threads = 1, .batch = 64},
	    {.name = "zeroer 2 threads, fence per 64 extents", .threads = 2, .batch = 64},
	    {.name = "zeroer 1 thread, fence per extent (batch 1)", .threads = 1, .batch = 1},
	    {.name = "zeroer 1 thread, fence per 8 extents", .threads = 1, .batch = 8},
	    {.name = "zeroer 1 thread, batch 64, SCHED_IDLE", .threads = 1, .batch = 64,
	     .idle = true},
	};
	static const char *const knames[NK] = {
	    "reference: libpmem2 NT memset, drain per 64 ext",
	    "libpmem2 NT memset, drain per extent",
	    "memset + clflush per line (2015 dax_clear_blocks)",
	    "memset + clwb per line + sfence",
	    "plain memset, no flush (UNSAFE)",
	};
	struct bench_samples ref = {0}, kv[NK] = {{0}}, kr[NK] = {{0}};
	double first, cold;
	struct task_times tt0, tt1;
	struct region *r = NULL;
	struct bench_map m;
	uint64_t data_len, es, t0, t1, k0;
	int ret;

	report_section("1. Zeroing bandwidth vs the limit (GiB/s, whole data area per pass)");
	zero_conf(e, &rc);
	log_set_max_level(opt.verbose ? LOG_INFO : LOG_WARNING);

	/* First pass: region_open formats the blank region (all DIRTY) and the
	 * zeroer starts at once, at background priority, on a mapping this
	 * process has never touched. */
	other_tasks(&tt0);
	t0 = bench_now_ns();
	ret = region_open(&rc, &r);
	if (ret < 0)
		return ret;
	es = r->extent_size;
	data_len = r->extent_count * es;
	ret = run_to_zeroed(r);
	t1 = bench_now_ns();
	other_tasks(&tt1);
	if (ret < 0)
		goto out;
	first = (double)data_len / (double)GIB / ((double)(t1 - t0) / 1e9);

	ret = bench_map_open(e->zero_path, &m);
	if (ret < 0) {
		fprintf(stderr, "pmemz-bench: map %s: %s\n", e->zero_path, pmem2_errormsg());
		goto out;
	}
	/* The reference's first touch of its own mapping, for comparison. */
	k0 = bench_now_ns();
	kern_nt_zero(&m, m.base + r->data_off, data_len, es, 64);
	cold = (double)data_len / (double)GIB / ((double)(bench_now_ns() - k0) / 1e9);
	bench_prefault(m.base, m.size); /* the reference's mapping: warm like the zeroer's */

	for (unsigned rep = 0; rep < opt.reps; rep++) {
		for (size_t k = 0; k < NK; k++) {
			/* A reference pass right before each run: the ratios are taken
			 * pair by pair, under the same moment's noise. */
			double rv = kernel_pass(&m, m.base + r->data_off, data_len, es, 0), v;

			samples_add(&ref, rv);
			if (k < NZ) {
				v = zeroer_pass(r, &cfgs[k], data_len);
				samples_add(&cfgs[k].gbps, v);
				samples_add(&cfgs[k].ratio, v / rv);
			}
			if (k >= 1) {
				v = kernel_pass(&m, m.base + r->data_off, data_len, es, (int)k);
				samples_add(&kv[k], v);
				samples_add(&kr[k], v / rv);
			}
		}
		bench_log("zeroing rep %u done", rep + 1);
	}

	report_samples(S1, knames[0], "GiB/s", &ref, 0, NULL);
	for (size_t i = 0; i < NZ; i++)
		report_row(S1, cfgs[i].name, "GiB/s", samples_median(&cfgs[i].gbps),
			   samples_min(&cfgs[i].gbps), samples_max(&cfgs[i].gbps),
			   samples_median(&cfgs[i].ratio), "x ref (paired)");
	for (size_t k = 1; k < NK; k++)
		report_row(S1, knames[k], "GiB/s", samples_median(&kv[k]), samples_min(&kv[k]),
			   samples_max(&kv[k]), samples_median(&kr[k]), "x ref (paired)");
	report_row(S1, "first pass, cold mapping: NT memset, 1 thread", "GiB/s", cold, cold, cold,
		   0, NULL);
	report_row(S1, "first pass, cold mapping: zeroer at start", "GiB/s", first, first, first,
		   first / cold, "x cold NT memset");
	report_note("first pass (region_open on a never-mapped file, zeroer at SCHED_IDLE): its "
		    "threads ran %.0f ms on CPU and waited %.0f ms in the run queue, with %" PRIu64
		    " minor faults (%.0f per MiB), in %.0f ms",
		    (double)(tt1.run_ns - tt0.run_ns) / 1e6, (double)(tt1.wait_ns - tt0.wait_ns) / 1e6,
		    tt1.minflt - tt0.minflt,
		    (double)(tt1.minflt - tt0.minflt) / ((double)data_len / (double)MIB),
		    (double)(t1 - t0) / 1e6);
	report_target("zeroer (1 thread) >= 0.90 x libpmem2 NT memset",
		      samples_median(&cfgs[0].ratio), 0.90, true);

	/* Leave the region DIRTY: the daemon's first pass then warms its own
	 * mapping (scenarios 2-4 start with it). */
	if (redirty(r) == 0)
		(void)region_sync(r);
	bench_map_close(&m);
	for (size_t i = 0; i < NZ; i++) {
		samples_free(&cfgs[i].gbps);
		samples_free(&cfgs[i].ratio);
	}
	for (size_t k = 0; k < NK; k++) {
		samples_free(&kv[k]);
		samples_free(&kr[k]);
	}
	samples_free(&ref);
out:
	region_close(r);
	return ret < 0 ? ret : 0;
}
