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
static void sample_start(FILE *f, const char *name, const Pmemz__RegionStat *rs, const char *key,
			 const char *value)
{
	(void)fprintf(f, "%s{region=", name);
	put_label_value(f, rs->info->name);
	if (key) {
		(void)fprintf(f, ",%s=", key);
		put_label_value(f, value);
	}
	(void)fputc('}', f);
}

static void sample_u64(FILE *f, const char *name, const Pmemz__RegionStat *rs, const char *key,
		       const char *value, uint64_t v)
{
	sample_start(f, name, rs, key, value);
	(void)fprintf(f, " %" PRIu64 "\n", v);
}

/*
 * A region the caller may not open comes by name (and state) only: its
 * counters are not known, so only pmemzerod_region_up is exported for it,
 * never zeroes that would read as an empty region.
 */
static bool counters_known(const Pmemz__RegionStat *rs)
{
	return !(rs->has_name_only && rs->name_only);
}

static void emit_extents(FILE *f, const struct ctl_metrics_in *in)
{
	const Pmemz__StatResp *s = in->stat;

	family(f, "pmemzerod_extents", "gauge",
	       "Extents of the region per state: zeroed and dirty are free, leased are handed to a "
	       "connection, committed belong to a tag, bad are quarantined.");
	for (size_t i = 0; i < s->n_regions; i++) {
		const Pmemz__RegionStat *rs = s->regions[i];
		const struct {
			const char *state;
			uint64_t n;
		} st[] = {
		    {"zeroed", rs->zeroed},	  {"dirty", rs->dirty}, {"leased", rs->leased},
		    {"committed", rs->committed}, {"bad", rs->bad},
		};

		if (!counters_known(rs))
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(st); k++)
			sample_u64(f, "pmemzerod_extents", rs, "state", st[k].state, st[k].n);
	}
}

/* The families that are one STAT number per region. */
struct region_metric {
	const char *name, *type, *help;
	uint64_t (*get)(const Pmemz__RegionStat *rs);
};

static uint64_t get_bytes_zeroed(const Pmemz__RegionStat *rs)
{
	return rs->bytes_zeroed;
}
static uint64_t get_allocations(const Pmemz__RegionStat *rs)
{
	return rs->allocations;
}
static uint64_t get_commits(const Pmemz__RegionStat *rs)
{
	return rs->commits;
}
static uint64_t get_frees(const Pmemz__RegionStat *rs)
{
	return rs->frees;
}
static uint64_t get_moves(const Pmemz__RegionStat *rs)
{
	return rs->moves;
}
static uint64_t get_waiters(const Pmemz__RegionStat *rs)
{
	return rs->waiters;
}
static uint64_t get_zero_fences(const Pmemz__RegionStat *rs)
{
	return rs->zero_fences;
}
/*
 * 0 for a region STAT reports "failed" (it did not open, or a fault took it
 * offline); a daemon too old to say serves every region it lists.
 */
static uint64_t get_region_up(const Pmemz__RegionStat *rs)
{
	return !(rs->state && strcmp(rs->state, "failed") == 0);
}
/* The quarantined (BAD) extents: every bad block the region knows lies in one of them. */
static uint64_t get_bad_blocks(const Pmemz__RegionStat *rs)
{
	return rs->bad;
}

static const struct region_metric region_metrics[] = {
    {"pmemzerod_zeroed_bytes_total", "counter",
     "Bytes the background zeroer made zero and durable since the daemon started.",
     get_bytes_zeroed},
    {"pmemzerod_allocations_total", "counter",
     "ALLOCATE requests granted since the daemon started.", get_allocations},
    {"pmemzerod_commits_total", "counter", "Leases committed under a tag since the daemon started.",
     get_commits},
    {"pmemzerod_frees_total", "counter", "FREE requests served since the daemon started.",
     get_frees},
    {"pmemzerod_moves_total", "counter",
     "MOVE requests served (extents moved to new tags, all or nothing) since the daemon "
     "started.",
     get_moves},
    {"pmemzerod_waiters", "gauge", "ALLOCATE requests waiting for zeroing now.", get_waiters},
    {"pmemzerod_zero_fences_total", "counter",
     "Drains the zeroer threads issued: one per batch, plus one per group of extents handed "
     "back early while an allocation waited.",
     get_zero_fences},
    {"pmemzerod_region_up", "gauge", "1 while the region serves, 0 when it has failed.",
     get_region_up},
    {"pmemzerod_bad_blocks", "gauge",
     "Extents quarantined because of media errors (bad blocks) in the region.", get_bad_blocks},
};

