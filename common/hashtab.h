/* SPDX-License-Identifier: MIT */
/*
 * An intrusive chained hash table keyed by uint64_t: the caller embeds a
 * struct htab_node in its own object and sets no field of it; the table
 * never allocates or frees an object, only its bucket array.
 *
 * Buckets are a power of two, indexed by Fibonacci hashing (the key times
 * 2^64 / phi, high bits), so consecutive keys (lease ids, uids) spread out
 * and a key that is already a hash loses nothing.  The bucket array doubles
 * when the table holds as many nodes as buckets; when that allocation fails
 * the table keeps its size, with longer chains (still correct).
 *
 * Several nodes may hold one key (a caller whose key is a hash of a longer
 * key): htab_find returns the first, htab_find_next the following ones.
 */
#ifndef PMEMZ_HASHTAB_H
#define PMEMZ_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct htab_node {
	struct htab_node *next;
	uint64_t key;
};

struct htab {
	struct htab_node **buckets;
	size_t n_buckets; /* a power of two */
	size_t count;
};

/* The object holding node (member is the node's field name). */
#define htab_entry(node, type, member) ((type *)((char *)(node)-offsetof(type, member)))

/* min_buckets is rounded up to a power of two (at least 8).  0 or -ENOMEM. */
int htab_init(struct htab *t, size_t min_buckets);
/* Frees the bucket array only: the caller frees its objects first. */
void htab_free(struct htab *t);

void htab_insert(struct htab *t, struct htab_node *n, uint64_t key);
/* false when n is not in t. */
bool htab_remove(struct htab *t, struct htab_node *n);
struct htab_node *htab_find(const struct htab *t, uint64_t key);
/* The next node after n with n's key, or NULL. */
struct htab_node *htab_find_next(const struct htab_node *n);

static inline size_t htab_count(const struct htab *t)
{
	return t->count;
}

/*
 * Visits every node; the current one may be removed (or freed) during the
 * visit, no other.  Usage:
 *   struct htab_iter it;
 *   for (n = htab_first(t, &it); n; n = htab_next(t, &it))
 */
struct htab_iter {
	size_t bucket;
	struct htab_node *next;
};
struct htab_node *htab_first(const struct htab *t, struct htab_iter *it);
struct htab_node *htab_next(const struct htab *t, struct htab_iter *it);

#endif
