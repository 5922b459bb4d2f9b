/* SPDX-License-Identifier: MIT */
/*
 * pmemz-wake-stall [--json FILE] [DIR] [MIB] [N]: what the machine charges a server that
 * sleeps between requests for holding a large mapping -- pmemzerod, which
 * maps its whole region and answers a disk's refills a few ms apart.
 *
 * A child answers one byte per request over a socketpair; the parent sends
 * N requests (default 1500) 3 ms apart and times each round trip.  Twice:
 * first with the child holding no mapping, then with it holding a shared
 * mapping of MIB MiB (default 2048) of a file in DIR (default /dev/shm),
 * every page of it touched once before the first request and never again.
 * On bare metal or a guest with hardware-assisted paging the two lines
 * match.  On a hypervisor that shadows the guest's page tables, waking the
 * process that holds the mapping can cost tens of ms now and then, without
 * the guest seeing anything (no fault, no tick: the vCPU is away); any
 * request to pmemzerod that meets it waits as long (docs/PERFORMANCE.md,
 * "Virtual machines").  scripts/bench-disk prints it beside its table and
 * keeps the --json object in its own JSON.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define GAP_US 3000
#define STALL_NS 5000000ull
#define PAGE 4096ul

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The child: map (when size), touch every page, say ready, then echo. */
static void serve(int fd, const char *dir, size_t size)
{
	char c = 'r';

	if (size) {
		char path[4096];
		int mfd;
		char *p;

		snprintf(path, sizeof(path), "%s/pmemz-wake-stall-XXXXXX", dir);
		mfd = mkstemp(path);
		if (mfd < 0 || ftruncate(mfd, (off_t)size) < 0) {
			perror("pmemz-wake-stall: the file");
			_exit(1);
		}
		(void)unlink(path);
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
		if (p == MAP_FAILED) {
			perror("pmemz-wake-stall: mmap");
			_exit(1);
		}
		for (size_t off = 0; off < size; off += PAGE)
			p[off] = 1;
	}
	if (write(fd, &c, 1) != 1)
		_exit(1);
	while (read(fd, &c, 1) == 1)
		if (write(fd, &c, 1) != 1)
			break;
	_exit(0);
}

/* The figures of one line, added to runs (a JSON array). */
static void add_run(json_object *runs, size_t size, const uint64_t *lat, size_t n, size_t over)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "mapped_mib", json_object_new_int64((int64_t)(size >> 20)));
	json_object_object_add(o, "gap_ms", json_object_new_int(GAP_US / 1000));
	json_object_object_add(o, "p50_us", json_object_new_double((double)lat[n / 2] / 1e3));
	json_object_object_add(o, "p99_us", json_object_new_double((double)lat[n * 99 / 100] / 1e3));
	json_object_object_add(o, "max_ms", json_object_new_double((double)lat[n - 1] / 1e6));
	json_object_object_add(o, "over", json_object_new_int64((int64_t)over));
	json_object_object_add(o, "requests", json_object_new_int64((int64_t)n));
	json_object_object_add(o, "over_ms", json_object_new_int64((int64_t)(STALL_NS / 1000000)));
	json_object_array_add(runs, o);
}

/*
 * One line: round trips to a child holding size bytes mapped, added to runs
 * when not NULL; 0, or 1 on an error.
 */
static int measure(const char *dir, size_t size, size_t n, json_object *runs)
{
	uint64_t *lat = calloc(n, sizeof(*lat));
	size_t over = 0;
	int sv[2], status = 0;
	pid_t pid;
	char c;

	if (!lat || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		perror("pmemz-wake-stall");
		free(lat);
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("pmemz-wake-stall: fork");
		free(lat);
		return 1;
	}
	if (pid == 0) {
		close(sv[0]);
		serve(sv[1], dir, size);
	}
	close(sv[1]);
	if (read(sv[0], &c, 1) != 1) {
		fprintf(stderr, "pmemz-wake-stall: the child did not start\n");
		free(lat);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t t0;

		usleep(GAP_US);
		t0 = now_ns();
		if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1) {
			fprintf(stderr, "pmemz-wake-stall: the child went away\n");
			free(lat);
			return 1;
		}
		lat[i] = now_ns() - t0;
		over += lat[i] > STALL_NS;
	}
	close(sv[0]);
	(void)waitpid(pid, &status, 0);
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("wake-stall: a server holding %zu MiB mapped answers a request %d ms after the "
	       "last in p50 %.0f us, p99 %.0f us, max %.1f ms; %zu of %zu over %llu ms (%s)\n",
	       size >> 20, GAP_US / 1000, (double)lat[n / 2] / 1e3,
	       (double)lat[n * 99 / 100] / 1e3, (double)lat[n - 1] / 1e6, over, n,
	       STALL_NS / 1000000, dir);
	if (runs)
		add_run(runs, size, lat, n, over);
	free(lat);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* {"bench", "dir", "runs": [without a mapping, with it]} into file; 0 or 1. */
static int write_json(const char *file, const char *dir, json_object *runs)
{
	json_object *o = json_object_new_object();
	int r;

	json_object_object_add(o, "bench", json_object_new_string("pmemz-wake-stall"));
	json_object_object_add(o, "dir", json_object_new_string(dir));
	json_object_object_add(o, "runs", json_object_get(runs));
	r = json_object_to_file_ext(file, o, JSON_C_TO_STRING_PRETTY);
	if (r < 0)
		fprintf(stderr, "pmemz-wake-stall: %s: %s", file, json_util_get_last_err());
	json_object_put(o);
	return r < 0;
}

int main(int argc, char **argv)
{
	const char *json = NULL;

	if (argc > 2 && strcmp(argv[1], "--json") == 0) {
		json = argv[2];
		argc -= 2;
		argv += 2;
	}
	const char *dir = argc > 1 ? argv[1] : "/dev/shm";
	size_t size = (argc > 2 ? strtoul(argv[2], NULL, 10) : 2048) << 20;
	size_t n = argc > 3 ? strtoul(argv[3], NULL, 10) : 1500;

	if (argc > 4 || n < 100 || size < PAGE) {
		fprintf(stderr, "usage: pmemz-wake-stall [--json FILE] [DIR] [MIB >= 1] [N >= 100]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	json_object *runs = json ? json_object_new_array() : NULL;
	int r = measure(dir, 0, n, runs) || measure(dir, size, n, runs);

	if (!r && json)
		r = write_json(json, dir, runs);
	json_object_put(runs);
	return r;
}
