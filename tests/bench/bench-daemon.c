/* SPDX-License-Identifier: MIT */
/* The bench's files, its own pmemzerod, and the client/STAT helpers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "client-private.h"
#include "libpmemzclient.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void bench_log(const char *fmt, ...)
{
	va_list ap;

	if (!opt.verbose)
		return;
	va_start(ap, fmt);
	fputs("  # ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("pmemz-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(EXIT_FAILURE);
}

static int path_in(char out[PATH_MAX], const char *dir, const char *name)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int bench_env_init(struct bench_env *e)
{
	memset(e, 0, sizeof(*e));
	if (path_in(e->dir, opt.dir, "pmemz-bench-XXXXXX") < 0)
		return -ENAMETOOLONG;
	if (!mkdtemp(e->dir))
		return -errno;
	if (path_in(e->main_path, e->dir, "main.region") < 0 ||
	    path_in(e->small_path, e->dir, "small.region") < 0 ||
	    path_in(e->frag_path, e->dir, "frag.region") < 0 ||
	    path_in(e->sock, e->dir, "d.sock") < 0 ||
	    path_in(e->conf, e->dir, "pmemzerod.conf") < 0 ||
	    path_in(e->log, e->dir, "daemon.log") < 0)
		return -ENAMETOOLONG;
	memcpy(e->zero_path, e->main_path, sizeof(e->zero_path));
	e->own_daemon = !opt.socket;
	if (opt.socket) {
		if (strlen(opt.socket) >= sizeof(e->sock))
			return -ENAMETOOLONG;
		memcpy(e->sock, opt.socket, strlen(opt.socket) + 1);
		e->region = opt.region ? opt.region : "default";
		e->small_region = opt.small_region ? opt.small_region : e->region;
	} else {
		e->region = "bench";
		e->small_region = "small";
	}
	return 0;
}

void bench_env_cleanup(struct bench_env *e)
{
	const char *files[] = {e->main_path, e->small_path, e->frag_path, e->conf, e->log, e->sock};

	bench_daemon_stop(e);
	if (opt.keep || !e->dir[0]) {
		if (e->dir[0])
			fprintf(stderr, "pmemz-bench: kept %s\n", e->dir);
		return;
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		/* --socket: the daemon's socket is its own, not the bench's to remove */
		if (files[i] == e->sock && !e->own_daemon)
			continue;
		(void)unlink(files[i]);
	}
	(void)rmdir(e->dir);
}

int bench_make_file(const char *path, uint64_t size)
{
	const size_t chunk = 16 * MIB;
	uint8_t *buf;
	int fd, r = 0;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = posix_fallocate(fd, 0, (off_t)size);
	if (r) {
		(void)close(fd);
		(void)unlink(path);
		return -r;
	}
	/* Stale data, what a previous owner left behind, except in the first
	 * MiB: a blank header is what the daemon formats without being told. */
	buf = malloc(chunk);
	if (!buf) {
		(void)close(fd);
		return -ENOMEM;
	}
	memset(buf, 0xa5, chunk);
	for (uint64_t off = MIB; off < size && r == 0; off += chunk) {
		size_t n = (size_t)(size - off < chunk ? size - off : chunk);

		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			r = -EIO;
	}
	free(buf);
	(void)close(fd);
	return r;
}

static int write_conf(const struct bench_env *e)
{
	FILE *f = fopen(e->conf, "we");

	if (!f)
		return -errno;
	fprintf(f,
		"[daemon]\n"
		"log_level = %s\n"
		"\n"
		"[region %s]\n"
		"path = %s\n"
		"extent_size = 2M\n"
		"zeroer_threads = %u\n"
		"batch_extents = 64\n"
		"%s"
		"\n"
		"[region %s]\n"
		"path = %s\n"
		"extent_size = 64K\n"
		"zeroer_threads = 1\n"
		"batch_extents = 64\n",
		opt.verbose ? "info" : "notice", e->region, e->main_path,
		e->zeroer_threads ? e->zeroer_threads : 1u, e->main_extra ? e->main_extra : "",
		e->small_region, e->small_path);
	if (e->with_frag)
		fprintf(f, "\n[region frag]\npath = %s\nextent_size = 4K\nzeroer_threads = 1\n",
			e->frag_path);
	return fclose(f) == 0 ? 0 : -EIO;
}

static void dump_file(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	(void)fclose(f);
}

static bool socket_up(const struct bench_env *e)
{
	struct pmemz_client *c;

	if (pmemz_client_new(e->sock, &c) < 0)
		return false;
	pmemz_client_free(c);
	return true;
}

