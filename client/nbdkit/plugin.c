/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin(1): a thin-provisioned disk on pre-zeroed persistent
 * memory from pmemzerod.  The nbdkit callbacks and parameters; the disk
 * itself is disk-*.c.  One disk, one connection to the daemon per nbdkit
 * process; any number of NBD connections share it (multi-conn).
 *
 * Built three times from the same objects: the installed plugin; a test
 * build (PMEMZ_PLUGIN_TEST, nbdkit-pmemz-plugin-test.so) whose journal-slots=
 * makes a new disk's journal small, so that the tests see it wrap and
 * fill up (every later start reads the length from the superblock); and a
 * benchmark build (PMEMZ_PLUGIN_BENCH, nbdkit-pmemz-plugin-bench.so) whose
 * zeroing=inline zeroes each fresh chunk on the write path, the baseline
 * of scripts/bench-disk.  Neither is installed.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"
#include "pmemz-version.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

#define DEFAULT_DISK "disk0"
#define DEFAULT_RESERVE (64ull << 20)
#define DEFAULT_WRITEBACK (64ull << 20)
#define DEFAULT_AHEAD (256ull << 20)

static struct disk_config cfg = {
    .name = DEFAULT_DISK,
    .reserve = DEFAULT_RESERVE,
    .writeback = DEFAULT_WRITEBACK,
    .reconnect_seconds = DISK_RECONNECT_SECONDS,
    .spares = 16,
    .prewarm = DISK_PREWARM_AUTO,
    .ahead = DEFAULT_AHEAD,
    .sync_interval_ms = DISK_SYNC_INTERVAL_MS,
};
static struct disk disk;
static bool opened;
/* The process that serves (after_fork): nbdkit's parent exits after forking. */
static pid_t server_pid;

/* ---- parameters: one setter per key (pz_config) ---- */

static int set_size_of(const char *value, uint64_t *out)
{
	int64_t s = nbdkit_parse_size(value);

	if (s < 0)
		return -1;
	*out = (uint64_t)s;
	return 0;
}

/* auto, or a boolean: *out -1 (auto), 0 or 1; -1 (told) when it is neither. */
static int parse_auto_bool(const char *value, int *out)
{
	if (strcmp(value, "auto") == 0) {
		*out = -1;
		return 0;
	}
	*out = nbdkit_parse_bool(value);
	return *out < 0 ? -1 : 0;
}

static int set_region(const char *key, const char *value)
{
	cfg.region = value;
	return 0;
}

static int set_disk(const char *key, const char *value)
{
	if (pmemz_disk_name_valid(value) < 0) {
		nbdkit_error("pmemz: disk=%s: a disk name is 1-%u characters of A-Z a-z "
			     "0-9 . _ - (not . or ..)",
			     value, PMEMZ_DISK_NAME_MAX);
		return -1;
	}
	cfg.name = value;
	return 0;
}

static int set_size(const char *key, const char *value)
{
	if (set_size_of(value, &cfg.size) < 0)
		return -1;
	if (cfg.size == 0) {
		nbdkit_error("pmemz: size=0: a disk needs at least one byte");
		return -1;
	}
	return 0;
}

static int set_socket(const char *key, const char *value)
{
	cfg.socket = value;
	return 0;
}

#ifdef PMEMZ_PLUGIN_BENCH
static int set_zeroing(const char *key, const char *value)
{
	if (strcmp(value, "service") == 0) {
		cfg.zero_fresh = NULL;
	} else if (strcmp(value, "inline") == 0) {
		cfg.zero_fresh = disk_zero_inline;
	} else {
		nbdkit_error("pmemz: zeroing=%s: expected service or inline", value);
		return -1;
	}
	return 0;
}
#else
/* What the plugin always does; inline zeroing is the benchmark build's. */
static int set_zeroing(const char *key, const char *value)
{
	if (strcmp(value, "service") != 0) {
		nbdkit_error(
		    "pmemz: zeroing=%s: only the benchmark build (nbdkit-pmemz-plugin-bench, "
		    "not installed) zeroes fresh chunks itself",
		    value);
		return -1;
	}
	disk_warning("zeroing=service is what the plugin always does: the parameter is "
		     "deprecated and ignored");
	return 0;
}
#endif

