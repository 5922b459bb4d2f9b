/* SPDX-License-Identifier: MIT */
/*
 * pmemzerod configuration: the command line (getopt_long), the INI file
 * (libinih) and the embedded defaults.  Nothing here touches the file
 * system beyond reading the configuration file and the user/group
 * databases: regions and directories are created by the daemon.
 *
 * Line numbers: Debian's libinih is built without INI_HANDLER_LINENO, so the
 * file is fed through our own reader (ini_parse_stream), which counts lines,
 * parses section headers itself (libinih truncates section names to 49
 * characters and does not report empty sections) and hands libinih only the
 * key = value lines, left-trimmed (so an indented key never becomes a
 * libinih "continuation line").  libinih does the key/value split, trimming
 * and inline ";" comments.  A line handed over for which the handler is not
 * called is a syntax error.  Every error is reported; parsing goes on.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <ini.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>

#include "conf.h"
#include "log.h"

#define SOCKET_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* Where an error is reported: "FILE:LINE", "--region 'SPEC'", "pmemzerod". */
struct errsink {
	FILE *out;
	const char *where;
	unsigned n;
};

_printf_(2, 3) static void report(struct errsink *e, const char *fmt, ...)
{
	va_list ap;

	e->n++;
	if (!e->out)
		return;
	fprintf(e->out, "%s: ", e->where);
	va_start(ap, fmt);
	vfprintf(e->out, fmt, ap);
	va_end(ap);
	fputc('\n', e->out);
}

static char *strdup_or_report(struct errsink *e, const char *s)
{
	char *p = strdup(s);

	if (!p)
		report(e, "out of memory");
	return p;
}

static void replace_str(char **dst, char *src)
{
	free(*dst);
	*dst = src;
}

/* ---- value parsers, shared by the file and the command line ---- */

static bool region_name_valid(const char *name)
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

static void report_bad_region_name(struct errsink *e, const char *name)
{
	report(e, "invalid region name '%s' (1-%u characters from A-Z a-z 0-9 _ . -)", name,
	       CONF_REGION_NAME_MAX);
}

static bool parse_size_value(struct errsink *e, const char *key, const char *value, uint64_t *out)
{
	int r = pmemz_parse_size(value, out);

	if (r == -ERANGE) {
		report(e, "%s: '%s' is too large", key, value);
		return false;
	}
	if (r < 0) {
		report(e, "%s: invalid size '%s' (a number with an optional K, M, G or T suffix)",
		       key, value);
		return false;
	}
	return true;
}

static bool parse_region_size(struct errsink *e, const char *key, const char *value, uint64_t *out)
{
	uint64_t v;

	if (!parse_size_value(e, key, value, &v))
		return false;
	if (v % CONF_MIN_EXTENT_SIZE) {
		report(e, "%s: %llu is not a multiple of 4 KiB", key, (unsigned long long)v);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_extent_size(struct errsink *e, const char *key, const char *value, uint64_t *out)
{
	uint64_t v;

	if (!parse_size_value(e, key, value, &v))
		return false;
	if (v < CONF_MIN_EXTENT_SIZE || v % CONF_MIN_EXTENT_SIZE) {
		report(e, "%s: %llu is not a non-zero multiple of 4 KiB", key,
		       (unsigned long long)v);
		return false;
	}
	if (v > CONF_MAX_EXTENT_SIZE) {
		report(e, "%s: %llu is larger than 1 GiB", key, (unsigned long long)v);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_uint_range(struct errsink *e, const char *key, const char *value, unsigned min,
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
	report(e, "%s: '%s' is not a number from %u to %u", key, value, min, max);
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

static bool lookup_group(struct errsink *e, const char *key, const char *name, gid_t *out)
{
	unsigned long v;
	struct group *gr;

	if (all_digits(name)) {
		if (!parse_id(name, &v)) {
			report(e, "%s: invalid group id '%s'", key, name);
			return false;
		}
		*out = (gid_t)v;
		return true;
	}
	errno = 0;
	gr = getgrnam(name);
	if (!gr) {
		if (errno && errno != ENOENT && errno != ESRCH)
			report(e, "%s: cannot look up group '%s': %s", key, name, strerror(errno));
		else
			report(e, "%s: unknown group '%s'", key, name);
		return false;
	}
	*out = gr->gr_gid;
	return true;
}

static bool lookup_user(struct errsink *e, const char *key, const char *name, uid_t *out)
{
	unsigned long v;
	struct passwd *pw;

	if (all_digits(name)) {
		if (!parse_id(name, &v)) {
			report(e, "%s: invalid user id '%s'", key, name);
			return false;
		}
		*out = (uid_t)v;
		return true;
	}
	errno = 0;
	pw = getpwnam(name);
	if (!pw) {
		if (errno && errno != ENOENT && errno != ESRCH)
			report(e, "%s: cannot look up user '%s': %s", key, name, strerror(errno));
		else
			report(e, "%s: unknown user '%s'", key, name);
		return false;
	}
	*out = pw->pw_uid;
	return true;
}

/* uid_t and gid_t are both unsigned 32-bit on Linux: one helper for both lists. */
static int id_list_add(unsigned **list, size_t *n, unsigned id)
{
	unsigned *l;

	for (size_t i = 0; i < *n; i++)
		if ((*list)[i] == id)
			return 0;
	l = realloc(*list, (*n + 1) * sizeof(**list));
	if (!l)
		return -ENOMEM;
	l[(*n)++] = id;
	*list = l;
	return 0;
}

_Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned),
	       "uid_t/gid_t are expected to be unsigned int");

static int uid_list_add(struct region_conf *rc, uid_t uid)
{
	return id_list_add((unsigned **)&rc->allow_uids, &rc->n_allow_uids, uid);
}

static int gid_list_add(struct region_conf *rc, gid_t gid)
{
	return id_list_add((unsigned **)&rc->allow_gids, &rc->n_allow_gids, gid);
}

/* "alice, bob 1000": names or numeric ids, separated by commas and/or blanks. */
static void parse_id_list(struct errsink *e, struct region_conf *rc, const char *key,
			  const char *value, bool groups)
{
	_cleanup_free_ char *copy = strdup(value);
	char *save = NULL;
	bool any = false;

	if (!copy) {
		report(e, "out of memory");
		return;
	}
	for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		uid_t uid;
		gid_t gid;
		int r = 0;

		any = true;
		if (groups) {
			if (!lookup_group(e, key, tok, &gid))
				continue;
			r = gid_list_add(rc, gid);
		} else {
			if (!lookup_user(e, key, tok, &uid))
				continue;
			r = uid_list_add(rc, uid);
		}
		if (r < 0)
			report(e, "out of memory");
	}
	if (!any)
		report(e, "%s: empty list", key);
}

static struct region_conf *region_find(struct daemon_conf *c, const char *name)
{
	for (size_t i = 0; i < c->n_regions; i++)
		if (strcmp(c->regions[i].name, name) == 0)
			return &c->regions[i];
	return NULL;
}

static struct region_conf *region_new(struct daemon_conf *c, const char *name, const char *source)
{
	struct region_conf *regions, *rc;

	regions = realloc(c->regions, (c->n_regions + 1) * sizeof(*regions));
	if (!regions)
		return NULL;
	c->regions = regions;
	rc = &regions[c->n_regions];
	memset(rc, 0, sizeof(*rc));
	rc->name = strdup(name);
	rc->source = strdup(source);
	if (!rc->name || !rc->source) {
		free(rc->name);
		free(rc->source);
		return NULL;
	}
	c->n_regions++;
	return rc;
}

static void str_list_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void region_conf_free(struct region_conf *rc)
{
	free(rc->name);
	free(rc->path);
	free(rc->metadata);
	free(rc->allow_uids);
	free(rc->allow_gids);
	str_list_free(rc->allow_cgroups, rc->n_allow_cgroups);
	free(rc->source);
}

/* Relative paths given on the command line are taken from the current directory. */
static char *make_absolute(const char *path)
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

static bool socket_path_ok(struct errsink *e, const char *key, const char *path)
{
	if (path[0] != '/') {
		report(e, "%s: '%s' is not an absolute path", key, path);
		return false;
	}
	if (strlen(path) > SOCKET_PATH_MAX) {
		report(e, "%s: '%s' is longer than %zu bytes", key, path, SOCKET_PATH_MAX);
		return false;
	}
	return true;
}

/* ---- cgroup path lists: allow_cgroups, admin_cgroups ---- */

/*
 * "/system.slice /kubepods.slice/x": absolute cgroup v2 paths, separated by
 * blanks and/or commas; a trailing '/' is dropped ("/" stays: every cgroup).
 */
static void parse_cgroup_list(struct errsink *e, const char *key, const char *value, char ***list,
			      size_t *n)
{
	_cleanup_free_ char *copy = strdup(value);
	char *save = NULL;
	bool any = false;

	if (!copy) {
		report(e, "out of memory");
		return;
	}
	for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		size_t len = strlen(tok);
		char **v;

		any = true;
		if (tok[0] != '/' || strstr(tok, "//") || strstr(tok, "/../") ||
		    (len >= 3 && strcmp(tok + len - 3, "/..") == 0) || len > 4095) {
			report(e, "%s: '%s' is not an absolute cgroup path (like /system.slice)",
			       key, tok);
			continue;
		}
		while (len > 1 && tok[len - 1] == '/')
			tok[--len] = '\0';
		v = reallocarray(*list, *n + 1, sizeof(*v));
		if (!v || !(v[*n] = strdup(tok))) {
			if (v)
				*list = v;
			report(e, "out of memory");
			return;
		}
		*list = v;
		(*n)++;
	}
	if (!any)
		report(e, "%s: empty list", key);
}

static void print_cgroups(FILE *out, const char *key, char *const *v, size_t n)
{
	if (!n)
		return; /* unset: not printed (the default, see pmemzerod.conf(5)) */
	fprintf(out, "%s =", key);
	for (size_t i = 0; i < n; i++)
		fprintf(out, " %s", v[i]);
	fputc('\n', out);
}

bool conf_cgroup_under(const char *path, const char *prefix)
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
		if (conf_cgroup_under(cgroup, v[i]))
			return true;
	return false;
}

