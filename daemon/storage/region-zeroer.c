/* SPDX-License-Identifier: MIT */
/*
 * The region's side of background zeroing (main loop only): take DIRTY
 * extents out of the index into batches for the pool (zeroer.c), collect
 * the finished ones and store them ZEROED, and apply the adaptive
 * policy's zone.  Above the index, below the region's lifecycle; the pool
 * knows nothing of regions.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "log.h"
#include "region-internal.h"
#include "zeroer.h"

/* A batch never spans more than this, whatever batch_extents says. */
#define BATCH_MAX_BYTES (256ull << 20)

int region_zeroer_start(struct region *r)
{
	struct zeroer_params p = {
	    .name = r->name,
	    .ps = r->ps,
	    .data = r->base + r->data_off,
	    .extent_size = r->extent_size,
	    .extent_count = r->extent_count,
	    .threads = r->zeroer_threads,
	    .rate = r->rc->zero_rate,
	    .numa_node = r->devdax ? pstore_numa_node(r->ps) : -1,
	    .prefault = !r->devdax,
	};

	/* Kept for STAT: operators check that each region's zeroer is on its node. */
	r->numa_node = p.numa_node;
	if (p.numa_node >= 0)
		log_info("region '%s': on NUMA node %d, its zeroer threads run there", r->name,
			 p.numa_node);

	zeroer_policy_init(&r->pol, &r->rc->policy, r->extent_size, r->extent_count,
			   pmemz_now_ns());
	return zeroer_new(&p, &r->z);
}

/* Apply the policy's zone for the reserve as it is now. */
static void region_zeroer_policy(struct region *r)
{
	enum zpolicy_zone old = r->pol.zone, z;

	if (!r->z || !r->pol.adaptive)
		return;
	z = zeroer_policy_decide(&r->pol, r->count[EXT_ZEROED], zeroer_urgent(r->z),
				 pmemz_now_ns());
	if (z == old)
		return;
	log_debug("region '%s': zeroing %s (%" PRIu64 " zeroed, watermarks %" PRIu64 "/%" PRIu64
		  ", %.0f extents/s)",
		  r->name, zeroer_policy_zone_name(z), r->count[EXT_ZEROED], r->pol.low,
		  r->pol.high, r->pol.rate);
	zeroer_set_policy(r->z, z == ZP_PACED ? r->pol.pace_rate : 0, z == ZP_IDLE);
	if (old == ZP_IDLE)
		region_zeroer_kick(r);
}

void region_zeroer_note_lease(struct region *r, uint64_t n)
{
	if (!r->pol.adaptive)
		return;
	zeroer_policy_note_alloc(&r->pol, n, pmemz_now_ns());
	region_zeroer_policy(r);
}

void region_zeroer_policy_state(const struct region *r, struct region_policy_state *out)
{
	struct zpolicy now = r->pol;

	/* The rate as of now, though no allocation or batch came to update it. */
	zeroer_policy_note_alloc(&now, 0, pmemz_now_ns());
	*out = (struct region_policy_state){
	    .policy = r->pol.adaptive ? "adaptive" : "full",
	    .zone = zeroer_policy_zone_name(r->pol.zone),
	    .low = r->pol.low,
	    .high = r->pol.high,
	    .alloc_rate = now.rate,
	    .changes = r->pol.changes,
	};
}

void region_zeroer_stop(struct region *r)
{
	/* Batches not collected stay DIRTY on media; their flags die with the index. */
	zeroer_free(r->z);
	r->z = NULL;
	r->zb_live = NULL; /* freed with the pool */
}

void region_zeroer_kick(struct region *r)
{
	uint64_t per =
	    MAX((uint64_t)1, MIN((uint64_t)r->batch_extents, BATCH_MAX_BYTES / r->extent_size));
	uint64_t ready;

	if (!r->z || zeroer_paused(r->z) || region_mapping_failed(r, NULL, NULL) ||
	    r->pol.zone == ZP_IDLE)
		return;
	/*
	 * The policy decides at each collected batch: batches of at most a
	 * quarter of the low watermark keep full-speed zeroing from running far
	 * past it before pacing starts.
	 */
	if (r->pol.adaptive)
		per = MAX((uint64_t)1, MIN(per, r->pol.low / 4));
	/* Two batches per thread: one being zeroed, one queued behind it. */
	while ((ready = region_index_ready(r)) && r->zeroer_outstanding < 2 * r->zeroer_threads) {
		/*
		 * At the tail, threads share what is left evenly, so that one
		 * does not zero a last full batch while the others sit idle
		 * (a waiter sees the last extent, not the average).
		 */
		uint64_t n = MIN(per, r->zeroer_threads > 1
					  ? (ready + r->zeroer_threads - 1) / r->zeroer_threads
					  : ready);
		struct zbatch *b = malloc(sizeof(*b) + n * sizeof(b->ext[0]));

		if (!b) {
			log_warning("region '%s': out of memory for a zeroer batch", r->name);
			return;
		}
		n = region_index_take_batch(r, b->ext, n);
		b->n = (uint32_t)n;
		b->done = 0;
		b->durable = 0;
		b->ran = false;
		b->fences = 0;
		b->busy_ns = 0;
		b->taken = 0;
		b->live_next = r->zb_live;
		r->zb_live = b;
		r->zeroer_outstanding++;
		zeroer_submit(r->z, b);
	}
}

