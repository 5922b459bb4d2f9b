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
#include <time.h>
#include <syslog.h>
#include <unistd.h>

#include "bench.h"
#include "conf.h"
#include "util.h"
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

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of the last zeroer_seg (workers + this thread) or kernel_seg (this
 * thread); CPU time of the workers alone, and the wall time. */
static uint64_t last_cpu_ns, last_worker_ns, last_wall_ns;

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

/* Every extent DIRTY again, as after clients freed it all. */
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

#define NZ 5		 /* zeroer configurations */
#define NK 5		 /* kernels: the reference and four others */
#define SEG_EXTENTS 256u /* extents per measurement: 512 MiB */

static int set_threads(struct region *r, unsigned threads)
{
	if (r->zeroer_threads == threads)
		return 0;
	region_zeroer_stop(r);
	r->zeroer_threads = threads;
	return region_zeroer_start(r);
}

static double gibps(uint64_t bytes, uint64_t t0)
{
	return (double)bytes / (double)GIB / ((double)(bench_now_ns() - t0) / 1e9);
}

/*
 * The zeroer over a leased segment: unlease it (DIRTY, as when a client
 * frees it) and time from the group commit that hands it to the zeroer
 * until the last ZEROED state of it is durable.
 */
static double zeroer_seg(struct region *r, const struct zcfg *c, const struct run *runs,
			 size_t n_runs, uint64_t bytes)
{
	struct task_times w0, w1;
	uint64_t t0, c0;
	double v;
	int ret;

	ret = set_threads(r, c->threads);
	if (ret < 0)
		bench_die("cannot restart the zeroer: %s", strerror(-ret));
	r->batch_extents = c->batch;
	region_zeroer_set_urgent(r, !c->idle);
	region_unlease(r, runs, n_runs);
	other_tasks(&w0);
	c0 = thread_cpu_ns();
	t0 = bench_now_ns();
	(void)region_sync(r); /* DIRTY records durable: the zeroer takes them */
	ret = run_to_zeroed(r);
	v = gibps(bytes, t0);
	if (ret < 0)
		bench_die("zeroer pass: %s", strerror(-ret));
	other_tasks(&w1);
	last_cpu_ns = thread_cpu_ns() - c0 + (w1.run_ns - w0.run_ns);
	last_worker_ns = w1.run_ns - w0.run_ns;
	last_wall_ns = bench_now_ns() - t0;
	return v;
}