bool conf_admin_cgroup(const struct daemon_conf *c, const char *cgroup)
{
	return !c->n_admin_cgroups || cgroup_in(c->admin_cgroups, c->n_admin_cgroups, cgroup);
}

bool conf_region_allows_cgroup(const struct region_conf *rc, const char *cgroup)
{
	return cgroup_in(rc->allow_cgroups, rc->n_allow_cgroups, cgroup);
}

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

/* tenant = uid | cgroup | cgroup:N */
static void parse_tenant(struct errsink *e, const char *key, const char *value,
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
	     (value[6] == ':' && parse_uint_range(e, key, value + 7, 1, 64, &n)))) {
		rc->tenant_cgroup = true;
		rc->tenant_levels = n;
		return;
	}
	if (strncmp(value, "cgroup:", 7) != 0)
		report(e, "%s: '%s' is not uid, cgroup or cgroup:LEVELS (1 to 64)", key, value);
}

static void print_tenant(FILE *out, const struct region_conf *rc)
{
	/* The default, tenant = uid, is not printed. */
	if (rc->tenant_cgroup && rc->tenant_levels)
		fprintf(out, "tenant = cgroup:%u\n", rc->tenant_levels);
	else if (rc->tenant_cgroup)
		fprintf(out, "tenant = cgroup\n");
}

/* ---- the configuration file ---- */

enum daemon_key {
	DK_SOCKET,
	DK_STATE_DIRECTORY,
	DK_ADMIN_GROUP,
	DK_LOG_LEVEL,
	DK_ADMIN_CGROUPS,
	_DK_MAX
};
static const char *const daemon_keys[_DK_MAX] = {
    [DK_SOCKET] = "socket",
    [DK_STATE_DIRECTORY] = "state_directory",
    [DK_ADMIN_GROUP] = "admin_group",
    [DK_LOG_LEVEL] = "log_level",
    [DK_ADMIN_CGROUPS] = "admin_cgroups",
};

enum region_key {
	RK_PATH,
	RK_SIZE,
	RK_EXTENT_SIZE,
	RK_ALLOW_USERS,
	RK_ALLOW_GROUPS,
	RK_ZEROER_THREADS,
	RK_ZERO_RATE,
	RK_BATCH_EXTENTS,
	RK_UID_QUOTA,
	RK_UID_MAX_TAGS,
	RK_UID_MAX_WAITERS,
	RK_METADATA,
	RK_ALLOW_CGROUPS,
	RK_TENANT,
	RK_TENANT_QUOTA, /* the new names of RK_UID_*: tenant_key_alias() */
	RK_TENANT_MAX_TAGS,
	RK_TENANT_MAX_WAITERS,
	_RK_MAX
};
static const char *const region_keys[_RK_MAX] = {
    [RK_PATH] = "path",
    [RK_SIZE] = "size",
    [RK_EXTENT_SIZE] = "extent_size",
    [RK_ALLOW_USERS] = "allow_users",
    [RK_ALLOW_GROUPS] = "allow_groups",
    [RK_ZEROER_THREADS] = "zeroer_threads",
    [RK_ZERO_RATE] = "zero_rate",
    [RK_BATCH_EXTENTS] = "batch_extents",
    [RK_UID_QUOTA] = "uid_quota",
    [RK_UID_MAX_TAGS] = "uid_max_tags",
    [RK_UID_MAX_WAITERS] = "uid_max_waiters",
    [RK_METADATA] = "metadata",
    [RK_ALLOW_CGROUPS] = "allow_cgroups",
    [RK_TENANT] = "tenant",
    [RK_TENANT_QUOTA] = "tenant_quota",
    [RK_TENANT_MAX_TAGS] = "tenant_max_tags",
    [RK_TENANT_MAX_WAITERS] = "tenant_max_waiters",
};

