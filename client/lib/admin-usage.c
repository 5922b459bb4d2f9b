/* SPDX-License-Identifier: MIT */
/* pmemz_admin_usage and its getters (libpmemzadmin.h): a USAGE answer behind a handle. */
#include <errno.h>
#include <stdlib.h>

#include "libpmemzadmin.h"
#include "wire.h"

struct pmemz_usage {
	Pmemz__Response *resp;
	const Pmemz__UsageResp *u;
};

PMEMZ_EXPORT int pmemz_admin_usage(struct pmemz_client *c, const char *region,
				   struct pmemz_usage **out)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	struct pmemz_usage *u;
	int r;

	if (!c || !out || !region)
		return pmemz_err(-EINVAL, "pmemz_admin_usage: NULL argument");
	*out = NULL;
	r = pmemz_wire_usage(c, region, &resp);
	if (r < 0)
		return r;
	if (!resp->usage)
		return pmemz_err(-EPROTO, "daemon sent an empty USAGE answer");
	u = calloc(1, sizeof(*u));
	if (!u)
		return pmemz_err(-ENOMEM, "out of memory");
	u->resp = TAKE_PTR(resp);
	u->u = u->resp->usage;
	*out = u;
	return 0;
}

int pmemz_usage_borrow(const Pmemz__UsageResp *uu, struct pmemz_usage **out)
{
	struct pmemz_usage *u = calloc(1, sizeof(*u));

	if (!u)
		return pmemz_err(-ENOMEM, "out of memory");
	u->u = uu;
	*out = u;
	return 0;
}

PMEMZ_EXPORT void pmemz_usage_free(struct pmemz_usage *u)
{
	if (!u)
		return;
	pmemz_response_free(u->resp);
	free(u);
}

PMEMZ_EXPORT const char *pmemz_usage_tenant_key(const struct pmemz_usage *u)
{
	/* A daemon before tenant keys counts by uid. */
	return u && u->u->tenant_key ? u->u->tenant_key : "uid";
}

PMEMZ_EXPORT int pmemz_usage_limit(const struct pmemz_usage *u, enum pmemz_usage_key k,
				   uint64_t *v)
{
	bool has;

	if (!u || !v)
		return pmemz_err(-EINVAL, "pmemz_usage_limit: NULL argument");
	switch (k) {
	case PMEMZ_USAGE_QUOTA:
		has = u->u->has_uid_quota;
		*v = u->u->uid_quota;
		break;
	case PMEMZ_USAGE_MAX_TAGS:
		has = u->u->has_uid_max_tags;
		*v = u->u->uid_max_tags;
		break;
	case PMEMZ_USAGE_MAX_WAITERS:
		has = u->u->has_uid_max_waiters;
		*v = u->u->uid_max_waiters;
		break;
	default:
		return pmemz_err(-EINVAL, "pmemz_usage_limit: key %d is not a limit", (int)k);
	}
	return has ? 0 : -ENODATA;
}

PMEMZ_EXPORT size_t pmemz_usage_rows(const struct pmemz_usage *u)
{
	return u ? u->u->n_uids : 0;
}

PMEMZ_EXPORT int pmemz_usage_row_u64(const struct pmemz_usage *u, size_t i,
				     enum pmemz_usage_key k, uint64_t *v)
{
	const Pmemz__UidUsage *row;

	if (!u || !v || i >= u->u->n_uids)
		return pmemz_err(-EINVAL, "pmemz_usage_row_u64: no row %zu", i);
	row = u->u->uids[i];
	switch (k) {
	case PMEMZ_USAGE_UID:
		*v = row->uid;
		return 0;
	case PMEMZ_USAGE_LEASED:
		*v = row->leased;
		return 0;
	case PMEMZ_USAGE_COMMITTED:
		*v = row->committed;
		return 0;
	case PMEMZ_USAGE_TAGS:
		*v = row->tags;
		return 0;
	case PMEMZ_USAGE_WAITERS:
		*v = row->waiters;
		return 0;
	case PMEMZ_USAGE_REZEROED:
		*v = row->rezeroed;
		return 0;
	default:
		return pmemz_err(-EINVAL, "pmemz_usage_row_u64: key %d is not a row's", (int)k);
	}
}

PMEMZ_EXPORT const char *pmemz_usage_row_tenant(const struct pmemz_usage *u, size_t i)
{
	if (!u || i >= u->u->n_uids)
		return NULL;
	return u->u->uids[i]->tenant;
}
