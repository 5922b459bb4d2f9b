/* SPDX-License-Identifier: MIT */
/* pstore: every store to pmem goes through here (see pstore.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pmem2-errno.h"
#include "pstore-fault.h"
#include "pstore.h"
#include "vector.h"

struct pstore {
	struct pmem2_source *src;
	struct pmem2_map *map;
	uint8_t *base;
	uint64_t size;
	enum pmem2_granularity gran;
	pmem2_memset_fn memset_fn;
	pmem2_memcpy_fn memcpy_fn;
	pmem2_flush_fn flush_fn;
	pmem2_drain_fn drain_fn;
	const struct pstore_tracer *tracer;
	int fault_slot; /* pstore-fault.c: SIGBUS inside the mapping fails it */
	char *name;
};

/*
 * Every store is range-checked, in release builds too: a store outside the
 * mapping would be a daemon bug that scribbles over its own memory.  It is
 * refused and fails the region instead (pstore_failed), like a fault.
 */
static bool in_map(struct pstore *ps, const void *p, size_t len)
{
	const uint8_t *q = p;

	if (__builtin_expect(q >= ps->base && (size_t)(q - ps->base) <= ps->size &&
				     len <= ps->size - (size_t)(q - ps->base),
			     1))
		return true;
	if (!pstore_fault_failed(ps->fault_slot, NULL))
		log_error("region '%s': refused a store of %zu bytes at %p outside the mapping "
			  "[%p, +%" PRIu64 "): region failed",
			  ps->name, len, p, (void *)ps->base, ps->size);
	pstore_fault_set(ps->fault_slot, (uintptr_t)p);
	return false;
}

int pstore_errno(int r)
{
	return pmemz_pmem2_errno(r);
}

static void pmem2_sourcep(struct pmem2_source **s)
{
	if (*s)
		(void)pmem2_source_delete(s);
}
static void pmem2_configp(struct pmem2_config **c)
{
	if (*c)
		(void)pmem2_config_delete(c);
}

int pstore_open(int fd, uint64_t size, const char *name, struct pstore **out)
{
	_cleanup_(pmem2_sourcep) struct pmem2_source *src = NULL;
	_cleanup_(pmem2_configp) struct pmem2_config *cfg = NULL;
	_cleanup_free_ struct pstore *ps = NULL;
	struct pmem2_map *map = NULL;
	int r;

	ps = calloc(1, sizeof(*ps));
	if (!ps || !(ps->name = strdup(name))) {
		if (ps)
			free(ps);
		ps = NULL;
		return log_error_errno(ENOMEM, "region '%s': out of memory", name);
	}

	r = pmem2_source_from_fd(&src, fd);
	if (r < 0)
		return log_error_errno(pstore_errno(r), "region '%s': pmem2_source_from_fd: %s",
				       name, pmem2_errormsg());
	r = pmem2_config_new(&cfg);
	if (r < 0)
		return log_error_errno(pstore_errno(r), "region '%s': pmem2_config_new: %s", name,
				       pmem2_errormsg());
	r = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE);
	if (r >= 0)
		r = pmem2_config_set_length(cfg, (size_t)size);
	if (r >= 0)
		r = pmem2_config_set_sharing(cfg, PMEM2_SHARED);
	if (r < 0)
		return log_error_errno(pstore_errno(r), "region '%s': pmem2 config: %s", name,
				       pmem2_errormsg());
	r = pmem2_map_new(&map, cfg, src);
	if (r < 0)
		return log_error_errno(pstore_errno(r), "region '%s': pmem2_map_new: %s", name,
				       pmem2_errormsg());

	ps->map = map;
	ps->src = TAKE_PTR(src);
	ps->base = pmem2_map_get_address(map);
	ps->size = pmem2_map_get_size(map);
	ps->gran = pmem2_map_get_store_granularity(map);
	ps->memset_fn = pmem2_get_memset_fn(map);
	ps->memcpy_fn = pmem2_get_memcpy_fn(map);
	ps->flush_fn = pmem2_get_flush_fn(map);
	ps->drain_fn = pmem2_get_drain_fn(map);
	ps->fault_slot = pstore_fault_register(ps->base, ps->size);
	if (ps->fault_slot < 0) {
		r = ps->fault_slot;
		(void)pmem2_map_delete(&ps->map);
		free(ps->name);
		return log_error_errno(r, "region '%s': cannot watch the mapping for faults: %m",
				       name);
	}
	log_debug("region '%s': mapped %llu bytes at %p, granularity %s", name,
		  (unsigned long long)ps->size, (void *)ps->base, pstore_granularity_name(ps));
	*out = TAKE_PTR(ps);
	return 0;
}

void pstore_close(struct pstore *ps)
{
	if (!ps)
		return;
	pstore_fault_unregister(ps->fault_slot);
	if (ps->map)
		(void)pmem2_map_delete(&ps->map);
	if (ps->src)
		(void)pmem2_source_delete(&ps->src);
	free(ps->name);
	free(ps);
}

bool pstore_failed(const struct pstore *ps, uint64_t *off)
{
	uintptr_t a = 0;

	if (!pstore_fault_failed(ps->fault_slot, &a))
		return false;
	if (off)
		*off = a >= (uintptr_t)ps->base && a - (uintptr_t)ps->base < ps->size
			   ? (uint64_t)(a - (uintptr_t)ps->base)
			   : UINT64_MAX;
	return true;
}

void *pstore_base(const struct pstore *ps)
{
	return ps->base;
}

uint64_t pstore_size(const struct pstore *ps)
{
	return ps->size;
}

