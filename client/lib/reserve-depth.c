/* SPDX-License-Identifier: MIT */
/*
 * The reserve's depth policy (pmemz_depth_*, see client-private.h), apart
 * from the I/O so that tests drive it with simulated time: how many leases
 * reserve.c keeps out, from each answer's latency, the caller's time
 * between allocations, the allocations that had to wait and the daemon's
 * refusals.  A leaf: it calls nothing of the library.
 */
#include "client-private.h"

/* Depth policy constants: see pmemz_depth_answered. */
#define DEPTH_SAFETY 2u	     /* leases for twice the latency the reserve saw */
#define DEPTH_LAT_DECAY 128u /* the latency maximum loses 1/128 per answer */
#define DEPTH_GAP_WEIGHT 8u  /* the gap is an average over ~8 allocations */
#define DEPTH_SHRINK_STEP 8u /* shrink by 1/8 of the excess per calm period */

static size_t depth_need(const struct pmemz_depth *d);

static void depth_clamp(struct pmemz_depth *d)
{
	size_t top = MIN(d->cap, d->ceiling);

	d->target = MAX(d->floor, MIN(d->target, top));
	d->max_target = MAX(d->max_target, d->target);
}

void pmemz_depth_reset(struct pmemz_depth *d, size_t floor, size_t cap)
{
	*d = (struct pmemz_depth){.floor = floor, .cap = MAX(cap, floor), .ceiling = SIZE_MAX};
	d->target = floor;
	depth_clamp(d);
}

void pmemz_depth_resize(struct pmemz_depth *d, size_t floor, size_t cap)
{
	struct pmemz_depth old = *d;

	pmemz_depth_reset(d, floor, cap);
	d->lat_ns = old.lat_ns;
	d->gap_ns = old.gap_ns;
	d->last_ns = old.last_ns;
	d->target = MAX(floor, depth_need(d));
	depth_clamp(d);
	d->max_target = d->target;
}

void pmemz_depth_begin(struct pmemz_depth *d, uint64_t now_ns)
{
	uint64_t gap;

	if (!d->last_ns || now_ns < d->last_ns)
		return;
	/*
	 * A pause longer than the latency says nothing about how fast the
	 * caller allocates when it does (the reserve refills meanwhile
	 * anyway): clamped, an idle second does not hide the next burst.
	 */
	gap = now_ns - d->last_ns;
	if (d->gap_ns)
		gap = MIN(gap, MAX(d->lat_ns, 2 * d->gap_ns));
	if (!d->gap_ns)
		d->gap_ns = gap;
	else
		d->gap_ns = d->gap_ns - d->gap_ns / DEPTH_GAP_WEIGHT + gap / DEPTH_GAP_WEIGHT;
}

void pmemz_depth_end(struct pmemz_depth *d, uint64_t now_ns)
{
	d->last_ns = now_ns;
}

/* Leases the caller uses up while one refill is under way, with the safety factor. */
static size_t depth_need(const struct pmemz_depth *d)
{
	uint64_t need;

	if (!d->gap_ns)
		return d->floor;
	need = DIV_ROUND_UP(d->lat_ns * DEPTH_SAFETY, MAX(d->gap_ns, (uint64_t)1));
	/* Refills go out a batch (half the target) short of it: cover that too. */
	need *= 2;
	return (size_t)MIN(need, (uint64_t)SIZE_MAX / 4);
}

void pmemz_depth_answered(struct pmemz_depth *d, uint64_t lat_ns, bool stalled)
{
	size_t need, low;

	/* Up at once, down slowly: one prompt answer does not make the daemon prompt. */
	d->lat_ns = MAX(lat_ns, d->lat_ns - d->lat_ns / DEPTH_LAT_DECAY);
	need = depth_need(d);
	if (stalled) {
		/* Ran dry: the caller waited a round trip.  Grow fast. */
		d->stalls++;
		d->target = MAX(need, 2 * d->target);
		d->calm = 0;
	} else if (need > d->target) {
		d->target = need;
		d->calm = 0;
	} else if (++d->calm >= d->target) {
		/* A depth's worth of answers in time: give an eighth of the excess back. */
		low = MAX(d->floor, need);
		if (d->target > low)
			d->target -= MAX((d->target - low) / DEPTH_SHRINK_STEP, (size_t)1);
		d->calm = 0;
	}
	depth_clamp(d);
}

void pmemz_depth_pending(struct pmemz_depth *d, uint64_t age_ns)
{
	size_t need;

	/* Its latency is at least its age: deepen before running dry. */
	if (age_ns <= d->lat_ns)
		return;
	d->lat_ns = age_ns;
	need = depth_need(d);
	if (need > d->target) {
		d->target = need;
		d->calm = 0;
		depth_clamp(d);
	}
}

void pmemz_depth_refused(struct pmemz_depth *d, size_t held)
{
	/*
	 * The uid's quota or the region is full: what is out is about what
	 * fits.  Halve, and never grow past that again until the caller sets
	 * the reserve anew; the floor stays (its refusals back off instead).
	 */
	d->target = MAX(d->floor, MIN(d->target / 2, held));
	d->ceiling = d->target;
	d->cuts++;
	d->calm = 0;
	depth_clamp(d);
}

size_t pmemz_depth_batch(const struct pmemz_depth *d)
{
	/*
	 * Half the depth: each refill's send wakes the daemon, and on a busy
	 * machine the woken daemon takes the caller's CPU, which it gets back
	 * only after the other runnable tasks had theirs (milliseconds at a
	 * load of 20): fewer, bigger batches cost fewer of those.
	 */
	return MAX(d->target / 2, (size_t)1);
}
