/* SPDX-License-Identifier: MIT */
/*
 * pmemz_client_reconnect: after the daemon restarted (or the connection
 * broke), connect again and re-open the client's regions in place.
 *
 * A new connection is made exactly as pmemz_client_new makes one (the
 * same socket path, checks and HELLO), then the client takes it over
 * (pmemz_client_adopt, client.c): requests of the old connection fail,
 * none of them reaches the new one.  Every region handle (those closed by
 * the caller but still held by allocation handles too) is then opened
 * again by name: when the daemon serves the same region (same uuid and
 * layout), the handle and its mapping carry on as they were, the new fd is
 * not needed (the mapping holds the file); otherwise the handle turns
 * stale: its calls fail with -ESTALE, its old mapping stays until it is
 * closed.  Leases die with their connection: the reserve forgets its own,
 * an allocation handle's lease can no longer be committed (-ESTALE).
 * Claims die with it too, and are taken again on the new connection; one
 * that another connection took meanwhile is lost (-EBUSY).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"

/*
 * OPEN_REGION r's name on the new connection: 0 when it is the same
 * region, -ESTALE (r marked) when the daemon refuses it or serves another
 * one, another -errno when the connection failed (r untouched).
 */
static int region_reopen(struct pmemz_region *r)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	_cleanup_close_ int fd = -1;
	const Pmemz__RegionInfo *in;
	int ret;

	if (pmemz_region_check(r) < 0)
		return -ESTALE; /* stale once, stale until closed */
	ret = pmemz_wire_open_region(r->c, r->name, &resp, &fd);
	if (ret < 0) {
		if (pmemz_client_broken(r->c))
			return ret;
		return pmemz_region_mark_stale(r, "region '%s' cannot be opened again: %s", r->name,
					       pmemz_errormsg());
	}
	in = resp->open_region->info;
	if (in->uuid.len != sizeof(r->uuid) || memcmp(in->uuid.data, r->uuid, sizeof(r->uuid)))
		return pmemz_region_mark_stale(
		    r,
		    "region '%s' is not the one this handle mapped any more "
		    "(its uuid changed): close the handle and open it again",
		    r->name);
	if (in->size != r->size || in->extent_size != r->extent_size ||
	    in->extent_count != r->extent_count || in->data_offset != r->data_offset)
		return pmemz_region_mark_stale(
		    r,
		    "region '%s' changed its layout: close the handle and "
		    "open it again",
		    r->name);
	return 0;
}

/*
 * Error bookkeeping of pmemz_client_reconnect: a region's failure rr is
 * either the new connection failing too (*ret, the rest wait for the next
 * try) or this region lost (*stale: -ESTALE, or a claim someone else took
 * meanwhile, -EBUSY); the first message of either kind is kept.
 */
static void reconnect_note(struct pmemz_client *c, int rr, int *ret, int *stale, char *msg,
			   size_t len)
{
	if (rr >= 0)
		return;
	if (pmemz_client_broken(c)) {
		*ret = rr;
		(void)snprintf(msg, len, "%s", pmemz_errormsg());
	} else if (!*stale) {
		*stale = rr;
		(void)snprintf(msg, len, "%s", pmemz_errormsg());
	}
}

PMEMZ_EXPORT int pmemz_client_reconnect(struct pmemz_client *c)
{
	_cleanup_free_ struct pmemz_region **regions = NULL;
	struct pmemz_client *fresh = NULL;
	int ret = 0, stale = 0;
	char msg[512] = "";
	size_t n = 0;

	if (!c)
		return pmemz_err(-EINVAL, "pmemz_client_reconnect: client is NULL");
	ret = pmemz_client_new(c->path, &fresh);
	if (ret < 0)
		return ret; /* still the old (broken) connection: try again later */
	pmemz_client_adopt(c, fresh);
	pmemz_client_free(fresh); /* the old socket */

	ret = pmemz_region_list_live(c, &regions, &n);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n; i++) {
		/* After a connection failure the rest wait for the next try. */
		int state = ret < 0 ? ret : region_reopen(regions[i]);
		/* Claims, reserves: the layers that keep them take them again or forget them. */
		int rr = pmemz_region_reconnected(regions[i], state);

		if (ret == 0)
			reconnect_note(c, state < 0 ? state : rr, &ret, &stale, msg, sizeof(msg));
		pmemz_region_unref(regions[i]);
	}
	if (ret < 0)
		return pmemz_err(ret, "%s", msg);
	if (stale) /* the connection is back; the other regions (and claims) serve */
		return pmemz_err(stale, "%s", msg);
	pmemz_err_clear();
	return 0;
}
