/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "lease.h"

#define LEASE_HASH_MIN 64u

struct lease_table {
	struct lease **buckets;
	size_t n_buckets; /* power of two */
	size_t count;
	uint64_t next_id;
};

static size_t lease_hash(uint64_t id, size_t n_buckets)
{
	/* Fibonacci hashing: consecutive ids spread over the buckets. */
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (n_buckets - 1);
}

int lease_table_new(struct lease_table **out)
{
	struct lease_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->buckets = calloc(LEASE_HASH_MIN, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return -ENOMEM;
	}
	t->n_buckets = LEASE_HASH_MIN;
	t->next_id = 1;
	*out = t;
	return 0;
}

static void lease_free(struct lease *l)
{
	free(l->runs);
	free(l);
}

void lease_table_free(struct lease_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct lease *l = t->buckets[i];

		while (l) {
			struct lease *next = l->hnext;

			LIST_REMOVE(l, owner_link);
			lease_free(l);
			l = next;
		}
	}
	free(t->buckets);
	free(t);
}

static void lease_table_grow(struct lease_table *t)
{
	size_t n = t->n_buckets * 2;
	struct lease **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct lease *l = t->buckets[i];

		while (l) {
			struct lease *next = l->hnext;
			size_t h = lease_hash(l->id, n);

			l->hnext = b[h];
			b[h] = l;
			l = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
}

int lease_table_add(struct lease_table *t, struct lease_list *owner_list, const void *owner,
		    unsigned region, struct run *runs, size_t n_runs, struct lease **out)
{
	struct lease *l;
	uint64_t n_extents = 0;
	size_t h;

	if (!runs || n_runs == 0)
		return -EINVAL;
	for (size_t i = 0; i < n_runs; i++)
		n_extents += runs[i].count;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (t->count >= t->n_buckets)
		lease_table_grow(t);
	l->id = t->next_id++;
	l->owner = owner;
	l->region = region;
	l->runs = runs;
	l->n_runs = n_runs;
	l->n_extents = n_extents;
	h = lease_hash(l->id, t->n_buckets);
	l->hnext = t->buckets[h];
	t->buckets[h] = l;
	LIST_INSERT_HEAD(owner_list, l, owner_link);
	t->count++;
	if (out)
		*out = l;
	return 0;
}

struct lease *lease_table_find(const struct lease_table *t, uint64_t id)
{
	struct lease *l;

	if (id == 0)
		return NULL;
	for (l = t->buckets[lease_hash(id, t->n_buckets)]; l; l = l->hnext)
		if (l->id == id)
			return l;
	return NULL;
}

void lease_table_remove(struct lease_table *t, struct lease *l)
{
	struct lease **p = &t->buckets[lease_hash(l->id, t->n_buckets)];

	while (*p && *p != l)
		p = &(*p)->hnext;
	if (*p) {
		*p = l->hnext;
		t->count--;
	}
	LIST_REMOVE(l, owner_link);
	lease_free(l);
}

size_t lease_table_count(const struct lease_table *t)
{
	return t->count;
}

uint64_t lease_table_next_id(const struct lease_table *t)
{
	return t->next_id;
}