/* Regions whose node is known (device-DAX): a gauge whose value is the node. */
static void emit_numa_node(FILE *f, const Pmemz__StatResp *s)
{
	family(f, "pmemzerod_region_numa_node", "gauge",
	       "NUMA node of the region's memory, where its zeroer threads run (known regions "
	       "only).");
	for (size_t i = 0; i < s->n_regions; i++) {
		const Pmemz__RegionStat *rs = s->regions[i];

		if (counters_known(rs) && rs->has_numa_node && rs->numa_node >= 0)
			sample_u64(f, "pmemzerod_region_numa_node", rs, NULL, NULL,
				   (uint64_t)rs->numa_node);
	}
}

static void emit_region_metrics(FILE *f, const struct ctl_metrics_in *in)
{
	const Pmemz__StatResp *s = in->stat;

	emit_numa_node(f, s);
	for (size_t m = 0; m < ARRAY_SIZE(region_metrics); m++) {
		const struct region_metric *rm = &region_metrics[m];

		family(f, rm->name, rm->type, rm->help);
		for (size_t i = 0; i < s->n_regions; i++)
			if (counters_known(s->regions[i]) || rm->get == get_region_up)
				sample_u64(f, rm->name, s->regions[i], NULL, NULL,
					   rm->get(s->regions[i]));
	}
}

/* A daemon older than the histogram sends no buckets: its regions have no samples. */
static bool has_wait_histogram(const Pmemz__RegionStat *rs)
{
	return rs->has_wait_count && rs->has_wait_sum_sec && rs->n_wait_bucket_le > 0 &&
	       rs->n_wait_bucket_le == rs->n_wait_bucket_count;
}

static void emit_allocate_wait(FILE *f, const struct ctl_metrics_in *in)
{
	const Pmemz__StatResp *s = in->stat;

	family(f, "pmemzerod_allocate_wait_seconds", "histogram",
	       "How long ALLOCATE requests that had to wait for zeroing waited, from joining the "
	       "queue to the grant.");
	for (size_t i = 0; i < s->n_regions; i++) {
		const Pmemz__RegionStat *rs = s->regions[i];
		char sum[40];

		if (!counters_known(rs) || !has_wait_histogram(rs))
			continue;
		for (size_t b = 0; b < rs->n_wait_bucket_le; b++) {
			char le[40];

			sample_u64(f, "pmemzerod_allocate_wait_seconds_bucket", rs, "le",
				   format_double(rs->wait_bucket_le[b], le, sizeof(le)),
				   rs->wait_bucket_count[b]);
		}
		sample_u64(f, "pmemzerod_allocate_wait_seconds_bucket", rs, "le", "+Inf",
			   rs->wait_count);
		sample_start(f, "pmemzerod_allocate_wait_seconds_sum", rs, NULL, NULL);
		(void)fprintf(f, " %s\n", format_double(rs->wait_sum_sec, sum, sizeof(sum)));
		sample_u64(f, "pmemzerod_allocate_wait_seconds_count", rs, NULL, NULL,
			   rs->wait_count);
	}
}

static void emit_connections(FILE *f, const struct ctl_metrics_in *in)
{
	const Pmemz__StatResp *s = in->stat;

	family(f, "pmemzerod_connections", "gauge", "Client connections to the daemon now.");
	(void)fprintf(f, "pmemzerod_connections %" PRIu64 "\n", s->connections);
}