#ifdef PMEMZ_PLUGIN_TEST
static int set_journal_slots(const char *key, const char *value)
{
	if (nbdkit_parse_uint64_t(key, value, &cfg.journal_slots) < 0)
		return -1;
	if (cfg.journal_slots < PMEMZ_DISK_JOURNAL_SLOTS_MIN) {
		nbdkit_error("pmemz: journal-slots=%s: at least %u", value,
			     PMEMZ_DISK_JOURNAL_SLOTS_MIN);
		return -1;
	}
	return 0;
}
#endif

static int set_reserve(const char *key, const char *value)
{
	return set_size_of(value, &cfg.reserve);
}

static int set_writeback(const char *key, const char *value)
{
	return set_size_of(value, &cfg.writeback);
}

static int set_ahead(const char *key, const char *value)
{
	return set_size_of(value, &cfg.ahead);
}

static int set_reconnect(const char *key, const char *value)
{
	return nbdkit_parse_unsigned(key, value, &cfg.reconnect_seconds);
}

static int set_spares(const char *key, const char *value)
{
	unsigned v;

	if (nbdkit_parse_unsigned(key, value, &v) < 0)
		return -1;
	if (v > DISK_SPARES_MAX) {
		nbdkit_error("pmemz: spares=%u: at most %u", v, DISK_SPARES_MAX);
		return -1;
	}
	cfg.spares = v;
	return 0;
}

static int set_sync_interval(const char *key, const char *value)
{
	unsigned v;

	if (nbdkit_parse_unsigned(key, value, &v) < 0)
		return -1;
	if (v > 3600000) {
		nbdkit_error("pmemz: sync-interval=%u: at most 3600000 ms (an hour)", v);
		return -1;
	}
	cfg.sync_interval_ms = v;
	return 0;
}

static int set_prewarm(const char *key, const char *value)
{
	int v;

	if (parse_auto_bool(value, &v) < 0)
		return -1;
	cfg.prewarm = v < 0 ? DISK_PREWARM_AUTO : v ? DISK_PREWARM_ON : DISK_PREWARM_OFF;
	return 0;
}

/*
 * Parameters of the page-touch mechanisms that prewarm= replaced (the
 * man page's prewarm= says why): accepted, so that configurations that
 * name them still start, and ignored, with one line that says so.
 */
static int set_deprecated(const char *key, const char *value)
{
	disk_warning("%s=%s is deprecated and ignored: prewarm= is the plugin's one way of "
		     "touching pages ahead of writes",
		     key, value);
	return 0;
}

static const struct {
	const char *key;
	int (*set)(const char *key, const char *value);
} keys[] = {
    {"region", set_region},
    {"disk", set_disk},
    {"size", set_size},
    {"socket", set_socket},
    {"zeroing", set_zeroing},
#ifdef PMEMZ_PLUGIN_TEST
    {"journal-slots", set_journal_slots},
#endif
    {"reserve", set_reserve},
    {"writeback", set_writeback},
    {"reconnect-timeout", set_reconnect},
    {"spares", set_spares},
    {"ahead", set_ahead},
    {"sync-interval", set_sync_interval},
    {"prewarm", set_prewarm},
    {"warm", set_deprecated},
    {"prefault", set_deprecated},
};

static int pz_config(const char *key, const char *value)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(key, keys[i].key) == 0)
			return keys[i].set(key, value) < 0 ? -1 : 0;
	nbdkit_error("pmemz: unknown parameter '%s'", key);
	return -1;
}

static int pz_config_complete(void)
{
	if (!cfg.region) {
		nbdkit_error("pmemz: region= is required (a region of pmemzerod; see "
			     "'pmemzctl regions')");
		return -1;
	}
	return 0;
}

#if defined(PMEMZ_PLUGIN_TEST)
#define PZ_HELP_BUILD "\njournal-slots=<N>  (test build) Records of a new disk's journal."
#elif defined(PMEMZ_PLUGIN_BENCH)
#define PZ_HELP_BUILD "\nzeroing=service|inline  (benchmark build) inline: zero fresh chunks here."
#else
#define PZ_HELP_BUILD ""
#endif

