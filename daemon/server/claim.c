/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "claim.h"

#define CLAIM_HASH_MIN 64u

struct claim_table {
	struct htab by_key; /* keyed by claim_hash: distinct keys may share one */
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
	if (htab_init(&t->by_key, CLAIM_HASH_MIN) < 0) {
		free(t);
		return -ENOMEM;
	}
	/* Without entropy (early boot), a fixed seed: still correct, only guessable. */
	if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) != (ssize_t)sizeof(t->seed))
		t->seed = (uint64_t)(uintptr_t)t ^ pmemz_now_ns();
	*out = t;
	return 0;
}

void claim_table_free(struct claim_table *t)
{
	struct htab_iter it;
	struct htab_node *n;

	if (!t)
		return;
	for (n = htab_first(&t->by_key, &it); n; n = htab_next(&t->by_key, &it)) {
		struct claim *c = htab_entry(n, struct claim, hnode);

		LIST_REMOVE(c, owner_link);
		free(c);
	}
	htab_free(&t->by_key);
	free(t);
}

static bool claim_key_fits(const char *region, const char *name)
{
	return strlen(region) <= CONF_REGION_NAME_MAX && strlen(name) <= CLAIM_NAME_MAX;
}

struct claim *claim_table_find(const struct claim_table *t, const char *region, uid_t uid,
			       const char *name)
{
	struct htab_node *n;

	if (!claim_key_fits(region, name))
		return NULL;
	for (n = htab_find(&t->by_key, claim_hash(t->seed, region, uid, name)); n;
	     n = htab_find_next(n)) {
		struct claim *c = htab_entry(n, struct claim, hnode);

		if (c->uid == uid && strcmp(c->region, region) == 0 && strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

int claim_table_add(struct claim_table *t, struct claim_list *owner_list, const void *owner,
		    pid_t pid, uid_t uid, const char *region, const char *name, struct claim **out)
{
	struct claim *c;

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
	strcpy(c->region, region); /* lengths checked above */
	strcpy(c->name, name);
	htab_insert(&t->by_key, &c->hnode, claim_hash(t->seed, region, uid, name));
	LIST_INSERT_HEAD(owner_list, c, owner_link);
	if (out)
		*out = c;
	return 0;
}

void claim_table_remove(struct claim_table *t, struct claim *c)
{
	(void)htab_remove(&t->by_key, &c->hnode);
	LIST_REMOVE(c, owner_link);
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