/* The daemon's malloc heap; the daemon tells admins only. */
static void emit_heap(FILE *f, const struct ctl_metrics_in *in)
{
	const Pmemz__StatResp *s = in->stat;

	if (!s->has_heap_in_use)
		return;
	family(f, "pmemzerod_heap_in_use_bytes", "gauge",
	       "Bytes of the daemon's malloc heap in use now.");
	(void)fprintf(f, "pmemzerod_heap_in_use_bytes %" PRIu64 "\n", s->heap_in_use);
	family(f, "pmemzerod_heap_free_bytes", "gauge",
	       "Bytes the daemon's malloc holds free now (returned to the kernel or not).");
	(void)fprintf(f, "pmemzerod_heap_free_bytes %" PRIu64 "\n", s->heap_free);
	family(f, "pmemzerod_heap_trims_total", "counter",
	       "Times the daemon returned free heap pages to the kernel.");
	(void)fprintf(f, "pmemzerod_heap_trims_total %" PRIu64 "\n", s->heap_trims);
}

/* The per-uid families, one USAGE answer per region (pmemzctl usage). */
struct uid_metric {
	const char *name, *type, *help;
	uint64_t (*get)(const Pmemz__UidUsage *u);
};

static uint64_t uid_leased(const Pmemz__UidUsage *u)
{
	return u->leased;
}
static uint64_t uid_committed(const Pmemz__UidUsage *u)
{
	return u->committed;
}
static uint64_t uid_tags(const Pmemz__UidUsage *u)
{
	return u->tags;
}
static uint64_t uid_waiters(const Pmemz__UidUsage *u)
{
	return u->waiters;
}
static uint64_t uid_rezeroed(const Pmemz__UidUsage *u)
{
	return u->rezeroed;
}

static const struct uid_metric uid_metrics[] = {
    {"pmemzerod_uid_leased_bytes", "gauge", "Bytes the uid holds leased (not committed) now.",
     uid_leased},
    {"pmemzerod_uid_committed_bytes", "gauge", "Bytes committed under the uid's tags.",
     uid_committed},
    {"pmemzerod_uid_tags", "gauge", "Tags the uid has committed.", uid_tags},
    {"pmemzerod_uid_waiters", "gauge", "ALLOCATE requests of the uid waiting for zeroing now.",
     uid_waiters},
    {"pmemzerod_uid_rezeroed_bytes_total", "counter",
     "Bytes the zeroer made zero again after the uid freed them, since the daemon started.",
     uid_rezeroed},
};

/*
 * The uid families stay one sample per uid: with tenant = cgroup a uid's
 * rows (one per cgroup) are summed.
 */
static void emit_uid_usage(FILE *f, const struct ctl_metrics_in *in)
{
	const Pmemz__StatResp *s = in->stat;
	const Pmemz__UsageResp *const *usage = in->usage;

	if (!usage)
		return;
	for (size_t m = 0; m < ARRAY_SIZE(uid_metrics); m++) {
		const struct uid_metric *um = &uid_metrics[m];

		family(f, um->name, um->type, um->help);
		for (size_t i = 0; i < s->n_regions; i++) {
			const Pmemz__UsageResp *u = usage[i];

			for (size_t k = 0; u && k < u->n_uids; k++) {
				uint64_t sum = 0;
				char uid[16];
				size_t j;

				for (j = 0; j < k && u->uids[j]->uid != u->uids[k]->uid; j++)
					;
				if (j < k)
					continue; /* summed with its first row */
				for (j = k; j < u->n_uids; j++)
					if (u->uids[j]->uid == u->uids[k]->uid)
						sum += um->get(u->uids[j]);
				(void)snprintf(uid, sizeof(uid), "%u", u->uids[k]->uid);
				sample_u64(f, um->name, s->regions[i], "uid", uid, sum);
			}
		}
	}
}

