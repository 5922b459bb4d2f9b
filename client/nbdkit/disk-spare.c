/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the leases left over by lost races.  Two requests
 * that find the same chunk fresh both lease an extent, and one loses the
 * race for the chunk.  Freed, its lease would be zeroed again by the
 * daemon for nothing; kept here, bounded (spares=), it goes to the next
 * fresh chunk without a round trip.
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

struct disk_spare {
	struct pmemz_alloc *a;
	uint64_t gen; /* the connection it was leased on */
};

struct disk_spares {
	struct disk *d;
	unsigned max;	      /* spares= */
	pthread_mutex_t lock; /* all below */
	struct disk_spare *v; /* max entries */
	unsigned n;
	uint64_t kept, used, dropped; /* for the debug line at close */
};

int disk_spares_new(struct disk *d, unsigned max, struct disk_spares **out)
{
	struct disk_spares *s = calloc(1, sizeof(*s));

	if (s && max)
		s->v = calloc(max, sizeof(*s->v));
	if (!s || (max && !s->v)) {
		free(s);
		nbdkit_error("pmemz: out of memory");
		return -ENOMEM;
	}
	s->d = d;
	s->max = max;
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

void disk_spare_put(struct disk_spares *s, struct pmemz_alloc *a, uint64_t gen)
{
	bool kept = false;

	pthread_mutex_lock(&s->lock);
	if (s->n < s->max && gen == disk_gen(s->d)) {
		s->v[s->n++] = (struct disk_spare){a, gen};
		s->kept++;
		kept = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (kept) {
		nbdkit_debug("pmemz: spare lease kept");
	} else {
		nbdkit_debug("pmemz: spare lease given back");
		pmemz_alloc_close(a); /* the daemon frees it (and zeroes it again) */
	}
}

struct pmemz_alloc *disk_spare_take(struct disk_spares *s)
{
	struct pmemz_alloc *a = NULL, *old[DISK_SPARES_MAX];
	unsigned n_old = 0;
	uint64_t gen = disk_gen(s->d);

	if (!s->max)
		return NULL;
	pthread_mutex_lock(&s->lock);
	while (!a && s->n) {
		struct disk_spare sp = s->v[--s->n];

		if (sp.gen == gen) {
			a = sp.a;
			s->used++;
		} else {
			old[n_old++] = sp.a;
			s->dropped++;
		}
	}
	pthread_mutex_unlock(&s->lock);
	/* dead with their connection: closing only drops the handles */
	for (unsigned i = 0; i < n_old; i++)
		pmemz_alloc_close(old[i]);
	if (n_old)
		nbdkit_debug("pmemz: dropped %u spare lease(s) of an older connection", n_old);
	if (a)
		nbdkit_debug("pmemz: spare lease used");
	return a;
}

void disk_spares_free(struct disk_spares *s)
{
	if (!s)
		return;
	if (s->max) {
		for (unsigned i = 0; i < s->n; i++)
			pmemz_alloc_close(s->v[i].a);
		nbdkit_debug("pmemz: spare leases: %" PRIu64 " kept, %" PRIu64 " used, %" PRIu64
			     " dropped (older connection), %u given back at close",
			     s->kept, s->used, s->dropped, s->n);
	}
	free(s->v);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