#define pz_config_help                                                                             \
	"region=<NAME>     (required) pmemzerod region holding the disk.\n"                        \
	"disk=<NAME>       The disk's name in the region (default " DEFAULT_DISK ").\n"            \
	"size=<SIZE>       Virtual size; creates the disk, or grows it.\n"                         \
	"socket=<PATH>     pmemzerod's socket (default: libpmemzclient's).\n"                      \
	"ahead=<SIZE>      Zeroed extents the disk owns ahead of need (default 256M; 0: off).\n"   \
	"sync-interval=<MS>  How often the fold thread looks at the journal (default 1000).\n"     \
	"reserve=<SIZE>    Zeroed extents kept leased, for refills (default 64M).\n"               \
	"writeback=<SIZE>  Buffers for fresh chunks being committed (default 64M; 0: off).\n"      \
	"reconnect-timeout=<SECONDS>  Wait for a restarting pmemzerod (default 60).\n"             \
	"spares=<N>        Lost races' leases kept for fresh chunks (default 16; 0: none).\n"      \
	"prewarm=auto|true|false  Fault the region's mapping in once at start (default "           \
	"auto).\n"                                                                                 \
	"warm=<ANY>        Deprecated: accepted and ignored (prewarm= replaced it).\n"             \
	"prefault=<ANY>    Deprecated: accepted and ignored (prewarm= replaced it).\n"             \
	"zeroing=service   Deprecated: accepted and ignored (the plugin's only "                   \
	"zeroing)." PZ_HELP_BUILD

/*
 * Everything that can refuse happens here, before nbdkit forks into the
 * background, so the user sees why.  libpmemzclient starts no thread, and
 * the connection and the mapping are inherited by the forked server.
 */
static int pz_get_ready(void)
{
	/* A flag an older library refuses shows in no symbol version: ask it. */
	const char *why = pmemz_check_version(PMEMZ_PLUGIN_CLIENT_MAJOR, PMEMZ_PLUGIN_CLIENT_MINOR);
	int r;

	if (why) {
		nbdkit_error("pmemz: %s", why);
		return -1;
	}
	r = disk_open(&disk, &cfg);

	opened = true;
	return r < 0 ? -1 : 0;
}

static int pz_after_fork(void)
{
	server_pid = getpid();
	/* threads do not survive fork: the write-back workers, refills and the timer start here */
	return disk_start(&disk) < 0 ? -1 : 0;
}

static void pz_cleanup(void)
{
	/* never in the parent that exited after the fork: the server owns the connection */
	if (opened && server_pid == getpid())
		disk_close(&disk);
	opened = false;
}

static void pz_dump_plugin(void)
{
	printf("pmemz_client_api=%d.%d\n", PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR);
	printf("pmemz_client_needed=%d.%d\n", PMEMZ_PLUGIN_CLIENT_MAJOR, PMEMZ_PLUGIN_CLIENT_MINOR);
	printf("pmemz_client_loaded=%s\n", pmemz_library_version());
	printf("pmemz_disk_format=%u\n", PMEMZ_DISK_VERSION);
	printf("pmemz_max_chunks=%llu\n", (unsigned long long)PMEMZ_DISK_MAX_CHUNKS);
}

/* A connection: which failed write-backs it was told about (its FLUSH reports each once). */
struct conn {
	uint64_t errors_seen;
};

static void *pz_open(int readonly)
{
	struct conn *c = malloc(sizeof(*c));

	if (!c) {
		nbdkit_error("pmemz: out of memory");
		return NULL;
	}
	c->errors_seen = wb_errors(disk.wb);
	return c;
}

static void pz_close(void *handle)
{
	free(handle);
}

/* Wait for the write-backs up to seq; a write-back failed since the last sync point fails this. */
static int durable(struct conn *c, uint64_t seq)
{
	return wb_durable(disk.wb, seq, &c->errors_seen);
}

static int64_t pz_get_size(void *handle)
{
	return (int64_t)disk.size;
}

static int pz_block_size(void *handle, uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
	*minimum = 1;
	*preferred = 4096;
	*maximum = 0xffffffff;
	return 0;
}

static int one(void *handle)
{
	return 1;
}

static int pz_can_write(void *handle)
{
	/* a disk with ro_compat features of a later plugin is read, never written */
	return !disk.readonly;
}

static int zero_ret(void *handle)
{
	return 0;
}

static int pz_can_fua(void *handle)
{
	return NBDKIT_FUA_NATIVE;
}

static int pz_can_cache(void *handle)
{
	/* the data is in memory already: CACHE has nothing to do */
	return NBDKIT_CACHE_NATIVE;
}

