/* SPDX-License-Identifier: MIT */
/*
 * libpmemzclient's admin and status API (since 1.5): what pmemzctl shows,
 * for any tool.  The answers are opaque handles read with getters and
 * freed with their _free; no protocol type shows.  Functions return 0 or
 * a negative errno, with pmemz_errormsg() saying why; getters of a value
 * the daemon did not send (an older daemon, an admin-only field) return
 * -ENODATA.  The library prints nothing (debug lines with $PMEMZ_DEBUG).
 *
 *   struct pmemz_stat *s;
 *   pmemz_admin_stat(c, NULL, &s);                 // every region
 *   for (size_t i = 0; i < pmemz_stat_regions(s); i++) {
 *       uint64_t zeroed;
 *       pmemz_stat_region_u64(s, i, PMEMZ_RS_ZEROED, &zeroed);
 *   }
 *   pmemz_stat_free(s);
 */
#ifndef LIBPMEMZADMIN_H
#define LIBPMEMZADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libpmemzclient.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the connection, as the daemon saw it at connect ------------------ */

/* The socket path the handle is connected to. */
const char *pmemz_client_socket(const struct pmemz_client *c);
/* The daemon's version string and the connection's protocol version. */
const char *pmemz_client_daemon_version(const struct pmemz_client *c);
unsigned pmemz_client_protocol(const struct pmemz_client *c);
/*
 * The protocol versions the daemon speaks (since 1.7); -ENODATA from a
 * daemon that does not say (pmemzerod 0.1, which speaks 1 only).
 */
int pmemz_client_protocol_range(const struct pmemz_client *c, unsigned *min, unsigned *max);
/* The caller's uid as the daemon took it (SO_PEERCRED), and whether it may administer. */
unsigned pmemz_client_uid(const struct pmemz_client *c);
bool pmemz_client_is_admin(const struct pmemz_client *c);

/* ---- STAT: the daemon and its regions --------------------------------- */

struct pmemz_stat;

/* STAT of region (NULL: every region the daemon serves). */
int pmemz_admin_stat(struct pmemz_client *c, const char *region, struct pmemz_stat **out);
void pmemz_stat_free(struct pmemz_stat *s);

enum pmemz_stat_key {
	PMEMZ_STAT_UPTIME_SEC,
	PMEMZ_STAT_CONNECTIONS,
	PMEMZ_STAT_HEAP_IN_USE, /* admins only */
	PMEMZ_STAT_HEAP_FREE,	/* admins only */
	PMEMZ_STAT_HEAP_TRIMS,	/* admins only */
};
const char *pmemz_stat_daemon_version(const struct pmemz_stat *s);
int pmemz_stat_u64(const struct pmemz_stat *s, enum pmemz_stat_key k, uint64_t *v);
size_t pmemz_stat_regions(const struct pmemz_stat *s);

/* A region's numbers (pmemzctl status, regions); RS: region statistic. */
enum pmemz_region_stat_key {
	/* integers (pmemz_stat_region_u64) */
	PMEMZ_RS_SIZE,
	PMEMZ_RS_EXTENT_SIZE,
	PMEMZ_RS_EXTENTS,
	PMEMZ_RS_DATA_OFFSET,
	PMEMZ_RS_ALIGNMENT,
	PMEMZ_RS_DEVDAX, /* 0 or 1 */
	PMEMZ_RS_ZEROED,
	PMEMZ_RS_ZEROING,
	PMEMZ_RS_DIRTY,
	PMEMZ_RS_LEASED,
	PMEMZ_RS_COMMITTED,
	PMEMZ_RS_BAD,
	PMEMZ_RS_BYTES_ZEROED,
	PMEMZ_RS_WAITERS,
	PMEMZ_RS_NUMA_NODE, /* -ENODATA: not known */
	PMEMZ_RS_ZERO_BATCHES,
	PMEMZ_RS_ZERO_FENCES,
	PMEMZ_RS_DRAINS,
	PMEMZ_RS_ALLOCATIONS,
	PMEMZ_RS_COMMITS,
	PMEMZ_RS_MOVES,
	PMEMZ_RS_FREES,
	PMEMZ_RS_TAGS,
	PMEMZ_RS_ZEROER_THREADS,
	PMEMZ_RS_ZERO_RATE_LIMIT, /* bytes per second, 0: unlimited */
	PMEMZ_RS_PAUSED,	  /* 0 or 1 */
	PMEMZ_RS_NAME_ONLY,	  /* 1: not the caller's to open, only name and state are known */
	PMEMZ_RS_RESERVE_LOW,
	PMEMZ_RS_RESERVE_HIGH,
	PMEMZ_RS_ZONE_CHANGES,
	PMEMZ_RS_WAIT_COUNT, /* ALLOCATEs that waited for zeroing */
	/* reals (pmemz_stat_region_double) */
	PMEMZ_RS_ZERO_BYTES_PER_SEC,
	PMEMZ_RS_ALLOC_RATE, /* extents per second */
	PMEMZ_RS_WAIT_SUM_SEC,
	/* strings (pmemz_stat_region_str; NULL when not sent) */
	PMEMZ_RS_NAME,
	PMEMZ_RS_PATH,
	PMEMZ_RS_STATE, /* "online", "failed"; an older daemon sends none */
	PMEMZ_RS_FAILURE,
	PMEMZ_RS_GRANULARITY,
	PMEMZ_RS_PERSISTENCE_DOMAIN,
	PMEMZ_RS_ZERO_POLICY,
	PMEMZ_RS_ZERO_ZONE,
};
/* -EINVAL for an index past the regions or a key of another type. */
int pmemz_stat_region_u64(const struct pmemz_stat *s, size_t i, enum pmemz_region_stat_key k,
			  uint64_t *v);
