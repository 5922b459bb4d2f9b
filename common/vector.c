/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "vector.h"

/* Small arrays are common (a few runs, a few names): skip 1, 2 and 3. */
#define GROW_MIN 4u

int pmemz_grow(void **ptr, size_t *cap, size_t need, size_t elem)
{
	size_t have = cap ? *cap : 0;
	size_t n = need;
	void *p;

	if (cap && need <= have && *ptr)
		return 0;
	if (cap) {
		/* Doubling: n appends cost O(n) copies, not O(n^2). */
		if (have <= SIZE_MAX / 2 && have * 2 > n)
			n = have * 2;
		if (n < GROW_MIN)
			n = GROW_MIN;
	}
	if (n == 0)
		n = 1; /* realloc(p, 0) may free p and return NULL */
	if (elem && n > SIZE_MAX / elem) {
		/* The doubled size overflows; need alone may still fit. */
		if (need > SIZE_MAX / elem)
			return -EOVERFLOW;
		n = need ? need : 1;
	}
	p = realloc(*ptr, n * (elem ? elem : 1));
	if (!p)
		return -ENOMEM;
	*ptr = p;
	if (cap)
		*cap = n;
	return 0;
}
