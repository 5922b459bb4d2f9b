/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus text exposition (format 0.0.4) of one STAT answer, for
 * pmemzctl metrics.  The metric names, labels and meanings are a contract
 * (docs/OPERATIONS.md): dashboards and alerts are built on them, so add
 * families, never rename one.
 *
 * Each metric family is one emitter in the table at the end; an emitter
 * writes its HELP and TYPE lines, then one sample per region (or one for
 * the daemon).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmemzctl.h"

/* A label value with backslash, double quote and newline escaped, as the format requires. */
static void put_label_value(FILE *f, const char *s)
{
	(void)fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '\\')
			(void)fputs("\\\\", f);
		else if (*s == '"')
			(void)fputs("\\\"", f);
		else if (*s == '\n')
			(void)fputs("\\n", f);
		else
			(void)fputc(*s, f);
	}
	(void)fputc('"', f);
}

/* A float as the shortest text that reads back as the same double ("0.00025", not
 * 0.00025000000000000001). */
static const char *format_double(double d, char *buf, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		(void)snprintf(buf, len, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	return buf;
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	/* The HELP texts are constants here without backslashes or newlines: no escaping needed. */
	(void)fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* NAME{region="R"[,KEY="VALUE"]} (the value follows) */
static void sample_start(FILE *f, const char *name, const char *region, const char *key,
			 const char *value)
{
	(void)fprintf(f, "%s{region=", name);
	put_label_value(f, region);
	if (key) {
		(void)fprintf(f, ",%s=", key);
		put_label_value(f, value);
	}
	(void)fputc('}', f);
}

static void sample_u64(FILE *f, const char *name, const char *region, const char *key,
		       const char *value, uint64_t v)
{
	sample_start(f, name, region, key, value);
	(void)fprintf(f, " %" PRIu64 "\n", v);
}

static const char *region_name(const struct pmemz_stat *s, size_t i)
{
	return pmemz_stat_region_str(s, i, PMEMZ_RS_NAME);
}

/*
 * A region the caller may not open comes by name (and state) only: its
 * counters are not known, so only pmemzerod_region_up is exported for it,
 * never zeroes that would read as an empty region.
 */
static bool counters_known(const struct pmemz_stat *s, size_t i)
{
	return !ctl_stat_u64(s, i, PMEMZ_RS_NAME_ONLY);
}

static void emit_extents(FILE *f, const struct ctl_metrics_in *in)
{
	static const struct {
		const char *state;
		enum pmemz_region_stat_key k;
	} st[] = {
	    {"zeroed", PMEMZ_RS_ZEROED},	 {"dirty", PMEMZ_RS_DIRTY}, {"leased", PMEMZ_RS_LEASED},
	    {"committed", PMEMZ_RS_COMMITTED}, {"bad", PMEMZ_RS_BAD},
	};
	const struct pmemz_stat *s = in->stat;

	family(f, "pmemzerod_extents", "gauge",
	       "Extents of the region per state: zeroed and dirty are free, leased are handed to a "
	       "connection, committed belong to a tag, bad are quarantined.");
	for (size_t i = 0; i < pmemz_stat_regions(s); i++) {
		if (!counters_known(s, i))
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(st); k++)
			sample_u64(f, "pmemzerod_extents", region_name(s, i), "state", st[k].state,
				   ctl_stat_u64(s, i, st[k].k));
	}
}

/* The families that are one STAT number per region. */
struct region_metric {
	const char *name, *type, *help;
	enum pmemz_region_stat_key k;
	bool up; /* pmemzerod_region_up: also for regions known by name only */
};

static const struct region_metric region_metrics[] = {
    {"pmemzerod_zeroed_bytes_total", "counter",
     "Bytes the background zeroer made zero and durable since the daemon started.",
     PMEMZ_RS_BYTES_ZEROED, false},
    {"pmemzerod_allocations_total", "counter",
     "ALLOCATE requests granted since the daemon started.", PMEMZ_RS_ALLOCATIONS, false},
    {"pmemzerod_commits_total", "counter", "Leases committed under a tag since the daemon started.",
     PMEMZ_RS_COMMITS, false},
    {"pmemzerod_frees_total", "counter", "FREE requests served since the daemon started.",
     PMEMZ_RS_FREES, false},
    {"pmemzerod_moves_total", "counter",
     "MOVE requests served (extents moved to new tags, all or nothing) since the daemon "
     "started.",
     PMEMZ_RS_MOVES, false},
    {"pmemzerod_waiters", "gauge", "ALLOCATE requests waiting for zeroing now.", PMEMZ_RS_WAITERS,
     false},
    {"pmemzerod_zero_fences_total", "counter",
     "Drains the zeroer threads issued: one per batch, plus one per group of extents handed "
     "back early while an allocation waited.",
     PMEMZ_RS_ZERO_FENCES, false},
    {"pmemzerod_region_up", "gauge", "1 while the region serves, 0 when it has failed.",
     PMEMZ_RS_STATE, true},
    /* The quarantined (BAD) extents: every bad block the region knows lies in one of them. */
    {"pmemzerod_bad_blocks", "gauge",
     "Extents quarantined because of media errors (bad blocks) in the region.", PMEMZ_RS_BAD,
     false},
};

/*
 * region_up is 0 for a region STAT reports "failed" (it did not open, or a
 * fault took it offline); a daemon too old to say serves every region it
 * lists.
 */
static uint64_t region_metric_value(const struct region_metric *rm, const struct pmemz_stat *s,
				    size_t i)
{
	const char *state;

	if (!rm->up)
		return ctl_stat_u64(s, i, rm->k);
	state = pmemz_stat_region_str(s, i, PMEMZ_RS_STATE);
	return !(state && strcmp(state, "failed") == 0);
}

/* Regions whose node is known (device-DAX): a gauge whose value is the node. */
static void emit_numa_node(FILE *f, const struct pmemz_stat *s)
{
	family(f, "pmemzerod_region_numa_node", "gauge",
	       "NUMA node of the region's memory, where its zeroer threads run (known regions "
	       "only).");
	for (size_t i = 0; i < pmemz_stat_regions(s); i++) {
		uint64_t node;

		if (counters_known(s, i) &&
		    pmemz_stat_region_u64(s, i, PMEMZ_RS_NUMA_NODE, &node) == 0)
			sample_u64(f, "pmemzerod_region_numa_node", region_name(s, i), NULL, NULL,
				   node);
	}
}

static void emit_region_metrics(FILE *f, const struct ctl_metrics_in *in)
{
	const struct pmemz_stat *s = in->stat;

	emit_numa_node(f, s);
	for (size_t m = 0; m < ARRAY_SIZE(region_metrics); m++) {
		const struct region_metric *rm = &region_metrics[m];

		family(f, rm->name, rm->type, rm->help);
		for (size_t i = 0; i < pmemz_stat_regions(s); i++)
			if (counters_known(s, i) || rm->up)
				sample_u64(f, rm->name, region_name(s, i), NULL, NULL,
					   region_metric_value(rm, s, i));
	}
}

/* One region's histogram; a daemon older than it sends no buckets: no samples. */
static void emit_wait_region(FILE *f, const struct pmemz_stat *s, size_t i)
{
	size_t nb = pmemz_stat_region_wait_buckets(s, i);
	const char *region = region_name(s, i);
	uint64_t count = 0;
	double sum = 0;
	char text[40];

	if (!counters_known(s, i) || nb == 0)
		return;
	for (size_t b = 0; b < nb; b++) {
		double le;
		uint64_t n;

		(void)pmemz_stat_region_wait_bucket(s, i, b, &le, &n);
		sample_u64(f, "pmemzerod_allocate_wait_seconds_bucket", region, "le",
			   format_double(le, text, sizeof(text)), n);
	}
	(void)pmemz_stat_region_u64(s, i, PMEMZ_RS_WAIT_COUNT, &count);
	(void)pmemz_stat_region_double(s, i, PMEMZ_RS_WAIT_SUM_SEC, &sum);
	sample_u64(f, "pmemzerod_allocate_wait_seconds_bucket", region, "le", "+Inf", count);
	sample_start(f, "pmemzerod_allocate_wait_seconds_sum", region, NULL, NULL);
	(void)fprintf(f, " %s\n", format_double(sum, text, sizeof(text)));
	sample_u64(f, "pmemzerod_allocate_wait_seconds_count", region, NULL, NULL, count);
}

static void emit_allocate_wait(FILE *f, const struct ctl_metrics_in *in)
{
	family(f, "pmemzerod_allocate_wait_seconds", "histogram",
	       "How long ALLOCATE requests that had to wait for zeroing waited, from joining the "
	       "queue to the grant.");
	for (size_t i = 0; i < pmemz_stat_regions(in->stat); i++)
		emit_wait_region(f, in->stat, i);
}

static void emit_connections(FILE *f, const struct ctl_metrics_in *in)
{
	uint64_t n = 0;

	(void)pmemz_stat_u64(in->stat, PMEMZ_STAT_CONNECTIONS, &n);
	family(f, "pmemzerod_connections", "gauge", "Client connections to the daemon now.");
	(void)fprintf(f, "pmemzerod_connections %" PRIu64 "\n", n);
}

/* The daemon's malloc heap; the daemon tells admins only. */
static void emit_heap(FILE *f, const struct ctl_metrics_in *in)
{
	uint64_t used, free_bytes = 0, trims = 0;

	if (pmemz_stat_u64(in->stat, PMEMZ_STAT_HEAP_IN_USE, &used) < 0)
		return;
	(void)pmemz_stat_u64(in->stat, PMEMZ_STAT_HEAP_FREE, &free_bytes);
	(void)pmemz_stat_u64(in->stat, PMEMZ_STAT_HEAP_TRIMS, &trims);
	family(f, "pmemzerod_heap_in_use_bytes", "gauge",
	       "Bytes of the daemon's malloc heap in use now.");
	(void)fprintf(f, "pmemzerod_heap_in_use_bytes %" PRIu64 "\n", used);
	family(f, "pmemzerod_heap_free_bytes", "gauge",
	       "Bytes the daemon's malloc holds free now (returned to the kernel or not).");
	(void)fprintf(f, "pmemzerod_heap_free_bytes %" PRIu64 "\n", free_bytes);
	family(f, "pmemzerod_heap_trims_total", "counter",
	       "Times the daemon returned free heap pages to the kernel.");
	(void)fprintf(f, "pmemzerod_heap_trims_total %" PRIu64 "\n", trims);
}

/* The per-uid families, one USAGE answer per region (pmemzctl usage). */
struct uid_metric {
	const char *name, *type, *help;
	enum pmemz_usage_key k;
};

static const struct uid_metric uid_metrics[] = {
    {"pmemzerod_uid_leased_bytes", "gauge", "Bytes the uid holds leased (not committed) now.",
     PMEMZ_USAGE_LEASED},
    {"pmemzerod_uid_committed_bytes", "gauge", "Bytes committed under the uid's tags.",
     PMEMZ_USAGE_COMMITTED},
    {"pmemzerod_uid_tags", "gauge", "Tags the uid has committed.", PMEMZ_USAGE_TAGS},
    {"pmemzerod_uid_waiters", "gauge", "ALLOCATE requests of the uid waiting for zeroing now.",
     PMEMZ_USAGE_WAITERS},
    {"pmemzerod_uid_rezeroed_bytes_total", "counter",
     "Bytes the zeroer made zero again after the uid freed them, since the daemon started.",
     PMEMZ_USAGE_REZEROED},
};

static uint64_t row_u64(const struct pmemz_usage *u, size_t i, enum pmemz_usage_key k)
{
	uint64_t v = 0;

	(void)pmemz_usage_row_u64(u, i, k, &v);
	return v;
}

/*
 * One region's samples of a uid family: with tenant = cgroup a uid's rows
 * (one per cgroup) are summed, so it stays one sample per uid.
 */
static void uid_samples(FILE *f, const struct uid_metric *um, const char *region,
			const struct pmemz_usage *u)
{
	size_t n = pmemz_usage_rows(u);

	for (size_t k = 0; k < n; k++) {
		uint64_t uid_k = row_u64(u, k, PMEMZ_USAGE_UID), sum = 0;
		char uid[16];
		size_t j;

		for (j = 0; j < k && row_u64(u, j, PMEMZ_USAGE_UID) != uid_k; j++)
			;
		if (j < k)
			continue; /* summed with its first row */
		for (j = k; j < n; j++)
			if (row_u64(u, j, PMEMZ_USAGE_UID) == uid_k)
				sum += row_u64(u, j, um->k);
		(void)snprintf(uid, sizeof(uid), "%" PRIu64, uid_k);
		sample_u64(f, um->name, region, "uid", uid, sum);
	}
}

static void emit_uid_usage(FILE *f, const struct ctl_metrics_in *in)
{
	if (!in->usage)
		return;
	for (size_t m = 0; m < ARRAY_SIZE(uid_metrics); m++) {
		family(f, uid_metrics[m].name, uid_metrics[m].type, uid_metrics[m].help);
		for (size_t i = 0; i < pmemz_stat_regions(in->stat); i++)
			if (in->usage[i])
				uid_samples(f, &uid_metrics[m], region_name(in->stat, i),
					    in->usage[i]);
	}
}

static const struct uid_metric tenant_metrics[] = {
    {"pmemzerod_tenant_leased_bytes", "gauge",
     "Bytes the tenant holds leased (not committed) now.", PMEMZ_USAGE_LEASED},
    {"pmemzerod_tenant_committed_bytes", "gauge", "Bytes committed under the tenant's tags.",
     PMEMZ_USAGE_COMMITTED},
    {"pmemzerod_tenant_tags", "gauge", "Tags the tenant has committed.", PMEMZ_USAGE_TAGS},
    {"pmemzerod_tenant_waiters", "gauge",
     "ALLOCATE requests of the tenant waiting for zeroing now.", PMEMZ_USAGE_WAITERS},
    {"pmemzerod_tenant_rezeroed_bytes_total", "counter",
     "Bytes the zeroer made zero again after the tenant freed them, since the daemon started.",
     PMEMZ_USAGE_REZEROED},
};

/*
 * Per tenant key (pmemzerod.conf(5) tenant): tenant="/kubepods.slice/..."
 * for a cgroup's row, tenant="uid:N" for a uid's; uid is the row's uid.
 */
static void tenant_samples(FILE *f, const struct uid_metric *tm, const char *region,
			   const struct pmemz_usage *u)
{
	for (size_t k = 0; k < pmemz_usage_rows(u); k++) {
		const char *row_tenant = pmemz_usage_row_tenant(u, k);
		uint64_t uid_k = row_u64(u, k, PMEMZ_USAGE_UID);
		char uid[24], tenant[32];

		(void)snprintf(uid, sizeof(uid), "%" PRIu64, uid_k);
		(void)snprintf(tenant, sizeof(tenant), "uid:%" PRIu64, uid_k);
		(void)fprintf(f, "%s{region=", tm->name);
		put_label_value(f, region);
		(void)fputs(",tenant=", f);
		put_label_value(f, row_tenant ? row_tenant : tenant);
		(void)fputs(",uid=", f);
		put_label_value(f, uid);
		(void)fprintf(f, "} %" PRIu64 "\n", row_u64(u, k, tm->k));
	}
}

static void emit_tenant_usage(FILE *f, const struct ctl_metrics_in *in)
{
	if (!in->usage)
		return;
	for (size_t m = 0; m < ARRAY_SIZE(tenant_metrics); m++) {
		family(f, tenant_metrics[m].name, tenant_metrics[m].type, tenant_metrics[m].help);
		for (size_t i = 0; i < pmemz_stat_regions(in->stat); i++)
			if (in->usage[i])
				tenant_samples(f, &tenant_metrics[m], region_name(in->stat, i),
					       in->usage[i]);
	}
}

struct disk_emit {
	FILE *f;
	const char *name, *region;
	bool ahead; /* the bytes held ahead, else the mapped ones */
};

static void disk_sample(struct ctl_disk *d, void *arg)
{
	const struct disk_emit *e = arg;
	char uid[16];

	(void)snprintf(uid, sizeof(uid), "%u", d->uid);
	(void)fprintf(e->f, "%s{region=", e->name);
	put_label_value(e->f, e->region);
	(void)fputs(",disk=", e->f);
	put_label_value(e->f, d->name);
	(void)fputs(",uid=", e->f);
	put_label_value(e->f, uid);
	(void)fprintf(e->f, "} %" PRIu64 "\n", e->ahead ? d->ahead : d->allocated);
}

/*
 * Per nbd disk (pmemzctl disks): a disk is (uid, name), so both are labels.
 * Mapped and held-ahead bytes are apart, as in the disks table: their sum
 * is what the disk holds of the region.  Both are a snapshot of a disk
 * being written (disk-set.c).
 */
static void emit_disks(FILE *f, const struct ctl_metrics_in *in)
{
	static const struct {
		const char *name, *help;
		bool ahead;
	} fams[] = {
	    {"pmemzerod_disk_mapped_bytes",
	     "Bytes of the nbd disk's chunks: extents mapped into the disk by their tags or "
	     "its journal (pmemzctl disks, allocated).",
	     false},
	    {"pmemzerod_disk_ahead_bytes",
	     "Bytes the nbd disk owns ahead of need, its pool extents not mapped yet (pmemzctl "
	     "disks, ahead).",
	     true},
	};

	if (!in->disks)
		return;
	for (size_t m = 0; m < ARRAY_SIZE(fams); m++) {
		family(f, fams[m].name, "gauge", fams[m].help);
		for (size_t i = 0; i < pmemz_stat_regions(in->stat); i++) {
			struct disk_emit e = {.f = f,
					      .name = fams[m].name,
					      .region = region_name(in->stat, i),
					      .ahead = fams[m].ahead};

			if (in->disks[i])
				ctl_disk_set_foreach(in->disks[i], disk_sample, &e);
		}
	}
}

static void (*const emitters[])(FILE *f, const struct ctl_metrics_in *in) = {
    emit_extents,     emit_region_metrics, emit_allocate_wait, emit_connections,
    emit_heap,	      emit_uid_usage,	   emit_tenant_usage,  emit_disks,
};

int ctl_metrics_write_in(FILE *f, const struct ctl_metrics_in *in)
{
	for (size_t i = 0; i < ARRAY_SIZE(emitters); i++)
		emitters[i](f, in);
	if (fflush(f) == EOF || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