int bench_daemon_start(struct bench_env *e)
{
	uint64_t t0;
	pid_t pid;
	int r;

	if (!e->own_daemon)
		return 0;
	r = e->conf_written ? 0 : write_conf(e);
	if (r < 0)
		return r;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(e->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (fd >= 0) {
			(void)dup2(fd, STDOUT_FILENO);
			(void)dup2(fd, STDERR_FILENO);
		}
		execl(opt.daemon_path, opt.daemon_path, "-d", "-c", e->conf, "--socket", e->sock,
		      (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", opt.daemon_path, strerror(errno));
		_exit(127);
	}
	e->pid = pid;
	t0 = bench_now_ns();
	while (!socket_up(e)) {
		int st;

		if (waitpid(pid, &st, WNOHANG) == pid) {
			e->pid = 0;
			fprintf(stderr, "pmemz-bench: the daemon exited; its log (%s):\n", e->log);
			dump_file(e->log);
			return -ECHILD;
		}
		if (bench_now_ns() - t0 > 600ull * 1000000000ull)
			return -ETIMEDOUT;
		(void)usleep(2000); /* --scale times the start with this */
	}
	return 0;
}

void bench_daemon_stop(struct bench_env *e)
{
	uint64_t t0;
	int st;

	if (!e->pid)
		return;
	(void)kill(e->pid, SIGTERM);
	t0 = bench_now_ns();
	while (waitpid(e->pid, &st, WNOHANG) == 0) {
		if (bench_now_ns() - t0 > 20ull * 1000000000ull) {
			(void)kill(e->pid, SIGKILL);
			(void)waitpid(e->pid, &st, 0);
			break;
		}
		(void)usleep(10000);
	}
	e->pid = 0;
}

int bench_connect(const struct bench_env *e, const char *region, struct pmemz_client **c,
		  struct pmemz_region **r)
{
	int ret;

	*r = NULL;
	ret = pmemz_client_new(e->sock, c);
	if (ret < 0)
		return ret;
	if (!region)
		return 0;
	ret = pmemz_region_open(*c, region, r);
	if (ret < 0) {
		pmemz_client_free(*c);
		*c = NULL;
	}
	return ret;
}

int bench_stat(struct pmemz_client *c, const char *region, struct bench_stat *st)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__StatReq sr = PMEMZ__STAT_REQ__INIT;
	const Pmemz__RegionStat *rs;
	int r;

	sr.region = (char *)(uintptr_t)region;
	req.op_case = PMEMZ__REQUEST__OP_STAT;
	req.stat = &sr;
	r = pmemz_client_call(c, &req, &resp);
	if (r < 0)
		return r;
	if (resp->stat->n_regions != 1)
		return -EPROTO;
	rs = resp->stat->regions[0];
	memset(st, 0, sizeof(*st));
	st->zeroed = rs->zeroed;
	st->dirty = rs->dirty;
	st->leased = rs->leased;
	st->committed = rs->committed;
	st->zeroing = rs->zeroing;
	st->extent_size = rs->info->extent_size;
	st->extent_count = rs->info->extent_count;
	st->drains = rs->drains;
	st->commits = rs->commits;
	st->allocations = rs->allocations;
	st->frees = rs->frees;
	st->bytes_zeroed = rs->bytes_zeroed;
	st->zero_bytes_per_sec = rs->zero_bytes_per_sec;
	st->zeroer_threads = rs->zeroer_threads;
	(void)snprintf(st->zone, sizeof(st->zone), "%s", rs->zero_zone ? rs->zero_zone : "");
	st->reserve_low = rs->has_reserve_low ? rs->reserve_low : 0;
	st->group_commits = resp->stat->has_group_commits ? resp->stat->group_commits : 0;
	return 0;
}

int bench_wait_zeroed(struct pmemz_client *c, const char *region, double timeout_s)
{
	uint64_t t0 = bench_now_ns();
	struct bench_stat st;
	int r;

	for (;;) {
		r = bench_stat(c, region, &st);
		if (r < 0)
			return r;
		if (st.dirty == 0)
			return 0;
		if ((double)(bench_now_ns() - t0) / 1e9 > timeout_s)
			return -ETIMEDOUT;
		(void)usleep(2000);
	}
}

int bench_raw_alloc(struct pmemz_client *c, const char *region, uint64_t bytes, bool nowait,
		    uint64_t *lease)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
	int r;

	al.region = (char *)(uintptr_t)region;
	al.bytes = bytes;
	al.has_nowait = true;
	al.nowait = nowait;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &al;
	r = pmemz_client_call(c, &req, &resp);
	if (r < 0)
		return r;
	*lease = resp->allocate->lease;
	return 0;
}

int bench_raw_free(struct pmemz_client *c, const char *region, uint64_t lease)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__FreeReq fr = PMEMZ__FREE_REQ__INIT;

	fr.region = (char *)(uintptr_t)region;
	fr.has_lease = true;
	fr.lease = lease;
	req.op_case = PMEMZ__REQUEST__OP_FREE;
	req.free = &fr;
	return pmemz_client_call(c, &req, &resp);
}