static const struct uid_metric tenant_metrics[] = {
    {"pmemzerod_tenant_leased_bytes", "gauge",
     "Bytes the tenant holds leased (not committed) now.", uid_leased},
    {"pmemzerod_tenant_committed_bytes", "gauge", "Bytes committed under the tenant's tags.",
     uid_committed},
    {"pmemzerod_tenant_tags", "gauge", "Tags the tenant has committed.", uid_tags},
    {"pmemzerod_tenant_waiters", "gauge",
     "ALLOCATE requests of the tenant waiting for zeroing now.", uid_waiters},
    {"pmemzerod_tenant_rezeroed_bytes_total", "counter",
     "Bytes the zeroer made zero again after the tenant freed them, since the daemon started.",
     uid_rezeroed},
};

/*
 * Per tenant key (pmemzerod.conf(5) tenant): tenant="/kubepods.slice/..."
 * for a cgroup's row, tenant="uid:N" for a uid's; uid is the row's uid.
 */
static void emit_tenant_usage(FILE *f, const struct ctl_metrics_in *in)
{
	const Pmemz__StatResp *s = in->stat;
	const Pmemz__UsageResp *const *usage = in->usage;

	if (!usage)
		return;
	for (size_t m = 0; m < ARRAY_SIZE(tenant_metrics); m++) {
		const struct uid_metric *tm = &tenant_metrics[m];

		family(f, tm->name, tm->type, tm->help);
		for (size_t i = 0; i < s->n_regions; i++) {
			for (size_t k = 0; usage[i] && k < usage[i]->n_uids; k++) {
				const Pmemz__UidUsage *row = usage[i]->uids[k];
				char uid[16], tenant[32];

				(void)snprintf(uid, sizeof(uid), "%u", row->uid);
				(void)snprintf(tenant, sizeof(tenant), "uid:%u", row->uid);
				(void)fprintf(f, "%s{region=", tm->name);
				put_label_value(f, s->regions[i]->info->name);
				(void)fputs(",tenant=", f);
				put_label_value(f, row->tenant ? row->tenant : tenant);
				(void)fputs(",uid=", f);
				put_label_value(f, uid);
				(void)fprintf(f, "} %" PRIu64 "\n", tm->get(row));
			}
		}
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
 * is what the disk holds of the region.
 */
static void emit_disks(FILE *f, const struct ctl_metrics_in *in)
{
	static const struct {
		const char *name, *help;
		bool ahead;
	} fams[] = {
	    {"pmemzerod_disk_mapped_bytes",
	     "Bytes of the nbd disk's chunks: extents mapped into the disk (pmemzctl disks, "
	     "allocated).",
	     false},
	    {"pmemzerod_disk_ahead_bytes",
	     "Bytes the nbd disk owns ahead of need, zeroed and not mapped yet (pmemzctl disks, "
	     "ahead).",
	     true},
	};

	if (!in->disks)
		return;
	for (size_t m = 0; m < ARRAY_SIZE(fams); m++) {
		family(f, fams[m].name, "gauge", fams[m].help);
		for (size_t i = 0; i < in->stat->n_regions; i++) {
			struct disk_emit e = {.f = f,
					      .name = fams[m].name,
					      .region = in->stat->regions[i]->info->name,
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

int ctl_metrics_write(FILE *f, const Pmemz__StatResp *s)
{
	return ctl_metrics_write_usage(f, s, NULL);
}

int ctl_metrics_write_usage(FILE *f, const Pmemz__StatResp *s,
			    const Pmemz__UsageResp *const *usage)
{
	const struct ctl_metrics_in in = {.stat = s, .usage = usage};

	return ctl_metrics_write_in(f, &in);
}

int ctl_metrics_write_in(FILE *f, const struct ctl_metrics_in *in)
{
	for (size_t i = 0; i < ARRAY_SIZE(emitters); i++)
		emitters[i](f, in);
	if (fflush(f) == EOF || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
