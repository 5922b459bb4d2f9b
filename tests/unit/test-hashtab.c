/* SPDX-License-Identifier: MIT */
/*
 * common/hashtab.c: every inserted node is found by its key and visited
 * once, whatever the number of keys and removals; nodes sharing a key are
 * all reachable; the bucket array grows with the load.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hashtab.h"

struct item {
	uint32_t value;
	struct htab_node node;
	bool visited;
};

#define N_ITEMS 50000u

/* Keys of three shapes: consecutive, multiples of 2^32, and scattered. */
static uint64_t key_of(uint32_t i)
{
	switch (i % 3) {
	case 0:
		return i;
	case 1:
		return (uint64_t)i << 32;
	default:
		return (uint64_t)i * 0xd6e8feb86659fd93ull;
	}
}

static struct item *find_item(const struct htab *t, uint64_t key)
{
	struct htab_node *n = htab_find(t, key);

	return n ? htab_entry(n, struct item, node) : NULL;
}

static void many_keys_inserted_found_removed(void **state)
{
	struct htab t;
	struct item *items = calloc(N_ITEMS, sizeof(*items));

	(void)state;
	assert_non_null(items);
	assert_int_equal(htab_init(&t, 0), 0);
	assert_int_equal(t.n_buckets, 8);
	for (uint32_t i = 0; i < N_ITEMS; i++) {
		items[i].value = i;
		htab_insert(&t, &items[i].node, key_of(i));
	}
	assert_int_equal(htab_count(&t), N_ITEMS);
	/* Grown with the load: no more nodes than buckets. */
	assert_true(t.n_buckets >= N_ITEMS);
	for (uint32_t i = 0; i < N_ITEMS; i++)
		assert_ptr_equal(find_item(&t, key_of(i)), &items[i]);
	/* Remove every other one; the rest stay findable. */
	for (uint32_t i = 0; i < N_ITEMS; i += 2)
		assert_true(htab_remove(&t, &items[i].node));
	assert_int_equal(htab_count(&t), N_ITEMS / 2);
	for (uint32_t i = 0; i < N_ITEMS; i++) {
		if (i % 2)
			assert_ptr_equal(find_item(&t, key_of(i)), &items[i]);
		else
			assert_null(find_item(&t, key_of(i)));
	}
	/* Removing a node that is no longer in the table is refused. */
	assert_false(htab_remove(&t, &items[0].node));
	assert_int_equal(htab_count(&t), N_ITEMS / 2);
	/* Reinsert under new keys. */
	for (uint32_t i = 0; i < N_ITEMS; i += 2)
		htab_insert(&t, &items[i].node, key_of(i) ^ 0x5555555555555555ull);
	for (uint32_t i = 0; i < N_ITEMS; i += 2) {
		assert_ptr_equal(find_item(&t, key_of(i) ^ 0x5555555555555555ull), &items[i]);
		assert_null(find_item(&t, key_of(i)));
	}
	assert_int_equal(htab_count(&t), N_ITEMS);
	htab_free(&t);
	free(items);
}

static void iteration_visits_each_once_and_allows_removal(void **state)
{
	struct htab t;
	struct htab_iter it;
	struct htab_node *n;
	struct item *items = calloc(1000, sizeof(*items));
	size_t seen = 0;

	(void)state;
	assert_non_null(items);
	assert_int_equal(htab_init(&t, 100), 0);
	assert_int_equal(t.n_buckets, 128);
	for (uint32_t i = 0; i < 1000; i++)
		htab_insert(&t, &items[i].node, key_of(i));
	for (n = htab_first(&t, &it); n; n = htab_next(&t, &it)) {
		struct item *e = htab_entry(n, struct item, node);

		assert_false(e->visited);
		e->visited = true;
		seen++;
		/* Removing the node being visited does not end the walk. */
		if ((e - items) % 4 == 0)
			assert_true(htab_remove(&t, n));
	}
	assert_int_equal(seen, 1000);
	assert_int_equal(htab_count(&t), 750);
	seen = 0;
	for (n = htab_first(&t, &it); n; n = htab_next(&t, &it)) {
		assert_true((htab_entry(n, struct item, node) - items) % 4 != 0);
		seen++;
	}
	assert_int_equal(seen, 750);
	htab_free(&t);
	free(items);
}

static void equal_keys_all_reachable(void **state)
{
	struct htab t;
	struct item items[10] = {0};
	struct htab_node *n;
	unsigned mask = 0;

	(void)state;
	assert_int_equal(htab_init(&t, 0), 0);
	/* Five nodes on key 7, five on other keys, all in few buckets. */
	for (uint32_t i = 0; i < 10; i++) {
		items[i].value = i;
		htab_insert(&t, &items[i].node, i % 2 ? 7 : 1000 + i);
	}
	for (n = htab_find(&t, 7); n; n = htab_find_next(n)) {
		struct item *e = htab_entry(n, struct item, node);

		assert_int_equal(n->key, 7);
		assert_int_equal(e->value % 2, 1);
		assert_false(mask & (1u << e->value));
		mask |= 1u << e->value;
	}
	assert_int_equal(mask, 0x2aa);
	assert_true(htab_remove(&t, &items[5].node));
	mask = 0;
	for (n = htab_find(&t, 7); n; n = htab_find_next(n))
		mask |= 1u << htab_entry(n, struct item, node)->value;
	assert_int_equal(mask, 0x28a);
	assert_null(htab_find(&t, 8));
	htab_free(&t);
	assert_null(t.buckets);
}

static void empty_table(void **state)
{
	struct htab t;
	struct htab_iter it;

	(void)state;
	assert_int_equal(htab_init(&t, 1), 0);
	assert_null(htab_find(&t, 0));
	assert_null(htab_first(&t, &it));
	assert_int_equal(htab_count(&t), 0);
	htab_free(&t);
	/* Freed twice: a no-op the second time. */
	htab_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(many_keys_inserted_found_removed),
		cmocka_unit_test(iteration_visits_each_once_and_allows_removal),
		cmocka_unit_test(equal_keys_all_reachable),
		cmocka_unit_test(empty_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
