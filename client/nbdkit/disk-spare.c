/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the leases left over by lost races.  Two requests
 * that find the same chunk fresh both lease an extent; the loser used to
 * free its lease, which the daemon then zeroed again (12-33 of them per
 * bench-disk run, 24-106 MiB of zeroing for nothing).  Kept here, bounded
 * (spares=), the next fresh chunk takes one without a round trip.
 *
 * A kept lease is as good as one from the reserve only while its
 * connection lives: after a reconnect the daemon has released the old
 * connection's leases and may have zeroed them and leased them to someone
 * else.  So each one remembers its connection (disk_gen) and one of an
 * older connection is closed, never handed out.  (disk_commit_chunk would
 * also refuse it, -ESTALE, before any store; this is the first line.)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"

int disk_spares_init(struct disk *d)
{
	if (!d->cfg.spares)
		return 0;
	d->spares.v = calloc(d->cfg.spares, sizeof(*d->spares.v));
	return d->spares.v ? 0 : -ENOMEM;
}

void disk_spare_put(struct disk *d, struct pmemz_alloc *a, uint64_t gen)
{
	bool kept = false;

	pthread_mutex_lock(&d->spares.lock);
	if (d->spares.n < d->cfg.spares && gen == disk_gen(d)) {
		d->spares.v[d->spares.n++] = (struct disk_spare){a, gen};
		d->spares.kept++;
		kept = true;
	}
	pthread_mutex_unlock(&d->spares.lock);
	if (kept) {
		nbdkit_debug("pmemz: spare lease kept");
	} else {
		nbdkit_debug("pmemz: spare lease given back");
		pmemz_alloc_close(a); /* the daemon frees it (and zeroes it again) */
	}
}

struct pmemz_alloc *disk_spare_take(struct disk *d)
{
	struct pmemz_alloc *a = NULL, *old[DISK_SPARES_MAX];
	unsigned n_old = 0;
	uint64_t gen = disk_gen(d);

	if (!d->cfg.spares)
		return NULL;
	pthread_mutex_lock(&d->spares.lock);
	while (!a && d->spares.n) {
		struct disk_spare s = d->spares.v[--d->spares.n];

		if (s.gen == gen) {
			a = s.a;
			d->spares.used++;
		} else {
			old[n_old++] = s.a;
			d->spares.dropped++;
		}
	}
	pthread_mutex_unlock(&d->spares.lock);
	/* dead with their connection: closing only drops the handles */
	for (unsigned i = 0; i < n_old; i++)
		pmemz_alloc_close(old[i]);
	if (n_old)
		nbdkit_debug("pmemz: dropped %u spare lease(s) of an older connection", n_old);
	if (a)
		nbdkit_debug("pmemz: spare lease used");
	return a;
}

void disk_spares_fini(struct disk *d)
{
	if (d->spares.v) {
		for (unsigned i = 0; i < d->spares.n; i++)
			pmemz_alloc_close(d->spares.v[i].a);
		nbdkit_debug("pmemz: spare leases: %" PRIu64 " kept, %" PRIu64 " used, %" PRIu64
			     " dropped (older connection), %u given back at close",
			     d->spares.kept, d->spares.used, d->spares.dropped, d->spares.n);
		free(d->spares.v);
		d->spares.v = NULL;
		d->spares.n = 0;
	}
}
