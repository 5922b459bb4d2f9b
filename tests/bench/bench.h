/* SPDX-License-Identifier: MIT */
/*
 * pmemz-bench: pmemzerod against the machine's limit and the alternatives,
 * side by side in one run (docs/PERFORMANCE.md; the targets and their
 * reasoning: docs/DESIGN.md, "Performance targets").
 *
 *   bench-main.c     options, machine facts, the run
 *   bench-daemon.c   the region file, the daemon, client and STAT helpers
 *   bench-kernels.c  libpmem2 mapping and the zeroing / writing kernels
 *   bench-zero.c     scenario 1: zeroing bandwidth (in-process zeroer)
 *   bench-alloc.c    scenarios 2 and 3: allocation latency and throughput
 *   bench-fill.c     scenario 4: fill fresh space
 *   bench-waitzero.c scenario 5: zeroing as a waiting client sees it
 *   bench-floor.c    the one-CPU raw socket floor (scenario 2)
 *   bench-scale.c    --scale: costs against region and extent size
 *   bench-interfere.c scenario 6: a memory-bound writer beside the zeroer
 *   bench-frag.c     scenario 7: ALLOCATE against fragmentation
 *   bench-attack.c   scenario 8: allocation latency under attack (docs/SECURITY.md)
 *   bench-handback.c scenario 9: allocations on dirty space wait for their own extents
 *   bench-report.c   samples, the table and the JSON report
 */
#ifndef PMEMZ_BENCH_H
#define PMEMZ_BENCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <libpmem2.h>

#define KIB (1024ull)
#define MIB (1024ull * 1024ull)
#define GIB (1024ull * 1024ull * 1024ull)

/* ---- options and environment (bench-main.c, bench-daemon.c) ---- */
enum {
	SC_ZERO = 1u << 0,
	SC_ALLOC = 1u << 1,
	SC_THROUGHPUT = 1u << 2,
	SC_FILL = 1u << 3,
	SC_WAITZERO = 1u << 4,
	SC_INTERFERE = 1u << 5,
	SC_FRAG = 1u << 6,
	SC_ATTACK = 1u << 7,
	SC_HANDBACK = 1u << 8,
	SC_ALL = 0x1ffu,
};

struct bench_opts {
	const char *daemon_path;  /* our pmemzerod unless --daemon */
	const char *socket;	  /* --socket: use a running daemon */
	const char *region;	  /* --region: its region (2 MiB extents expected) */
	const char *small_region; /* --small-region: small-extent region for scenario 3 */
	const char *json;
	const char *dir; /* where the bench's files go (default /dev/shm) */
	bool quick;
	bool verbose;
	bool keep;
	unsigned reps;
	unsigned scenarios;
	uint64_t region_size;	 /* bytes of the region file */
	uint64_t fill_bytes;	 /* scenario 4 */
	uint64_t reserve;	 /* scenario 4 (d): pmemz_region_set_reserve bytes */
	bool scale;		 /* --scale: the growth table instead of the scenarios */
	const char *scale_sizes; /* --scale-sizes: region sizes, comma-separated */
};
extern struct bench_opts opt;

struct bench_env {
	char dir[PATH_MAX];	   /* private temp dir */
	char main_path[PATH_MAX];  /* region file of the main region (2 MiB extents) */
	char small_path[PATH_MAX]; /* region file of the small region (64 KiB extents) */
	char frag_path[PATH_MAX];  /* scenario 7's region file (4 KiB extents), "frag" */
	bool with_frag;		   /* the daemon has region "frag" */
	char zero_path[PATH_MAX];  /* scenario 1's region file (== main_path when ours) */
	char sock[PATH_MAX];
	char conf[PATH_MAX];
	char log[PATH_MAX];
	const char *region;	  /* main region name */
	const char *small_region; /* small region name */
	unsigned zeroer_threads;  /* of the main region in our daemon's configuration */
	const char *main_extra;	  /* more keys for the main region's configuration */
	pid_t pid;		  /* our daemon, 0 when none */
	bool own_daemon;
	bool conf_written; /* bench_daemon_start uses e->conf as it is (--scale) */
};

int bench_env_init(struct bench_env *e);
void bench_env_cleanup(struct bench_env *e);
/* Create (fallocate) a region file of size bytes filled with a non-zero
 * pattern: stale data, every page allocated as on a real device. */
int bench_make_file(const char *path, uint64_t size);
int bench_daemon_start(struct bench_env *e);
void bench_daemon_stop(struct bench_env *e);

struct pmemz_client;
struct pmemz_region;
struct bench_map;
int bench_connect(const struct bench_env *e, const char *region, struct pmemz_client **c,
		  struct pmemz_region **r);

/* The client library's own mapping of the region, with its libpmem2 functions
 * (nothing to close: it lives as long as the region handle). */
void bench_map_from_region(struct pmemz_region *r, struct bench_map *m);
/* Warm the whole data area of the library's mapping (loads only). */
void bench_warm_region(struct pmemz_region *r);
/* The daemon's region from DIRTY to ZEROED with its first pass made urgent
 * (a waiting ALLOCATE of everything, then FREE), so its mapping is warm.
 * Returns the first pass's GiB/s, or 0 when nothing was DIRTY. */
double bench_daemon_warmup(struct pmemz_client *c, struct pmemz_region *r);

