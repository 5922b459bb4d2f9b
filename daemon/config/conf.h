/* SPDX-License-Identifier: MIT */
/*
 * Daemon configuration: embedded defaults, the INI file (libinih) and
 * command-line overrides.  See etc/pmemzerod.conf and docs/pmemzerod.conf.5.
 */
#ifndef PMEMZ_CONF_H
#define PMEMZ_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CONF_DEFAULT_EXTENT_SIZE (2ull << 20)
/* The embedded default is for trying things out: a modest file. */
#define CONF_DEFAULT_REGION_SIZE (256ull << 20)
#define CONF_DEFAULT_REGION_NAME "default"
#define CONF_DEFAULT_BATCH_EXTENTS 64u
#define CONF_MAX_ZEROER_THREADS 64u
#define CONF_REGION_NAME_MAX 63u
#define CONF_DEFAULT_ZEROER_THREADS 1u
#define CONF_MIN_EXTENT_SIZE 4096ull	    /* extent_size: a multiple of this */
#define CONF_MAX_EXTENT_SIZE (1ull << 30)
#define CONF_MAX_BATCH_EXTENTS 4096u
#define CONF_MIN_REGION_EXTENTS 8u	    /* a given size must be >= 8 * extent_size */

/* The adaptive zeroing policy (daemon/storage/zeroer-policy.h). */
struct zero_policy_conf {
	bool adaptive;		  /* zero_policy = adaptive; default full (zero all, always) */
	uint64_t reserve_min;	  /* bytes: the low watermark's floor */
	unsigned low_ms, high_ms; /* watermarks, as time of allocations at the recent rate */
	uint64_t pace_rate;	  /* bytes/s between the watermarks */
};
#define CONF_DEFAULT_RESERVE_MIN (64ull << 20)
#define CONF_DEFAULT_RESERVE_LOW_MS 250u
#define CONF_DEFAULT_RESERVE_HIGH_MS 2000u
#define CONF_DEFAULT_PACE_RATE (256ull << 20)

struct region_conf {
	char *name;		/* [region NAME] or --region NAME=... */
	char *path;		/* /dev/daxX.Y or a regular file */
	uint64_t size;		/* file regions: size to create; 0 = use the existing file */
	uint64_t extent_size;	/* default CONF_DEFAULT_EXTENT_SIZE */
	bool extent_size_default; /* not configured: the media's, or max(default, device alignment) */
	uid_t *allow_uids;	/* who may open the region (root always may) */
	size_t n_allow_uids;
	gid_t *allow_gids;
	size_t n_allow_gids;
	char **allow_cgroups;	/* cgroup path prefixes whose peers may open the region */
	size_t n_allow_cgroups;
	/*
	 * Tenant key (docs/pmemzerod.conf.5): false, the uid (the default);
	 * true, the peer's cgroup path, or its first tenant_levels levels (0:
	 * all).  Quotas, the waiters' turns, usage and metrics are per tenant.
	 */
	bool tenant_cgroup;
	unsigned tenant_levels;
	unsigned zeroer_threads; /* default 1 */
	uint64_t zero_rate;	/* bytes per second, 0 = unlimited */
	unsigned batch_extents;	/* extents per zeroer batch (one drain each) */
	/*
	 * Per-tenant limits (docs/SECURITY.md): tenant_quota, tenant_max_tags,
	 * tenant_max_waiters, or their old names uid_*; 0 = not set = unlimited.
	 */
	uint64_t uid_quota;	  /* leased + committed bytes per tenant */
	uint64_t uid_max_tags;	  /* committed tags per tenant */
	uint64_t uid_max_waiters; /* waiting allocations per tenant */
	struct zero_policy_conf policy;
	bool from_cmdline;
	char *source;		/* "FILE:LINE", "--region 'SPEC'" or "built-in default" */
	unsigned conf_errors;	/* internal to daemon/config: errors already reported */
	/*
	 * metadata = PATH: header and tables in a file or device-DAX of their
	 * own, never handed to clients; path then holds only the data area.
	 * NULL: inline, at the start of path.
	 */
	char *metadata;
};

struct daemon_conf {
	char *config_path;	/* NULL: none */
	char *socket_path;
	char *state_dir;	/* where the default region lives */
	bool default_region;	/* the embedded default region (in state_dir) is used */
	char *admin_group;	/* NULL: root only */
	gid_t admin_gid;
	bool has_admin_gid;
	char **admin_cgroups;	/* with admin_group or root, admins only inside these; NULL: anywhere */
	size_t n_admin_cgroups;
	int log_level;		/* LOG_ERR..LOG_DEBUG */
	bool foreground;
	bool check_only;	/* -n */
	struct region_conf *regions;
	size_t n_regions;

