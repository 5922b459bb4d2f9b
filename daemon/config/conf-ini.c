/* SPDX-License-Identifier: MIT */
/*
 * The configuration file (libinih): its sections and keys.
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
#include <ini.h>
#include <limits.h>
#include <string.h>
#include <syslog.h>

#include "conf-private.h"
#include "log.h"

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
	unsigned conn_key_line[_CK_MAX];
};

static void ctx_set_line(struct parse_ctx *x, unsigned line)
{
	snprintf(x->where, sizeof(x->where), "%s:%u", x->file, line);
	x->e.where = x->where;
}

static const char *const conn_keys[_CK_MAX] = {
    [CK_MAX_CONNECTIONS_PER_UID] = "max_connections_per_uid",
    [CK_IDLE_TIMEOUT] = "idle_timeout",
    [CK_MAX_CONNECTION_MEMORY] = "max_connection_memory",
    [CK_MAX_TOTAL_CONNECTION_MEMORY] = "max_total_connection_memory",
};

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
		conf_report(e, "'%s' is already set on line %u", name, x->conn_key_line[k]);
		return true;
	}
	x->conn_key_line[k] = x->lineno;
	if (!*value) {
		conf_report(e, "'%s' needs a value", name);
		return true;
	}
	switch ((enum conn_key)k) {
	case CK_MAX_CONNECTIONS_PER_UID:
		if (strcmp(value, "unlimited") == 0) {
			c->max_connections_per_uid = 0;
			ok = true;
		} else {
			ok = conf_value_uint(e, name, value, 1, 1u << 20,
					     &c->max_connections_per_uid);
		}
		break;
	case CK_IDLE_TIMEOUT:
		ok = conf_value_seconds(e, name, value, &c->idle_timeout_sec);
		break;
	case CK_MAX_CONNECTION_MEMORY:
		/* Room for a request and its reply: two frames. */
		ok = conf_value_budget(e, name, value, 2 * 65536, &c->max_connection_memory);
		break;
	case CK_MAX_TOTAL_CONNECTION_MEMORY:
		ok = conf_value_budget(e, name, value, 1u << 20, &c->max_total_connection_memory);
		break;
	case _CK_MAX:
		break;
	}
	if (ok)
		c->conn_keys_set |= 1u << k;
	return true;
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
		conf_report(e, "unknown key '%s' in [daemon]", name);
		return;
	}
	if (x->daemon_key_line[k]) {
		conf_report(e, "'%s' is already set on line %u", name, x->daemon_key_line[k]);
		return;
	}
	x->daemon_key_line[k] = x->lineno;
	if (!*value) {
		conf_report(e, "'%s' needs a value", name);
		return;
	}
	switch ((enum daemon_key)k) {
	case DK_SOCKET:
		if (conf_value_socket_path(e, name, value))
			conf_replace_str(&c->socket_path, conf_report_strdup(e, value));
		break;
	case DK_STATE_DIRECTORY:
		if (value[0] != '/')
			conf_report(e, "%s: '%s' is not an absolute path", name, value);
		else
			conf_replace_str(&c->state_dir, conf_report_strdup(e, value));
		break;
	case DK_ADMIN_GROUP:
		if (conf_value_group(e, name, value, &c->admin_gid)) {
			c->has_admin_gid = true;
			conf_replace_str(&c->admin_group, conf_report_strdup(e, value));
		}
		break;
	case DK_ADMIN_CGROUPS:
		conf_value_cgroup_list(e, name, value, &c->admin_cgroups, &c->n_admin_cgroups);
		break;
	case DK_LOG_LEVEL:
		level = log_level_from_string(value);
		if (level < LOG_ERR)
			conf_report(e,
				    "%s: unknown level '%s' (err, warning, notice, info or debug)",
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
			conf_report(
			    e,
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
			conf_report(e, "%s: '%s' is not a number from 1 to %u", name, value,
				    UINT32_MAX);
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
		conf_report(e, "'%s' is already set on line %u", name, x->policy_key_line[k]);
		return true;
	}
	x->policy_key_line[k] = x->lineno;
	switch (k) {
	case 0:
		if (strcmp(value, "adaptive") == 0 || strcmp(value, "full") == 0)
			pc->adaptive = value[0] == 'a';
		else
			conf_report(e, "%s: unknown policy '%s' (full or adaptive)", name, value);
		break;
	case 1:
	case 4:
		if ((k == 1 ? pmemz_parse_size(value, &pc->reserve_min)
			    : pmemz_parse_rate(value, &pc->pace_rate)) < 0 ||
		    (k == 1 ? pc->reserve_min : pc->pace_rate) == 0)
			conf_report(e,
				    "%s: invalid size '%s' (bytes%s with an optional K, M, G or T "
				    "suffix, not 0)",
				    name, value, k == 4 ? " per second" : "");
		break;
	default:
		(void)conf_value_uint(e, name, value, 1, 3600000,
				      k == 2 ? &pc->low_ms : &pc->high_ms);
		break;
	}
	return true;
}

/* zero_rate: 0 or "unlimited" is no limit (pmemz_parse_rate: the syntax of pmemzctl set-rate too).
 */
static void parse_zero_rate(struct errsink *e, const char *name, const char *value, uint64_t *out)
{
	int r = pmemz_parse_rate(value, out);

	if (r == -ENOMEM)
		conf_report(e, "out of memory");
	else if (r < 0)
		conf_report(e,
			    "%s: invalid rate '%s' (bytes per second with an optional K, M, G "
			    "or T suffix, or 'unlimited')",
			    name, value);
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

/* May key k be set on this line?  Reports why not. */
static bool region_key_once(struct parse_ctx *x, unsigned k, const char *name)
{
	enum region_key alias = tenant_key_alias(k);

	/* The allow lists may be split over several lines; other keys are set once. */
	if (x->region_key_line[k] && k != RK_ALLOW_USERS && k != RK_ALLOW_GROUPS &&
	    k != RK_ALLOW_CGROUPS) {
		conf_report(&x->e, "'%s' is already set on line %u", name, x->region_key_line[k]);
		return false;
	}
	if (alias != _RK_MAX && x->region_key_line[alias]) {
		conf_report(
		    &x->e,
		    "'%s' and '%s' (its old name) are the same limit: set one of them (line %u)",
		    k >= RK_TENANT_QUOTA ? name : region_keys[alias],
		    k >= RK_TENANT_QUOTA ? region_keys[alias] : name, x->region_key_line[alias]);
		return false;
	}
	x->region_key_line[k] = x->lineno;
	return true;
}

/* path, metadata: kept even when not absolute, so follow-up checks stay quiet. */
static void set_path(struct errsink *e, const char *name, const char *value, char **out)
{
	if (value[0] != '/')
		conf_report(e, "%s: '%s' is not an absolute path", name, value);
	conf_replace_str(out, conf_report_strdup(e, value));
}

static void region_key_set(struct errsink *e, struct region_conf *rc, enum region_key k,
			   const char *name, const char *value)
{
	switch (k) {
	case RK_PATH:
		set_path(e, name, value, &rc->path);
		break;
	case RK_METADATA:
		set_path(e, name, value, &rc->metadata);
		break;
	case RK_SIZE:
		(void)conf_value_region_size(e, name, value, &rc->size);
		break;
	case RK_EXTENT_SIZE:
		(void)conf_value_extent_size(e, name, value, &rc->extent_size);
		break;
	case RK_ALLOW_USERS:
	case RK_ALLOW_GROUPS:
		conf_value_id_list(e, rc, name, value, k == RK_ALLOW_GROUPS);
		break;
	case RK_ALLOW_CGROUPS:
		conf_value_cgroup_list(e, name, value, &rc->allow_cgroups, &rc->n_allow_cgroups);
		break;
	case RK_TENANT:
		conf_value_tenant(e, name, value, rc);
		break;
	case RK_ZEROER_THREADS:
		(void)conf_value_uint(e, name, value, 1, CONF_MAX_ZEROER_THREADS,
				      &rc->zeroer_threads);
		break;
	case RK_ZERO_RATE:
		parse_zero_rate(e, name, value, &rc->zero_rate);
		break;
	case RK_BATCH_EXTENTS:
		(void)conf_value_uint(e, name, value, 1, CONF_MAX_BATCH_EXTENTS,
				      &rc->batch_extents);
		break;
	case RK_UID_QUOTA:
	case RK_UID_MAX_TAGS:
	case RK_UID_MAX_WAITERS:
		parse_uid_limit(e, k, name, value, rc);
		break;
	case RK_TENANT_QUOTA:
	case RK_TENANT_MAX_TAGS:
	case RK_TENANT_MAX_WAITERS:
		parse_uid_limit(e, tenant_key_alias(k), name, value, rc);
		break;
	case _RK_MAX:
		break;
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
		conf_report(e, "unknown key '%s' in [region %s]", name, rc->name);
		goto out;
	}
	if (!region_key_once(x, k, name))
		goto out;
	if (!*value) {
		conf_report(e, "'%s' needs a value", name);
		goto out;
	}
	region_key_set(e, rc, (enum region_key)k, name, value);
out:
	rc->conf_errors += e->n - before;
}

static int ini_key_handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *x = user;

	(void)section; /* ours is x->sec: libinih truncates long section names */
	x->handled = true;
	if (!*name) {
		conf_report(&x->e, "missing key name before '='");
		return 1;
	}
	switch (x->sec) {
	case SEC_NONE:
		conf_report(&x->e, "'%s' is outside of any section ([daemon] or [region NAME])",
			    name);
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
		conf_report(e, "section header without ']'");
		return;
	}
	*end = '\0';
	rest = skip_blanks(end + 1);
	if (*rest && *rest != ';' && *rest != '#')
		conf_report(e, "unexpected text after the section header: '%s'", rest);
	s = skip_blanks(s);
	trim_end(s);
	if (strcmp(s, "daemon") == 0) {
		x->sec = SEC_DAEMON;
		return;
	}
	if (strcmp(s, "region") == 0) {
		conf_report(e, "a region section needs a name: [region NAME]");
		return;
	}
	if (strncmp(s, "region", 6) != 0 || (s[6] != ' ' && s[6] != '\t')) {
		conf_report(e, "unknown section [%s]", s);
		return;
	}
	name = skip_blanks(s + 6);
	if (!conf_value_region_name(e, name))
		return;
	rc = conf_region_find(c, name);
	if (rc) {
		conf_report(e, "duplicate region '%s' (first defined at %s)", name, rc->source);
		return;
	}
	rc = conf_region_new(c, name, x->where);
	if (!rc) {
		conf_report(e, "out of memory");
		return;
	}
	x->region = (size_t)(rc - c->regions);
	x->sec = SEC_REGION;
}

static void line_done(struct parse_ctx *x)
{
	if (x->kind == LINE_KEY && !x->handled)
		conf_report(&x->e, "expected 'key = value', '[section]' or a comment");
	x->kind = LINE_OTHER;
	x->handled = false;
}

/* libinih's fgets-style reader: one physical line at a time. */
static char *ini_line_reader(char *str, int num, void *stream)
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
			conf_report(&x->e, "read error: %s", strerror(errno ? errno : EIO));
		}
		return NULL;
	}
	x->lineno++;
	ctx_set_line(x, x->lineno);
	s = x->buf;
	if (x->lineno == 1 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3; /* UTF-8 BOM */
	if ((size_t)n != strlen(x->buf)) {
		conf_report(&x->e, "NUL byte in line");
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
		conf_report(&x->e, "line is longer than %d characters", num > 0 ? num - 1 : 0);
		return str;
	}
	memcpy(str, s, len + 1);
	x->kind = LINE_KEY;
	return str;
}

int conf_ini_parse_file(struct daemon_conf *c, const char *path, FILE *errout)
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
		conf_report(&x.e, "cannot read configuration file '%s': %s", path, strerror(errno));
		return -EINVAL;
	}
	r = ini_parse_stream(ini_line_reader, &x, ini_key_handler, &x);
	if (r > 0 && x.e.n == 0) {
		ctx_set_line(&x, (unsigned)r);
		conf_report(&x.e, "syntax error");
	} else if (r < 0 && x.e.n == 0) {
		x.e.where = "pmemzerod";
		conf_report(&x.e, "cannot parse '%s' (error %d)", path, r);
	}
	free(x.buf);
	(void)fclose(x.f);
	return x.e.n ? -EINVAL : 0;
}
