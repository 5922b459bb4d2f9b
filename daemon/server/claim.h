/* SPDX-License-Identifier: MIT */
/*
 * Named claims (CLAIM, rpc-claim.c): exclusive, volatile names, one holder
 * per (region name, uid, name), held by a connection until it releases
 * them or closes.  A claim is only a name: it pins no region, no extent
 * and nothing on media, so a reload that removes a region, or a region
 * that fails, leaves claims alone (they go with their connections).
 *
 * The table finds a claim by its key (a hash seeded at random, so that a
 * tenant cannot aim names at one chain) and by owner (a list the owner
 * keeps, so a disconnect releases everything it held).  Claims per owner
 * are bounded by the caller (CLAIM_PER_CONNECTION_MAX).
 */
#ifndef PMEMZ_CLAIM_H
#define PMEMZ_CLAIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "conf.h"
#include "hashtab.h"
#include "util.h"

#define CLAIM_NAME_MAX 63u
#define CLAIM_PER_CONNECTION_MAX 64u

struct claim {
	const void *owner; /* the connection; compared, never dereferenced */
	pid_t pid;	   /* the owner's, for the -EBUSY message */
	uid_t uid;
	char region[CONF_REGION_NAME_MAX + 1];
	char name[CLAIM_NAME_MAX + 1];
	struct htab_node hnode;	      /* claim.c's: the table, by a hash of the key */
	LIST_ENTRY(claim) owner_link; /* the owner's claim_list */
};

LIST_HEAD(claim_list, claim);

struct claim_table;

int claim_table_new(struct claim_table **out);
/* Frees the table and every claim still in it (unlinked from their owners' lists). */
void claim_table_free(struct claim_table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct claim_table *, claim_table_free)

/* The claim of that key, or NULL.  region and name must fit (else NULL). */
struct claim *claim_table_find(const struct claim_table *t, const char *region, uid_t uid,
			       const char *name);
/*
 * Record a claim for owner, linked into owner_list.  -EEXIST when the key
 * is held (by anyone), -ENAMETOOLONG when region or name does not fit,
 * -ENOMEM.
 */
int claim_table_add(struct claim_table *t, struct claim_list *owner_list, const void *owner,
		    pid_t pid, uid_t uid, const char *region, const char *name, struct claim **out);
/* Unlink from the table and the owner's list, and free. */
void claim_table_remove(struct claim_table *t, struct claim *c);
/* Remove every claim of owner_list; returns how many. */
size_t claim_table_release_all(struct claim_table *t, struct claim_list *owner_list);

#endif
