/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cpuid.h>
#include <immintrin.h>

#include "bench.h"

int bench_map_open(const char *path, struct bench_map *m)
{
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	enum pmem2_granularity g;
	int r;

	memset(m, 0, sizeof(*m));
	m->fd = open(path, O_RDWR | O_CLOEXEC);
	if (m->fd < 0)
		return -errno;
	r = pmem2_config_new(&cfg);
	if (r)
		goto out;
	r = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE);
	if (r)
		goto out;
	r = pmem2_source_from_fd(&src, m->fd);
	if (r)
		goto out;
	r = pmem2_map_new(&m->map, cfg, src);
	if (r)
		goto out;
	m->base = pmem2_map_get_address(m->map);
	m->size = pmem2_map_get_size(m->map);
	m->memset_fn = pmem2_get_memset_fn(m->map);
	m->memcpy_fn = pmem2_get_memcpy_fn(m->map);
	m->drain_fn = pmem2_get_drain_fn(m->map);
	m->persist_fn = pmem2_get_persist_fn(m->map);
	g = pmem2_map_get_store_granularity(m->map);
	m->granularity = g == PMEM2_GRANULARITY_BYTE	     ? "byte"
			 : g == PMEM2_GRANULARITY_CACHE_LINE ? "cache_line"
							     : "page";
out:
	if (src)
		pmem2_source_delete(&src);
	if (cfg)
		pmem2_config_delete(&cfg);
	if (r) {
		close(m->fd);
		m->fd = -1;
	}
	return r;
}

void bench_map_close(struct bench_map *m)
{
	if (m->map)
		pmem2_map_delete(&m->map);
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

void kern_nt_zero(struct bench_map *m, uint8_t *p, size_t len, size_t chunk, size_t batch)
{
	size_t in_batch = 0;

	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;

		m->memset_fn(p + off, 0, n, PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN);
		if (++in_batch == batch) {
			m->drain_fn();
			in_batch = 0;
		}
	}
	if (in_batch)
		m->drain_fn();
}

void kern_memset_clflush(uint8_t *p, size_t len)
{
	memset(p, 0, len);
	for (size_t off = 0; off < len; off += 64)
		_mm_clflush(p + off);
	_mm_sfence();
}

__attribute__((target("clwb"))) void kern_memset_clwb(uint8_t *p, size_t len)
{
	memset(p, 0, len);
	for (size_t off = 0; off < len; off += 64)
		_mm_clwb(p + off);
	_mm_sfence();
}

void kern_memset_plain(uint8_t *p, size_t len)
{
	memset(p, 0, len);
	/* keep the compiler from dropping it */
	__asm__ volatile("" : : "r"(p) : "memory");
}

void kern_write_durable(struct bench_map *m, uint8_t *dst, const uint8_t *src, size_t len)
{
	m->memcpy_fn(dst, src, len, PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN);
	m->drain_fn();
}

void bench_prefault(void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	uint8_t sum = 0;

	len += (uintptr_t)p - a;
	/*
	 * Page tables first (one call instead of a fault per page), then one
	 * load per page: on this kind of VM the first access to each 4 KiB
	 * page of a new mapping costs microseconds more even when its page
	 * table entry is there, and loads are safe while others store to it.
	 */
	(void)madvise((void *)a, len, MADV_POPULATE_WRITE);
	for (size_t off = 0; off < len; off += 4096)
		sum += *(volatile const uint8_t *)(a + off);
	__asm__ volatile("" : : "r"(sum));
}

static bool env_is(const char *name, const char *value)
{
	const char *e = getenv(name);

	return e && strcmp(e, value) == 0;
}

/*
 * libpmem2 1.12 (pmem2_arch_init) picks, unless PMEM_NO_MOVNT=1: SSE2, then
 * AVX unless PMEM_AVX=0, then AVX-512F unless PMEM_AVX512F=0, then
 * MOVDIR64B only with PMEM_MOVDIR64B=1 (1.12.1 compiles it in but leaves it
 * off); flushes with clwb, else clflushopt, else clflush (PMEM_NO_CLWB,
 * PMEM_NO_CLFLUSHOPT).  Checked on this machine by single-stepping the
 * memset function: vmovntdq %zmm by default, movdir64b with PMEM_MOVDIR64B=1.
 */
const char *bench_isa_path(void)
{
	static char buf[128];
	unsigned a, b, c, d;
	bool avx = false, avx512f = false, clwb = false, clflushopt = false, movdir64b = false;
	const char *nt, *flush;

	if (__get_cpuid(1, &a, &b, &c, &d))
		avx = c & (1u << 28);
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		avx512f = b & (1u << 16);
		clflushopt = b & (1u << 23);
		clwb = b & (1u << 24);
		movdir64b = c & (1u << 28);
	}
	if (env_is("PMEM_NO_MOVNT", "1"))
		nt = "no NT stores (PMEM_NO_MOVNT)";
	else if (movdir64b && env_is("PMEM_MOVDIR64B", "1"))
		nt = "movdir64b";
	else if (avx512f && !env_is("PMEM_AVX512F", "0"))
		nt = "avx512f NT stores";
	else if (avx && !env_is("PMEM_AVX", "0"))
		nt = "avx NT stores";
	else
		nt = "sse2 NT stores";
	if (clwb && !env_is("PMEM_NO_CLWB", "1"))
		flush = "clwb";
	else if (clflushopt && !env_is("PMEM_NO_CLFLUSHOPT", "1"))
		flush = "clflushopt";
	else
		flush = "clflush";
	(void)snprintf(buf, sizeof(buf), "%s + %s + sfence", nt, flush);
	return buf;
}

const char *bench_commit(void)
{
	static char commit[96] = "unknown";
	const char *env = getenv("PMEMZ_BENCH_COMMIT");
	char cmd[PATH_MAX + 96];
	FILE *p;

	if (env && *env) {
		(void)snprintf(commit, sizeof(commit), "%s", env);
		return commit;
	}
	if (strchr(PMEMZ_BENCH_SOURCE_DIR, '\'')) /* not quotable for the shell below */
		return commit;
	(void)snprintf(cmd, sizeof(cmd),
		       "git -C '%s' describe --always --dirty --abbrev=12 2>/dev/null",
		       PMEMZ_BENCH_SOURCE_DIR);
	p = popen(cmd, "r");
	if (!p)
		return commit;
	if (fgets(commit, sizeof(commit), p))
		commit[strcspn(commit, "\n")] = '\0';
	if (pclose(p) != 0 || !commit[0])
		(void)snprintf(commit, sizeof(commit), "unknown");
	return commit;
}

const char *bench_cpu_model(void)
{
	static char model[160] = "unknown";
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return model;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) != 0 || !colon)
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		(void)snprintf(model, sizeof(model), "%s", colon);
		break;
	}
	(void)fclose(f);
	return model;
}
