/* SPDX-License-Identifier: MIT */
/*
 * Growable arrays, the one place that reallocates.  Growth doubles the
 * capacity (so appending n items costs O(n) copies in all) and checks every
 * size computation for size_t overflow: -EOVERFLOW when the byte size does
 * not fit, -ENOMEM when realloc fails; the array is left as it was on error.
 *
 * Two forms share that one grow function:
 * - DEFINE_VECTOR(name, type) defines a typed vector `name` with fields
 *   ptr, len, cap and static inline name_reserve, name_append, name_push,
 *   name_insert, name_remove, name_truncate, name_reset, name_steal.
 * - pmemz_grow() for an array kept as separate fields of a larger struct
 *   (a pointer, a count and a capacity), like systemd's GREEDY_REALLOC.
 */
#ifndef PMEMZ_VECTOR_H
#define PMEMZ_VECTOR_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/*
 * Make *ptr (an array of *cap items of elem bytes) hold at least need items:
 * unchanged when it already does, else reallocated to max(need, 2 * *cap,
 * 4) items (need alone when doubling would overflow).  0, -EOVERFLOW or
 * -ENOMEM; on error *ptr and *cap are unchanged.  cap may be NULL for an
 * array that grows to exactly need each time (a caller that keeps no
 * capacity; then *ptr is always reallocated to need items).
 */
int pmemz_grow(void **ptr, size_t *cap, size_t need, size_t elem);

/*
 * need = have + more, or -EOVERFLOW: the sum a caller computes before
 * pmemz_grow when it adds more than one item.
 */
static inline int pmemz_add_size(size_t have, size_t more, size_t *need)
{
	if (more > SIZE_MAX - have)
		return -EOVERFLOW;
	*need = have + more;
	return 0;
}

/*
 * PMEMZ_GROW(p, cap, need): pmemz_grow for a typed pointer lvalue p,
 * without a cast at each caller.
 */
#define PMEMZ_GROW(p, capp, need)                                                                  \
	({                                                                                         \
		void *_g_p = (p);                                                                  \
		int _g_r = pmemz_grow(&_g_p, (capp), (need), sizeof(*(p)));                        \
		if (_g_r == 0)                                                                     \
			(p) = _g_p;                                                                \
		_g_r;                                                                              \
	})

#define DEFINE_VECTOR(name, type)                                                                  \
	typedef struct name {                                                                      \
		type *ptr;                                                                         \
		size_t len;                                                                        \
		size_t cap;                                                                        \
	} name;                                                                                    \
                                                                                                   \
	/* Room for n more items: appending them cannot fail. */                                   \
	static inline int name##_reserve(name *v, size_t n)                                        \
	{                                                                                          \
		size_t need;                                                                       \
		int r = pmemz_add_size(v->len, n, &need);                                          \
                                                                                                   \
		return r < 0 ? r : PMEMZ_GROW(v->ptr, &v->cap, need);                              \
	}                                                                                          \
                                                                                                   \
	static inline int name##_append(name *v, type elem)                                        \
	{                                                                                          \
		int r = name##_reserve(v, 1);                                                      \
                                                                                                   \
		if (r < 0)                                                                         \
			return r;                                                                  \
		v->ptr[v->len++] = elem;                                                           \
		return 0;                                                                          \
	}                                                                                          \
                                                                                                   \
	/* A new zeroed item at the end, or NULL (errno set) when growth fails. */                 \
	static inline type *name##_push(name *v)                                                   \
	{                                                                                          \
		int r = name##_reserve(v, 1);                                                      \
                                                                                                   \
		if (r < 0) {                                                                       \
			errno = -r;                                                                \
			return NULL;                                                               \
		}                                                                                  \
		memset(&v->ptr[v->len], 0, sizeof(type));                                          \
		return &v->ptr[v->len++];                                                          \
	}                                                                                          \
                                                                                                   \
	/* elem at index i (0 <= i <= len), the items from i on moved up one. */                   \
	static inline int name##_insert(name *v, size_t i, type elem)                              \
	{                                                                                          \
		int r = name##_reserve(v, 1);                                                      \
                                                                                                   \
		if (r < 0)                                                                         \
			return r;                                                                  \
		memmove(&v->ptr[i + 1], &v->ptr[i], (v->len - i) * sizeof(type));                 \
		v->ptr[i] = elem;                                                                  \
		v->len++;                                                                          \
		return 0;                                                                          \
	}                                                                                          \
                                                                                                   \
	/* Drops the item at index i, keeping the order of the others. */                          \
	static inline void name##_remove(name *v, size_t i)                                        \
	{                                                                                          \
		memmove(&v->ptr[i], &v->ptr[i + 1], (v->len - i - 1) * sizeof(type));             \
		v->len--;                                                                          \
	}                                                                                          \
                                                                                                   \
	/* Keeps the first n items (n <= len) and the memory, for reuse. */                        \
	static inline void name##_truncate(name *v, size_t n)                                      \
	{                                                                                          \
		v->len = n;                                                                        \
	}                                                                                          \
                                                                                                   \
	/* Frees the memory: the vector is empty and usable again. */                              \
	static inline void name##_reset(name *v)                                                   \
	{                                                                                          \
		free(v->ptr);                                                                      \
		v->ptr = NULL;                                                                     \
		v->len = v->cap = 0;                                                               \
	}                                                                                          \
                                                                                                   \
	/* Hands the array (len items) to the caller, who frees it; v is empty. */                 \
	static inline type *name##_steal(name *v)                                                  \
	{                                                                                          \
		type *p = v->ptr;                                                                  \
                                                                                                   \
		v->ptr = NULL;                                                                     \
		v->len = v->cap = 0;                                                               \
		return p;                                                                          \
	}

#endif
