/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl: the admin CLI.  One file per command (cmd-*.c), each exporting a
 * const struct ctl_cmd collected in the table in pmemzctl.c; output goes
 * through a vtable (text tables or json-c) so commands never test --json.
 */
#ifndef PMEMZCTL_H
#define PMEMZCTL_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Public headers only: pmemzctl is a client of libpmemzclient like any other. */
#include "libpmemzadmin.h"
#include "util.h" /* common/: cleanup attributes, sizes and rates */

/* ---- output vtable (output.c) ----------------------------------------- */

enum field_type {
	F_STR,
	F_U64,	    /* a count */
	F_SIZE,	    /* bytes: human-readable in text unless --bytes */
	F_RATE,	    /* bytes per second */
	F_DURATION, /* seconds */
	F_BOOL,
	F_RUNS, /* extent runs: "0-15,32-47" in text, [{first,count}] in JSON */
};

/* An extent run, as F_RUNS fields list them. */
struct ctl_run {
	uint64_t first, count;
};

struct field {
	const char *key;   /* JSON key */
	const char *label; /* text label or column header */
	enum field_type type;
	bool detail; /* JSON only: too much for a text table */
	union {
		const char *s;
		uint64_t u;
		double d;
		bool b;
		struct {
			const struct ctl_run *v;
			size_t n;
		} runs;
	} v;
};

struct out;
struct out_ops {
	const char *name;
	int (*init)(struct out *o); /* set up o->priv; 0 or -errno */
	/* A keyed object (JSON) / a block of "label: value" lines (text). */
	void (*object_begin)(struct out *o, const char *key);
	void (*object_end)(struct out *o);
	/* A keyed array of objects (JSON) / a table, one row per item (text). */
	void (*list_begin)(struct out *o, const char *key, const char *empty_text);
	void (*list_end)(struct out *o);
	void (*item_begin)(struct out *o);
	void (*item_end)(struct out *o);
	void (*field)(struct out *o, const struct field *f);
	/* Emit the document; 0 or -errno. */
	int (*finish)(struct out *o);
	void (*free)(struct out *o);
	/* Preformatted text lines (a picture): printed as they are; JSON ignores them. */
	void (*block)(struct out *o, const char *text);
};

struct out {
	const struct out_ops *ops;
	FILE *f;
	bool human;  /* sizes and rates as "1.5 GiB" (text only; JSON is always raw) */
	bool detail; /* fields added now are details (see out_details()) */
	void *priv;
};

extern const struct out_ops out_text_ops;
extern const struct out_ops out_json_ops;

int out_new(const struct out_ops *ops, FILE *f, bool human, struct out **out);
void out_free(struct out *o);

/* Fields between out_details(o, true) and out_details(o, false) are JSON-only details. */
static inline void out_details(struct out *o, bool on)
{
	o->detail = on;
}
#define OUT_FIELD(o, ...) (o)->ops->field((o), &(struct field){.detail = (o)->detail, __VA_ARGS__})

static inline void out_str(struct out *o, const char *key, const char *label, const char *s)
{
	OUT_FIELD(o, .key = key, .label = label, .type = F_STR, .v.s = s);
}
static inline void out_u64(struct out *o, const char *key, const char *label, uint64_t u)
{
	OUT_FIELD(o, .key = key, .label = label, .type = F_U64, .v.u = u);
}
static inline void out_size(struct out *o, const char *key, const char *label, uint64_t u)
{
	OUT_FIELD(o, .key = key, .label = label, .type = F_SIZE, .v.u = u);
}
static inline void out_rate(struct out *o, const char *key, const char *label, double d)
{
	OUT_FIELD(o, .key = key, .label = label, .type = F_RATE, .v.d = d);
}
static inline void out_duration(struct out *o, const char *key, const char *label, uint64_t s)
{
	OUT_FIELD(o, .key = key, .label = label, .type = F_DURATION, .v.u = s);
}
static inline void out_bool(struct out *o, const char *key, const char *label, bool b)
{
	OUT_FIELD(o, .key = key, .label = label, .type = F_BOOL, .v.b = b);
}
static inline void out_runs(struct out *o, const char *key, const char *label,
			    const struct ctl_run *runs, size_t n)
{
	OUT_FIELD(o, .key = key, .label = label, .type = F_RUNS, .v.runs = {.v = runs, .n = n});
}

/* ---- formatting (format.c) -------------------------------------------- */