enum section_kind { SEC_NONE, SEC_DAEMON, SEC_REGION, SEC_IGNORE };
enum line_kind { LINE_OTHER, LINE_KEY };

struct parse_ctx {
	struct daemon_conf *c;
	const char *file; /* as named by the user: messages say "FILE:LINE" */
	FILE *f;
	struct errsink e;
	char where[PATH_MAX + 32];
	unsigned lineno;
	char *buf;
	size_t bufsz;
	enum line_kind kind; /* of the line handed to libinih last */
	bool handled;	     /* the handler was called for it */
	enum section_kind sec;
	size_t region;			   /* index, SEC_REGION */
	unsigned region_key_line[_RK_MAX]; /* where each key of the current region was set */
	unsigned policy_key_line[5];	   /* the same for policy_key()'s keys */
	unsigned daemon_key_line[_DK_MAX];
	unsigned conn_key_line[4]; /* _CK_MAX, defined with its keys below */
};

static void ctx_set_line(struct parse_ctx *x, unsigned line)
{
	snprintf(x->where, sizeof(x->where), "%s:%u", x->file, line);
	x->e.where = x->where;
}

/* ---- [daemon] keys for connections and their budgets (docs/SECURITY.md) ---- */

enum conn_key {
	CK_MAX_CONNECTIONS_PER_UID,
	CK_IDLE_TIMEOUT,
	CK_MAX_CONNECTION_MEMORY,
	CK_MAX_TOTAL_CONNECTION_MEMORY,
	_CK_MAX
};
static const char *const conn_keys[_CK_MAX] = {
    [CK_MAX_CONNECTIONS_PER_UID] = "max_connections_per_uid",
    [CK_IDLE_TIMEOUT] = "idle_timeout",
    [CK_MAX_CONNECTION_MEMORY] = "max_connection_memory",
    [CK_MAX_TOTAL_CONNECTION_MEMORY] = "max_total_connection_memory",
};
_Static_assert(ARRAY_SIZE(((struct parse_ctx *)0)->conn_key_line) == _CK_MAX,
	       "parse_ctx.conn_key_line needs one line per connection key");

/* Seconds, with an optional s, m or h suffix; "0" or "off" disables. */
static bool parse_seconds(struct errsink *e, const char *key, const char *value, unsigned *out)
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
	report(e, "%s: '%s' is not a duration (seconds up to a week, optional s, m or h suffix, "
		  "or off)",
	       key, value);
	return false;
}

static bool parse_budget(struct errsink *e, const char *key, const char *value, uint64_t min,
			 uint64_t *out)
{
	uint64_t v;

	if (!parse_size_value(e, key, value, &v))
		return false;
	if (v < min) {
		report(e, "%s: %llu is less than the minimum of %llu bytes", key,
		       (unsigned long long)v, (unsigned long long)min);
		return false;
	}
	*out = v;
	return true;
}

/* true when name is one of the connection keys (handled, maybe with an error). */
static bool conn_key(struct parse_ctx *x, const char *name, const char *value)
{
	struct daemon_conf *c = x->c;
	struct errsink *e = &x->e;
	unsigned k;
	bool ok = false;

	for (k = 0; k < _CK_MAX; k++)
		if (strcmp(name, conn_keys[k]) == 0)
			break;
	if (k == _CK_MAX)
		return false;
	if (x->conn_key_line[k]) {
		report(e, "'%s' is already set on line %u", name, x->conn_key_line[k]);
		return true;
	}
	x->conn_key_line[k] = x->lineno;
	if (!*value) {
		report(e, "'%s' needs a value", name);
		return true;
	}
	switch ((enum conn_key)k) {
	case CK_MAX_CONNECTIONS_PER_UID:
		if (strcmp(value, "unlimited") == 0) {
			c->max_connections_per_uid = 0;
			ok = true;
		} else {
			ok = parse_uint_range(e, name, value, 1, 1u << 20,
					      &c->max_connections_per_uid);
		}
		break;
	case CK_IDLE_TIMEOUT:
		ok = parse_seconds(e, name, value, &c->idle_timeout_sec);
		break;
	case CK_MAX_CONNECTION_MEMORY:
		/* Room for a request and its reply: two frames. */
		ok = parse_budget(e, name, value, 2 * 65536, &c->max_connection_memory);
		break;
	case CK_MAX_TOTAL_CONNECTION_MEMORY:
		ok = parse_budget(e, name, value, 1u << 20, &c->max_total_connection_memory);
		break;
	case _CK_MAX:
		break;
	}
	if (ok)
		c->conn_keys_set |= 1u << k;
	return true;
}

static void conn_finish(struct daemon_conf *c)
{
	if (!(c->conn_keys_set & (1u << CK_MAX_CONNECTIONS_PER_UID)))
		c->max_connections_per_uid = CONF_DEFAULT_MAX_CONNECTIONS_PER_UID;
	if (!(c->conn_keys_set & (1u << CK_IDLE_TIMEOUT)))
		c->idle_timeout_sec = CONF_DEFAULT_IDLE_TIMEOUT_SEC;
	if (!c->max_connection_memory)
		c->max_connection_memory = CONF_DEFAULT_CONNECTION_MEMORY;
	if (!c->max_total_connection_memory)
		c->max_total_connection_memory = CONF_DEFAULT_TOTAL_CONNECTION_MEMORY;
}

static void conn_print(const struct daemon_conf *c, FILE *out)
{
	if (c->max_connections_per_uid)
		fprintf(out, "max_connections_per_uid = %u\n", c->max_connections_per_uid);
	else
		fprintf(out, "max_connections_per_uid = unlimited\n");
	if (c->idle_timeout_sec)
		fprintf(out, "idle_timeout = %u\n", c->idle_timeout_sec);
	else
		fprintf(out, "idle_timeout = off\n");
	fprintf(out, "max_connection_memory = %llu\n",
		(unsigned long long)c->max_connection_memory);
	fprintf(out, "max_total_connection_memory = %llu\n",
		(unsigned long long)c->max_total_connection_memory);
}

