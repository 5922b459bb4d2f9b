/* SPDX-License-Identifier: MIT */
/* The tenant of a peer under tenant = cgroup[:N]: quotas, turns and usage are per tenant. */
#include <string.h>

#include "conf-private.h"

const char *conf_tenant_cgroup(const struct region_conf *rc, const char *cgroup, char *buf,
			       size_t len)
{
	size_t n = 0;
	unsigned level = 0;

	if (!cgroup || cgroup[0] != '/')
		return NULL;
	if (rc->tenant_levels) {
		/* "/a/b/c", 2 levels: "/a/b"; the root "/" is its own tenant. */
		for (n = 1; cgroup[n]; n++)
			if (cgroup[n] == '/' && ++level == rc->tenant_levels)
				break;
	} else {
		n = strlen(cgroup);
	}
	if (n >= len)
		return NULL;
	memcpy(buf, cgroup, n);
	buf[n] = '\0';
	return buf;
}
