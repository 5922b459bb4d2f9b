/* SPDX-License-Identifier: MIT */
/*
 * Named claims (CLAIM): exclusive, volatile names the daemon keeps per
 * (region, uid, name) for the connection that took them.  The region
 * handle remembers its names, so that pmemz_client_reconnect can take
 * them again on the new connection and pmemz_region_close can give them
 * back: the first claim registers claim_hooks on the handle, region.c calls
 * them.  The list is guarded by the client's lock, never held across a
 * request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"
#include "vector.h"

#define CLAIM_NAME_MAX 63u

static const struct pmemz_region_hooks claim_hooks;

static int claim_rpc(struct pmemz_region *r, const char *name, bool release)
{
	return pmemz_wire_claim(r->c, r->name, name, release);
}

/* Under c->lock. */
static ssize_t claim_index(const struct pmemz_region *r, const char *name)
{
	for (size_t i = 0; i < r->n_claims; i++)
		if (strcmp(r->claims[i], name) == 0)
			return (ssize_t)i;
	return -1;
}

static int claim_remember(struct pmemz_region *r, const char *name)
{
	struct pmemz_client *c = r->c;
	int ret = pmemz_region_add_hooks(r, &claim_hooks);

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&c->lock);
	if (claim_index(r, name) < 0) {
		char *dup = strdup(name);

		if (!dup || PMEMZ_GROW(r->claims, &r->cap_claims, r->n_claims + 1) < 0) {
			free(dup);
			ret = -ENOMEM;
		} else {
			r->claims[r->n_claims++] = dup;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static void claim_forget(struct pmemz_region *r, const char *name)
{
	struct pmemz_client *c = r->c;
	ssize_t i;

	pthread_mutex_lock(&c->lock);
	i = claim_index(r, name);
	if (i >= 0) {
		free(r->claims[i]);
		r->claims[i] = r->claims[--r->n_claims];
	}
	pthread_mutex_unlock(&c->lock);
}

/* Forget r's names, nothing sent: r turned stale (they died with the old connection) or closed. */
static void claims_forget(struct pmemz_region *r)
{
	pthread_mutex_lock(&r->c->lock);
	for (size_t i = 0; i < r->n_claims; i++)
		free(r->claims[i]);
	r->n_claims = 0;
	pthread_mutex_unlock(&r->c->lock);
}

static int claim_check_name(const char *fn, const char *name)
{
	if (!name || !*name)
		return pmemz_err(-EINVAL, "%s: empty claim name", fn);
	if (strlen(name) > CLAIM_NAME_MAX)
		return pmemz_err(-EINVAL, "%s: claim name longer than %u bytes", fn,
				 CLAIM_NAME_MAX);
	return 0;
}

PMEMZ_EXPORT int pmemz_region_claim(struct pmemz_region *r, const char *name)
{
	int ret;

	if (!r)
		return pmemz_err(-EINVAL, "pmemz_region_claim: region is NULL");
	ret = claim_check_name("pmemz_region_claim", name);
	if (ret < 0)
		return ret;
	ret = pmemz_region_check(r);
	if (ret < 0)
		return ret;
	ret = claim_rpc(r, name, false);
	if (ret < 0)
		return ret;
	ret = claim_remember(r, name);
	if (ret < 0) {
		/* Not remembered, so not re-claimed nor given back at close: give it back now. */
		(void)claim_rpc(r, name, true);
		return pmemz_err(ret, "out of memory");
	}
	return 0;
}

PMEMZ_EXPORT int pmemz_region_unclaim(struct pmemz_region *r, const char *name)
{
	int ret;

	if (!r)
		return pmemz_err(-EINVAL, "pmemz_region_unclaim: region is NULL");
	ret = claim_check_name("pmemz_region_unclaim", name);
	if (ret < 0)
		return ret;
	ret = claim_rpc(r, name, true);
	/* Not held on this connection (also after a failed re-claim): not ours any more. */
	if (ret == 0 || ret == -ENOENT)
		claim_forget(r, name);
	return ret;
}

/* A copy of r's names, to send requests without the lock. */
static int claims_snapshot(struct pmemz_region *r, char ***out, size_t *n)
{
	struct pmemz_client *c = r->c;
	char **names = NULL;
	size_t k = 0;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	if (r->n_claims) {
		names = calloc(r->n_claims, sizeof(*names));
		for (; names && k < r->n_claims; k++)
			if (!(names[k] = strdup(r->claims[k])))
				break;
		if (!names || k < r->n_claims)
			ret = -ENOMEM;
	}
	pthread_mutex_unlock(&c->lock);
	if (ret < 0) {
		for (size_t i = 0; i < k; i++)
			free(names[i]);
		free(names);
		return pmemz_err(ret, "out of memory");
	}
	*out = names;
	*n = k;
	return 0;
}

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * Claim r's names again on a new connection: 0, or the first failure
 * (-EBUSY: another connection took one meanwhile; that name is no longer
 * r's).  The others are claimed all the same.
 */
static int claims_retake(struct pmemz_region *r)
{
	char **names = NULL;
	char msg[512] = "";
	size_t n = 0;
	int ret, first = 0;

	ret = claims_snapshot(r, &names, &n);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n; i++) {
		ret = claim_rpc(r, names[i], false);
		if (ret < 0 && pmemz_client_broken(r->c)) {
			/* The next reconnect tries them all again. */
			names_free(names, n);
			return ret;
		}
		if (ret < 0) {
			if (!first) {
				first = ret;
				(void)snprintf(msg, sizeof(msg), "%s", pmemz_errormsg());
			}
			claim_forget(r, names[i]);
		}
	}
	names_free(names, n);
	return first ? pmemz_err(first, "%s", msg) : 0;
}

/* pmemz_region_close: give back every claim of r, best effort. */
static void claims_close(struct pmemz_region *r)
{
	char **names = NULL;
	char msg[512];
	size_t n = 0;

	(void)snprintf(msg, sizeof(msg), "%s", pmemz_errormsg());
	/*
	 * A stale handle's claims died with the old connection: the names
	 * may be another handle's now, on the region served under the name.
	 */
	if (pmemz_region_check(r) == 0 && claims_snapshot(r, &names, &n) == 0) {
		/* Best effort: the daemon drops them with the connection anyway. */
		for (size_t i = 0; i < n && !pmemz_client_broken(r->c); i++)
			(void)claim_rpc(r, names[i], true);
		names_free(names, n);
	}
	claims_forget(r);
	(void)pmemz_err(0, "%s", msg);
}

/* r's last reference is gone. */
static void claims_release(struct pmemz_region *r)
{
	for (size_t i = 0; i < r->n_claims; i++)
		free(r->claims[i]);
	free(r->claims);
	r->claims = NULL;
	r->n_claims = r->cap_claims = 0;
}

static int claims_reconnected(struct pmemz_region *r, int state)
{
	if (state == 0)
		return claims_retake(r);
	if (state == -ESTALE)
		claims_forget(r);
	/* The connection failed again: the names wait for the next reconnect. */
	return 0;
}

static const struct pmemz_region_hooks claim_hooks = {
    .reconnected = claims_reconnected,
    .close = claims_close,
    .release = claims_release,
};
