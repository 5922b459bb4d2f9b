/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "bench.h"

static json_object *jroot, *jrows, *jtargets, *jmeta, *jnotes;
static char *jpath;

void samples_add(struct bench_samples *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		double *nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv)
			abort();
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
}

void samples_free(struct bench_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double samples_pct(struct bench_samples *s, double pct)
{
	size_t i;

	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(double), cmp_double);
	i = (size_t)(pct / 100.0 * (double)(s->n - 1) + 0.5);
	return s->v[i < s->n ? i : s->n - 1];
}

double samples_median(struct bench_samples *s)
{
	return samples_pct(s, 50);
}

double samples_min(struct bench_samples *s)
{
	return samples_pct(s, 0);
}

double samples_max(struct bench_samples *s)
{
	return samples_pct(s, 100);
}

void report_open(const char *json_path)
{
	jroot = json_object_new_object();
	jrows = json_object_new_array();
	jtargets = json_object_new_array();
	jmeta = json_object_new_object();
	jnotes = json_object_new_array();
	json_object_object_add(jroot, "meta", jmeta);
	json_object_object_add(jroot, "notes", jnotes);
	json_object_object_add(jroot, "rows", jrows);
	json_object_object_add(jroot, "targets", jtargets);
	jpath = json_path ? strdup(json_path) : NULL;
}

void report_meta(const char *key, const char *value)
{
	printf("%-22s %s\n", key, value);
	json_object_object_add(jmeta, key, json_object_new_string(value));
}

void report_section(const char *title)
{
	printf("\n== %s ==\n", title);
	fflush(stdout);
}

void report_note(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("  note: %s\n", buf);
	fflush(stdout);
	json_object_array_add(jnotes, json_object_new_string(buf));
}

void report_samples(const char *scenario, const char *name, const char *unit,
		    struct bench_samples *s, double ref_median, const char *ratio_to)
{
	double med = samples_median(s);

	report_row(scenario, name, unit, med, samples_min(s), samples_max(s),
		   ref_median > 0 ? med / ref_median : 0, ratio_to);
}

void report_row(const char *scenario, const char *name, const char *unit, double median, double min,
		double max, double ratio, const char *ratio_to)
{
	json_object *o = json_object_new_object();

	if (ratio > 0)
		printf("  %-46s %10.3f %-8s [%9.3f .. %9.3f]  %6.3fx %s\n", name, median, unit, min,
		       max, ratio, ratio_to);
	else
		printf("  %-46s %10.3f %-8s [%9.3f .. %9.3f]  (reference)\n", name, median, unit,
		       min, max);
	fflush(stdout);
	json_object_object_add(o, "scenario", json_object_new_string(scenario));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "unit", json_object_new_string(unit));
	json_object_object_add(o, "median", json_object_new_double(median));
	json_object_object_add(o, "min", json_object_new_double(min));
	json_object_object_add(o, "max", json_object_new_double(max));
	json_object_object_add(o, "ratio", json_object_new_double(ratio > 0 ? ratio : 1.0));
	json_object_object_add(o, "ratio_to", json_object_new_string(ratio_to ? ratio_to : ""));
	json_object_array_add(jrows, o);
}

void report_latency_row(const char *scenario, const char *name, double p50, double p99, double p999,
			double ratio_p99, const char *ratio_to)
{
	json_object *o = json_object_new_object();

	printf("  %-46s p50 %9.2f us  p99 %9.2f us  p99.9 %9.2f us  ", name, p50, p99, p999);
	if (ratio_p99 > 0)
		printf("p99 %6.2fx %s\n", ratio_p99, ratio_to);
	else
		printf("(reference)\n");
	fflush(stdout);
	json_object_object_add(o, "scenario", json_object_new_string(scenario));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "unit", json_object_new_string("us"));
	json_object_object_add(o, "p50", json_object_new_double(p50));
	json_object_object_add(o, "p99", json_object_new_double(p99));
	json_object_object_add(o, "p99_9", json_object_new_double(p999));
	json_object_object_add(o, "ratio_p99",
			       json_object_new_double(ratio_p99 > 0 ? ratio_p99 : 1.0));
	json_object_object_add(o, "ratio_to", json_object_new_string(ratio_to ? ratio_to : ""));
	json_object_array_add(jrows, o);
}

void report_target(const char *what, double value, double target, bool higher_is_better)
{
	bool met = higher_is_better ? value >= target : value <= target;
	json_object *o = json_object_new_object();

	printf("  target %-52s %6.3f %s %5.2f  %s\n", what, value,
	       higher_is_better ? ">=" : "<=", target, met ? "MET" : "MISSED");
	json_object_object_add(o, "target", json_object_new_string(what));
	json_object_object_add(o, "value", json_object_new_double(value));
	json_object_object_add(o, "threshold", json_object_new_double(target));
	json_object_object_add(o, "met", json_object_new_boolean(met));
	json_object_array_add(jtargets, o);
}

int report_close(void)
{
	int r = 0;

	if (jpath) {
		errno = 0;
		if (json_object_to_file_ext(jpath, jroot, JSON_C_TO_STRING_PRETTY) < 0) {
			/* json-c says only -1; its own message says which step failed */
			r = errno ? -errno : -EIO;
			fprintf(stderr, "pmemz-bench: json-c: %s", json_util_get_last_err());
		}
		free(jpath);
		jpath = NULL;
	}
	json_object_put(jroot);
	jroot = NULL;
	return r;
}

void report_json_point(const char *scenario, const char *name, uint64_t extents, double first_s,
		       double restart_s, uint64_t rss_kib, double alloc_p50_us, double alloc_p99_us,
		       double map_ms, double list_ms, double stat_ms)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "scenario", json_object_new_string(scenario));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "extents", json_object_new_int64((int64_t)extents));
	json_object_object_add(o, "first_start_s", json_object_new_double(first_s));
	json_object_object_add(o, "restart_s", json_object_new_double(restart_s));
	json_object_object_add(o, "rss_kib", json_object_new_int64((int64_t)rss_kib));
	json_object_object_add(o, "alloc_p50_us", json_object_new_double(alloc_p50_us));
	json_object_object_add(o, "alloc_p99_us", json_object_new_double(alloc_p99_us));
	json_object_object_add(o, "map_ms", json_object_new_double(map_ms));
	json_object_object_add(o, "list_ms", json_object_new_double(list_ms));
	json_object_object_add(o, "stat_ms", json_object_new_double(stat_ms));
	json_object_array_add(jrows, o);
}
