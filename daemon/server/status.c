/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "connection.h"
#include "notify.h"
#include "regions.h"
#include "server.h"
#include "status.h"
#include "waitq.h"

/* STATUS as last sent, and what it must say first: nobody else writes it. */
struct status {
	char line[256];
	char reload_error[192]; /* why the last reload changed nothing; "" */
};

int status_new(struct status **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void status_free(struct status *st)
{
	free(st);
}

/*
 * What the operator must see first, before the counts: a failed reload,
 * removed regions kept in use, failed regions.  -ENOSPC when buf is full.
 */
static int status_notes(const struct manager *m, const struct manager_region *first_failed,
			size_t n_failed, char **bufp, size_t *lenp)
{
	char *buf = *bufp;
	size_t len = *lenp;

	if (m->status->reload_error[0]) {
		/* First: the operator who just reloaded looks for this. */
		int k = snprintf(buf, len, "RELOAD FAILED, configuration unchanged: %s; ",
				 m->status->reload_error);

		if (k < 0 || (size_t)k >= len)
			return -ENOSPC;
		buf += k;
		len -= (size_t)k;
	}
	for (size_t i = 0; i < m->n_regions; i++) {
		const struct manager_region *mr = m->regions[i];
		int k;

		if (!regions_removing(mr))
			continue;
		k = snprintf(buf, len, "region '%s' removed, kept while in use; ", mr->rc->name);
		if (k < 0 || (size_t)k >= len)
			return -ENOSPC;
		buf += k;
		len -= (size_t)k;
	}
	if (first_failed) {
		/* The failure first: a long reason must not push it out of STATUS. */
		int k = n_failed == 1
			    ? snprintf(buf, len, "DEGRADED: region '%s' failed: %s; ",
				       first_failed->rc->name, first_failed->failure)
			    : snprintf(buf, len, "DEGRADED: %zu regions failed, first '%s': %s; ",
				       n_failed, first_failed->rc->name, first_failed->failure);

		if (k < 0 || (size_t)k >= len)
			return -ENOSPC;
		buf += k;
		len -= (size_t)k;
	}
	*bufp = buf;
	*lenp = len;
	return 0;
}

void status_format(struct manager *m, char *buf, size_t len)
{
	uint64_t count[EXT_NSTATES] = {0}, total = 0, zeroing = 0, waiters = 0;
	char zeroed_s[32], total_s[32];
	uint64_t zeroed_bytes = 0, total_bytes = 0;
	const struct manager_region *first_failed = NULL;
	size_t n_failed = 0, n;

	for (size_t i = 0; i < m->n_regions; i++) {
		struct manager_region *mr = m->regions[i];
		struct region_stats st = {0};

		if (mr->failed) {
			if (!n_failed++)
				first_failed = mr;
			continue;
		}
		region_get_stats(mr->r, &st);
		for (int s = 0; s < EXT_NSTATES; s++)
			count[s] += st.count[s];
		total += mr->info.extent_count;
		zeroing += st.zeroing;
		waiters += waitq_count(mr);
		zeroed_bytes += st.count[EXT_ZEROED] * mr->info.extent_size;
		total_bytes += mr->info.extent_count * mr->info.extent_size;
	}
	n = m->n_regions - n_failed;
	if (status_notes(m, first_failed, n_failed, &buf, &len) < 0)
		return;
	(void)snprintf(
	    buf, len,
	    "%zu region%s: %s of %s zeroed (%" PRIu64 "/%" PRIu64 " extents), %" PRIu64
	    " dirty%s, %" PRIu64 " leased, %" PRIu64 " committed; %" PRIu64 " client%s%s",
	    n, n == 1 ? "" : "s", pmemz_format_size(zeroed_bytes, zeroed_s, sizeof(zeroed_s)),
	    pmemz_format_size(total_bytes, total_s, sizeof(total_s)), count[EXT_ZEROED], total,
	    count[EXT_DIRTY], zeroing ? " (zeroing)" : "", count[EXT_LEASED], count[EXT_COMMITTED],
	    connections_count(m), connections_count(m) == 1 ? "" : "s",
	    waiters ? ", allocations waiting" : "");
}

void status_update(struct manager *m)
{
	char status[sizeof(m->status->line)];

	status_format(m, status, sizeof(status));
	if (strcmp(status, m->status->line) == 0)
		return;
	memcpy(m->status->line, status, sizeof(status));
	notify_status(status);
}

void status_ready(struct manager *m)
{
	status_format(m, m->status->line, sizeof(m->status->line));
	notify_ready(m->status->line);
}

void status_reload_result(struct manager *m, const char *why)
{
	(void)snprintf(m->status->reload_error, sizeof(m->status->reload_error), "%s",
		       why ? why : "");
	status_ready(m);
}