int pmemz_stat_region_double(const struct pmemz_stat *s, size_t i, enum pmemz_region_stat_key k,
			     double *v);
const char *pmemz_stat_region_str(const struct pmemz_stat *s, size_t i,
				  enum pmemz_region_stat_key k);
/* The region's 16-byte uuid: 0, or -ENODATA. */
int pmemz_stat_region_uuid(const struct pmemz_stat *s, size_t i, uint8_t uuid[16]);
/*
 * The histogram of ALLOCATE waits: its buckets (0 when the daemon sent
 * none) and bucket b's upper bound (seconds) and cumulative count.
 */
size_t pmemz_stat_region_wait_buckets(const struct pmemz_stat *s, size_t i);
int pmemz_stat_region_wait_bucket(const struct pmemz_stat *s, size_t i, size_t b, double *le,
				  uint64_t *count);

/* ---- USAGE: per-tenant accounting of a region -------------------------- */

struct pmemz_usage;

int pmemz_admin_usage(struct pmemz_client *c, const char *region, struct pmemz_usage **out);
void pmemz_usage_free(struct pmemz_usage *u);
/* The region's tenant key: "uid" or "cgroup". */
const char *pmemz_usage_tenant_key(const struct pmemz_usage *u);

enum pmemz_usage_key {
	/* the region's per-tenant limits: -ENODATA when unlimited */
	PMEMZ_USAGE_QUOTA,
	PMEMZ_USAGE_MAX_TAGS,
	PMEMZ_USAGE_MAX_WAITERS,
	/* a row's numbers */
	PMEMZ_USAGE_UID,
	PMEMZ_USAGE_LEASED,
	PMEMZ_USAGE_COMMITTED,
	PMEMZ_USAGE_TAGS,
	PMEMZ_USAGE_WAITERS,
	PMEMZ_USAGE_REZEROED,
};
int pmemz_usage_limit(const struct pmemz_usage *u, enum pmemz_usage_key k, uint64_t *v);
size_t pmemz_usage_rows(const struct pmemz_usage *u);
int pmemz_usage_row_u64(const struct pmemz_usage *u, size_t i, enum pmemz_usage_key k,
			uint64_t *v);
/* The row's tenant (a cgroup key); NULL for a uid's row. */
const char *pmemz_usage_row_tenant(const struct pmemz_usage *u, size_t i);

/* ---- LIST: the committed tags of a region ------------------------------ */

struct pmemz_taglist;

#define PMEMZ_LIST_ALL_USERS (1u << 0) /* every uid's tags (admin only) */
/*
 * Cut a tag too fragmented for one answer to its first runs (its extents
 * and bytes stay whole) instead of failing with -EMSGSIZE.
 */
#define PMEMZ_LIST_FIRST_RUNS (1u << 1)

/* Every tag of region under prefix (NULL: all), read page by page. */
int pmemz_admin_list(struct pmemz_client *c, const char *region, const char *prefix,
		     unsigned flags, struct pmemz_taglist **out);