static void daemon_key(struct parse_ctx *x, const char *name, const char *value)
{
	struct daemon_conf *c = x->c;
	struct errsink *e = &x->e;
	unsigned k;
	int level;

	for (k = 0; k < _DK_MAX; k++)
		if (strcmp(name, daemon_keys[k]) == 0)
			break;
	if (k == _DK_MAX && conn_key(x, name, value))
		return;
	if (k == _DK_MAX) {
		report(e, "unknown key '%s' in [daemon]", name);
		return;
	}
	if (x->daemon_key_line[k]) {
		report(e, "'%s' is already set on line %u", name, x->daemon_key_line[k]);
		return;
	}
	x->daemon_key_line[k] = x->lineno;
	if (!*value) {
		report(e, "'%s' needs a value", name);
		return;
	}
	switch ((enum daemon_key)k) {
	case DK_SOCKET:
		if (socket_path_ok(e, name, value))
			replace_str(&c->socket_path, strdup_or_report(e, value));
		break;
	case DK_STATE_DIRECTORY:
		if (value[0] != '/')
			report(e, "%s: '%s' is not an absolute path", name, value);
		else
			replace_str(&c->state_dir, strdup_or_report(e, value));
		break;
	case DK_ADMIN_GROUP:
		if (lookup_group(e, name, value, &c->admin_gid)) {
			c->has_admin_gid = true;
			replace_str(&c->admin_group, strdup_or_report(e, value));
		}
		break;
	case DK_ADMIN_CGROUPS:
		parse_cgroup_list(e, name, value, &c->admin_cgroups, &c->n_admin_cgroups);
		break;
	case DK_LOG_LEVEL:
		level = log_level_from_string(value);
		if (level < LOG_ERR)
			report(e, "%s: unknown level '%s' (err, warning, notice, info or debug)",
			       name, value);
		else
			c->log_level = level;
		break;
	case _DK_MAX:
		break;
	}
}

/* ---- per-uid limits: uid_quota, uid_max_tags, uid_max_waiters ---- */

/*
 * A limit of 0 would lock the uid out of the region: that is what
 * allow_users is for, so 0 is refused and "unset" is the only unlimited.
 */
static void parse_uid_limit(struct errsink *e, enum region_key k, const char *name,
			    const char *value, struct region_conf *rc)
{
	uint64_t v = 0;
	char *end = NULL;

	if (k == RK_UID_QUOTA) {
		if (pmemz_parse_size(value, &v) < 0 || v == 0) {
			report(e,
			       "%s: invalid size '%s' (non-zero bytes with an optional K, M, G "
			       "or T suffix)",
			       name, value);
			return;
		}
	} else {
		errno = 0;
		if (isdigit((unsigned char)*value))
			v = strtoull(value, &end, 10);
		if (!end || errno || *end || v == 0 || v > UINT32_MAX) {
			report(e, "%s: '%s' is not a number from 1 to %u", name, value, UINT32_MAX);
			return;
		}
	}
	if (k == RK_UID_QUOTA)
		rc->uid_quota = v;
	else if (k == RK_UID_MAX_TAGS)
		rc->uid_max_tags = v;
	else
		rc->uid_max_waiters = v;
}

static void print_uid_limit(FILE *out, const char *key, uint64_t v)
{
	/* Only what was set: unset limits are unlimited (pmemzerod.conf(5)). */
	if (v)
		fprintf(out, "%s = %llu\n", key, (unsigned long long)v);
}

static void print_uid_limits(FILE *out, const struct region_conf *rc)
{
	/* The new names, also for a file that used the old ones (uid_*). */
	print_uid_limit(out, "tenant_quota", rc->uid_quota);
	print_uid_limit(out, "tenant_max_tags", rc->uid_max_tags);
	print_uid_limit(out, "tenant_max_waiters", rc->uid_max_waiters);
}

/* ---- the adaptive zeroing policy's keys (zeroer-policy.h) ---- */

static const char *const policy_keys[5] = {
    "zero_policy", "reserve_min", "reserve_low_ms", "reserve_high_ms", "zero_pace_rate",
};

/* A [region] key of the policy: parse it and return true; false for other keys. */
static bool policy_key(struct parse_ctx *x, struct region_conf *rc, const char *name,
		       const char *value)
{
	struct zero_policy_conf *pc = &rc->policy;
	struct errsink *e = &x->e;
	unsigned k;

	for (k = 0; k < ARRAY_SIZE(policy_keys); k++)
		if (strcmp(name, policy_keys[k]) == 0)
			break;
	if (k == ARRAY_SIZE(policy_keys))
		return false;
	if (x->policy_key_line[k]) {
		report(e, "'%s' is already set on line %u", name, x->policy_key_line[k]);
		return true;
	}
	x->policy_key_line[k] = x->lineno;
	switch (k) {
	case 0:
		if (strcmp(value, "adaptive") == 0 || strcmp(value, "full") == 0)
			pc->adaptive = value[0] == 'a';
		else
			report(e, "%s: unknown policy '%s' (full or adaptive)", name, value);
		break;
	case 1:
	case 4:
		if (pmemz_parse_size(value, k == 1 ? &pc->reserve_min : &pc->pace_rate) < 0 ||
		    (k == 1 ? pc->reserve_min : pc->pace_rate) == 0)
			report(e,
			       "%s: invalid size '%s' (bytes%s with an optional K, M, G or T "
			       "suffix, not 0)",
			       name, value, k == 4 ? " per second" : "");
		break;
	default:
		(void)parse_uint_range(e, name, value, 1, 3600000,
				       k == 2 ? &pc->low_ms : &pc->high_ms);
		break;
	}
	return true;
}

static void policy_defaults(struct region_conf *rc)
{
	struct zero_policy_conf *pc = &rc->policy;

	if (!pc->reserve_min)
		pc->reserve_min = CONF_DEFAULT_RESERVE_MIN;
	if (!pc->low_ms)
		pc->low_ms = CONF_DEFAULT_RESERVE_LOW_MS;
	if (!pc->high_ms)
		pc->high_ms = MAX(CONF_DEFAULT_RESERVE_HIGH_MS, pc->low_ms);
	if (!pc->pace_rate)
		pc->pace_rate = CONF_DEFAULT_PACE_RATE;
}

static void policy_print(FILE *out, const struct region_conf *rc)
{
	const struct zero_policy_conf *pc = &rc->policy;

	/* The default policy uses none of the other keys: "full" is not printed. */
	if (!pc->adaptive)
		return;
	fprintf(out, "zero_policy = adaptive\n");
	fprintf(out, "reserve_min = %llu\n", (unsigned long long)pc->reserve_min);
	fprintf(out, "reserve_low_ms = %u\nreserve_high_ms = %u\n", pc->low_ms, pc->high_ms);
	fprintf(out, "zero_pace_rate = %llu\n", (unsigned long long)pc->pace_rate);
}

/* The old (uid_*) name of a tenant_* limit and the other way round; _RK_MAX for other keys. */
static enum region_key tenant_key_alias(unsigned k)
{
	switch (k) {
	case RK_UID_QUOTA:
		return RK_TENANT_QUOTA;
	case RK_UID_MAX_TAGS:
		return RK_TENANT_MAX_TAGS;
	case RK_UID_MAX_WAITERS:
		return RK_TENANT_MAX_WAITERS;
	case RK_TENANT_QUOTA:
		return RK_UID_QUOTA;
	case RK_TENANT_MAX_TAGS:
		return RK_UID_MAX_TAGS;
	case RK_TENANT_MAX_WAITERS:
		return RK_UID_MAX_WAITERS;
	default:
		return _RK_MAX;
	}
}