int bench_noop(struct pmemz_client *c, size_t payload)
{
	static uint8_t buf[PMEMZ_FRAME_MAX];
	_cleanup_response_ Pmemz__Response *resp = NULL;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__NoopReq nr = PMEMZ__NOOP_REQ__INIT;

	if (payload) {
		nr.has_payload = true;
		nr.payload.data = buf;
		nr.payload.len = payload < sizeof(buf) ? payload : sizeof(buf);
	}
	req.op_case = PMEMZ__REQUEST__OP_NOOP;
	req.noop = &nr;
	return pmemz_client_call(c, &req, &resp);
}

void bench_alloc_frame_sizes(const char *region, size_t *req_len, size_t *resp_len)
{
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__AllocateReq al = PMEMZ__ALLOCATE_REQ__INIT;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__AllocateResp ar = PMEMZ__ALLOCATE_RESP__INIT;
	Pmemz__Run run = PMEMZ__RUN__INIT;
	Pmemz__Run *runs[1] = {&run};

	req.version = PMEMZ_PROTO_VERSION;
	req.id = 1000;
	al.region = (char *)(uintptr_t)region;
	al.bytes = 2 * MIB;
	al.has_nowait = true;
	req.op_case = PMEMZ__REQUEST__OP_ALLOCATE;
	req.allocate = &al;
	resp.id = 1000;
	run.first = 1000;
	run.count = 1;
	ar.lease = 1000;
	ar.n_runs = 1;
	ar.runs = runs;
	resp.op_case = PMEMZ__RESPONSE__OP_ALLOCATE;
	resp.allocate = &ar;
	*req_len = PMEMZ_FRAME_HDR + pmemz__request__get_packed_size(&req);
	*resp_len = PMEMZ_FRAME_HDR + pmemz__response__get_packed_size(&resp);
}

void bench_map_from_region(struct pmemz_region *r, struct bench_map *m)
{
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->base = r->base;
	m->size = r->map_size;
	m->memset_fn = pmem2_get_memset_fn(r->map);
	m->memcpy_fn = pmem2_get_memcpy_fn(r->map);
	m->drain_fn = pmem2_get_drain_fn(r->map);
	m->persist_fn = pmem2_get_persist_fn(r->map);
	m->granularity = r->granularity;
}

void bench_warm_region(struct pmemz_region *r)
{
	uint8_t sum = 0;

	for (uint64_t off = r->data_offset; off < r->data_offset + r->extent_count * r->extent_size;
	     off += 4096)
		sum += *(volatile const uint8_t *)(r->base + off);
	__asm__ volatile("" : : "r"(sum));
}

double bench_daemon_warmup(struct pmemz_client *c, struct pmemz_region *r)
{
	struct pmemz_alloc *a = NULL;
	struct bench_stat st;
	uint64_t t0, dirty;
	int ret;

	ret = bench_stat(c, r->name, &st);
	if (ret < 0)
		return ret;
	dirty = st.dirty;
	if (!dirty)
		return 0;
	/* A waiting allocation of every free extent makes the zeroer urgent
	 * (normal priority) until the last one is zeroed. */
	t0 = bench_now_ns();
	ret = pmemz_alloc_new(r, (size_t)((st.zeroed + st.dirty) * st.extent_size), 0, &a);
	if (ret < 0)
		return ret;
	{
		double gibps = (double)(dirty * st.extent_size) / (double)GIB /
			       ((double)(bench_now_ns() - t0) / 1e9);

		ret = pmemz_alloc_release(a); /* all DIRTY again: zeroed once more, warm */
		if (ret < 0)
			return ret;
		ret = bench_wait_zeroed(c, r->name, 600);
		return ret < 0 ? ret : gibps;
	}
}

/* Is task tid of pid a zeroer worker ("zero:REGION", zeroer.c names them)? */
static bool zeroer_task(pid_t pid, const char *tid)
{
	char path[320], comm[32] = "";
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	(void)fclose(f);
	return strncmp(comm, "zero:", 5) == 0;
}

void bench_proc_sched(pid_t pid, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *zero_run_ns)
{
	char path[64];
	DIR *d;
	struct dirent *de;

	*run_ns = *wait_ns = 0;
	if (zero_run_ns)
		*zero_run_ns = 0;
	(void)snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char p2[320];
		unsigned long long run = 0, wait = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		(void)snprintf(p2, sizeof(p2), "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
		f = fopen(p2, "re");
		if (!f)
			continue;
		if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
			*run_ns += run;
			*wait_ns += wait;
			if (zero_run_ns && zeroer_task(pid, de->d_name))
				*zero_run_ns += run;
		}
		(void)fclose(f);
	}
	(void)closedir(d);
}

int bench_zeroer_pause(struct pmemz_client *c, const char *region, bool pause)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	Pmemz__Request req = PMEMZ__REQUEST__INIT;
	Pmemz__ZeroerReq zr = PMEMZ__ZEROER_REQ__INIT;

	zr.region = (char *)(uintptr_t)region;
	zr.has_pause = true;
	zr.pause = pause;
	req.op_case = PMEMZ__REQUEST__OP_ZEROER;
	req.zeroer = &zr;
	return pmemz_client_call(c, &req, &resp);
}