const char *pstore_granularity_name(const struct pstore *ps)
{
	switch (ps->gran) {
	case PMEM2_GRANULARITY_BYTE:
		return "byte";
	case PMEM2_GRANULARITY_CACHE_LINE:
		return "cache_line";
	case PMEM2_GRANULARITY_PAGE:
		return "page";
	}
	return "unknown";
}

uint64_t pstore_source_alignment(const struct pstore *ps)
{
	size_t a = 0;

	if (pmem2_source_alignment(ps->src, &a) < 0)
		return 0;
	return a;
}

int pstore_numa_node(const struct pstore *ps)
{
	int node = -1;

	if (pmem2_source_numa_node(ps->src, &node) < 0)
		return -1;
	return node;
}

void pstore_set_tracer(struct pstore *ps, const struct pstore_tracer *t)
{
	__atomic_store_n(&ps->tracer, t, __ATOMIC_RELEASE);
}

/* NULL in production: one predictable branch. */
static inline const struct pstore_tracer *tracer(const struct pstore *ps)
{
	return __atomic_load_n(&ps->tracer, __ATOMIC_ACQUIRE);
}

void pstore_store64(struct pstore *ps, uint64_t *dst, uint64_t v)
{
	const struct pstore_tracer *t;

	if (__builtin_expect(((uintptr_t)dst & 7) != 0, 0)) {
		log_error("region '%s': refused a misaligned 8-byte store at %p: region failed",
			  ps->name, (void *)dst);
		pstore_fault_set(ps->fault_slot, (uintptr_t)dst);
		return;
	}
	if (!in_map(ps, dst, 8))
		return;
	__atomic_store_n(dst, v, __ATOMIC_RELAXED);
	if (__builtin_expect((t = tracer(ps)) != NULL, 0))
		t->store(t->ctx, dst, sizeof(*dst), false);
}

void pstore_memcpy(struct pstore *ps, void *dst, const void *src, size_t len)
{
	const struct pstore_tracer *t;

	if (!in_map(ps, dst, len))
		return;
	ps->memcpy_fn(dst, src, len, PMEM2_F_MEM_NODRAIN);
	if (__builtin_expect((t = tracer(ps)) != NULL, 0)) {
		t->store(t->ctx, dst, len, false);
		t->flush(t->ctx, dst, len);
	}
}

void pstore_zero_nt(struct pstore *ps, void *dst, size_t len)
{
	const struct pstore_tracer *t;

	if (!in_map(ps, dst, len))
		return;
	/* Never PMEM2_F_MEM_NOFLUSH: it silently makes the stores cached ones. */
	ps->memset_fn(dst, 0, len, PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN);
	if (__builtin_expect((t = tracer(ps)) != NULL, 0)) {
		t->store(t->ctx, dst, len, true);
		t->flush(t->ctx, dst, len);
	}
}

void pstore_flush(struct pstore *ps, const void *p, size_t len)
{
	const struct pstore_tracer *t;

	if (len == 0 || !in_map(ps, p, len))
		return;
	ps->flush_fn(p, len);
	if (__builtin_expect((t = tracer(ps)) != NULL, 0))
		t->flush(t->ctx, p, len);
}

void pstore_drain(struct pstore *ps)
{
	const struct pstore_tracer *t;

	ps->drain_fn();
	if (__builtin_expect((t = tracer(ps)) != NULL, 0))
		t->drain(t->ctx);
}

int pstore_deep_flush(struct pstore *ps, void *p, size_t len)
{
	const struct pstore_tracer *t;
	int r;

	if (len == 0)
		return 0;
	if (!in_map(ps, p, len))
		return -EIO;
	r = pmem2_deep_flush(ps->map, p, len);
	if (r < 0) {
		log_debug("pmem2_deep_flush: %s", pmem2_errormsg());
		return pstore_errno(r);
	}
	if (__builtin_expect((t = tracer(ps)) != NULL, 0)) {
		t->flush(t->ctx, p, len);
		t->drain(t->ctx);
	}
	return 0;
}

static void pmem2_badblock_contextp(struct pmem2_badblock_context **c)
{
	if (*c)
		pmem2_badblock_context_delete(c);
}

int pstore_badblocks(struct pstore *ps, struct pstore_badblock **out, size_t *n)
{
	_cleanup_(pmem2_badblock_contextp) struct pmem2_badblock_context *ctx = NULL;
	_cleanup_free_ struct pstore_badblock *v = NULL;
	struct pmem2_badblock bb;
	size_t nv = 0, cap = 0;
	int r;

	*out = NULL;
	*n = 0;
	r = pmem2_badblock_context_new(&ctx, ps->src);
	if (r < 0) {
		log_debug("pmem2_badblock_context_new: %s", pmem2_errormsg());
		r = pstore_errno(r);
		/* Files on a non-pmem filesystem have no namespace to ask. */
		return r == -EINVAL || r == -ENODEV || r == -ENOENT ? -ENOTSUP : r;
	}
	for (;;) {
		r = pmem2_badblock_next(ctx, &bb);
		if (r == PMEM2_E_NO_BAD_BLOCK_FOUND)
			break;
		if (r < 0) {
			log_debug("pmem2_badblock_next: %s", pmem2_errormsg());
			return pstore_errno(r);
		}
		r = PMEMZ_GROW(v, &cap, nv + 1);
		if (r < 0)
			return r;
		v[nv].off = bb.offset;
		v[nv].len = bb.length;
		nv++;
	}
	*out = TAKE_PTR(v);
	*n = nv;
	return 0;
}