static void region_key(struct parse_ctx *x, const char *name, const char *value)
{
	struct region_conf *rc = &x->c->regions[x->region];
	struct errsink *e = &x->e;
	unsigned before = e->n;
	unsigned k;

	if (*value && policy_key(x, rc, name, value))
		goto out;
	for (k = 0; k < _RK_MAX; k++)
		if (strcmp(name, region_keys[k]) == 0)
			break;
	if (k == _RK_MAX) {
		report(e, "unknown key '%s' in [region %s]", name, rc->name);
		goto out;
	}
	/* The allow lists may be split over several lines; other keys are set once. */
	if (x->region_key_line[k] && k != RK_ALLOW_USERS && k != RK_ALLOW_GROUPS &&
	    k != RK_ALLOW_CGROUPS) {
		report(e, "'%s' is already set on line %u", name, x->region_key_line[k]);
		goto out;
	}
	if (tenant_key_alias(k) != _RK_MAX && x->region_key_line[tenant_key_alias(k)]) {
		report(e,
		       "'%s' and '%s' (its old name) are the same limit: set one of them (line %u)",
		       k >= RK_TENANT_QUOTA ? name : region_keys[tenant_key_alias(k)],
		       k >= RK_TENANT_QUOTA ? region_keys[tenant_key_alias(k)] : name,
		       x->region_key_line[tenant_key_alias(k)]);
		goto out;
	}
	x->region_key_line[k] = x->lineno;
	if (!*value) {
		report(e, "'%s' needs a value", name);
		goto out;
	}
	switch ((enum region_key)k) {
	case RK_PATH:
		if (value[0] != '/')
			report(e, "%s: '%s' is not an absolute path", name, value);
		replace_str(&rc->path, strdup_or_report(e, value));
		break;
	case RK_SIZE:
		(void)parse_region_size(e, name, value, &rc->size);
		break;
	case RK_EXTENT_SIZE:
		(void)parse_extent_size(e, name, value, &rc->extent_size);
		break;
	case RK_ALLOW_USERS:
		parse_id_list(e, rc, name, value, false);
		break;
	case RK_ALLOW_GROUPS:
		parse_id_list(e, rc, name, value, true);
		break;
	case RK_ZEROER_THREADS:
		(void)parse_uint_range(e, name, value, 1, CONF_MAX_ZEROER_THREADS,
				       &rc->zeroer_threads);
		break;
	case RK_ZERO_RATE:
		if (strcmp(value, "unlimited") == 0)
			rc->zero_rate = 0;
		else if (pmemz_parse_size(value, &rc->zero_rate) < 0)
			report(e,
			       "%s: invalid rate '%s' (bytes per second with an optional K, M, G "
			       "or T suffix, or 'unlimited')",
			       name, value);
		break;
	case RK_BATCH_EXTENTS:
		(void)parse_uint_range(e, name, value, 1, CONF_MAX_BATCH_EXTENTS,
				       &rc->batch_extents);
		break;
	case RK_UID_QUOTA:
	case RK_UID_MAX_TAGS:
	case RK_UID_MAX_WAITERS:
		parse_uid_limit(e, (enum region_key)k, name, value, rc);
		break;
	case RK_TENANT_QUOTA:
	case RK_TENANT_MAX_TAGS:
	case RK_TENANT_MAX_WAITERS:
		parse_uid_limit(e, tenant_key_alias(k), name, value, rc);
		break;
	case RK_ALLOW_CGROUPS:
		parse_cgroup_list(e, name, value, &rc->allow_cgroups, &rc->n_allow_cgroups);
		break;
	case RK_TENANT:
		parse_tenant(e, name, value, rc);
		break;
	case RK_METADATA:
		if (value[0] != '/')
			report(e, "%s: '%s' is not an absolute path", name, value);
		replace_str(&rc->metadata, strdup_or_report(e, value));
		break;
	case _RK_MAX:
		break;
	}
out:
	rc->conf_errors += e->n - before;
}

static int conf_ini_handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *x = user;

	(void)section; /* ours is x->sec: libinih truncates long section names */
	x->handled = true;
	if (!*name) {
		report(&x->e, "missing key name before '='");
		return 1;
	}
	switch (x->sec) {
	case SEC_NONE:
		report(&x->e, "'%s' is outside of any section ([daemon] or [region NAME])", name);
		break;
	case SEC_DAEMON:
		daemon_key(x, name, value);
		break;
	case SEC_REGION:
		region_key(x, name, value);
		break;
	case SEC_IGNORE: /* its header was wrong and reported */
		break;
	}
	return 1; /* errors are ours to report, libinih's return value is a fallback */
}

