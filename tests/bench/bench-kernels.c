/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
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
	m->granularity = g == PMEM2_GRANULARITY_BYTE ? "byte"
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

const char *bench_isa_path(void)
{
	unsigned a, b, c, d;
	bool avx512f = false, clwb = false, clflushopt = false;

	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		avx512f = b & (1u << 16);
		clflushopt = b & (1u << 23);
		clwb = b & (1u << 24);
	}
	/* libpmem2 prefers AVX-512F NT stores, then AVX, then SSE2; flush
	 * with clwb, then clflushopt, then clflush (PMEM_NO_* env vars aside). */
	if (avx512f)
		return clwb ? "avx512f NT stores + clwb" : clflushopt ? "avx512f + clflushopt"
								     : "avx512f + clflush";
	return clwb ? "avx/sse2 NT stores + clwb" : "sse2 NT stores + clflush";
}