void pmemz_taglist_free(struct pmemz_taglist *l);
size_t pmemz_taglist_count(const struct pmemz_taglist *l);
const char *pmemz_taglist_name(const struct pmemz_taglist *l, size_t i);
unsigned pmemz_taglist_uid(const struct pmemz_taglist *l, size_t i);
uint64_t pmemz_taglist_bytes(const struct pmemz_taglist *l, size_t i);
/* Tag i's extent runs (all of them, or the first with PMEMZ_LIST_FIRST_RUNS). */
size_t pmemz_taglist_runs(const struct pmemz_taglist *l, size_t i);
int pmemz_taglist_run(const struct pmemz_taglist *l, size_t i, size_t k, uint64_t *first,
		      uint64_t *count);

/* ---- MAP: the state of every extent of a region ------------------------ */

struct pmemz_map;

enum pmemz_extent_state {
	PMEMZ_EXTENT_DIRTY = 0,
	PMEMZ_EXTENT_ZEROED = 1,
	PMEMZ_EXTENT_LEASED = 2,
	PMEMZ_EXTENT_COMMITTED = 3,
	PMEMZ_EXTENT_BAD = 4,
	PMEMZ_EXTENT_ZEROING = 5,
	PMEMZ_EXTENT_UNKNOWN = 6, /* a state this library does not know */
};

int pmemz_admin_map(struct pmemz_client *c, const char *region, struct pmemz_map **out);
void pmemz_map_free(struct pmemz_map *m);
uint64_t pmemz_map_extents(const struct pmemz_map *m);
/* 0 when the daemon did not say. */
uint64_t pmemz_map_extent_size(const struct pmemz_map *m);
/* Runs of one state, in extent order, covering every extent. */
size_t pmemz_map_runs(const struct pmemz_map *m);
int pmemz_map_run(const struct pmemz_map *m, size_t i, enum pmemz_extent_state *state,
		  uint64_t *first, uint64_t *count);

/* ---- ZEROER: background zeroing control (admin only) -------------------- */

/* Pause or resume region's zeroer (NULL: every region's) until a daemon restart. */
int pmemz_admin_zeroer_pause(struct pmemz_client *c, const char *region, bool pause);
/* Its rate in bytes per second (0: unlimited) until a daemon restart. */
int pmemz_admin_zeroer_rate(struct pmemz_client *c, const char *region, uint64_t rate);

/* ---- CLIENTS: the daemon's connections (admin only) --------------------- */

struct pmemz_clients;

enum pmemz_clients_key {
	PMEMZ_CONN_SERIAL,
	PMEMZ_CONN_UID,
	PMEMZ_CONN_GID,
	PMEMZ_CONN_PID, /* 0 when not known */
	PMEMZ_CONN_ADMIN,
	PMEMZ_CONN_LEASES,
	PMEMZ_CONN_LEASED_BYTES,
	PMEMZ_CONN_WAITERS,
	PMEMZ_CONN_BYTES_QUEUED,
	PMEMZ_CONN_CONNECTED_SEC,
	PMEMZ_CONN_CGROUP_ID, /* -ENODATA when not known */
};

/* Every connection, read page by page. */
int pmemz_admin_clients(struct pmemz_client *c, struct pmemz_clients **out);
void pmemz_clients_free(struct pmemz_clients *l);
size_t pmemz_clients_count(const struct pmemz_clients *l);
int pmemz_clients_u64(const struct pmemz_clients *l, size_t i, enum pmemz_clients_key k,
		      uint64_t *v);
/* The connection's cgroup (NULL: none) and how its identity was taken. */
const char *pmemz_clients_cgroup(const struct pmemz_clients *l, size_t i);
const char *pmemz_clients_identity(const struct pmemz_clients *l, size_t i);

/* ---- read-only region handles, for tools ------------------------------- */

/*
 * pmemz_region_open, mapped read-only (PROT_READ) without libpmem2: for a
 * tool that reads a region's data (pmemzctl disks reads superblocks) and
 * must not store into it.  pmemz_persist and pmemz_memcpy fail with -EROFS.
 */
int pmemz_region_open_readonly(struct pmemz_client *c, const char *name,
			       struct pmemz_region **out);
/* The region's extent count and the offset of its data area (extent 0) in the mapping. */
uint64_t pmemz_region_extent_count(const struct pmemz_region *r);
uint64_t pmemz_region_data_offset(const struct pmemz_region *r);

#ifdef __cplusplus
}
#endif

#endif
