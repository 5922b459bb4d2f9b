/* SPDX-License-Identifier: MIT */
/*
 * pmemz-bench [OPTIONS]: the four scenarios of docs/PERFORMANCE.md (the
 * targets of docs/DESIGN.md), one table row per
 * figure (median of --reps repetitions, with min and max) and its ratio to
 * the scenario's reference; --json FILE writes the same as JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"

#ifndef PMEMZ_BENCH_DAEMON
#define PMEMZ_BENCH_DAEMON "pmemzerod"
#endif

struct bench_opts opt = {
    .daemon_path = PMEMZ_BENCH_DAEMON,
    .dir = "/dev/shm",
    .reps = 5,
    .scenarios = SC_ALL,
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: pmemz-bench [OPTIONS]\n"
		"pmemzerod against the machine's limit and the alternatives, side by side.\n"
		"\n"
		"  -q, --quick            short smoke run (under a minute)\n"
		"  -r, --reps N           repetitions per figure (default 5; --quick: 3)\n"
		"  -s, --scenario LIST    comma-separated: zero,alloc,throughput,fill,waitzero,\n"
		"                         interfere,frag,attack,handback or 1-9\n"
		"                         (default: all)\n"
		"  -j, --json FILE        also write the results as JSON\n"
		"      --size SIZE        region file size (default 4G+128M; --quick 320M)\n"
		"      --fill SIZE        bytes written per fill run (default 4G; --quick 128M)\n"
		"      --reserve SIZE     client reserve for fill (d), (e) (default 32M)\n"
		"      --daemon PATH      pmemzerod binary (default: the one built with this)\n"
		"      --socket PATH      use a running daemon instead of starting one\n"
		"      --region NAME      its region (2 MiB extents expected; default 'default')\n"
		"      --small-region NAME  its region for scenario 3 (default: --region)\n"
		"      --dir DIR          where the bench's files go (default /dev/shm)\n"
		"      --scale            instead of the scenarios: first start, restart, memory,\n"
		"                         ALLOCATE, MAP/LIST/STAT against region and extent size\n"
		"                         (file regions in --dir, default /var/tmp)\n"
		"      --scale-sizes LIST region sizes for --scale (default 1G,8G,32G)\n"
		"  -k, --keep             keep the bench's directory (region files, daemon log)\n"
		"  -v, --verbose          progress on stderr\n"
		"  -h, --help\n"
		"\n"
		"PMEM2_FORCE_GRANULARITY defaults to CACHE_LINE (NT stores + clwb + sfence, as\n"
		"on device-DAX); set it to PAGE to measure the msync path of plain files.\n");
}

static unsigned parse_scenarios(const char *s)
{
	unsigned mask = 0;
	char *copy = strdup(s), *save = NULL;

	if (!copy)
		bench_die("out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "1") || !strcmp(t, "zero"))
			mask |= SC_ZERO;
		else if (!strcmp(t, "2") || !strcmp(t, "alloc"))
			mask |= SC_ALLOC;
		else if (!strcmp(t, "3") || !strcmp(t, "throughput"))
			mask |= SC_THROUGHPUT;
		else if (!strcmp(t, "4") || !strcmp(t, "fill"))
			mask |= SC_FILL;
		else if (!strcmp(t, "5") || !strcmp(t, "waitzero"))
			mask |= SC_WAITZERO;
		else if (!strcmp(t, "6") || !strcmp(t, "interfere"))
			mask |= SC_INTERFERE;
		else if (!strcmp(t, "7") || !strcmp(t, "frag"))
			mask |= SC_FRAG;
		else if (!strcmp(t, "9") || !strcmp(t, "handback"))
			mask |= SC_HANDBACK;
		else if (!strcmp(t, "8") || !strcmp(t, "attack"))
			mask |= SC_ATTACK;
		else if (!strcmp(t, "all"))
			mask |= SC_ALL;
		else
			bench_die("unknown scenario '%s' (zero, alloc, throughput, fill, waitzero, "
				  "interfere, frag, attack, handback)",
				  t);
	}
	free(copy);
	return mask;
}

static uint64_t parse_size_opt(const char *name, const char *v)
{
	uint64_t x;

	if (pmemz_parse_size(v, &x) < 0 || x == 0)
		bench_die("%s: invalid size '%s'", name, v);
	return x;
}

static void parse_args(int argc, char **argv)
{
	enum {
		O_SIZE = 0x100,
		O_FILL,
		O_RESERVE,
		O_DAEMON,
		O_SOCKET,
		O_REGION,
		O_SMALL,
		O_DIR,
		O_SCALE,
		O_SCALE_SIZES,
	};
	static const struct option options[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"reps", required_argument, NULL, 'r'},
	    {"scenario", required_argument, NULL, 's'},
	    {"json", required_argument, NULL, 'j'},
	    {"size", required_argument, NULL, O_SIZE},
	    {"fill", required_argument, NULL, O_FILL},
	    {"reserve", required_argument, NULL, O_RESERVE},
	    {"daemon", required_argument, NULL, O_DAEMON},
	    {"socket", required_argument, NULL, O_SOCKET},
	    {"region", required_argument, NULL, O_REGION},
	    {"small-region", required_argument, NULL, O_SMALL},
	    {"dir", required_argument, NULL, O_DIR},
	    {"scale", no_argument, NULL, O_SCALE},
	    {"scale-sizes", required_argument, NULL, O_SCALE_SIZES},
	    {"keep", no_argument, NULL, 'k'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool reps_given = false, dir_given = false, scenarios_given = false;
	int c;

	while ((c = getopt_long(argc, argv, "qr:s:j:kvh", options, NULL)) != -1) {
		switch (c) {
		case 'q':
			opt.quick = true;
			break;
		case 'r':
			opt.reps = (unsigned)strtoul(optarg, NULL, 10);
			if (opt.reps < 1 || opt.reps > 1000)
				bench_die("--reps: 1..1000");
			reps_given = true;
			break;
		case 's':
			opt.scenarios = parse_scenarios(optarg);
			scenarios_given = true;
			break;
		case 'j':
			opt.json = optarg;
			break;
		case O_SIZE:
			opt.region_size = parse_size_opt("--size", optarg);
			break;
		case O_FILL:
			opt.fill_bytes = parse_size_opt("--fill", optarg);
			break;
		case O_RESERVE:
			opt.reserve = parse_size_opt("--reserve", optarg);
			break;
		case O_DAEMON:
			opt.daemon_path = optarg;
			break;
		case O_SOCKET:
			opt.socket = optarg;
			break;
		case O_REGION:
			opt.region = optarg;
			break;
		case O_SMALL:
			opt.small_region = optarg;
			break;
		case O_DIR:
			opt.dir = optarg;
			dir_given = true;
			break;
		case O_SCALE:
			opt.scale = true;
			break;
		case O_SCALE_SIZES:
			opt.scale_sizes = optarg;
			break;
		case 'k':
			opt.keep = true;
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		bench_die("unexpected argument '%s'", argv[optind]);
	if (opt.quick && !reps_given)
		opt.reps = 3;
	/* Scenario 6 restarts the daemon and waits for its policy: not in a smoke run. */
	if (opt.quick && !scenarios_given)
		opt.scenarios &= ~SC_INTERFERE;
	if (opt.scale && opt.socket)
		bench_die("--scale starts its own daemon: no --socket");
	if (opt.scale && !dir_given)
		opt.dir = "/var/tmp"; /* file regions on disk, not in memory */
	if (!opt.scale_sizes)
		opt.scale_sizes = opt.quick ? "256M,1G" : "1G,8G,32G";
	if (!opt.region_size)
		opt.region_size = opt.quick ? 320 * MIB : 4 * GIB + 128 * MIB;
	if (!opt.fill_bytes)
		opt.fill_bytes = opt.quick ? 128 * MIB : 4 * GIB;
	if (!opt.reserve)
		opt.reserve = 32 * MIB;
	opt.region_size = ALIGN_UP(opt.region_size, 2 * MIB);
	opt.fill_bytes = ALIGN_UP(opt.fill_bytes, 2 * MIB);
}

