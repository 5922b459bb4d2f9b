/* SPDX-License-Identifier: MIT */
/*
 * pmemz-bench --scale: how the daemon's costs grow with the region (issue
 * 12).  For each region size and extent size: a file region on disk (the
 * zeroer rate-limited, so the run writes little), and the daemon's first
 * start (format), restart (recovery), resident memory, ALLOCATE latency of
 * one extent from the zeroed pool, and one MAP, LIST and STAT.  Each region
 * file is deleted before the next.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench.h"
#include "client-private.h"
#include "libpmemzclient.h"
#include "util.h"

#define SC "scale"
#define SCALE_RATE "64M"  /* zeroer byte rate: bounded disk writes per point */
#define SCALE_ALLOCS 200u /* ALLOCATE samples per point, at most */
#define SCALE_WAIT_S 4.0  /* for zeroed extents to allocate */

static uint64_t rss_kib(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	(void)fclose(f);
	return kb;
}

static int write_scale_conf(const struct bench_env *e, const char *path, uint64_t size,
			    uint64_t extent)
{
	FILE *f = fopen(e->conf, "we");

	if (!f)
		return -errno;
	fprintf(f,
		"[daemon]\nlog_level = notice\n\n"
		"[region scale]\npath = %s\nsize = %" PRIu64 "\nextent_size = %" PRIu64 "\n"
		"zero_rate = " SCALE_RATE "\n",
		path, size, extent);
	return fclose(f) == 0 ? 0 : -EIO;
}

/* Milliseconds of req, the fastest of three (MAP may refuse: its status is kept). */
static double call_ms(struct pmemz_client *c, Pmemz__Request *req, int *status)
{
	double best = 0;

	for (int i = 0; i < 3; i++) {
		_cleanup_response_ Pmemz__Response *resp = NULL;
		uint64_t t0 = bench_now_ns();
		double ms;

		*status = pmemz_client_call(c, req, &resp);
		ms = (double)(bench_now_ns() - t0) / 1e6;
		if (i == 0 || ms < best)
			best = ms;
	}
	return best;
}

struct point {
	uint64_t size, extent, extents;
	double first_s, restart_s;
	uint64_t rss_kib, rss_restart_kib;
	double alloc_p50, alloc_p99; /* us; 0: not measured */
	unsigned allocs;
	double map_ms, list_ms, stat_ms;
	int map_status;
};

static int measure_calls(struct pmemz_client *c, struct pmemz_region *r, struct point *p)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__MapReq mq = PMEMZ__MAP_REQ__INIT;
	Pmemz__ListReq lq = PMEMZ__LIST_REQ__INIT;
	Pmemz__StatReq sq = PMEMZ__STAT_REQ__INIT;
	struct pmemz_alloc **held;
	struct bench_samples lat = {0};
	struct bench_stat st;
	uint64_t t0 = bench_now_ns();
	int status, ret;
	char tag[32];

	mq.region = lq.region = sq.region = (char *)(uintptr_t) "scale";
	req.op_case = PMEMZ__REQUEST__OP_MAP;
	req.map = &mq;
	p->map_ms = call_ms(c, &req, &p->map_status);
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &sq;
	p->stat_ms = call_ms(c, &req, &status);

	/* ALLOCATE one extent at a time from what the rate-limited zeroer made ready. */
	do {
		ret = bench_stat(c, "scale", &st);
		if (ret < 0)
			return ret;
		if (st.zeroed >= SCALE_ALLOCS + 1)
			break;
		(void)usleep(50000);
	} while ((double)(bench_now_ns() - t0) / 1e9 < SCALE_WAIT_S);
	p->allocs = (unsigned)MIN((uint64_t)SCALE_ALLOCS, st.zeroed > 0 ? st.zeroed - 1 : 0);
	held = calloc(p->allocs ? p->allocs : 1, sizeof(*held));
	if (!held)
		return -ENOMEM;
	for (unsigned i = 0; i < p->allocs; i++) {
		uint64_t t1 = bench_now_ns();

		ret = pmemz_alloc_new(r, (size_t)p->extent, PMEMZ_ALLOC_NOWAIT, &held[i]);
		if (ret < 0) {
			p->allocs = i;
			break;
		}
		samples_add(&lat, (double)(bench_now_ns() - t1) / 1e3);
	}
	if (lat.n) {
		p->alloc_p50 = samples_pct(&lat, 50);
		p->alloc_p99 = samples_pct(&lat, 99);
	}
	/* One commit, so LIST has a tag with its runs to describe. */
	if (p->allocs) {
		(void)snprintf(tag, sizeof(tag), "scale-%" PRIu64, p->extents);
		(void)pmemz_alloc_commit(held[0], tag, 0);
	}
	req.op_case = PMEMZ__REQUEST__OP_LIST;
	req.list = &lq;
	p->list_ms = call_ms(c, &req, &status);
	for (unsigned i = 0; i < p->allocs; i++)
		(void)pmemz_alloc_release(held[i]);
	free(held);
	samples_free(&lat);
	return 0;
}