static char *skip_blanks(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static void trim_end(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

/* s: the text after '['. */
static void section_begin(struct parse_ctx *x, char *s)
{
	struct daemon_conf *c = x->c;
	struct errsink *e = &x->e;
	struct region_conf *rc;
	char *end, *rest, *name;

	x->sec = SEC_IGNORE;
	memset(x->region_key_line, 0, sizeof(x->region_key_line));
	memset(x->policy_key_line, 0, sizeof(x->policy_key_line));
	end = strchr(s, ']');
	if (!end) {
		report(e, "section header without ']'");
		return;
	}
	*end = '\0';
	rest = skip_blanks(end + 1);
	if (*rest && *rest != ';' && *rest != '#')
		report(e, "unexpected text after the section header: '%s'", rest);
	s = skip_blanks(s);
	trim_end(s);
	if (strcmp(s, "daemon") == 0) {
		x->sec = SEC_DAEMON;
		return;
	}
	if (strcmp(s, "region") == 0) {
		report(e, "a region section needs a name: [region NAME]");
		return;
	}
	if (strncmp(s, "region", 6) != 0 || (s[6] != ' ' && s[6] != '\t')) {
		report(e, "unknown section [%s]", s);
		return;
	}
	name = skip_blanks(s + 6);
	if (!region_name_valid(name)) {
		report_bad_region_name(e, name);
		return;
	}
	rc = region_find(c, name);
	if (rc) {
		report(e, "duplicate region '%s' (first defined at %s)", name, rc->source);
		return;
	}
	rc = region_new(c, name, x->where);
	if (!rc) {
		report(e, "out of memory");
		return;
	}
	x->region = (size_t)(rc - c->regions);
	x->sec = SEC_REGION;
}

static void line_done(struct parse_ctx *x)
{
	if (x->kind == LINE_KEY && !x->handled)
		report(&x->e, "expected 'key = value', '[section]' or a comment");
	x->kind = LINE_OTHER;
	x->handled = false;
}

/* libinih's fgets-style reader: one physical line at a time. */
static char *conf_reader(char *str, int num, void *stream)
{
	struct parse_ctx *x = stream;
	ssize_t n;
	char *s;
	size_t len;

	line_done(x);
	errno = 0;
	n = getline(&x->buf, &x->bufsz, x->f);
	if (n < 0) {
		if (ferror(x->f)) {
			ctx_set_line(x, x->lineno + 1);
			report(&x->e, "read error: %s", strerror(errno ? errno : EIO));
		}
		return NULL;
	}
	x->lineno++;
	ctx_set_line(x, x->lineno);
	s = x->buf;
	if (x->lineno == 1 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3; /* UTF-8 BOM */
	if ((size_t)n != strlen(x->buf)) {
		report(&x->e, "NUL byte in line");
		str[0] = '\0';
		return str;
	}
	trim_end(s);
	s = skip_blanks(s);
	str[0] = '\0';
	if (!*s || *s == '#' || *s == ';')
		return str;
	if (*s == '[') {
		section_begin(x, s + 1);
		return str;
	}
	len = strlen(s);
	if (num <= 0 || len + 1 > (size_t)num) {
		report(&x->e, "line is longer than %d characters", num > 0 ? num - 1 : 0);
		return str;
	}
	memcpy(str, s, len + 1);
	x->kind = LINE_KEY;
	return str;
}

int conf_parse_file(struct daemon_conf *c, const char *path, FILE *errout)
{
	struct parse_ctx x = {
	    .c = c,
	    .file = path,
	    .e = {.out = errout, .where = "pmemzerod"},
	    .sec = SEC_NONE,
	};
	int r;

	x.f = fopen(path, "re");
	if (!x.f) {
		report(&x.e, "cannot read configuration file '%s': %s", path, strerror(errno));
		return -EINVAL;
	}
	r = ini_parse_stream(conf_reader, &x, conf_ini_handler, &x);
	if (r > 0 && x.e.n == 0) {
		ctx_set_line(&x, (unsigned)r);
		report(&x.e, "syntax error");
	} else if (r < 0 && x.e.n == 0) {
		x.e.where = "pmemzerod";
		report(&x.e, "cannot parse '%s' (error %d)", path, r);
	}
	free(x.buf);
	(void)fclose(x.f);
	return x.e.n ? -EINVAL : 0;
}

/* ---- the command line ---- */

int conf_add_region_spec(struct daemon_conf *c, const char *spec, FILE *errout)
{
	_cleanup_free_ char *where = NULL, *copy = NULL, *path = NULL;
	struct errsink e = {.out = errout, .where = "pmemzerod"};
	uint64_t size = 0, extent = 0;
	bool have_size = false, have_extent = false;
	struct region_conf *rc;
	char *name, *rest, *opt;

	if (asprintf(&where, "--region '%s'", spec) < 0 || !(copy = strdup(spec))) {
		report(&e, "out of memory");
		return -ENOMEM;
	}
	e.where = where;
	rest = strchr(copy, '=');
	if (!rest) {
		report(&e, "expected NAME=PATH[,size=SIZE][,extent=SIZE]");
		return -EINVAL;
	}
	*rest++ = '\0';
	name = copy;
	if (!region_name_valid(name))
		report_bad_region_name(&e, name);
	opt = strsep(&rest, ",");
	if (!*opt)
		report(&e, "the path is empty");
	else if (!(path = make_absolute(opt)))
		report(&e, "cannot make '%s' absolute: %s", opt, strerror(errno));
	while ((opt = strsep(&rest, ","))) {
		char *value = strchr(opt, '=');

		if (value)
			*value++ = '\0';
		if (!value || !*opt) {
			report(&e, "expected KEY=VALUE instead of '%s' (size= or extent=)", opt);
		} else if (strcmp(opt, "size") == 0) {
			if (have_size)
				report(&e, "size is given twice");
			else if (parse_region_size(&e, "size", value, &size))
				have_size = true;
		} else if (strcmp(opt, "extent") == 0 || strcmp(opt, "extent_size") == 0) {
			if (have_extent)
				report(&e, "extent is given twice");
			else if (parse_extent_size(&e, "extent", value, &extent))
				have_extent = true;
		} else {
			report(&e, "unknown option '%s' (size= or extent=)", opt);
		}
	}
	if (e.n)
		return -EINVAL;

	rc = region_find(c, name);
	if (rc && rc->from_cmdline) {
		report(&e, "region '%s' is given twice on the command line", name);
		return -EINVAL;
	}
	if (!rc) {
		rc = region_new(c, name, where);
		if (!rc) {
			report(&e, "out of memory");
			return -ENOMEM;
		}
	} else {
		/* Overrides a [region NAME] of the file: its other keys stay. */
		char *src = strdup(where);

		if (!src) {
			report(&e, "out of memory");
			return -ENOMEM;
		}
		replace_str(&rc->source, src);
	}
	rc->from_cmdline = true;
	replace_str(&rc->path, TAKE_PTR(path));
	if (have_size)
		rc->size = size;
	if (have_extent)
		rc->extent_size = extent;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: pmemzerod [OPTIONS]\n"
		"Hands out pre-zeroed, durable persistent-memory extents.\n"
		"\n"
		"  -d, --foreground        plain log lines on stderr (no journald <N> prefixes)\n"
		"  -c, --config FILE       read the configuration FILE\n"
		"  -n, --check-config      check the configuration, print it and exit\n"
		"      --socket PATH       listen on PATH (overrides [daemon] socket)\n"
		"      --region NAME=PATH[,size=SIZE][,extent=SIZE]\n"
		"                          add (or override) a region; repeatable\n"
		"  -v, --verbose           log more (repeatable: info -> debug)\n"
		"  -h, --help              show this help\n"
		"      --version           show the version\n"
		"\n"
		"Sizes take K, M, G or T suffixes (binary).  See pmemzerod(8) and\n"
		"pmemzerod.conf(5).\n");
}

enum { ARG_SOCKET = 0x100, ARG_REGION, ARG_VERSION };

int conf_load(struct daemon_conf *c, int argc, char **argv, FILE *errout)
{
	static const struct option options[] = {
	    {"foreground", no_argument, NULL, 'd'},
	    {"config", required_argument, NULL, 'c'},
	    {"check-config", no_argument, NULL, 'n'},
	    {"socket", required_argument, NULL, ARG_SOCKET},
	    {"region", required_argument, NULL, ARG_REGION},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, ARG_VERSION},
	    {NULL, 0, NULL, 0},
	};
	struct errsink e = {.out = errout, .where = "pmemzerod"};
	_cleanup_free_ const char **specs = NULL;
	const char *socket = NULL;
	size_t n_specs = 0;
	unsigned verbose = 0;
	int opt;

	optind = 0; /* GNU: full reinitialisation, conf_load may run more than once */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:dc:nvh", options, NULL)) != -1) {
		switch (opt) {
		case 'd':
			c->foreground = true;
			break;
		case 'c':
			if (c->config_path)
				report(&e, "-c/--config is given more than once");
			else
				c->config_path = strdup_or_report(&e, optarg);
			break;
		case 'n':
			c->check_only = true;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return -EAGAIN;
		case ARG_VERSION:
			printf("pmemzerod %s\n", PMEMZ_VERSION);
			return -EAGAIN;
		case ARG_SOCKET:
			socket = optarg;
			break;
		case ARG_REGION: {
			const char **s = realloc(specs, (n_specs + 1) * sizeof(*specs));

			if (!s) {
				report(&e, "out of memory");
				break;
			}
			specs = s;
			specs[n_specs++] = optarg;
			break;
		}
		case ':':
			report(&e, "option '%s' needs an argument", argv[optind - 1]);
			break;
		default:
			if (strncmp(argv[optind - 1], "--", 2) == 0 || optopt <= 0 ||
			    optopt >= 0x100)
				report(&e, "unknown option '%s' (see --help)", argv[optind - 1]);
			else
				report(&e, "unknown option '-%c' (see --help)", optopt);
			break;
		}
	}
	if (optind < argc)
		report(&e, "unexpected argument '%s'", argv[optind]);

	if (c->config_path && conf_parse_file(c, c->config_path, errout) < 0)
		e.n++;
	if (socket) {
		_cleanup_free_ char *abs = make_absolute(socket);

		if (!abs)
			report(&e, "--socket: cannot make '%s' absolute: %s", socket,
			       strerror(errno));
		else if (socket_path_ok(&e, "--socket", abs))
			replace_str(&c->socket_path, TAKE_PTR(abs));
	}
	for (size_t i = 0; i < n_specs; i++)
		if (conf_add_region_spec(c, specs[i], errout) < 0)
			e.n++;
	if (conf_finish(c, errout) < 0)
		e.n++;
	if (e.n)
		return -EINVAL;
	c->log_level = (int)MIN((unsigned)c->log_level + verbose, (unsigned)LOG_DEBUG);
	return 0;
}

