/* SPDX-License-Identifier: MIT */
/*
 * common/vector.h: growth by doubling, order kept by insert and remove,
 * size_t overflow refused before any allocation, and a failed growth
 * leaves the array as it was.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "vector.h"

DEFINE_VECTOR(u64_vec, uint64_t)

struct pair {
	uint32_t a;
	uint64_t b;
};
DEFINE_VECTOR(pair_vec, struct pair)

static void append_many_keeps_every_item(void **state)
{
	u64_vec v = {0};
	size_t reallocs = 0, last_cap = 0;

	(void)state;
	for (uint64_t i = 0; i < 100000; i++) {
		assert_int_equal(u64_vec_append(&v, i * 3), 0);
		if (v.cap != last_cap) {
			reallocs++;
			last_cap = v.cap;
		}
	}
	assert_int_equal(v.len, 100000);
	assert_true(v.cap >= v.len);
	/* Doubling from 4: about log2(100000 / 4) + 1 growths, not 100000. */
	assert_true(reallocs <= 16);
	for (uint64_t i = 0; i < 100000; i++)
		assert_int_equal(v.ptr[i], i * 3);
	u64_vec_reset(&v);
	assert_null(v.ptr);
	assert_int_equal(v.len, 0);
	assert_int_equal(v.cap, 0);
	/* Usable again after a reset. */
	assert_int_equal(u64_vec_append(&v, 7), 0);
	assert_int_equal(v.ptr[0], 7);
	u64_vec_reset(&v);
}

static void reserve_then_append_does_not_move(void **state)
{
	u64_vec v = {0};
	uint64_t *before;

	(void)state;
	assert_int_equal(u64_vec_reserve(&v, 1000), 0);
	assert_true(v.cap >= 1000);
	assert_int_equal(v.len, 0);
	before = v.ptr;
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(u64_vec_append(&v, i), 0);
	assert_ptr_equal(v.ptr, before);
	u64_vec_reset(&v);
}

static void insert_remove_keep_order(void **state)
{
	u64_vec v = {0};
	const uint64_t want[] = {0, 10, 20, 25, 30};

	(void)state;
	assert_int_equal(u64_vec_append(&v, 10), 0);
	assert_int_equal(u64_vec_append(&v, 30), 0);
	assert_int_equal(u64_vec_insert(&v, 1, 20), 0);
	assert_int_equal(u64_vec_insert(&v, 0, 0), 0);
	assert_int_equal(u64_vec_insert(&v, 4, 40), 0); /* at len: an append */
	assert_int_equal(u64_vec_insert(&v, 3, 25), 0);
	u64_vec_remove(&v, 5); /* the last */
	assert_int_equal(v.len, 5);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(v.ptr[i], want[i]);
	u64_vec_remove(&v, 0);
	assert_int_equal(v.ptr[0], 10);
	assert_int_equal(v.ptr[3], 30);
	u64_vec_truncate(&v, 1);
	assert_int_equal(v.len, 1);
	assert_int_equal(v.ptr[0], 10);
	u64_vec_reset(&v);
}

static void push_zeroes_and_steal_hands_over(void **state)
{
	pair_vec v = {0};
	struct pair *p, *all;

	(void)state;
	for (int i = 0; i < 9; i++) {
		p = pair_vec_push(&v);
		assert_non_null(p);
		assert_int_equal(p->a, 0);
		assert_int_equal(p->b, 0);
		p->a = (uint32_t)i;
		p->b = (uint64_t)i << 40;
	}
	all = pair_vec_steal(&v);
	assert_null(v.ptr);
	assert_int_equal(v.len, 0);
	assert_int_equal(all[8].a, 8);
	assert_int_equal(all[8].b, (uint64_t)8 << 40);
	free(all);
}

/* len + n overflows: refused, nothing allocated or changed. */
static void reserve_overflow_of_count(void **state)
{
	u64_vec v = {0};

	(void)state;
	assert_int_equal(u64_vec_append(&v, 1), 0);
	assert_int_equal(u64_vec_reserve(&v, SIZE_MAX), -EOVERFLOW);
	assert_int_equal(v.len, 1);
	assert_int_equal(v.ptr[0], 1);
	u64_vec_reset(&v);
}

/* items * size overflows: refused before realloc sees a wrapped size. */
static void grow_overflow_of_bytes(void **state)
{
	u64_vec v = {0};
	void *p = NULL;
	size_t cap = 0;
	size_t need;

	(void)state;
	assert_int_equal(u64_vec_reserve(&v, SIZE_MAX / sizeof(uint64_t) + 1), -EOVERFLOW);
	assert_null(v.ptr);
	assert_int_equal(v.cap, 0);
	/* Would wrap to a tiny size: 2^61 + 1 items of 8 bytes is 8 bytes. */
	assert_int_equal(pmemz_grow(&p, &cap, ((size_t)1 << 61) + 1, 8), -EOVERFLOW);
	assert_int_equal(pmemz_grow(&p, NULL, SIZE_MAX / 3 + 1, 3), -EOVERFLOW);
	assert_null(p);
	assert_int_equal(cap, 0);
	assert_int_equal(pmemz_add_size(SIZE_MAX - 1, 2, &need), -EOVERFLOW);
	assert_int_equal(pmemz_add_size(SIZE_MAX - 2, 2, &need), 0);
	assert_int_equal(need, SIZE_MAX);
}

/*
 * Doubling would overflow but need alone fits in size_t: the request is
 * need, which no allocator grants (over PTRDIFF_MAX): -ENOMEM, and the
 * array is untouched.
 */
static void grow_failure_leaves_array(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	size_t huge = SIZE_MAX / sizeof(uint64_t) / 2 + 2;

	(void)state;
	assert_int_equal(PMEMZ_GROW(v, &cap, 3), 0);
	assert_int_equal(cap, 4);
	v[0] = 42;
	/* Fake a capacity past the halfway mark, so doubling overflows. */
	cap = huge - 1;
	assert_int_equal(PMEMZ_GROW(v, &cap, huge), -ENOMEM);
	assert_int_equal(cap, huge - 1);
	assert_int_equal(v[0], 42);
	free(v);
}

/* Without a capacity, the array is exactly need items each time. */
static void grow_without_capacity(void **state)
{
	uint64_t *v = NULL;

	(void)state;
	for (size_t n = 1; n <= 50; n++) {
		assert_int_equal(PMEMZ_GROW(v, NULL, n), 0);
		v[n - 1] = n;
	}
	for (size_t n = 1; n <= 50; n++)
		assert_int_equal(v[n - 1], n);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(append_many_keeps_every_item),
		cmocka_unit_test(reserve_then_append_does_not_move),
		cmocka_unit_test(insert_remove_keep_order),
		cmocka_unit_test(push_zeroes_and_steal_hands_over),
		cmocka_unit_test(reserve_overflow_of_count),
		cmocka_unit_test(grow_overflow_of_bytes),
		cmocka_unit_test(grow_failure_leaves_array),
		cmocka_unit_test(grow_without_capacity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
