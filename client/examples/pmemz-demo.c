/* SPDX-License-Identifier: MIT */
/*
 * pmemz-demo: the client workload of ./scripts/demo.
 *
 *   pmemz-demo [--socket PATH] [--region NAME] [--tag NAME] [--extents N]
 *              --phase write|verify|cleanup
 *
 * write:   lease N extents, check every byte reads zero, write a pattern,
 *          persist it, commit it under the tag; report what the daemon's
 *          background zeroer had done.
 * verify:  (after a daemon restart) open the tag and check the pattern.
 * cleanup: open the tag and release it.
 * Exits 1 with a one-line reason on any failure.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include <libpmemzadmin.h> /* STAT, for the background zeroing numbers */

struct demo {
	const char *socket_path;
	const char *region_name;
	const char *tag;
	uint64_t extents;
	struct pmemz_client *client;
	struct pmemz_region *region;
};

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
	va_list ap;

	fputs("pmemz-demo: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* "1.5 GiB"; four buffers in turn, so that one printf may hold four. */
static const char *size_str(uint64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	static char buf[4][32];
	static unsigned n;
	char *b = buf[n++ % 4];
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(b, sizeof(buf[0]), "%llu B", (unsigned long long)bytes);
	else
		snprintf(b, sizeof(buf[0]), "%.1f %s", v, units[u]);
	return b;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The pattern depends on the byte's place in the region, not on the order of the ranges. */
static inline uint64_t pattern(uint64_t region_off)
{
	return (region_off / 8 + 1) * 0x9e3779b97f4a7c15ull;
}

static void report_zeroing(struct demo *d)
{
	struct pmemz_stat *s = NULL;
	uint64_t bytes = 0, batches = 0, zeroed = 0, dirty = 0;
	double rate = 0;

	if (pmemz_admin_stat(d->client, d->region_name, &s) < 0 || pmemz_stat_regions(s) < 1) {
		printf("(no statistics from the daemon: %s)\n", pmemz_errormsg());
		pmemz_stat_free(s);
		return;
	}
	(void)pmemz_stat_region_u64(s, 0, PMEMZ_RS_BYTES_ZEROED, &bytes);
	(void)pmemz_stat_region_u64(s, 0, PMEMZ_RS_ZERO_BATCHES, &batches);
	(void)pmemz_stat_region_double(s, 0, PMEMZ_RS_ZERO_BYTES_PER_SEC, &rate);
	(void)pmemz_stat_region_u64(s, 0, PMEMZ_RS_ZEROED, &zeroed);
	(void)pmemz_stat_region_u64(s, 0, PMEMZ_RS_DIRTY, &dirty);
	pmemz_stat_free(s);
	printf("background zeroing so far: %s zeroed in %" PRIu64 " batches at %s/s; "
	       "%" PRIu64 " extents zeroed and ready, %" PRIu64 " dirty\n",
	       size_str(bytes), batches, size_str((uint64_t)(rate > 0 ? rate : 0)), zeroed, dirty);
}

static int phase_write(struct demo *d)
{
	size_t ext = pmemz_region_extent_size(d->region), len, n;
	uint8_t *base = pmemz_region_address(d->region);
	struct pmemz_alloc *a;
	uint64_t t0, t1, bytes;
	int r;

	if (pmemz_alloc_open(d->region, d->tag, &a) == 0) {
		pmemz_alloc_close(a);
		return die("tag '%s' already exists in region '%s' (run --phase cleanup first)",
			   d->tag, d->region_name);
	}

	report_zeroing(d);
	t0 = now_ns();
	r = pmemz_alloc_new(d->region, d->extents * ext, 0, &a);
	t1 = now_ns();
	if (r < 0)
		return die("cannot allocate %" PRIu64 " extents: %s", d->extents, pmemz_errormsg());
	bytes = pmemz_alloc_size(a);
	n = pmemz_alloc_count(a);
	printf("allocated %" PRIu64 " extents of %s (%s) in %zu range%s in %.0f us\n",
	       (uint64_t)(bytes / ext), size_str(ext), size_str(bytes), n, n == 1 ? "" : "s",
	       (double)(t1 - t0) / 1e3);

	/* I1: every byte we were handed reads zero. */
	for (size_t i = 0; i < n; i++) {
		const uint64_t *w = pmemz_alloc_range(a, i, &len);

		for (size_t k = 0; k < len / 8; k++)
			if (w[k] != 0) {
				uint64_t off = (uint64_t)((const uint8_t *)&w[k] - base);

				pmemz_alloc_close(a);
				return die("stale data: region offset %" PRIu64
					   " reads 0x%016" PRIx64 " instead of zero",
					   off, w[k]);
			}
	}
	printf("verified all %" PRIu64 " bytes read zero\n", bytes);

	for (size_t i = 0; i < n; i++) {
		uint64_t *w = pmemz_alloc_range(a, i, &len);
		uint64_t off = (uint64_t)((uint8_t *)w - base);

		for (size_t k = 0; k < len / 8; k++)
			w[k] = pattern(off + 8 * k);
		r = pmemz_persist(d->region, w, len);
		if (r < 0) {
			pmemz_alloc_close(a);
			return die("cannot persist: %s", pmemz_errormsg());
		}
	}
	printf("wrote a pattern to %s and persisted it\n", size_str(bytes));

	r = pmemz_alloc_commit(a, d->tag, 0);
	if (r < 0) {
		pmemz_alloc_close(a);
		return die("cannot commit tag '%s': %s", d->tag, pmemz_errormsg());
	}
	printf("committed as tag '%s'\n", d->tag);
	pmemz_alloc_close(a);
	report_zeroing(d);
	return 0;
}

static int phase_verify(struct demo *d)
{
	uint8_t *base = pmemz_region_address(d->region);
	struct pmemz_alloc *a;
	size_t len;
	int r;

	r = pmemz_alloc_open(d->region, d->tag, &a);
	if (r < 0)
		return die("cannot open tag '%s': %s", d->tag, pmemz_errormsg());
	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		const uint64_t *w = pmemz_alloc_range(a, i, &len);
		uint64_t off = (uint64_t)((const uint8_t *)w - base);

		for (size_t k = 0; k < len / 8; k++)
			if (w[k] != pattern(off + 8 * k)) {
				pmemz_alloc_close(a);
				return die("data lost: region offset %" PRIu64
					   " reads 0x%016" PRIx64 ", expected 0x%016" PRIx64,
					   off + 8 * k, w[k], pattern(off + 8 * k));
			}
	}
	printf("commit survived restart: %zu bytes verified\n", pmemz_alloc_size(a));
	pmemz_alloc_close(a);
	return 0;
}

static int phase_cleanup(struct demo *d)
{
	struct pmemz_alloc *a;
	size_t bytes;
	int r;

	r = pmemz_alloc_open(d->region, d->tag, &a);
	if (r < 0)
		return die("cannot open tag '%s': %s", d->tag, pmemz_errormsg());
	bytes = pmemz_alloc_size(a);
	r = pmemz_alloc_release(a);
	if (r < 0)
		return die("cannot release tag '%s': %s", d->tag, pmemz_errormsg());
	printf("released tag '%s': %s back to the free pool, to be zeroed in the background\n",
	       d->tag, size_str(bytes));
	return 0;
}

static void usage(FILE *f)
{
	fputs("Usage: pmemz-demo [--socket PATH] [--region NAME] [--tag NAME] [--extents N]\n"
	      "                  --phase write|verify|cleanup\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"region", required_argument, NULL, 'r'},
	    {"tag", required_argument, NULL, 't'},
	    {"extents", required_argument, NULL, 'n'},
	    {"phase", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	struct demo d = {.region_name = "default", .tag = "demo", .extents = 8};
	const char *phase = NULL;
	char *end;
	int c, r;

	while ((c = getopt_long(argc, argv, "s:r:t:n:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			d.socket_path = optarg;
			break;
		case 'r':
			d.region_name = optarg;
			break;
		case 't':
			d.tag = optarg;
			break;
		case 'n':
			d.extents = strtoull(optarg, &end, 10);
			if (*end || d.extents == 0)
				return die("--extents wants a positive number, not '%s'", optarg);
			break;
		case 'p':
			phase = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!phase || optind < argc) {
		usage(stderr);
		return 2;
	}
	if (strcmp(phase, "write") && strcmp(phase, "verify") && strcmp(phase, "cleanup"))
		return die("unknown phase '%s' (write, verify or cleanup)", phase);

	r = pmemz_client_new(d.socket_path, &d.client);
	if (r < 0)
		return die("%s", pmemz_errormsg());
	r = pmemz_region_open(d.client, d.region_name, &d.region);
	if (r < 0) {
		r = die("cannot open region '%s': %s", d.region_name, pmemz_errormsg());
		pmemz_client_free(d.client);
		return r;
	}
	printf("connected to pmemzerod %s at %s; region '%s': %s, extents of %s\n",
	       pmemz_client_daemon_version(d.client), pmemz_client_socket(d.client),
	       d.region_name, size_str(pmemz_region_size(d.region)),
	       size_str(pmemz_region_extent_size(d.region)));

	if (strcmp(phase, "write") == 0)
		r = phase_write(&d);
	else if (strcmp(phase, "verify") == 0)
		r = phase_verify(&d);
	else
		r = phase_cleanup(&d);

	pmemz_region_close(d.region);
	pmemz_client_free(d.client);
	return r;
}
