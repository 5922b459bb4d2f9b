/* SPDX-License-Identifier: MIT */

#include "util.h"
#include "zeroer-policy.h"

#define WINDOW_NS 100000000ull /* rate samples at least this long */
/*
 * The rate's time constant: long enough that a burst of a fraction of a
 * second, which the reserve is there to absorb, does not raise the low
 * watermark above the reserve and set the zeroer racing the burst for
 * memory bandwidth; short enough to follow a sustained change in seconds.
 */
#define TAU_NS 5e9

void zeroer_policy_init(struct zpolicy *p, const struct zero_policy_conf *c, uint64_t extent_size,
			uint64_t extent_count, uint64_t now_ns)
{
	*p = (struct zpolicy){
	    .adaptive = c->adaptive,
	    .reserve_min = MAX((uint64_t)1, c->reserve_min / extent_size),
	    .low_ms = c->low_ms,
	    .high_ms = c->high_ms,
	    .pace_rate = c->pace_rate,
	    .limit = extent_count,
	    .win_start_ns = now_ns,
	    .zone = ZP_FAST,
	};
	/* Before any decision: the floor (the zeroer sizes its batches from it). */
	p->low = MIN(p->limit, p->reserve_min);
	p->high = MIN(p->limit, 2 * p->low);
}

static void roll(struct zpolicy *p, uint64_t now_ns)
{
	uint64_t el = now_ns - p->win_start_ns;
	double inst, a;

	if (now_ns < p->win_start_ns || el < WINDOW_NS)
		return;
	inst = (double)p->win_count * 1e9 / (double)el;
	a = (double)el / ((double)el + TAU_NS); /* 1 - exp(-el / tau), near enough */
	p->rate += a * (inst - p->rate);
	p->win_start_ns = now_ns;
	p->win_count = 0;
}

void zeroer_policy_note_alloc(struct zpolicy *p, uint64_t n, uint64_t now_ns)
{
	roll(p, now_ns);
	p->win_count += n;
}

enum zpolicy_zone zeroer_policy_decide(struct zpolicy *p, uint64_t zeroed, bool waiting,
				       uint64_t now_ns)
{
	enum zpolicy_zone z = p->zone;

	roll(p, now_ns);
	p->low = MIN(p->limit, MAX(p->reserve_min, (uint64_t)(p->rate * p->low_ms / 1000.0)));
	p->high = MIN(p->limit, MAX(2 * p->low, (uint64_t)(p->rate * p->high_ms / 1000.0)));
	if (!p->adaptive || waiting || zeroed < p->low)
		z = ZP_FAST;
	else if (zeroed >= p->high)
		z = ZP_IDLE;
	else if (z == ZP_FAST)
		z = ZP_PACED; /* up from below the low watermark: paced to the high one */
	/* else PACED or IDLE between the watermarks: unchanged (hysteresis) */
	if (z != p->zone)
		p->changes++;
	p->zone = z;
	return z;
}

const char *zeroer_policy_zone_name(enum zpolicy_zone z)
{
	switch (z) {
	case ZP_FAST:
		return "fast";
	case ZP_PACED:
		return "paced";
	case ZP_IDLE:
		return "idle";
	}
	return "?";
}
