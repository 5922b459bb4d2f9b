/* SPDX-License-Identifier: MIT */
/* The lease table: ids, lookup, per-owner lists, growth, removal. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "lease.h"

static struct run *make_runs(size_t n, uint64_t first)
{
	struct run *r = calloc(n, sizeof(*r));

	assert_non_null(r);
	for (size_t i = 0; i < n; i++) {
		r[i].first = first + i * 10;
		r[i].count = i + 1;
	}
	return r;
}

static void test_add_find_remove(void **state)
{
	struct lease_table *t = NULL;
	struct lease_list owner = LIST_HEAD_INITIALIZER(owner);
	struct lease *a = NULL, *b = NULL;
	int me;

	assert_int_equal(lease_table_new(&t), 0);
	assert_int_equal(lease_table_count(t), 0);
	assert_null(lease_table_find(t, 0));
	assert_null(lease_table_find(t, 1));

	assert_int_equal(lease_table_add(t, &owner, &me, 3, make_runs(3, 5), 3, &a), 0);
	assert_int_equal(a->id, 1);
	assert_ptr_equal(a->owner, &me);
	assert_int_equal(a->region, 3);
	assert_int_equal(a->n_runs, 3);
	assert_int_equal(a->n_extents, 1 + 2 + 3);
	assert_int_equal(lease_table_add(t, &owner, &me, 0, make_runs(1, 0), 1, &b), 0);
	assert_int_equal(b->id, 2);
	assert_int_equal(lease_table_count(t), 2);
	assert_ptr_equal(lease_table_find(t, 1), a);
	assert_ptr_equal(lease_table_find(t, 2), b);
	assert_null(lease_table_find(t, 3));

	lease_table_remove(t, a);
	assert_null(lease_table_find(t, 1));
	assert_ptr_equal(lease_table_find(t, 2), b);
	assert_ptr_equal(LIST_FIRST(&owner), b);
	assert_int_equal(lease_table_count(t), 1);
	lease_table_remove(t, b);
	assert_true(LIST_EMPTY(&owner));
	assert_int_equal(lease_table_count(t), 0);
	assert_int_equal(lease_table_next_id(t), 3);
	lease_table_free(t);
}

static void test_ids_not_reused(void **state)
{
	struct lease_table *t = NULL;
	struct lease_list owner = LIST_HEAD_INITIALIZER(owner);
	struct lease *l = NULL;
	uint64_t last = 0;

	assert_int_equal(lease_table_new(&t), 0);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(lease_table_add(t, &owner, t, 0, make_runs(1, 0), 1, &l), 0);
		assert_true(l->id > last);
		last = l->id;
		lease_table_remove(t, l);
	}
	assert_int_equal(last, 100);
	lease_table_free(t);
}

static void test_invalid(void **state)
{
	struct lease_table *t = NULL;
	struct lease_list owner = LIST_HEAD_INITIALIZER(owner);
	struct run *runs = make_runs(1, 0);

	assert_int_equal(lease_table_new(&t), 0);
	assert_int_equal(lease_table_add(t, &owner, t, 0, NULL, 0, NULL), -EINVAL);
	/* On failure the caller keeps its runs. */
	assert_int_equal(lease_table_add(t, &owner, t, 0, runs, 0, NULL), -EINVAL);
	free(runs);
	assert_int_equal(lease_table_count(t), 0);
	lease_table_free(t);
}

/* Many leases over two owners: the hash grows, each owner's list is complete. */
static void test_owners_and_growth(void **state)
{
	enum { N = 5000 };
	struct lease_table *t = NULL;
	struct lease_list even = LIST_HEAD_INITIALIZER(even);
	struct lease_list odd = LIST_HEAD_INITIALIZER(odd);
	struct lease *l;
	int owner_even, owner_odd;
	size_t n_even = 0, n_odd = 0;

	assert_int_equal(lease_table_new(&t), 0);
	for (int i = 0; i < N; i++) {
		bool e = i % 2 == 0;

		assert_int_equal(lease_table_add(t, e ? &even : &odd, e ? &owner_even : &owner_odd,
						 (unsigned)(i % 4), make_runs(2, (uint64_t)i), 2,
						 NULL),
				 0);
	}
	assert_int_equal(lease_table_count(t), N);
	for (uint64_t id = 1; id <= N; id++) {
		l = lease_table_find(t, id);
		assert_non_null(l);
		assert_int_equal(l->id, id);
		assert_ptr_equal(l->owner, id % 2 ? (void *)&owner_even : (void *)&owner_odd);
	}
	LIST_FOREACH(l, &even, owner_link)
	{
		assert_ptr_equal(l->owner, &owner_even);
		n_even++;
	}
	LIST_FOREACH(l, &odd, owner_link)
	n_odd++;
	assert_int_equal(n_even, N / 2);
	assert_int_equal(n_odd, N / 2);

	/* What a disconnect does: drop every lease of one owner. */
	while ((l = LIST_FIRST(&odd)))
		lease_table_remove(t, l);
	assert_int_equal(lease_table_count(t), N / 2);
	for (uint64_t id = 1; id <= N; id++)
		assert_true((lease_table_find(t, id) != NULL) == (id % 2 == 1));
	/* Freeing the table frees the rest and empties the owners' lists. */
	lease_table_free(t);
	assert_true(LIST_EMPTY(&even));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_add_find_remove),
	    cmocka_unit_test(test_ids_not_reused),
	    cmocka_unit_test(test_invalid),
	    cmocka_unit_test(test_owners_and_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
