/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "claim.h"

#define CLAIM_HASH_MIN 64u

struct claim_table {
	struct claim **buckets;
	size_t n_buckets; /* power of two */
	size_t count;
	uint64_t seed;
};

/* FNV-1a over the key, from a random seed, with a final mix. */
static uint64_t claim_hash(uint64_t seed, const char *region, uid_t uid, const char *name)
{
	uint64_t h = seed ^ 0xcbf29ce484222325ull;
	const unsigned char *s;

	for (s = (const unsigned char *)region; *s; s++)
		h = (h ^ *s) * 0x100000001b3ull;
	h = (h ^ 0xff) * 0x100000001b3ull; /* separator: no byte of a name */
	for (size_t i = 0; i < sizeof(uid); i++)
		h = (h ^ ((uint64_t)uid >> (8 * i) & 0xff)) * 0x100000001b3ull;
	for (s = (const unsigned char *)name; *s; s++)
		h = (h ^ *s) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

int claim_table_new(struct claim_table **out)
{
	struct claim_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->buckets = calloc(CLAIM_HASH_MIN, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return -ENOMEM;
	}
	t->n_buckets = CLAIM_HASH_MIN;
	/* Without entropy (early boot), a fixed seed: still correct, only guessable. */
	if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) != (ssize_t)sizeof(t->seed))
		t->seed = (uint64_t)(uintptr_t)t ^ pmemz_now_ns();
	*out = t;
	return 0;
}

void claim_table_free(struct claim_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct claim *c = t->buckets[i];

		while (c) {
			struct claim *next = c->hnext;

			LIST_REMOVE(c, owner_link);
			free(c);
			c = next;
		}
	}
	free(t->buckets);
	free(t);
}

static void claim_table_grow(struct claim_table *t)
{
	size_t n = t->n_buckets * 2;
	struct claim **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct claim *c = t->buckets[i];

		while (c) {
			struct claim *next = c->hnext;
			size_t h = c->hash & (n - 1);

			c->hnext = b[h];
			b[h] = c;
			c = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
}

static bool claim_key_fits(const char *region, const char *name)
{
	return strlen(region) <= CONF_REGION_NAME_MAX && strlen(name) <= CLAIM_NAME_MAX;
}

struct claim *claim_table_find(const struct claim_table *t, const char *region, uid_t uid,
			       const char *name)
{
	uint64_t h;

	if (!claim_key_fits(region, name))
		return NULL;
	h = claim_hash(t->seed, region, uid, name);
	for (struct claim *c = t->buckets[h & (t->n_buckets - 1)]; c; c = c->hnext)
		if (c->hash == h && c->uid == uid && strcmp(c->region, region) == 0 &&
		    strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int claim_table_add(struct claim_table *t, struct claim_list *owner_list, const void *owner,
		    pid_t pid, uid_t uid, const char *region, const char *name, struct claim **out)
{
	struct claim *c;
	size_t b;

	if (!claim_key_fits(region, name))
		return -ENAMETOOLONG;
	if (claim_table_find(t, region, uid, name))
		return -EEXIST;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->owner = owner;
	c->pid = pid;
	c->uid = uid;
	c->hash = claim_hash(t->seed, region, uid, name);
	strcpy(c->region, region); /* lengths checked above */
	strcpy(c->name, name);
	if (t->count >= t->n_buckets)
		claim_table_grow(t);
	b = c->hash & (t->n_buckets - 1);
	c->hnext = t->buckets[b];
	t->buckets[b] = c;
	LIST_INSERT_HEAD(owner_list, c, owner_link);
	t->count++;
	if (out)
		*out = c;
	return 0;
}

void claim_table_remove(struct claim_table *t, struct claim *c)
{
	struct claim **p = &t->buckets[c->hash & (t->n_buckets - 1)];

	while (*p && *p != c)
		p = &(*p)->hnext;
	if (*p)
		*p = c->hnext;
	LIST_REMOVE(c, owner_link);
	t->count--;
	free(c);
}

size_t claim_table_release_all(struct claim_table *t, struct claim_list *owner_list)
{
	struct claim *c;
	size_t n = 0;

	while ((c = LIST_FIRST(owner_list))) {
		claim_table_remove(t, c);
		n++;
	}
	return n;
}

size_t claim_table_count(const struct claim_table *t)
{
	return t ? t->count : 0;
}