	/*
	 * Connections (docs/SECURITY.md).  conf_check fills the defaults; a
	 * zeroed struct (unit tests) means: no per-uid limit, no idle timeout,
	 * the server's built-in memory budgets.
	 */
	unsigned max_connections_per_uid;     /* 0: unlimited */
	unsigned idle_timeout_sec;	      /* 0: never */
	uint64_t max_connection_memory;       /* bytes; 0: built-in default */
	uint64_t max_total_connection_memory; /* bytes; 0: built-in default */
	unsigned conn_keys_set;		      /* internal to daemon/config (conf-ini.c, conf-check.c) */
};

#define CONF_DEFAULT_MAX_CONNECTIONS_PER_UID 256u
#define CONF_DEFAULT_IDLE_TIMEOUT_SEC 30u
#define CONF_DEFAULT_CONNECTION_MEMORY (1ull << 20)
#define CONF_DEFAULT_TOTAL_CONNECTION_MEMORY (32ull << 20)

/*
 * Each function's prefix names its file: conf_ conf.c, conf_cmdline_
 * conf-cmdline.c, conf_ini_ conf-ini.c, ...  (conf-private.h: the layers.)
 *
 * Parses argv into *c (which must be zeroed first), then the config file if
 * one was named, then fills defaults.  Every error is printed to errout as
 * "FILE:LINE: message" (or "pmemzerod: message") and the result is -EINVAL;
 * -EAGAIN asks the caller to exit 0 (--help, --version were printed).
 */
int conf_load(struct daemon_conf *c, int argc, char **argv, FILE *errout);

void conf_free(struct daemon_conf *c);
struct region_conf *conf_find_region(const struct daemon_conf *c, const char *name);

/* Pieces of conf_load, exported for the tests. */
int conf_ini_parse_file(struct daemon_conf *c, const char *path, FILE *errout);
/* --region NAME=PATH[,size=SIZE][,extent=SIZE] */
int conf_cmdline_region(struct daemon_conf *c, const char *spec, FILE *errout);
int conf_check(struct daemon_conf *c, FILE *errout); /* defaults + validation */

void conf_print(const struct daemon_conf *c, FILE *out); /* golden-test output of -n */

/*
 * Reload (SIGHUP): what differs between two configurations of one region.
 * The CONF_CHANGE_FIXED keys cannot change while the region is open: the
 * running region keeps its old values (conf_diff_keep_fixed).
 */
enum {
	CONF_CHANGE_PATH = 1u << 0,
	CONF_CHANGE_SIZE = 1u << 1,
	CONF_CHANGE_EXTENT_SIZE = 1u << 2,
	CONF_CHANGE_METADATA = 1u << 3,
	CONF_CHANGE_ALLOW = 1u << 4,	      /* allow_users, allow_groups, allow_cgroups */
	CONF_CHANGE_ZEROER_THREADS = 1u << 5,
	CONF_CHANGE_ZERO_RATE = 1u << 6,
	CONF_CHANGE_BATCH_EXTENTS = 1u << 7,
	CONF_CHANGE_UID_LIMITS = 1u << 8,     /* tenant_quota, tenant_max_tags, tenant_max_waiters */
	CONF_CHANGE_TENANT = 1u << 9,	      /* tenant */
};
#define CONF_CHANGE_FIXED                                                                          \
	(CONF_CHANGE_PATH | CONF_CHANGE_SIZE | CONF_CHANGE_EXTENT_SIZE | CONF_CHANGE_METADATA)

/* conf-diff.c: the CONF_CHANGE_* bits of what b changes in a (regions of the same name). */
unsigned conf_diff_region(const struct region_conf *a, const struct region_conf *b);
/* The key names of the CONF_CHANGE_* bits in changes, ", "-separated, into buf. */
const char *conf_diff_names(unsigned changes, char *buf, size_t len);
/* b takes a's values of the fixed keys (CONF_CHANGE_FIXED): 0 or -ENOMEM (b unchanged). */
int conf_diff_keep_fixed(struct region_conf *b, const struct region_conf *a);

/* conf-access.c: may this uid/gid set open the region?  root always may. */
bool conf_access_region(const struct region_conf *rc, uid_t uid, gid_t gid,
			const gid_t *groups, size_t n_groups);
/* The same without root's pass: allow_users and allow_groups only. */
bool conf_access_region_lists(const struct region_conf *rc, uid_t uid, gid_t gid,
			     const gid_t *groups, size_t n_groups);
/* Is cgroup (NULL: unknown, never) under one of the region's allow_cgroups? */
bool conf_access_region_cgroup(const struct region_conf *rc, const char *cgroup);
/* Is path prefix itself or below it ("/a" holds "/a/b", not "/ab")? */
bool conf_access_cgroup_under(const char *path, const char *prefix);
/* May a peer in cgroup be an admin: admin_cgroups unset, or cgroup under one of them. */
bool conf_access_admin_cgroup(const struct daemon_conf *c, const char *cgroup);
/*
 * conf-tenant.c: the tenant key of a cgroup under rc's tenant = cgroup[:N]: its first
 * tenant_levels levels, into buf; NULL when the cgroup is unknown.
 */
const char *conf_tenant_cgroup(const struct region_conf *rc, const char *cgroup, char *buf,
			       size_t len);

#endif
