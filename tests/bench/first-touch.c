/* SPDX-License-Identifier: MIT */
/*
 * pmemz-first-touch [--json FILE] [DIR] [MIB]: what the machine charges for the first
 * store into a page through a mapping, next to a store into a page that
 * mapping touched before -- the floor under a fresh write on the nbdkit
 * disk, which lands in a page of nbdkit's mapping that no one touched
 * through it (an overwrite lands in one it touched).  A file of MIB MiB
 * (default 256) in DIR (default /dev/shm) is filled through one mapping,
 * as pmemzerod's zeroer fills a region, then a second mapping (nbdkit's)
 * gets one 4 KiB write per 2 MiB chunk at a page of the chunk, twice, and
 * a third time after IDLE_MS of sleep: a hypervisor that shadows the
 * guest's page tables may drop a sleeping process's shadow of its 2 MiB
 * pages, so that a page touched a moment ago costs as much again (an
 * overwrite right after the fresh write does not pay it; a fresh chunk
 * taken from extents held ahead does).  scripts/bench-disk prints it
 * beside its table and keeps the --json object in its own JSON.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define CHUNK (2ul << 20)
#define PAGE 4096ul
#define IDLE_MS 300

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double pass(char *p, size_t n, const char *buf)
{
	double t0 = now();

	for (size_t i = 0; i < n; i++)
		memcpy(p + i * CHUNK + ((i * 7919) % (CHUNK / PAGE)) * PAGE, buf, PAGE);
	return (now() - t0) / (double)n * 1e6;
}

/* The figures as JSON (FILE), the printed line among them; 0 or 1. */
static int write_json(const char *file, const char *line, double first, double again,
		      double idle, size_t n, const char *dir)
{
	json_object *o = json_object_new_object();
	int r;

	json_object_object_add(o, "bench", json_object_new_string("pmemz-first-touch"));
	json_object_object_add(o, "first_us", json_object_new_double(first));
	json_object_object_add(o, "warm_us", json_object_new_double(again));
	json_object_object_add(o, "idle_us", json_object_new_double(idle));
	json_object_object_add(o, "idle_ms", json_object_new_int(IDLE_MS));
	json_object_object_add(o, "writes", json_object_new_int64((int64_t)n));
	json_object_object_add(o, "dir", json_object_new_string(dir));
	json_object_object_add(o, "line", json_object_new_string(line));
	r = json_object_to_file_ext(file, o, JSON_C_TO_STRING_PRETTY);
	if (r < 0)
		fprintf(stderr, "pmemz-first-touch: %s: %s", file, json_util_get_last_err());
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
	size_t size = (argc > 2 ? strtoul(argv[2], NULL, 10) : 256) << 20, n = size / CHUNK;
	static char buf[PAGE];
	char path[4096];
	char *w, *p;
	int fd;

	if (n == 0) {
		fprintf(stderr, "pmemz-first-touch: at least 2 MiB\n");
		return 2;
	}
	memset(buf, 0x5a, sizeof(buf));
	snprintf(path, sizeof(path), "%s/pmemz-first-touch-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		perror("pmemz-first-touch: the file");
		return 1;
	}
	(void)unlink(path);
	w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w == MAP_FAILED || p == MAP_FAILED) {
		perror("pmemz-first-touch: mmap");
		return 1;
	}
	memset(w, 0, size);
	double first = pass(p, n, buf), again = pass(p, n, buf), idle;

	(void)usleep(IDLE_MS * 1000);
	idle = pass(p, n, buf);
	char line[512];

	(void)snprintf(line, sizeof(line),
		       "first-touch: %.2f us per 4 KiB write into a page first touched through its "
		       "mapping, %.2f us into a page touched before, %.2f us after %d ms asleep (%zu "
		       "writes, %s)",
		       first, again, idle, IDLE_MS, n, dir);
	printf("%s\n", line);
	return json ? write_json(json, line, first, again, idle, n, dir) : 0;
}
