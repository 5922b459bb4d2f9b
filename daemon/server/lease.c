/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "lease.h"

#define LEASE_HASH_MIN 64u

struct lease_table {
	struct htab by_id;
	uint64_t next_id;
};

int lease_table_new(struct lease_table **out)
{
	struct lease_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (htab_init(&t->by_id, LEASE_HASH_MIN) < 0) {
		free(t);
		return -ENOMEM;
	}
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
	struct htab_iter it;
	struct htab_node *n;

	if (!t)
		return;
	for (n = htab_first(&t->by_id, &it); n; n = htab_next(&t->by_id, &it)) {
		struct lease *l = htab_entry(n, struct lease, hnode);

		LIST_REMOVE(l, owner_link);
		lease_free(l);
	}
	htab_free(&t->by_id);
	free(t);
}

int lease_table_add(struct lease_table *t, struct lease_list *owner_list, const void *owner,
		    unsigned region, struct run *runs, size_t n_runs, struct lease **out)
{
	struct lease *l;
	uint64_t n_extents = 0;

	if (!runs || n_runs == 0)
		return -EINVAL;
	for (size_t i = 0; i < n_runs; i++)
		n_extents += runs[i].count;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->id = t->next_id++;
	l->owner = owner;
	l->region = region;
	l->runs = runs;
	l->n_runs = n_runs;
	l->n_extents = n_extents;
	htab_insert(&t->by_id, &l->hnode, l->id);
	LIST_INSERT_HEAD(owner_list, l, owner_link);
	if (out)
		*out = l;
	return 0;
}

struct lease *lease_table_find(const struct lease_table *t, uint64_t id)
{
	struct htab_node *n;

	if (id == 0)
		return NULL;
	n = htab_find(&t->by_id, id); /* ids are unique: the first is the one */
	return n ? htab_entry(n, struct lease, hnode) : NULL;
}

void lease_table_remove(struct lease_table *t, struct lease *l)
{
	(void)htab_remove(&t->by_id, &l->hnode);
	LIST_REMOVE(l, owner_link);
	lease_free(l);
}

size_t lease_table_count(const struct lease_table *t)
{
	return htab_count(&t->by_id);
}

uint64_t lease_table_next_id(const struct lease_table *t)
{
	return t->next_id;
}
