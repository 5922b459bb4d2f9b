/* SPDX-License-Identifier: MIT */
#include "tag-pattern.h"

uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t rnd(uint64_t *x, uint64_t n)
{
	return n ? splitmix(x) % n : 0;
}

uint64_t name_seed(const char *name)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

static uint64_t pattern_word(uint64_t seed, uint64_t region_off)
{
	uint64_t x = seed ^ (region_off * 0x9e3779b97f4a7c15ull);

	return splitmix(&x) | 1;
}

void fill_alloc(const struct pmemz_region *r, const struct pmemz_alloc *a, uint64_t seed)
{
	const uint8_t *base = pmemz_region_address(r);

	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		uint64_t *p = pmemz_alloc_range(a, i, &len);
		uint64_t off = (uint64_t)((uint8_t *)p - base);

		for (size_t k = 0; k < len / 8; k++)
			p[k] = pattern_word(seed, off + 8 * k);
	}
}

/* Offset (in the allocation) of the first wrong word, or -1. */
int64_t check_alloc(const struct pmemz_region *r, const struct pmemz_alloc *a,
			   uint64_t seed, bool zero)
{
	const uint8_t *base = pmemz_region_address(r);
	int64_t logical = 0;

	for (size_t i = 0; i < pmemz_alloc_count(a); i++) {
		size_t len;
		const uint64_t *p = pmemz_alloc_range(a, i, &len);
		uint64_t off = (uint64_t)((const uint8_t *)p - base);

		for (size_t k = 0; k < len / 8; k++)
			if (p[k] != (zero ? 0 : pattern_word(seed, off + 8 * k)))
				return logical + (int64_t)(8 * k);
		logical += (int64_t)len;
	}
	return -1;
}
