/* SPDX-License-Identifier: MIT */
/*
 * One configuration value: sizes, numbers, user and group names, cgroup
 * paths, durations, paths.  Shared by the file (conf-ini.c), the command
 * line (conf-cmdline.c) and the checks (conf-check.c); each reports its own
 * error and sets nothing on an error.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>

#include "conf-private.h"
#include "vector.h"

static bool region_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > CONF_REGION_NAME_MAX)
		return false;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
			return false;
	return true;
}

bool conf_value_region_name(struct errsink *e, const char *name)
{
	if (region_name_ok(name))
		return true;
	conf_report(e, "invalid region name '%s' (1-%u characters from A-Z a-z 0-9 _ . -)", name,
		    CONF_REGION_NAME_MAX);
	return false;
}

bool conf_value_size(struct errsink *e, const char *key, const char *value, uint64_t *out)
{
	int r = pmemz_parse_size(value, out);

	if (r == -ERANGE) {
		conf_report(e, "%s: '%s' is too large", key, value);
		return false;
	}
	if (r < 0) {
		conf_report(e,
			    "%s: invalid size '%s' (a number with an optional K, M, G or T suffix)",
			    key, value);
		return false;
	}
	return true;
}

bool conf_value_region_size(struct errsink *e, const char *key, const char *value, uint64_t *out)
{
	uint64_t v;

	if (!conf_value_size(e, key, value, &v))
		return false;
	if (v % CONF_MIN_EXTENT_SIZE) {
		conf_report(e, "%s: %llu is not a multiple of 4 KiB", key, (unsigned long long)v);
		return false;
	}
	*out = v;
	return true;
}

bool conf_value_extent_size(struct errsink *e, const char *key, const char *value, uint64_t *out)
{
	uint64_t v;

	if (!conf_value_size(e, key, value, &v))
		return false;
	if (v < CONF_MIN_EXTENT_SIZE || v % CONF_MIN_EXTENT_SIZE) {
		conf_report(e, "%s: %llu is not a non-zero multiple of 4 KiB", key,
			    (unsigned long long)v);
		return false;
	}
	if (v > CONF_MAX_EXTENT_SIZE) {
		conf_report(e, "%s: %llu is larger than 1 GiB", key, (unsigned long long)v);
		return false;
	}
	*out = v;
	return true;
}

bool conf_value_uint(struct errsink *e, const char *key, const char *value, unsigned min,
		     unsigned max, unsigned *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*value))
		goto bad;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || *end || v < min || v > max)
		goto bad;
	*out = (unsigned)v;
	return true;
bad:
	conf_report(e, "%s: '%s' is not a number from %u to %u", key, value, min, max);
	return false;
}

static bool parse_id(const char *s, unsigned long *out)
{
	unsigned long v;
	char *end;

	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= (unsigned long)(uid_t)-1)
		return false;
	*out = v;
	return true;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/*
 * A user or group: all digits is an id, anything else a name to look up.
 * uid_t and gid_t are both unsigned 32-bit on Linux: one helper for both.
 */
static bool lookup_id(struct errsink *e, const char *key, const char *name, bool group,
		      unsigned *out)
{
	const char *what = group ? "group" : "user";
	unsigned long v;
	struct passwd *pw = NULL;
	struct group *gr = NULL;

	if (all_digits(name)) {
		if (!parse_id(name, &v)) {
			conf_report(e, "%s: invalid %s id '%s'", key, what, name);
			return false;
		}
		*out = (unsigned)v;
		return true;
	}
	errno = 0;
	if (group)
		gr = getgrnam(name);
	else
		pw = getpwnam(name);
	if (!gr && !pw) {
		if (errno && errno != ENOENT && errno != ESRCH)
			conf_report(e, "%s: cannot look up %s '%s': %s", key, what, name,
				    strerror(errno));
		else
			conf_report(e, "%s: unknown %s '%s'", key, what, name);
		return false;
	}
	*out = group ? gr->gr_gid : pw->pw_uid;
	return true;
}

bool conf_value_group(struct errsink *e, const char *key, const char *name, gid_t *out)
{
	return lookup_id(e, key, name, true, out);
}

/* uid_t and gid_t are both unsigned 32-bit on Linux: one helper for both lists. */
static int id_list_add(unsigned **list, size_t *n, unsigned id)
{
	int r;

	for (size_t i = 0; i < *n; i++)
		if ((*list)[i] == id)
			return 0;
	r = PMEMZ_GROW(*list, NULL, *n + 1);
	if (r < 0)
		return r;
	(*list)[(*n)++] = id;
	return 0;
}

_Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned),
	       "uid_t/gid_t are expected to be unsigned int");

int conf_value_uid_add(struct region_conf *rc, uid_t uid)
{
	return id_list_add((unsigned **)&rc->allow_uids, &rc->n_allow_uids, uid);
}

int conf_value_gid_add(struct region_conf *rc, gid_t gid)
{
	return id_list_add((unsigned **)&rc->allow_gids, &rc->n_allow_gids, gid);
}