/* "1.5 GiB" when human, else "1610612736". */
const char *ctl_format_size(uint64_t bytes, bool human, char *buf, size_t len);
/* "1.2 GiB/s" when human, else whole bytes per second. */
const char *ctl_format_rate(double bytes_per_sec, bool human, char *buf, size_t len);
/* "45s", "2m 03s", "1h 02m 03s", "3d 04h 05m" when human, else seconds. */
const char *ctl_format_duration(uint64_t sec, bool human, char *buf, size_t len);
/* Extent runs as "0-15,32,40-47"; ends in ",..." when it does not fit. */
const char *ctl_format_runs(const struct ctl_run *runs, size_t n, char *buf, size_t len);
/* 16 bytes as 8-4-4-4-12 hex; "" when not 16 bytes. */
const char *ctl_format_uuid(const uint8_t *b, size_t n, char *buf, size_t len);
/* Region i's state from STAT: "online", "failed"; a daemon too old to say is "online". */
const char *ctl_region_state(const struct pmemz_stat *s, size_t i);
/* Region i's integer k, 0 when the daemon did not send it. */
uint64_t ctl_stat_u64(const struct pmemz_stat *s, size_t i, enum pmemz_region_stat_key k);

/* ---- nbd disks (disk-set.c): pmemzctl disks and the per-disk metrics --- */

#define CTL_DISK_NAME_MAX 32u /* PMEMZ_DISK_NAME_MAX (disk-format.h) */

struct ctl_disk {
	uint32_t uid;
	char name[CTL_DISK_NAME_MAX + 1];
	/*
	 * What the disk holds, after ctl_disk_read(): mapped (chunks, and their
	 * bytes in allocated) are its chunk tags and the pool extents its
	 * journal maps; ahead is what it owns and maps nothing yet: its legacy
	 * ahead tags and the rest of its pool.  Before ctl_disk_read(), the
	 * tags alone (every pool extent ahead).
	 */
	uint64_t chunks, allocated;
	uint64_t ahead;
	uint64_t pool_bytes;  /* of its pool tags (in ahead until the journal says otherwise) */
	struct ctl_run *pool; /* its pool tags' extent runs, sorted and merged by ctl_disk_read() */
	size_t n_pool, cap_pool;
	bool has_sb;
	uint64_t sb_extent;  /* the superblock's first extent */
	uint64_t size;	     /* virtual size, from a sound superblock; 0: unknown */
	const char *state;   /* the superblock's verdict, or why it (or the journal) is unread */
	char state_buf[160]; /* where state is when it names feature bits */
};

/* The disks of a region, ordered by (uid, name). */
struct ctl_disk_set {
	void *root; /* tsearch tree of struct ctl_disk */
	size_t n;
	/* while listing: the region, the caller's uid, the extent size */
	struct pmemz_region *reg;
	unsigned uid;
	uint64_t extent_size;
};

/*
 * Add every disk tag of region (every uid's when all) to s, LIST page by
 * page; reg is region opened (pmemz_region_open_readonly will do): the
 * caller's pool tags too fragmented for a LIST reply are read whole
 * through it.  0 or -errno with pmemz_errormsg() set.
 */
int ctl_disk_set_list(struct pmemz_client *c, struct pmemz_region *reg, const char *region,
		      bool all, struct ctl_disk_set *s);
/*
 * Read d's superblock and mapping journal through reg's mapping and settle
 * its figures (once per disk): 0; -EIO when a load faulted (SIGBUS: the
 * region file is shorter than its mapping, or a media error), d->state
 * saying which part, d's figures then its tags' alone; -ENOMEM.  The
 * SIGBUS handler must be installed (pmemz_sigbus_install()).
 */
int ctl_disk_read(struct pmemz_region *reg, struct ctl_disk *d);
void ctl_disk_set_foreach(const struct ctl_disk_set *s, void (*fn)(struct ctl_disk *d, void *arg),
			  void *arg);

struct pmemz_disk_super;
/*
 * What this build may do with a disk, from its superblock (a copy out of
 * the mapping): OK; READONLY (ro_compat features of a later plugin: read,
 * never write); UNSUPPORTED (a later superblock version, or incompat
 * features of a later plugin: not even read); BAD (damaged, another
 * disk's).  *state: the words for the listing (in buf, len bytes, when
 * they name feature bits).
 */
enum ctl_disk_verdict { CTL_DISK_OK, CTL_DISK_READONLY, CTL_DISK_UNSUPPORTED, CTL_DISK_BAD };
enum ctl_disk_verdict ctl_disk_super_verdict(const struct pmemz_disk_super *sb, const char *name,
					     uint64_t extent_size, const char **state, char *buf,
					     size_t len);
