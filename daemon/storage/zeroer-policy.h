/* SPDX-License-Identifier: MIT */
/*
 * The adaptive zeroing policy (zero_policy = adaptive, pmemzerod.conf(5)):
 * keep a ready reserve of ZEROED extents sized from the recent allocation
 * rate, with a low and a high watermark, and spend memory bandwidth on
 * zeroing only as fast as that reserve needs.
 *
 *   FAST   zeroed < low, or an allocation waits: the zeroer runs at its
 *          configured rate (unlimited by default);
 *   PACED  entered from FAST at the low watermark: zeroing goes on at
 *          zero_pace_rate up to the high watermark;
 *   IDLE   at the high watermark: no zeroing until the reserve falls below
 *          the low watermark again (FreeBSD's idle zeroing hysteresis).
 *
 * low = max(reserve_min, rate x reserve_low_ms), high = max(2 x low,
 * rate x reserve_high_ms), both at most the extents that can be free.
 * The rate is an exponentially weighted moving average of extents leased
 * per second, with a time constant of five seconds.  Pure logic, main loop
 * only: no locks, no clock of its own (callers pass the time).
 */
#ifndef PMEMZ_ZEROER_POLICY_H
#define PMEMZ_ZEROER_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"

enum zpolicy_zone { ZP_FAST, ZP_PACED, ZP_IDLE };

struct zpolicy {
	bool adaptive;
	uint64_t reserve_min; /* extents */
	unsigned low_ms, high_ms;
	uint64_t pace_rate; /* bytes per second */
	uint64_t limit;	    /* extents the watermarks may reach */

	double rate; /* extents leased per second, smoothed */
	uint64_t win_start_ns, win_count;

	enum zpolicy_zone zone;
	uint64_t low, high; /* extents, as last decided */
	uint64_t changes;   /* zone changes since start */
};

void zeroer_policy_init(struct zpolicy *p, const struct zero_policy_conf *c, uint64_t extent_size,
			uint64_t extent_count, uint64_t now_ns);
/* n extents were leased at now_ns. */
void zeroer_policy_note_alloc(struct zpolicy *p, uint64_t n, uint64_t now_ns);
/* The zone for this many ZEROED extents; waiting: an allocation waits for zeroing. */
enum zpolicy_zone zeroer_policy_decide(struct zpolicy *p, uint64_t zeroed, bool waiting,
				       uint64_t now_ns);
const char *zeroer_policy_zone_name(enum zpolicy_zone z);

#endif