/* A kernel over the segment's extents, through the bench's own mapping. */
static double kernel_seg(struct bench_map *m, const struct region *r, const struct run *runs,
			 size_t n_runs, uint64_t bytes, int kind)
{
	uint64_t es = r->extent_size, c0 = thread_cpu_ns(), t0 = bench_now_ns();
	unsigned in_batch = 0;
	double v;

	for (size_t k = 0; k < n_runs; k++) {
		for (uint64_t i = runs[k].first; i < runs[k].first + runs[k].count; i++) {
			uint8_t *p = m->base + r->data_off + i * es;

			switch (kind) {
			case 0: /* the reference: NT, a drain per 64 extents */
			case 1: /* NT, a drain per extent */
				m->memset_fn(p, 0, es,
					     PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN);
				if (++in_batch == (kind == 0 ? 64u : 1u)) {
					m->drain_fn();
					in_batch = 0;
				}
				break;
			case 2:
				kern_memset_clflush(p, es);
				break;
			case 3:
				kern_memset_clwb(p, es);
				break;
			default:
				kern_memset_plain(p, es);
				break;
			}
		}
	}
	if (in_batch)
		m->drain_fn();
	v = gibps(bytes, t0);
	last_cpu_ns = thread_cpu_ns() - c0;
	last_wall_ns = bench_now_ns() - t0;
	return v;
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
	    {.name = "zeroer 1 thread, batch 64, SCHED_IDLE",
	     .threads = 1,
	     .batch = 64,
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
	struct bench_samples cpu_ref = {0}, cpu_z = {0}, cpu_ratio = {0}, z_busy = {0};
	struct bench_samples r_busy = {0};
	double first, cold;
	struct task_times tt0, tt1;
	struct region *r = NULL;
	struct bench_map m;
	uint64_t data_len, es, t0, t1, k0, seg, seg_bytes;
	char sbuf[32];
	int ret;

	report_section("1. Zeroing bandwidth vs the limit (GiB/s, in leased segments)");
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

	/*
	 * Short measurements, interleaved: lease a segment, zero it with the
	 * reference, then with another kernel, then free it and let the zeroer
	 * zero it.  Each figure's ratio is taken against the reference run on
	 * the same extents a few tens of milliseconds earlier, which keeps the
	 * ratios steady while other work on the machine comes and goes.  Every
	 * 20 segments cover each zeroer configuration 4 times and each kernel
	 * 5 times; a repetition is one such round.
	 */
	seg = MIN((uint64_t)SEG_EXTENTS, r->extent_count);
	seg_bytes = seg * es;
	for (unsigned i = 0; i < 20 * opt.reps; i++) {
		size_t k = 1 + i % (NK - 1), z = i % NZ, n_runs = 0;
		struct run *runs = NULL;
		uint64_t ref_cpu;
		double rv, v, ref_busy;

		ret = region_lease(r, seg, &runs, &n_runs);
		if (ret < 0)
			goto out_map;
		rv = kernel_seg(&m, r, runs, n_runs, seg_bytes, 0);
		samples_add(&ref, rv);
		ref_cpu = last_cpu_ns;
		ref_busy = (double)last_cpu_ns / (double)last_wall_ns;
		v = kernel_seg(&m, r, runs, n_runs, seg_bytes, (int)k);
		samples_add(&kv[k], v);
		samples_add(&kr[k], v / rv);
		v = zeroer_seg(r, &cfgs[z], runs, n_runs, seg_bytes);
		samples_add(&cfgs[z].gbps, v);
		samples_add(&cfgs[z].ratio, v / rv);
		if (z == 0 && last_cpu_ns && ref_cpu) {
			/* The same comparison per CPU-second: what is left when the
			 * time other programs took the CPU away is set aside. */
			samples_add(&cpu_ref,
				    (double)seg_bytes / (double)GIB / ((double)ref_cpu / 1e9));
			samples_add(&cpu_z,
				    (double)seg_bytes / (double)GIB / ((double)last_cpu_ns / 1e9));
			samples_add(&cpu_ratio, (double)ref_cpu / (double)last_cpu_ns);
			samples_add(&z_busy, (double)last_worker_ns / (double)last_wall_ns);
			samples_add(&r_busy, ref_busy);
		}
		free(runs);
		if (i % 20 == 19)
			bench_log("zeroing rep %u done", i / 20 + 1);
	}
	report_samples(S1, knames[0], "GiB/s", &ref, 0, NULL);
	for (size_t i = 0; i < NZ; i++)
		report_row(S1, cfgs[i].name, "GiB/s", samples_median(&cfgs[i].gbps),
			   samples_min(&cfgs[i].gbps), samples_max(&cfgs[i].gbps),
			   samples_median(&cfgs[i].ratio), "x ref (paired)");
	for (size_t k = 1; k < NK; k++)
		report_row(S1, knames[k], "GiB/s", samples_median(&kv[k]), samples_min(&kv[k]),
			   samples_max(&kv[k]), samples_median(&kr[k]), "x ref (paired)");
	report_samples(S1, "per CPU-second: reference", "GiB/cpu-s", &cpu_ref, 0, NULL);
	report_row(S1, "per CPU-second: zeroer 1 thread (+ main loop)", "GiB/cpu-s",
		   samples_median(&cpu_z), samples_min(&cpu_z), samples_max(&cpu_z),
		   samples_median(&cpu_ratio), "x ref (paired)");
	report_note("on CPU for (median) %.0f %% of the wall time: the reference's thread; %.0f %% "
		    "the zeroer's worker (it is woken for each batch, the reference never sleeps)",
		    100 * samples_median(&r_busy), 100 * samples_median(&z_busy));
	report_row(S1, "first pass, cold mapping: NT memset, 1 thread", "GiB/s", cold, cold, cold,
		   0, NULL);
	report_row(S1, "first pass, cold mapping: zeroer at start", "GiB/s", first, first, first,
		   first / cold, "x cold NT memset");
	report_note("first pass (region_open on a never-mapped file, zeroer at SCHED_IDLE): its "
		    "threads ran %.0f ms on CPU and waited %.0f ms in the run queue, with %" PRIu64
		    " minor faults (%.0f per MiB), in %.0f ms",
		    (double)(tt1.run_ns - tt0.run_ns) / 1e6,
		    (double)(tt1.wait_ns - tt0.wait_ns) / 1e6, tt1.minflt - tt0.minflt,
		    (double)(tt1.minflt - tt0.minflt) / ((double)data_len / (double)MIB),
		    (double)(t1 - t0) / 1e6);
	report_note("each sample zeroes one leased segment of %s (%" PRIu64 " extents); ratio = "
		    "median over samples of figure / reference on the same segment just before",
		    pmemz_format_size(seg_bytes, sbuf, sizeof(sbuf)), seg);
	report_target("zeroer (1 thread) >= 0.90 x libpmem2 NT memset",
		      samples_median(&cfgs[0].ratio), 0.90, true);

	/* Leave the region DIRTY: the daemon's first pass then warms its own
	 * mapping (scenarios 2-4 start with it). */
	if (redirty(r) == 0)
		(void)region_sync(r);
out_map:
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
	samples_free(&cpu_ref);
	samples_free(&cpu_z);
	samples_free(&cpu_ratio);
	samples_free(&z_busy);
	samples_free(&r_busy);
out:
	region_close(r);
	return ret < 0 ? ret : 0;
}