/* ---- defaults, validation, output ---- */

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (strcmp(a, b) == 0)
		return true;
	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* metadata = PATH: a file of its own, no region's data or other metadata. */
static bool region_metadata_clash(struct errsink *re, const struct daemon_conf *c, size_t i)
{
	const struct region_conf *rc = &c->regions[i];

	for (size_t j = 0; j < c->n_regions; j++) {
		const struct region_conf *o = &c->regions[j];

		if (o->path && same_file(o->path, rc->metadata)) {
			report(re, "region '%s': metadata '%s' is the data path of region '%s'",
			       rc->name, rc->metadata, o->name);
			return true;
		}
		if (j < i && o->metadata && same_file(o->metadata, rc->metadata)) {
			report(re, "region '%s': metadata '%s' is also that of region '%s'",
			       rc->name, rc->metadata, o->name);
			return true;
		}
	}
	return false;
}

int conf_finish(struct daemon_conf *c, FILE *errout)
{
	struct errsink e = {.out = errout, .where = "pmemzerod"};
	int r;

	if (!c->socket_path) {
		r = pmemz_default_socket_path(true, &c->socket_path);
		if (r < 0)
			report(&e, "cannot choose a socket path: %s", strerror(-r));
		else
			(void)socket_path_ok(&e, "default socket", c->socket_path);
	}
	if (!c->state_dir) {
		r = pmemz_default_state_dir(&c->state_dir);
		if (r < 0)
			report(&e,
			       "cannot choose a state directory (set STATE_DIRECTORY or HOME, "
			       "or [daemon] state_directory): %s",
			       strerror(-r));
	}
	if (c->log_level < LOG_ERR)
		c->log_level = LOG_INFO;
	conn_finish(c);

	if (c->n_regions == 0 && c->state_dir) {
		_cleanup_free_ char *path = NULL;
		struct region_conf *rc;

		if (asprintf(&path, "%s/%s.region", c->state_dir, CONF_DEFAULT_REGION_NAME) < 0 ||
		    !(rc = region_new(c, CONF_DEFAULT_REGION_NAME, "built-in default"))) {
			report(&e, "out of memory");
		} else {
			rc->path = TAKE_PTR(path);
			rc->size = CONF_DEFAULT_REGION_SIZE;
			c->default_region = true;
		}
	}

	for (size_t i = 0; i < c->n_regions; i++) {
		struct region_conf *rc = &c->regions[i];
		struct errsink re = {.out = errout, .where = rc->source};

		if (!rc->extent_size) {
			rc->extent_size = CONF_DEFAULT_EXTENT_SIZE;
			rc->extent_size_default = true;
		}
		if (!rc->zeroer_threads)
			rc->zeroer_threads = CONF_DEFAULT_ZEROER_THREADS;
		if (!rc->batch_extents)
			rc->batch_extents = CONF_DEFAULT_BATCH_EXTENTS;
		policy_defaults(rc);
		/* No allow list: the daemon's own uid (+ the admin group); root always. */
		if (!rc->n_allow_uids && !rc->n_allow_gids && !rc->n_allow_cgroups) {
			if (uid_list_add(rc, geteuid()) < 0 ||
			    (c->has_admin_gid && gid_list_add(rc, c->admin_gid) < 0))
				report(&re, "out of memory");
		}
		if (rc->conf_errors)
			continue; /* reported already; do not pile up follow-up errors */
		if (!rc->path) {
			report(&re, "region '%s': 'path' is not set", rc->name);
			rc->conf_errors++;
			continue;
		}
		if (rc->size && rc->size < (uint64_t)CONF_MIN_REGION_EXTENTS * rc->extent_size) {
			report(&re,
			       "region '%s': size %llu is smaller than %u extents of %llu bytes",
			       rc->name, (unsigned long long)rc->size, CONF_MIN_REGION_EXTENTS,
			       (unsigned long long)rc->extent_size);
			rc->conf_errors++;
			continue;
		}
		for (size_t j = 0; j < i; j++) {
			const struct region_conf *o = &c->regions[j];

			if (o->conf_errors || !o->path || !same_file(o->path, rc->path))
				continue;
			report(&re, "region '%s': path '%s' is already used by region '%s' (%s)",
			       rc->name, rc->path, o->name, o->source);
			rc->conf_errors++;
			break;
		}
		if (!rc->conf_errors && rc->metadata && region_metadata_clash(&re, c, i))
			rc->conf_errors++;
	}
	for (size_t i = 0; i < c->n_regions; i++)
		e.n += c->regions[i].conf_errors;
	return e.n ? -EINVAL : 0;
}

static const char *log_level_name(int level)
{
	switch (level) {
	case LOG_ERR:
		return "err";
	case LOG_WARNING:
		return "warning";
	case LOG_NOTICE:
		return "notice";
	case LOG_INFO:
		return "info";
	case LOG_DEBUG:
		return "debug";
	default:
		return "?";
	}
}

static void print_ids(FILE *out, const char *key, const unsigned *ids, size_t n)
{
	if (!n) {
		fprintf(out, "# %s: none\n", key);
		return;
	}
	fprintf(out, "%s =", key);
	for (size_t i = 0; i < n; i++)
		fprintf(out, " %u", ids[i]);
	fputc('\n', out);
}