void ctl_disk_set_done(struct ctl_disk_set *s);

/* ---- Prometheus exposition (metrics.c) -------------------------------- */

/*
 * The text exposition of one STAT answer (every region), with per region
 * of it (NULL: none) its USAGE answer and its disks; 0 or -errno from the
 * stream.
 */
struct ctl_metrics_in {
	const struct pmemz_stat *stat;
	const struct pmemz_usage *const *usage;	 /* NULL: no per-uid/tenant families */
	const struct ctl_disk_set *const *disks; /* NULL: no per-disk families */
};
int ctl_metrics_write_in(FILE *f, const struct ctl_metrics_in *in);

/* ---- commands --------------------------------------------------------- */

struct ctl {
	const char *socket_path; /* NULL: $PMEMZ_SOCKET, then the default */
	bool json;
	bool human;
	struct pmemz_client *client; /* connected by ctl_connect() */
	struct out *out;
};

struct ctl_cmd {
	const char *name;
	const char *args;    /* usage after the command name */
	const char *summary; /* one line for --help */
	const char *options; /* help lines for the command's own options, or NULL */
	bool no_json;	     /* its output has one format: --json is a usage error */
	int (*exec)(struct ctl *ctl, int argc, char **argv);
};

/* Exit statuses. */
#define CTL_EXIT_OK 0
#define CTL_EXIT_FAIL 1
#define CTL_EXIT_USAGE 2

/*
 * Every command takes the common output options (--json, -u/--human,
 * --bytes, -h/--help) besides its own: put CTL_COMMON_OPTS in its
 * getopt_long table and CTL_COMMON_SHORT in its short options, and hand
 * every option it does not know to ctl_common_opt(): -1 means handled,
 * carry on; anything else is the exit status (--help 0, a bad option 2).
 */
/* clang-format off */
#define CTL_COMMON_OPTS                                                                            \
	{"json", no_argument, NULL, 'j'}, {"human", no_argument, NULL, 'u'},                       \
		{"bytes", no_argument, NULL, 'B'}, {"help", no_argument, NULL, 'h'}
/* clang-format on */
#define CTL_COMMON_SHORT "juh"
int ctl_common_opt(struct ctl *ctl, const struct ctl_cmd *cmd, int c);
void ctl_cmd_usage(const struct ctl_cmd *cmd, FILE *f);

/* Connect (once) and set up the output; prints the reason on failure. */
int ctl_connect(struct ctl *ctl);
int ctl_output(struct ctl *ctl);
/* Connect, STAT one region (NULL: all) and set up the output; exit code or 0. */
int ctl_stat(struct ctl *ctl, const char *region, struct pmemz_stat **stat);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct pmemz_stat *, pmemz_stat_free)
/* Emit the output; CTL_EXIT_OK or, after printing why, CTL_EXIT_FAIL. */
int ctl_finish(struct ctl *ctl);
/* Print "pmemzctl: <last error>" and return CTL_EXIT_FAIL. */
int ctl_fail(void);
/* pmemzctl itself ran out of memory: -ENOMEM, and ctl_fail() says so (not the library's error). */
int ctl_oom(void);
int ctl_usage_error(const struct ctl_cmd *cmd, const char *fmt, ...) _printf_(2, 3);

extern const struct ctl_cmd cmd_status;
extern const struct ctl_cmd cmd_regions;
extern const struct ctl_cmd cmd_tags;
extern const struct ctl_cmd cmd_usage;
extern const struct ctl_cmd cmd_map;
extern const struct ctl_cmd cmd_pause;
extern const struct ctl_cmd cmd_resume;
extern const struct ctl_cmd cmd_set_rate;
extern const struct ctl_cmd cmd_metrics;
extern const struct ctl_cmd cmd_clients;
extern const struct ctl_cmd cmd_disks;

/* cmd-map.c: emit REGION's map (width 0: automatic); 0 or -errno, pmemz_errormsg() says why. */
int ctl_map_show(struct ctl *ctl, const char *region, unsigned width);
/* --width N: 0, or a usage error's exit status. */
int ctl_map_parse_width(const struct ctl_cmd *cmd, const char *s, unsigned *width);
/* cmd-pause.c: ZEROER for REGION (NULL: all); pause < 0 or !rate leaves that unchanged. */
int ctl_zeroer(struct ctl *ctl, const char *region, int pause, const uint64_t *rate);

#endif