int region_zeroer_fd(const struct region *r)
{
	return r->z ? zeroer_fd(r->z) : -1;
}

static void zeroed_range(struct region *r, uint64_t first, uint64_t count)
{
	region_index_rec_flush(r, first, count);
	if (r->zeroed_fn)
		r->zeroed_fn(r->zeroed_ctx, first, count);
}

void region_zeroer_set_hook(struct region *r, region_zeroed_fn fn, void *ctx)
{
	r->zeroed_fn = fn;
	r->zeroed_ctx = ctx;
}

/* ext[0..n) are zero and fenced: store them ZEROED (I5), in runs for the flush and the hook. */
static void store_zeroed(struct region *r, const uint64_t *ext, uint32_t n)
{
	uint64_t seg = 0, seg_n = 0;

	for (uint32_t k = 0; k < n; k++) {
		uint64_t i = ext[k];

		region_index_rec_store(r, i, EXT_ZEROED, 0,
				       layout_rec_gen(region_index_rec_load(r, i)));
		region_index_set(r, i, EXT_ZEROED);
		if (seg_n && i == seg + seg_n) {
			seg_n++;
		} else {
			if (seg_n)
				zeroed_range(r, seg, seg_n);
			seg = i;
			seg_n = 1;
		}
	}
	if (seg_n)
		zeroed_range(r, seg, seg_n);
	r->st.bytes_zeroed += (uint64_t)n * r->extent_size;
}

/*
 * Take what b has made durable since the last look: all of it when the
 * batch is finished (the rest goes back to the ready set), else its
 * hand-back count.  Returns the extents stored ZEROED.
 */
static uint64_t collect_batch(struct region *r, struct zbatch *b, bool finished)
{
	uint32_t upto = finished ? b->done : __atomic_load_n(&b->durable, __ATOMIC_ACQUIRE);
	uint32_t from = b->taken;

	/* Checked again here: the fault may have come after the worker's check. */
	if (region_mapping_failed(r, NULL, NULL) || upto < from)
		upto = from;
	if (finished)
		region_index_return_batch(r, b->ext + from, b->n - from, upto - from);
	else
		region_index_return_batch(r, b->ext + from, upto - from, upto - from);
	store_zeroed(r, b->ext + from, upto - from);
	b->taken = upto;
	return upto - from;
}

/* b came back through the done queue: off the live list. */
static void unlink_live(struct region *r, struct zbatch *b)
{
	for (struct zbatch **pp = &r->zb_live; *pp; pp = &(*pp)->live_next) {
		if (*pp == b) {
			*pp = b->live_next;
			return;
		}
	}
}

uint64_t region_zeroer_collect(struct region *r)
{
	struct zbatch *b;
	uint64_t zeroed = 0;

	if (!r->z)
		return 0;
	b = zeroer_take_done(r->z);
	while (b) {
		struct zbatch *next = b->next;

		unlink_live(r, b);
		zeroed += collect_batch(r, b, true);
		r->st.zero_batches += b->ran;
		r->st.zero_busy_ns += b->busy_ns;
		r->st.zero_fences += b->fences;
		r->zeroer_outstanding--;
		free(b);
		b = next;
	}
	/* Hand-backs of the batches still running (an allocation waits). */
	for (b = r->zb_live; b; b = b->live_next)
		zeroed += collect_batch(r, b, false);
	if (zeroed)
		r->pending = true; /* ZEROED records are durable at the next region_sync */
	region_zeroer_policy(r);
	region_zeroer_kick(r);
	return zeroed;
}

void region_zeroer_set_urgent(struct region *r, bool urgent)
{
	if (r->z)
		zeroer_set_urgent(r->z, urgent);
	region_zeroer_policy(r);
}

void region_zeroer_set_need(struct region *r, uint64_t n)
{
	if (r->z)
		zeroer_set_need(r->z, n);
}

void region_zeroer_pause(struct region *r, bool paused)
{
	if (r->z)
		zeroer_set_paused(r->z, paused);
	if (!paused)
		region_zeroer_kick(r);
}

bool region_zeroer_paused(const struct region *r)
{
	return r->z && zeroer_paused(r->z);
}

void region_zeroer_set_rate(struct region *r, uint64_t bytes_per_sec)
{
	if (r->z)
		zeroer_set_rate(r->z, bytes_per_sec);
}

int region_zeroer_set_threads(struct region *r, unsigned n)
{
	int ret;

	n = MIN(MAX(n, 1u), CONF_MAX_ZEROER_THREADS);
	if (r->z) {
		ret = zeroer_set_threads(r->z, n);
		if (ret < 0)
			return ret;
	}
	if (n != r->zeroer_threads)
		log_info("region '%s': %u zeroer thread(s), was %u", r->name, n, r->zeroer_threads);
	r->zeroer_threads = n;
	region_zeroer_kick(r); /* more threads take more batches */
	return 0;
}