struct bench_stat {
	uint64_t zeroed, dirty, leased, committed, zeroing;
	uint64_t extent_size, extent_count;
	uint64_t drains, commits, allocations, frees, bytes_zeroed;
	uint64_t group_commits;
	uint64_t zeroer_threads;
	double zero_bytes_per_sec;
	char zone[16];	      /* zeroing policy zone ("" from an older daemon) */
	uint64_t reserve_low; /* adaptive policy: low watermark, extents */
};
/* ZEROER: pause or resume background zeroing of a region (admin). */
int bench_zeroer_pause(struct pmemz_client *c, const char *region, bool pause);
int bench_stat(struct pmemz_client *c, const char *region, struct bench_stat *st);
/* Wait until no free extent is DIRTY (all zeroed); -ETIMEDOUT. */
int bench_wait_zeroed(struct pmemz_client *c, const char *region, double timeout_s);
/* ALLOCATE / FREE by lease id, outside the library's handles. */
int bench_raw_alloc(struct pmemz_client *c, const char *region, uint64_t bytes, bool nowait,
		    uint64_t *lease);
int bench_raw_free(struct pmemz_client *c, const char *region, uint64_t lease);
/* A NOOP round trip with a payload of n bytes (the transport floor). */
int bench_noop(struct pmemz_client *c, size_t payload);
/* Packed size of the ALLOCATE request and of a one-run reply, for sizing NOOPs. */
void bench_alloc_frame_sizes(const char *region, size_t *req, size_t *resp);

/* CPU time and run-queue wait summed over every thread of process pid (schedstat). */
/* CPU time of pid's threads: run, wait for a CPU, and run of its zeroer workers (may be NULL). */
void bench_proc_sched(pid_t pid, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *zero_run_ns);
uint64_t bench_now_ns(void);
void bench_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- the one-CPU raw socket floor (bench-floor.c) ---- */
#define PMEMZ_BENCH_FLOOR_MAX 4096u
struct bench_floor;
/* An echo thread on epoll at the far end of a socket pair, pinned to the caller's CPU. */
int bench_floor_open(size_t req_len, size_t resp_len, struct bench_floor **out);
/* One round trip (us) with the caller pinned to that CPU for its duration; < 0 on error. */
double bench_floor_round_trip(struct bench_floor *f);
int bench_floor_cpu(const struct bench_floor *f);
void bench_floor_close(struct bench_floor *f);

/* ---- zeroing kernels (bench-kernels.c) ---- */
struct bench_map {
	struct pmem2_map *map;
	int fd;
	uint8_t *base;
	size_t size;
	pmem2_memset_fn memset_fn;
	pmem2_memcpy_fn memcpy_fn;
	pmem2_drain_fn drain_fn;
	pmem2_persist_fn persist_fn;
	const char *granularity;
};
int bench_map_open(const char *path, struct bench_map *m);
void bench_map_close(struct bench_map *m);
/* Fault every page of [p, p+len) in for writing (MADV_POPULATE_WRITE). */
void bench_prefault(void *p, size_t len);

/* libpmem2 NT memset of each chunk, one drain per `batch` chunks. */
void kern_nt_zero(struct bench_map *m, uint8_t *p, size_t len, size_t chunk, size_t batch);
/* memset, then clflush every line (2015 dax_clear_blocks), sfence. */
void kern_memset_clflush(uint8_t *p, size_t len);
/* memset, clwb every line, one sfence. */
void kern_memset_clwb(uint8_t *p, size_t len);
/* plain temporal memset, nothing made durable (unsafe). */
void kern_memset_plain(uint8_t *p, size_t len);
/* The application's write: libpmem2 NT copy of src, then one drain (durable). */
void kern_write_durable(struct bench_map *m, uint8_t *dst, const uint8_t *src, size_t len);
/* The ISA libpmem2 picked (CPU flags + libpmem2 1.12's PMEM_* rules). */
const char *bench_isa_path(void);
/* CPU model name from /proc/cpuinfo. */
const char *bench_cpu_model(void);
/*
 * The commit of the source tree the bench was built from ("-dirty" when it
 * had uncommitted changes at the run), from $PMEMZ_BENCH_COMMIT, else git;
 * "unknown" outside a git checkout.
 */
const char *bench_commit(void);

/* ---- scenarios ---- */
int scenario_zero(struct bench_env *e);
int scenario_alloc(struct bench_env *e);
int scenario_throughput(struct bench_env *e);
int scenario_fill(struct bench_env *e);
int scenario_waitzero(struct bench_env *e);
int scenario_scale(struct bench_env *e);
int scenario_interfere(struct bench_env *e);
int scenario_frag(struct bench_env *e);
int scenario_attack(struct bench_env *e);
int scenario_handback(struct bench_env *e);

/* ---- report (bench-report.c) ---- */
struct bench_samples {
	double *v;
	size_t n, cap;
};
void samples_add(struct bench_samples *s, double v);
void samples_free(struct bench_samples *s);
double samples_pct(struct bench_samples *s, double pct); /* sorts */
double samples_median(struct bench_samples *s);
double samples_min(struct bench_samples *s);
double samples_max(struct bench_samples *s);

void report_open(const char *json_path);
void report_section(const char *title);
void report_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One row: figure (median/min/max), unit, ratio to the reference (0: none). */
void report_row(const char *scenario, const char *name, const char *unit, double median, double min,
		double max, double ratio, const char *ratio_to);
/* The same from samples (median, min, max). */
void report_samples(const char *scenario, const char *name, const char *unit,
		    struct bench_samples *s, double ref_median, const char *ratio_to);
/* A row with latency percentiles. */
void report_latency_row(const char *scenario, const char *name, double p50, double p99, double p999,
			double ratio_p99, const char *ratio_to);
/* A --scale point as one JSON row (not printed: the scale table prints itself). */
void report_json_point(const char *scenario, const char *name, uint64_t extents, double first_s,
		       double restart_s, uint64_t rss_kib, double alloc_p50_us, double alloc_p99_us,
		       double map_ms, double list_ms, double stat_ms);
void report_target(const char *what, double value, double target, bool higher_is_better);
void report_meta(const char *key, const char *value);
int report_close(void); /* writes JSON; -errno */

#endif