void conf_print(const struct daemon_conf *c, FILE *out)
{
	fprintf(out, "# configuration file: %s\n", c->config_path ? c->config_path : "(none)");
	fprintf(out, "[daemon]\n");
	fprintf(out, "socket = %s\n", c->socket_path ? c->socket_path : "");
	fprintf(out, "state_directory = %s\n", c->state_dir ? c->state_dir : "");
	if (c->admin_group)
		fprintf(out, "admin_group = %s\n", c->admin_group);
	else
		fprintf(out, "# admin_group: none (admin operations need root)\n");
	print_cgroups(out, "admin_cgroups", c->admin_cgroups, c->n_admin_cgroups);
	fprintf(out, "log_level = %s\n", log_level_name(c->log_level));
	conn_print(c, out);
	for (size_t i = 0; i < c->n_regions; i++) {
		const struct region_conf *rc = &c->regions[i];

		fprintf(out, "\n[region %s]\n", rc->name);
		fprintf(out, "# from %s\n", rc->source);
		fprintf(out, "path = %s\n", rc->path ? rc->path : "");
		fprintf(out, "size = %llu\n", (unsigned long long)rc->size);
		fprintf(out, "extent_size = %llu\n", (unsigned long long)rc->extent_size);
		print_ids(out, "allow_users", rc->allow_uids, rc->n_allow_uids);
		print_ids(out, "allow_groups", rc->allow_gids, rc->n_allow_gids);
		print_cgroups(out, "allow_cgroups", rc->allow_cgroups, rc->n_allow_cgroups);
		print_tenant(out, rc);
		fprintf(out, "zeroer_threads = %u\n", rc->zeroer_threads);
		if (rc->zero_rate)
			fprintf(out, "zero_rate = %llu\n", (unsigned long long)rc->zero_rate);
		else
			fprintf(out, "zero_rate = unlimited\n");
		fprintf(out, "batch_extents = %u\n", rc->batch_extents);
		print_uid_limits(out, rc);
		if (rc->metadata)
			fprintf(out, "metadata = %s\n", rc->metadata);
		policy_print(out, rc);
	}
}

void conf_free(struct daemon_conf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_regions; i++)
		region_conf_free(&c->regions[i]);
	free(c->regions);
	free(c->config_path);
	free(c->socket_path);
	free(c->state_dir);
	free(c->admin_group);
	str_list_free(c->admin_cgroups, c->n_admin_cgroups);
	memset(c, 0, sizeof(*c));
}

/* ---- reload ---- */

struct region_conf *conf_find_region(const struct daemon_conf *c, const char *name)
{
	return region_find((struct daemon_conf *)(uintptr_t)c, name);
}

static bool str_differs(const char *a, const char *b)
{
	if (!a || !b)
		return a != b;
	return strcmp(a, b) != 0;
}

/* Is every id of a in b? */
static bool id_subset(const unsigned *a, size_t na, const unsigned *b, size_t nb)
{
	for (size_t i = 0; i < na; i++) {
		size_t j = 0;

		while (j < nb && b[j] != a[i])
			j++;
		if (j == nb)
			return false;
	}
	return true;
}

/* Order does not matter, nor repeats: "alice bob" is "bob alice". */
static bool id_set_differs(const unsigned *a, size_t na, const unsigned *b, size_t nb)
{
	return !id_subset(a, na, b, nb) || !id_subset(b, nb, a, na);
}

static bool str_subset(char *const *a, size_t na, char *const *b, size_t nb)
{
	for (size_t i = 0; i < na; i++) {
		size_t j = 0;

		while (j < nb && strcmp(a[i], b[j]) != 0)
			j++;
		if (j == nb)
			return false;
	}
	return true;
}

bool conf_str_set_differs(char *const *a, size_t na, char *const *b, size_t nb)
{
	return !str_subset(a, na, b, nb) || !str_subset(b, nb, a, na);
}

unsigned conf_region_diff(const struct region_conf *a, const struct region_conf *b)
{
	unsigned ch = 0;

	if (str_differs(a->path, b->path))
		ch |= CONF_CHANGE_PATH;
	if (a->size != b->size)
		ch |= CONF_CHANGE_SIZE;
	if (a->extent_size_default != b->extent_size_default ||
	    (!a->extent_size_default && a->extent_size != b->extent_size))
		ch |= CONF_CHANGE_EXTENT_SIZE;
	if (str_differs(a->metadata, b->metadata))
		ch |= CONF_CHANGE_METADATA;
	if (id_set_differs(a->allow_uids, a->n_allow_uids, b->allow_uids, b->n_allow_uids) ||
	    id_set_differs(a->allow_gids, a->n_allow_gids, b->allow_gids, b->n_allow_gids) ||
	    conf_str_set_differs(a->allow_cgroups, a->n_allow_cgroups, b->allow_cgroups,
				 b->n_allow_cgroups))
		ch |= CONF_CHANGE_ALLOW;
	if (a->tenant_cgroup != b->tenant_cgroup || a->tenant_levels != b->tenant_levels)
		ch |= CONF_CHANGE_TENANT;
	if (a->zeroer_threads != b->zeroer_threads)
		ch |= CONF_CHANGE_ZEROER_THREADS;
	if (a->zero_rate != b->zero_rate)
		ch |= CONF_CHANGE_ZERO_RATE;
	if (a->batch_extents != b->batch_extents)
		ch |= CONF_CHANGE_BATCH_EXTENTS;
	if (a->uid_quota != b->uid_quota || a->uid_max_tags != b->uid_max_tags ||
	    a->uid_max_waiters != b->uid_max_waiters)
		ch |= CONF_CHANGE_UID_LIMITS;
	return ch;
}

const char *conf_change_names(unsigned changes, char *buf, size_t len)
{
	static const char *const names[] = {
	    "path",
	    "size",
	    "extent_size",
	    "metadata",
	    "allow_users/allow_groups/allow_cgroups",
	    "zeroer_threads",
	    "zero_rate",
	    "batch_extents",
	    "tenant_quota/tenant_max_tags/tenant_max_waiters",
	    "tenant",
	};
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(names) && off < len; i++) {
		int n;

		if (!(changes & (1u << i)))
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", names[i]);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	return buf;
}

int conf_region_keep_fixed(struct region_conf *b, const struct region_conf *a)
{
	char *path = a->path ? strdup(a->path) : NULL;
	char *metadata = a->metadata ? strdup(a->metadata) : NULL;

	if ((a->path && !path) || (a->metadata && !metadata)) {
		free(path);
		free(metadata);
		return -ENOMEM;
	}
	replace_str(&b->path, path);
	replace_str(&b->metadata, metadata);
	b->size = a->size;
	b->extent_size = a->extent_size;
	b->extent_size_default = a->extent_size_default;
	return 0;
}

bool conf_region_allows(const struct region_conf *rc, uid_t uid, gid_t gid, const gid_t *groups,
			size_t n_groups)
{
	return uid == 0 || conf_region_lists_allow(rc, uid, gid, groups, n_groups);
}

bool conf_region_lists_allow(const struct region_conf *rc, uid_t uid, gid_t gid,
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
