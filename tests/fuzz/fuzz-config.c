/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the configuration as `pmemzerod -n` loads it: conf_load() on
 * argv {pmemzerod, -n, -c FILE, --region SPEC...}, then conf_print().
 *
 * Input: the file's bytes, then optionally a NUL and up to two --region
 * specs separated by NULs.  Whatever conf_load() accepts must satisfy the
 * limits the rest of the daemon relies on (conf.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf.h"
#include "fuzz.h"

static int conf_fd = -1;
static char conf_path[64];
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* Fixed answers for the defaults, whoever runs the fuzzer. */
	(void)setenv("RUNTIME_DIRECTORY", "/run/pmemzerod-fuzz", 1);
	(void)setenv("STATE_DIRECTORY", "/var/lib/pmemzerod-fuzz", 1);
	conf_fd = memfd_create("fuzz-config", MFD_CLOEXEC);
	FUZZ_ASSERT(conf_fd >= 0);
	(void)snprintf(conf_path, sizeof(conf_path), "/proc/self/fd/%d", conf_fd);
	devnull = fopen("/dev/null", "we");
	FUZZ_ASSERT(devnull != NULL);
	return 0;
}

static void check_region(const struct region_conf *rc)
{
	FUZZ_ASSERT(rc->name && *rc->name && strlen(rc->name) <= CONF_REGION_NAME_MAX);
	FUZZ_ASSERT(rc->path && *rc->path);
	FUZZ_ASSERT(rc->source != NULL);
	FUZZ_ASSERT(rc->extent_size >= CONF_MIN_EXTENT_SIZE &&
		    rc->extent_size <= CONF_MAX_EXTENT_SIZE &&
		    rc->extent_size % CONF_MIN_EXTENT_SIZE == 0);
	FUZZ_ASSERT(rc->size == 0 || rc->size / rc->extent_size >= CONF_MIN_REGION_EXTENTS);
	FUZZ_ASSERT(rc->zeroer_threads >= 1 && rc->zeroer_threads <= CONF_MAX_ZEROER_THREADS);
	FUZZ_ASSERT(rc->batch_extents >= 1 && rc->batch_extents <= CONF_MAX_BATCH_EXTENTS);
	FUZZ_ASSERT(rc->n_allow_uids == 0 || rc->allow_uids != NULL);
	FUZZ_ASSERT(rc->n_allow_gids == 0 || rc->allow_gids != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct daemon_conf c;
	char *specs[2] = {NULL, NULL};
	char *argv[9];
	const uint8_t *nul = memchr(data, 0, size);
	size_t file_len = nul ? (size_t)(nul - data) : size;
	int argc = 0, r;

	FUZZ_ASSERT(ftruncate(conf_fd, 0) == 0);
	FUZZ_ASSERT(pwrite(conf_fd, data, file_len, 0) == (ssize_t)file_len);
	if (nul) {
		const char *p = (const char *)nul + 1, *end = (const char *)data + size;

		for (int i = 0; i < 2 && p < end; i++) {
			size_t n = strnlen(p, (size_t)(end - p));

			specs[i] = strndup(p, n);
			FUZZ_ASSERT(specs[i] != NULL);
			p += n + 1;
		}
	}
	argv[argc++] = (char *)"pmemzerod";
	argv[argc++] = (char *)"-n";
	argv[argc++] = (char *)"-c";
	argv[argc++] = conf_path;
	for (int i = 0; i < 2; i++)
		if (specs[i]) {
			argv[argc++] = (char *)"--region";
			argv[argc++] = specs[i];
		}
	argv[argc] = NULL;

	memset(&c, 0, sizeof(c));
	r = conf_load(&c, argc, argv, devnull);
	FUZZ_ASSERT(r == 0 || r == -EINVAL);
	if (r == 0) {
		FUZZ_ASSERT(c.check_only && c.socket_path && c.state_dir);
		FUZZ_ASSERT(c.n_regions >= 1 && c.regions != NULL);
		for (size_t i = 0; i < c.n_regions; i++) {
			check_region(&c.regions[i]);
			for (size_t j = 0; j < i; j++)
				FUZZ_ASSERT(strcmp(c.regions[i].name, c.regions[j].name) != 0);
		}
		conf_print(&c, devnull);
	}
	conf_free(&c);
	free(specs[0]);
	free(specs[1]);
	return 0;
}
