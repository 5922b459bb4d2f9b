/* SPDX-License-Identifier: MIT */
/*
 * Inside daemon/config: what the configuration's files share.  The calls
 * run one way (docs/ARCHITECTURE.md): conf.c (conf_load) on top; then
 * conf-cmdline.c, conf-ini.c and conf-check.c; conf-value.c under them;
 * conf-region.c and conf-report.c at the bottom.  conf-print.c,
 * conf-diff.c, conf-access.c and conf-tenant.c call no other file here.
 */
#ifndef PMEMZ_CONF_PRIVATE_H
#define PMEMZ_CONF_PRIVATE_H

#include <stdlib.h>
#include <sys/un.h>

#include "conf.h"
#include "util.h"

#define SOCKET_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* ---- conf-report.c: where an error goes, "FILE:LINE", "--region 'SPEC'", "pmemzerod" ---- */
struct errsink {
	FILE *out;
	const char *where;
	unsigned n; /* errors reported so far */
};

_printf_(2, 3) void conf_report(struct errsink *e, const char *fmt, ...);
/* strdup, reporting "out of memory" when it fails. */
char *conf_report_strdup(struct errsink *e, const char *s);

static inline void conf_replace_str(char **dst, char *src)
{
	free(*dst);
	*dst = src;
}

/* ---- conf-region.c: the list of regions ---- */
struct region_conf *conf_region_find(const struct daemon_conf *c, const char *name);
/* A zeroed region appended to c (name and source copied); NULL when out of memory. */
struct region_conf *conf_region_new(struct daemon_conf *c, const char *name, const char *source);
void conf_region_free(struct region_conf *rc);
void conf_region_str_list_free(char **v, size_t n);

/*
 * ---- conf-value.c: one value, shared by the file and the command line ----
 * Each reports its own error as "KEY: ..." and returns false (nothing set).
 */
bool conf_value_region_name(struct errsink *e, const char *name);
bool conf_value_size(struct errsink *e, const char *key, const char *value, uint64_t *out);
bool conf_value_region_size(struct errsink *e, const char *key, const char *value, uint64_t *out);
bool conf_value_extent_size(struct errsink *e, const char *key, const char *value, uint64_t *out);
bool conf_value_uint(struct errsink *e, const char *key, const char *value, unsigned min,
		     unsigned max, unsigned *out);
bool conf_value_group(struct errsink *e, const char *key, const char *name, gid_t *out);
/* "alice, bob 1000": users (groups: false) or groups added to rc's allow list. */
void conf_value_id_list(struct errsink *e, struct region_conf *rc, const char *key,
			const char *value, bool groups);
int conf_value_uid_add(struct region_conf *rc, uid_t uid);
int conf_value_gid_add(struct region_conf *rc, gid_t gid);
void conf_value_cgroup_list(struct errsink *e, const char *key, const char *value, char ***list,
			    size_t *n);
void conf_value_tenant(struct errsink *e, const char *key, const char *value,
		       struct region_conf *rc);
/* Seconds, with an optional s, m or h suffix; "0" or "off" disables. */
bool conf_value_seconds(struct errsink *e, const char *key, const char *value, unsigned *out);
/* A size of at least min bytes. */
bool conf_value_budget(struct errsink *e, const char *key, const char *value, uint64_t min,
		       uint64_t *out);
/* Relative paths given on the command line are taken from the current directory. */
char *conf_value_absolute(const char *path);
bool conf_value_socket_path(struct errsink *e, const char *key, const char *path);

/* ---- conf-cmdline.c: the options, before and after the file ---- */
struct conf_cmdline {
	const char *socket; /* --socket, NULL: not given */
	const char **specs; /* the --region specs, in order (malloc'ed) */
	size_t n_specs;
	unsigned verbose; /* -v given this many times */
};
/* Sets c's -d, -c, -n; the rest into cl.  0, or -EAGAIN after --help or --version. */
int conf_cmdline_parse(struct errsink *e, struct daemon_conf *c, int argc, char **argv,
		       struct conf_cmdline *cl);
/* --socket PATH (taken from the current directory when relative) over [daemon] socket. */
void conf_cmdline_socket(struct errsink *e, struct daemon_conf *c, const char *socket);

/* ---- [daemon] keys for connections and their budgets (docs/SECURITY.md) ---- */
enum conn_key {
	CK_MAX_CONNECTIONS_PER_UID,
	CK_IDLE_TIMEOUT,
	CK_MAX_CONNECTION_MEMORY,
	CK_MAX_TOTAL_CONNECTION_MEMORY,
	_CK_MAX
}; /* bits of daemon_conf.conn_keys_set */

#endif
