/* SPDX-License-Identifier: MIT */
/* pmemz-bench: scenarios, zeroing kernels and the report (table + JSON). */
#ifndef PMEMZ_BENCH_H
#define PMEMZ_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpmem2.h>

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

/* libpmem2 NT memset of each chunk, one drain per `batch` chunks. */
void kern_nt_zero(struct bench_map *m, uint8_t *p, size_t len, size_t chunk, size_t batch);
/* memset, then clflush every line (2015 dax_clear_blocks), sfence. */
void kern_memset_clflush(uint8_t *p, size_t len);
/* memset, clwb every line, one sfence. */
void kern_memset_clwb(uint8_t *p, size_t len);
/* plain temporal memset, nothing made durable (unsafe). */
void kern_memset_plain(uint8_t *p, size_t len);
/* The ISA libpmem2 picked, as far as the CPU flags tell. */
const char *bench_isa_path(void);

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
/* One row: figure (median/min/max), unit, ratio to the reference (0: none). */
void report_row(const char *scenario, const char *name, const char *unit, double median,
		double min, double max, double ratio, const char *ratio_to);
/* A row with latency percentiles. */
void report_latency_row(const char *scenario, const char *name, double p50, double p99,
			double p999, double ratio_p99, const char *ratio_to);
void report_target(const char *what, double value, double target, bool higher_is_better);
void report_meta(const char *key, const char *value);
int report_close(void); /* writes JSON; -errno */

#endif