/* p relative to the source tree when it is inside it: a committed report names no build machine's paths. */
static const char *src_rel(const char *p)
{
	size_t n = strlen(PMEMZ_BENCH_SOURCE_DIR);

	return strncmp(p, PMEMZ_BENCH_SOURCE_DIR, n) == 0 && p[n] == '/' ? p + n + 1 : p;
}

/*
 * What every figure of a run is quoted with (docs/PERFORMANCE.md renders
 * them beside it): the command, when (UTC), the source commit, the machine.
 */
static void print_provenance(int argc, char **argv)
{
	char buf[PATH_MAX + 256];
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;
	size_t len = 0;

	for (int i = 0; i < argc && len < sizeof(buf) - 1; i++)
		len +=
		    (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "", src_rel(argv[i]));
	report_meta("command", buf);
	if (gmtime_r(&now, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		report_meta("date", buf);
	report_meta("commit", bench_commit());
	report_meta("cpu", bench_cpu_model());
	(void)snprintf(buf, sizeof(buf), "%ld online", sysconf(_SC_NPROCESSORS_ONLN));
	report_meta("cores", buf);
	(void)snprintf(buf, sizeof(buf), "%.1f GiB",
		       (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / (double)GIB);
	report_meta("memory", buf);
	if (uname(&u) == 0) {
		(void)snprintf(buf, sizeof(buf), "%s %s", u.sysname, u.release);
		report_meta("kernel", buf);
	}
}

static void print_machine(const struct bench_env *e, int argc, char **argv)
{
	char buf[PATH_MAX + 256], gran[64] = "?";
	struct bench_map m;
	double load[3] = {0};

	print_provenance(argc, argv);
	if (getloadavg(load, 3) == 3) {
		(void)snprintf(buf, sizeof(buf), "%.2f %.2f %.2f (other work on the machine)",
			       load[0], load[1], load[2]);
		report_meta("load average", buf);
	}
	report_meta("PMEM2_FORCE_GRANULARITY", getenv("PMEM2_FORCE_GRANULARITY"));
	if (bench_map_open(e->zero_path, &m) == 0) {
		(void)snprintf(gran, sizeof(gran), "%s", m.granularity);
		bench_map_close(&m);
	}
	report_meta("store granularity", gran);
	report_meta("libpmem2 ISA path", bench_isa_path());
	(void)snprintf(buf, sizeof(buf), "%s, %s, 2 MiB extents%s",
		       pmemz_format_size(opt.region_size, gran, sizeof(gran)), e->zero_path,
		       e->own_daemon ? "" : " (scenario 1; the daemon's region is its own)");
	report_meta("region", buf);
	if (!e->own_daemon) {
		(void)snprintf(buf, sizeof(buf), "%s, region '%s'", e->sock, e->region);
		report_meta("daemon", buf);
	} else {
		report_meta("daemon", src_rel(opt.daemon_path));
	}
	(void)snprintf(buf, sizeof(buf), "%u", opt.reps);
	report_meta("repetitions", buf);
}

int main(int argc, char **argv)
{
	struct bench_env e;
	uint64_t t0 = bench_now_ns();
	int r = 0, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv);
	/* The cache-line path (NT stores, clwb, sfence) as on device-DAX; also
	 * for the daemon, which inherits the environment. */
	if (!getenv("PMEM2_FORCE_GRANULARITY"))
		(void)setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);

	r = bench_env_init(&e);
	if (r < 0)
		bench_die("cannot create a directory in %s: %s", opt.dir, strerror(-r));
	report_open(opt.json);
	if (opt.scale) {
		print_provenance(argc, argv);
		r = scenario_scale(&e);
		if (r < 0)
			fprintf(stderr, "pmemz-bench: --scale: %s\n", strerror(-r));
		goto out;
	}

	/* The region file: stale data on every page, as a used device has. */
	r = bench_make_file(e.zero_path, opt.region_size);
	if (r < 0) {
		fprintf(stderr, "pmemz-bench: cannot create %s: %s\n", e.zero_path, strerror(-r));
		goto out;
	}
	print_machine(&e, argc, argv);

	if (opt.scenarios & SC_ZERO)
		r = scenario_zero(&e);
	if (r < 0) {
		fprintf(stderr, "pmemz-bench: scenario 1: %s\n", strerror(-r));
		goto out;
	}
	if (opt.scenarios & ~SC_ZERO) {
		if (e.own_daemon && (opt.scenarios & SC_FRAG)) {
			r = bench_make_file(e.frag_path, opt.quick ? 64 * MIB : 1 * GIB);
			if (r < 0) {
				fprintf(stderr, "pmemz-bench: cannot create %s: %s\n", e.frag_path,
					strerror(-r));
				goto out;
			}
			e.with_frag = true;
		}
		if (e.own_daemon) {
			r = bench_make_file(e.small_path, opt.quick ? 32 * MIB : 256 * MIB);
			if (r < 0) {
				fprintf(stderr, "pmemz-bench: cannot create %s: %s\n", e.small_path,
					strerror(-r));
				goto out;
			}
		}
		r = bench_daemon_start(&e);
		if (r < 0) {
			fprintf(stderr, "pmemz-bench: cannot start %s: %s\n", opt.daemon_path,
				strerror(-r));
			goto out;
		}
	}
	if (r >= 0 && (opt.scenarios & SC_ALLOC))
		r = scenario_alloc(&e);
	if (r >= 0 && (opt.scenarios & SC_THROUGHPUT))
		r = scenario_throughput(&e);
	if (r >= 0 && (opt.scenarios & SC_FILL))
		r = scenario_fill(&e);
	if (r >= 0 && (opt.scenarios & SC_WAITZERO))
		r = scenario_waitzero(&e);
	if (r >= 0 && (opt.scenarios & SC_INTERFERE))
		r = scenario_interfere(&e);
	if (r >= 0 && (opt.scenarios & SC_FRAG))
		r = scenario_frag(&e);
	if (r >= 0 && (opt.scenarios & SC_ATTACK))
		r = scenario_attack(&e);
	if (r >= 0 && (opt.scenarios & SC_HANDBACK))
		r = scenario_handback(&e);
	if (r < 0)
		fprintf(stderr, "pmemz-bench: %s\n", strerror(-r));

out : {
	char buf[64];

	(void)snprintf(buf, sizeof(buf), "%.1f s", (double)(bench_now_ns() - t0) / 1e9);
	printf("\n");
	report_meta("total time", buf);
}
	bench_env_cleanup(&e);
	rc = report_close();
	if (rc < 0 && r >= 0) {
		fprintf(stderr, "pmemz-bench: cannot write %s: %s\n", opt.json, strerror(-rc));
		r = rc;
	}
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
