/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "hashtab.h"

#define HTAB_MIN 8u

static size_t htab_bucket(uint64_t key, size_t n_buckets)
{
	/* Fibonacci hashing: the high bits of the product mix every key bit. */
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (n_buckets - 1);
}

int htab_init(struct htab *t, size_t min_buckets)
{
	size_t n = HTAB_MIN;

	while (n < min_buckets && n <= SIZE_MAX / 2)
		n *= 2;
	t->buckets = calloc(n, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	t->n_buckets = n;
	t->count = 0;
	return 0;
}

void htab_free(struct htab *t)
{
	free(t->buckets);
	t->buckets = NULL;
	t->n_buckets = 0;
	t->count = 0;
}

static void htab_grow(struct htab *t)
{
	size_t n = t->n_buckets * 2;
	struct htab_node **b;

	if (t->n_buckets > SIZE_MAX / 2 / sizeof(*b))
		return;
	b = calloc(n, sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct htab_node *e = t->buckets[i];

		while (e) {
			struct htab_node *next = e->next;
			size_t h = htab_bucket(e->key, n);

			e->next = b[h];
			b[h] = e;
			e = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
}

void htab_insert(struct htab *t, struct htab_node *n, uint64_t key)
{
	size_t h;

	if (t->count >= t->n_buckets)
		htab_grow(t);
	n->key = key;
	h = htab_bucket(key, t->n_buckets);
	n->next = t->buckets[h];
	t->buckets[h] = n;
	t->count++;
}

bool htab_remove(struct htab *t, struct htab_node *n)
{
	struct htab_node **p = &t->buckets[htab_bucket(n->key, t->n_buckets)];

	while (*p && *p != n)
		p = &(*p)->next;
	if (!*p)
		return false;
	*p = n->next;
	n->next = NULL;
	t->count--;
	return true;
}

struct htab_node *htab_find(const struct htab *t, uint64_t key)
{
	struct htab_node *e;

	for (e = t->buckets[htab_bucket(key, t->n_buckets)]; e; e = e->next)
		if (e->key == key)
			return e;
	return NULL;
}

struct htab_node *htab_find_next(const struct htab_node *n)
{
	struct htab_node *e;

	for (e = n->next; e; e = e->next)
		if (e->key == n->key)
			return e;
	return NULL;
}

static struct htab_node *htab_scan(const struct htab *t, struct htab_iter *it)
{
	for (; it->bucket < t->n_buckets; it->bucket++) {
		struct htab_node *e = t->buckets[it->bucket];

		if (e) {
			it->bucket++;
			it->next = e->next;
			return e;
		}
	}
	return NULL;
}

struct htab_node *htab_first(const struct htab *t, struct htab_iter *it)
{
	it->bucket = 0;
	it->next = NULL;
	return htab_scan(t, it);
}

struct htab_node *htab_next(const struct htab *t, struct htab_iter *it)
{
	struct htab_node *e = it->next;

	if (e) {
		it->next = e->next;
		return e;
	}
	return htab_scan(t, it);
}