static int fail(int r)
{
	nbdkit_set_error(disk_nbd_errno(r));
	return -1;
}

static int pz_pread(void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	int r;

	assert(!flags);
	r = disk_read(&disk, buf, count, offset);

	return r < 0 ? fail(r) : 0;
}

static int pz_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	uint64_t staged = 0;
	int r;

	assert(!(flags & ~NBDKIT_FLAG_FUA));
	r = disk_write(&disk, buf, count, offset, &staged);

	if (r == 0 && (flags & NBDKIT_FLAG_FUA)) {
		r = durable(handle, staged);
	}
	return r < 0 ? fail(r) : 0;
}

static int pz_flush(void *handle, uint32_t flags)
{
	/* writes into present chunks drained their stores before they were acknowledged */
	int r = __atomic_load_n(&disk.failed, __ATOMIC_ACQUIRE);

	assert(!flags);
	/* a fresh chunk's journal record was drained with its data, before the reply */
	if (r == 0)
		r = durable(handle, UINT64_MAX);
	return r < 0 ? fail(r) : 0;
}

/*
 * A whole chunk is freed (FREE is durable on return, after the journal's
 * record of it was folded if it had one); a partial TRIM is
 * advisory and changes nothing: so a TRIM is durable on return, with or
 * without FUA.
 */
static int pz_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	int r;

	assert(!(flags & ~NBDKIT_FLAG_FUA));
	r = disk_zero(&disk, count, offset, false, true, false);
	return r < 0 ? fail(r) : 0;
}

static int pz_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	/*
	 * With MAY_TRIM whole chunks are given back, partial ones written.
	 * Without it (the client's NO_HOLE) every present chunk keeps its
	 * extent and gets zeros written; holes stay holes.  Writing zeros is
	 * no faster than a write, which FAST_ZERO refuses (ENOTSUP), as
	 * nbdkit's file plugin does when only writing is left.
	 */
	int r;

	assert(!(flags & ~(NBDKIT_FLAG_MAY_TRIM | NBDKIT_FLAG_FUA | NBDKIT_FLAG_FAST_ZERO)));
	r = disk_zero(&disk, count, offset, true, flags & NBDKIT_FLAG_MAY_TRIM,
		      flags & NBDKIT_FLAG_FAST_ZERO);

	/* zeros into a chunk being written back are staged like writes */
	if (r == 0 && (flags & NBDKIT_FLAG_FUA))
		r = durable(handle, UINT64_MAX);
	return r < 0 ? fail(r) : 0;
}

static int pz_extents(void *handle, uint32_t count, uint64_t offset, uint32_t flags,
		      struct nbdkit_extents *extents)
{
	int r;

	assert(!(flags & ~NBDKIT_FLAG_REQ_ONE));
	r = disk_extents(&disk, count, offset, flags & NBDKIT_FLAG_REQ_ONE, extents);

	return r < 0 ? fail(r) : 0;
}

static int pz_cache(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	assert(!flags);
	return 0;
}

static struct nbdkit_plugin plugin = {
    .name = "pmemz",
    .longname = "nbdkit pmemzerod plugin",
    .version = PMEMZ_VERSION,
    .description = "Thin-provisioned disk on pre-zeroed persistent memory from pmemzerod",
    .config = pz_config,
    .config_complete = pz_config_complete,
    .config_help = pz_config_help,
    .magic_config_key = "size",
    .get_ready = pz_get_ready,
    .after_fork = pz_after_fork,
    .cleanup = pz_cleanup,
    .dump_plugin = pz_dump_plugin,
    .open = pz_open,
    .close = pz_close,
    .get_size = pz_get_size,
    .block_size = pz_block_size,
    .is_rotational = zero_ret,
    .can_write = pz_can_write,
    .can_multi_conn = one,
    .can_flush = one,
    .can_trim = one,
    .can_zero = one,
    .can_fast_zero = one,
    .can_extents = one,
    .can_fua = pz_can_fua,
    .can_cache = pz_can_cache,
    .pread = pz_pread,
    .pwrite = pz_pwrite,
    .flush = pz_flush,
    .trim = pz_trim,
    .zero = pz_zero,
    .extents = pz_extents,
    .cache = pz_cache,
};

NBDKIT_REGISTER_PLUGIN(plugin)