static int measure_point(struct bench_env *e, const char *path, struct point *p)
{
	struct pmemz_client *c = NULL;
	struct pmemz_region *r = NULL;
	struct bench_stat st;
	uint64_t t0;
	int ret;

	(void)unlink(path);
	ret = write_scale_conf(e, path, p->size, p->extent);
	if (ret < 0)
		return ret;
	e->conf_written = true;
	t0 = bench_now_ns();
	ret = bench_daemon_start(e);
	p->first_s = (double)(bench_now_ns() - t0) / 1e9;
	if (ret < 0)
		goto out;
	p->rss_kib = rss_kib(e->pid);
	ret = bench_connect(e, "scale", &c, &r);
	if (ret < 0)
		goto out;
	ret = bench_stat(c, "scale", &st);
	if (ret < 0)
		goto out;
	p->extents = st.extent_count;
	ret = measure_calls(c, r, p);
	pmemz_region_close(r);
	pmemz_client_free(c);
	r = NULL;
	c = NULL;
	if (ret < 0)
		goto out;
	bench_daemon_stop(e);
	t0 = bench_now_ns();
	ret = bench_daemon_start(e);
	p->restart_s = (double)(bench_now_ns() - t0) / 1e9;
	if (ret >= 0)
		p->rss_restart_kib = rss_kib(e->pid);
out:
	pmemz_region_close(r);
	pmemz_client_free(c);
	bench_daemon_stop(e);
	(void)unlink(path);
	e->conf_written = false;
	return ret;
}

static uint64_t base_rss_kib; /* the daemon with a region of a few extents */

static void report_point(const struct point *p)
{
	char sz[32], ex[32], name[128];

	pmemz_format_size(p->size, sz, sizeof(sz));
	pmemz_format_size(p->extent, ex, sizeof(ex));
	printf("  %9s %7s %10" PRIu64 " %8.3f %8.3f %9.1f %7.1f %9.1f %9.1f %8.2f %8.2f %8.2f%s\n",
	       sz, ex, p->extents, p->first_s, p->restart_s, (double)p->rss_kib / 1024,
	       (double)(p->rss_kib - MIN(p->rss_kib, base_rss_kib)) * 1024 / (double)p->extents,
	       p->alloc_p50, p->alloc_p99, p->map_ms, p->list_ms, p->stat_ms,
	       p->map_status < 0 ? "  (MAP refused)" : "");
	(void)snprintf(name, sizeof(name), "%s region, %s extents", sz, ex);
	report_json_point(SC, name, p->extents, p->first_s, p->restart_s, p->rss_kib, p->alloc_p50,
			  p->alloc_p99, p->map_ms, p->list_ms, p->stat_ms);
}

static int parse_list(const char *s, uint64_t *v, size_t max, size_t *n)
{
	char *copy = strdup(s), *save = NULL;

	*n = 0;
	if (!copy)
		return -ENOMEM;
	for (char *t = strtok_r(copy, ",", &save); t && *n < max; t = strtok_r(NULL, ",", &save))
		if (pmemz_parse_size(t, &v[(*n)++]) < 0 || !v[*n - 1]) {
			free(copy);
			return -EINVAL;
		}
	free(copy);
	return 0;
}

int scenario_scale(struct bench_env *e)
{
	uint64_t sizes[16], extents[] = {4 * KIB, 64 * KIB, 2 * MIB, GIB};
	char path[PATH_MAX], buf[64];
	struct statvfs vfs;
	size_t n_sizes;
	int ret = 0;

	if (parse_list(opt.scale_sizes, sizes, 16, &n_sizes) < 0)
		bench_die("--scale-sizes: invalid list '%s'", opt.scale_sizes);
	if ((size_t)snprintf(path, sizeof(path), "%s/scale.region", e->dir) >= sizeof(path))
		return -ENAMETOOLONG;
	report_section("Scale: cost against region size and extent size");
	if (statvfs(e->dir, &vfs) == 0)
		report_note(
		    "%s: %s free; zeroer rate-limited to " SCALE_RATE "/s; each region "
		    "file is deleted before the next",
		    e->dir,
		    pmemz_format_size((uint64_t)vfs.f_bavail * vfs.f_frsize, buf, sizeof(buf)));
	{
		struct point base = {.size = 64 * MIB, .extent = 2 * MIB};

		ret = measure_point(e, path, &base);
		if (ret < 0)
			return ret;
		base_rss_kib = base.rss_kib;
		report_note("baseline: the daemon with one region of %" PRIu64
			    " extents: %.1f MiB resident, first start %.3f s",
			    base.extents, (double)base.rss_kib / 1024, base.first_s);
	}
	printf("  %9s %7s %10s %8s %8s %9s %7s %9s %9s %8s %8s %8s\n", "region", "extent",
	       "extents", "start s", "restrt s", "RSS MiB", "B/ext", "alloc p50", "alloc p99",
	       "MAP ms", "LIST ms", "STAT ms");
	for (size_t i = 0; i < n_sizes && ret >= 0; i++) {
		if (statvfs(e->dir, &vfs) == 0 &&
		    (uint64_t)vfs.f_bavail * vfs.f_frsize < sizes[i] + sizes[i] / 4) {
			report_note("skipped %s: not enough free space in %s",
				    pmemz_format_size(sizes[i], buf, sizeof(buf)), e->dir);
			continue;
		}
		for (size_t k = 0; k < ARRAY_SIZE(extents) && ret >= 0; k++) {
			struct point p = {.size = sizes[i], .extent = extents[k]};

			if (sizes[i] / extents[k] < 16)
				continue; /* a region needs a few extents besides its metadata */
			ret = measure_point(e, path, &p);
			if (ret >= 0)
				report_point(&p);
		}
	}
	report_note(
	    "start = spawn to socket up (format on first start, recovery on restart); "
	    "RSS = the daemon's resident memory after the first start, B/ext = (RSS - "
	    "baseline) / extents; alloc = one-extent ALLOCATE (us) from the zeroed pool, up to %u, "
	    "0 when the rate-limited zeroer had none ready; MAP / LIST (one tag) / STAT: "
	    "one call each",
	    SCALE_ALLOCS);
	return ret;
}