/* "alice, bob 1000": names or numeric ids, separated by commas and/or blanks. */
void conf_value_id_list(struct errsink *e, struct region_conf *rc, const char *key,
			const char *value, bool groups)
{
	_cleanup_free_ char *copy = strdup(value);
	char *save = NULL;
	bool any = false;

	if (!copy) {
		conf_report(e, "out of memory");
		return;
	}
	for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		uid_t uid;
		gid_t gid;
		int r = 0;

		any = true;
		if (groups) {
			if (!conf_value_group(e, key, tok, &gid))
				continue;
			r = conf_value_gid_add(rc, gid);
		} else {
			if (!lookup_id(e, key, tok, false, &uid))
				continue;
			r = conf_value_uid_add(rc, uid);
		}
		if (r < 0)
			conf_report(e, "out of memory");
	}
	if (!any)
		conf_report(e, "%s: empty list", key);
}

/* Relative paths given on the command line are taken from the current directory. */
char *conf_value_absolute(const char *path)
{
	_cleanup_free_ char *cwd = NULL;
	char *p;

	if (path[0] == '/')
		return strdup(path);
	cwd = get_current_dir_name();
	if (!cwd)
		return NULL;
	if (asprintf(&p, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path) < 0)
		return NULL;
	return p;
}

bool conf_value_socket_path(struct errsink *e, const char *key, const char *path)
{
	if (path[0] != '/') {
		conf_report(e, "%s: '%s' is not an absolute path", key, path);
		return false;
	}
	if (strlen(path) > SOCKET_PATH_MAX) {
		conf_report(e, "%s: '%s' is longer than %zu bytes", key, path, SOCKET_PATH_MAX);
		return false;
	}
	return true;
}

/* ---- cgroup path lists: allow_cgroups, admin_cgroups ---- */

/*
 * "/system.slice /kubepods.slice/x": absolute cgroup v2 paths, separated by
 * blanks and/or commas; a trailing '/' is dropped ("/" stays: every cgroup).
 */
void conf_value_cgroup_list(struct errsink *e, const char *key, const char *value, char ***list,
			    size_t *n)
{
	_cleanup_free_ char *copy = strdup(value);
	char *save = NULL;
	bool any = false;

	if (!copy) {
		conf_report(e, "out of memory");
		return;
	}
	for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		size_t len = strlen(tok);

		any = true;
		if (tok[0] != '/' || strstr(tok, "//") || strstr(tok, "/../") ||
		    (len >= 3 && strcmp(tok + len - 3, "/..") == 0) || len > 4095) {
			conf_report(e,
				    "%s: '%s' is not an absolute cgroup path (like /system.slice)",
				    key, tok);
			continue;
		}
		while (len > 1 && tok[len - 1] == '/')
			tok[--len] = '\0';
		if (PMEMZ_GROW(*list, NULL, *n + 1) < 0 || !((*list)[*n] = strdup(tok))) {
			conf_report(e, "out of memory");
			return;
		}
		(*n)++;
	}
	if (!any)
		conf_report(e, "%s: empty list", key);
}

/* tenant = uid | cgroup | cgroup:N */
void conf_value_tenant(struct errsink *e, const char *key, const char *value,
		       struct region_conf *rc)
{
	unsigned n = 0;

	if (strcmp(value, "uid") == 0) {
		rc->tenant_cgroup = false;
		rc->tenant_levels = 0;
		return;
	}
	if (strncmp(value, "cgroup", 6) == 0 &&
	    (value[6] == '\0' ||
	     (value[6] == ':' && conf_value_uint(e, key, value + 7, 1, 64, &n)))) {
		rc->tenant_cgroup = true;
		rc->tenant_levels = n;
		return;
	}
	if (strncmp(value, "cgroup:", 7) != 0)
		conf_report(e, "%s: '%s' is not uid, cgroup or cgroup:LEVELS (1 to 64)", key,
			    value);
}

/* Seconds, with an optional s, m or h suffix; "0" or "off" disables. */
bool conf_value_seconds(struct errsink *e, const char *key, const char *value, unsigned *out)
{
	unsigned long v, mult = 1;
	char *end;

	if (strcmp(value, "off") == 0) {
		*out = 0;
		return true;
	}
	if (!isdigit((unsigned char)*value))
		goto bad;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno)
		goto bad;
	if (*end == 's' || *end == 'm' || *end == 'h') {
		mult = *end == 'h' ? 3600 : *end == 'm' ? 60 : 1;
		end++;
	}
	if (*end || v > 7 * 24 * 3600 / mult)
		goto bad;
	*out = (unsigned)(v * mult);
	return true;
bad:
	conf_report(e,
		    "%s: '%s' is not a duration (seconds up to a week, optional s, m or h suffix, "
		    "or off)",
		    key, value);
	return false;
}

bool conf_value_budget(struct errsink *e, const char *key, const char *value, uint64_t min,
		       uint64_t *out)
{
	uint64_t v;

	if (!conf_value_size(e, key, value, &v))
		return false;
	if (v < min) {
		conf_report(e, "%s: %llu is less than the minimum of %llu bytes", key,
			    (unsigned long long)v, (unsigned long long)min);
		return false;
	}
	*out = v;
	return true;
}
