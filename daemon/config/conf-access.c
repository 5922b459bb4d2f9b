/* SPDX-License-Identifier: MIT */
/*
 * Who may open a region (allow_users, allow_groups, allow_cgroups; root
 * always) and where an admin may be (admin_cgroups).
 */
#include <string.h>

#include "conf-private.h"

bool conf_access_cgroup_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!path)
		return false;
	if (strcmp(prefix, "/") == 0)
		return path[0] == '/';
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool cgroup_in(char *const *v, size_t n, const char *cgroup)
{
	for (size_t i = 0; i < n; i++)
		if (conf_access_cgroup_under(cgroup, v[i]))
			return true;
	return false;
}

bool conf_access_admin_cgroup(const struct daemon_conf *c, const char *cgroup)
{
	return !c->n_admin_cgroups || cgroup_in(c->admin_cgroups, c->n_admin_cgroups, cgroup);
}

bool conf_access_region_cgroup(const struct region_conf *rc, const char *cgroup)
{
	return cgroup_in(rc->allow_cgroups, rc->n_allow_cgroups, cgroup);
}

bool conf_access_region(const struct region_conf *rc, uid_t uid, gid_t gid, const gid_t *groups,
			size_t n_groups)
{
	return uid == 0 || conf_access_region_lists(rc, uid, gid, groups, n_groups);
}

bool conf_access_region_lists(const struct region_conf *rc, uid_t uid, gid_t gid,
			      const gid_t *groups, size_t n_groups)
{
	for (size_t i = 0; i < rc->n_allow_uids; i++)
		if (rc->allow_uids[i] == uid)
			return true;
	for (size_t i = 0; i < rc->n_allow_gids; i++) {
		if (rc->allow_gids[i] == gid)
			return true;
		for (size_t j = 0; j < n_groups; j++)
			if (groups[j] == rc->allow_gids[i])
				return true;
	}
	return false;
}
