/* SPDX-License-Identifier: MIT */
/*
 * conf_check: the defaults of what was not configured, then the checks
 * that need the whole configuration (a region's path, its size against its
 * extents, two regions on one file).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include "conf-private.h"

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
			conf_report(re,
				    "region '%s': metadata '%s' is the data path of region '%s'",
				    rc->name, rc->metadata, o->name);
			return true;
		}
		if (j < i && o->metadata && same_file(o->metadata, rc->metadata)) {
			conf_report(re, "region '%s': metadata '%s' is also that of region '%s'",
				    rc->name, rc->metadata, o->name);
			return true;
		}
	}
	return false;
}

static void daemon_defaults(struct errsink *e, struct daemon_conf *c)
{
	int r;

	if (!c->socket_path) {
		r = pmemz_default_socket_path(true, &c->socket_path);
		if (r < 0)
			conf_report(e, "cannot choose a socket path: %s", strerror(-r));
		else
			(void)conf_value_socket_path(e, "default socket", c->socket_path);
	}
	if (!c->state_dir) {
		r = pmemz_default_state_dir(&c->state_dir);
		if (r < 0)
			conf_report(e,
				    "cannot choose a state directory (set STATE_DIRECTORY or HOME, "
				    "or [daemon] state_directory): %s",
				    strerror(-r));
	}
	if (c->log_level < LOG_ERR)
		c->log_level = LOG_INFO;
	conn_finish(c);
}

/* No region configured: the embedded default, a file in the state directory. */
static void default_region(struct errsink *e, struct daemon_conf *c)
{
	_cleanup_free_ char *path = NULL;
	struct region_conf *rc;

	if (c->n_regions || !c->state_dir)
		return;
	if (asprintf(&path, "%s/%s.region", c->state_dir, CONF_DEFAULT_REGION_NAME) < 0 ||
	    !(rc = conf_region_new(c, CONF_DEFAULT_REGION_NAME, "built-in default"))) {
		conf_report(e, "out of memory");
		return;
	}
	rc->path = TAKE_PTR(path);
	rc->size = CONF_DEFAULT_REGION_SIZE;
	c->default_region = true;
}

static void region_defaults(struct errsink *re, const struct daemon_conf *c, struct region_conf *rc)
{
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
		if (conf_value_uid_add(rc, geteuid()) < 0 ||
		    (c->has_admin_gid && conf_value_gid_add(rc, c->admin_gid) < 0))
			conf_report(re, "out of memory");
	}
}

/* Region i's path: set, large enough for its extents, no other region's. */
static bool region_check(struct errsink *re, const struct daemon_conf *c, size_t i)
{
	const struct region_conf *rc = &c->regions[i];

	if (!rc->path) {
		conf_report(re, "region '%s': 'path' is not set", rc->name);
		return false;
	}
	if (rc->size && rc->size < (uint64_t)CONF_MIN_REGION_EXTENTS * rc->extent_size) {
		conf_report(re, "region '%s': size %llu is smaller than %u extents of %llu bytes",
			    rc->name, (unsigned long long)rc->size, CONF_MIN_REGION_EXTENTS,
			    (unsigned long long)rc->extent_size);
		return false;
	}
	for (size_t j = 0; j < i; j++) {
		const struct region_conf *o = &c->regions[j];

		if (o->conf_errors || !o->path || !same_file(o->path, rc->path))
			continue;
		conf_report(re, "region '%s': path '%s' is already used by region '%s' (%s)",
			    rc->name, rc->path, o->name, o->source);
		return false;
	}
	return !rc->metadata || !region_metadata_clash(re, c, i);
}

int conf_check(struct daemon_conf *c, FILE *errout)
{
	struct errsink e = {.out = errout, .where = "pmemzerod"};

	daemon_defaults(&e, c);
	default_region(&e, c);
	for (size_t i = 0; i < c->n_regions; i++) {
		struct region_conf *rc = &c->regions[i];
		struct errsink re = {.out = errout, .where = rc->source};

		region_defaults(&re, c, rc);
		/* An error reported already: no follow-up errors piled on it. */
		if (!rc->conf_errors && !region_check(&re, c, i))
			rc->conf_errors++;
	}
	for (size_t i = 0; i < c->n_regions; i++)
		e.n += c->regions[i].conf_errors;
	return e.n ? -EINVAL : 0;
}
