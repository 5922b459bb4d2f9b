/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fake-region.h"
#include "util.h"

#define FAKE_TAGS 64
#define FAKE_TAG_NAME_MAX 63
#define FAKE_MAX_REGIONS 8

struct fake_tag {
	bool used;
	char name[FAKE_TAG_NAME_MAX + 1];
	uid_t uid;
};

struct region {
	const struct region_conf *rc;
	uint64_t n;
	uint8_t *state;
	uint32_t *tag_of;
	struct fake_tag tags[FAKE_TAGS + 1]; /* ids 1..FAKE_TAGS */
	int efd;
	int memfd;
	bool pending;
	uint64_t drains;
	uint64_t bytes_zeroed;
	uint64_t zero_batches;
	_Atomic uint64_t durable[EXT_NSTATES];
	_Atomic uint64_t syncs;
	_Atomic bool urgent;
	bool paused;
	region_zeroed_fn zeroed_fn;
	void *zeroed_ctx;
	_Atomic bool failed; /* set by the test thread, read by the loop */
};

static struct region *fake_regions[FAKE_MAX_REGIONS];
static unsigned fake_n_regions;
static long fake_sync_delay_ns = 2 * 1000 * 1000;

static long fake_tag_delay_ns;

void fake_region_set_tag_delay(long ns)
{
	__atomic_store_n(&fake_tag_delay_ns, ns, __ATOMIC_RELAXED);
}

void fake_region_set_sync_delay(long ns)
{
	fake_sync_delay_ns = ns;
}

struct region *fake_region_get(unsigned i)
{
	return i < fake_n_regions ? fake_regions[i] : NULL;
}

void fake_region_reset(void)
{
	fake_n_regions = 0;
}

void fake_region_zero(struct region *r, uint64_t n)
{
	(void)eventfd_write(r->efd, n);
}

uint64_t fake_region_durable(struct region *r, enum extent_state s)
{
	return atomic_load(&r->durable[s]);
}

bool fake_region_urgent(struct region *r)
{
	return atomic_load(&r->urgent);
}

uint64_t fake_region_syncs(struct region *r)
{
	return atomic_load(&r->syncs);
}

int region_open(const struct region_conf *rc, struct region **out)
{
	struct region *r;

	if (fake_n_regions == FAKE_MAX_REGIONS || !rc->extent_size || rc->size < rc->extent_size)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->rc = rc;
	r->n = rc->size / rc->extent_size;
	r->state = calloc(r->n, 1); /* all DIRTY */
	r->tag_of = calloc(r->n, sizeof(*r->tag_of));
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->memfd = memfd_create("fake-region", MFD_CLOEXEC);
	if (!r->state || !r->tag_of || r->efd < 0 || r->memfd < 0 ||
	    ftruncate(r->memfd, (off_t)rc->size) < 0) {
		region_close(r);
		return -ENOMEM;
	}
	atomic_store(&r->durable[EXT_DIRTY], r->n);
	fake_regions[fake_n_regions++] = r;
	*out = r;
	return 0;
}

void region_close(struct region *r)
{
	if (!r)
		return;
	if (r->efd >= 0)
		close(r->efd);
	if (r->memfd >= 0)
		close(r->memfd);
	free(r->state);
	free(r->tag_of);
	free(r);
}

const struct region_conf *region_get_conf(const struct region *r)
{
	return r->rc;
}

void region_set_conf(struct region *r, const struct region_conf *rc)
{
	r->rc = rc;
}

void region_get_info(const struct region *r, struct region_info *info)
{
	memset(info, 0, sizeof(*info));
	info->name = r->rc->name;
	info->path = r->rc->path;
	info->size = r->rc->size;
	info->extent_size = r->rc->extent_size;
	info->extent_count = r->n;
	info->data_offset = 0;
	memset(info->uuid, 0xab, sizeof(info->uuid));
	info->alignment = 4096;
	info->granularity = "page";
}

static uint64_t count(const struct region *r, enum extent_state s)
{
	uint64_t c = 0;

	for (uint64_t i = 0; i < r->n; i++)
		c += r->state[i] == s;
	return c;
}

void region_get_stats(const struct region *r, struct region_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int s = 0; s < EXT_NSTATES; s++)
		st->count[s] = count(r, (enum extent_state)s);
	st->bytes_zeroed = r->bytes_zeroed;
	st->zero_batches = r->zero_batches;
	st->zero_busy_ns = r->zero_batches * 1000;
	st->drains = r->drains;
	for (int i = 1; i <= FAKE_TAGS; i++)
		st->tags += r->tags[i].used;
}

void fake_region_fail(struct region *r)
{
	atomic_store(&r->failed, true);
}

bool region_failed(const struct region *r, char *why, size_t len)
{
	bool failed = atomic_load(&r->failed);

	if (failed && why && len)
		(void)snprintf(why, len, "fake fault");
	return failed;
}

int region_open_fd(const struct region *r)
{
	char proc[32];
	int fd;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->memfd);
	fd = open(proc, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int region_get_fd(const struct region *r)
{
	return r->memfd;
}

uint64_t region_count_free(const struct region *r)
{
	return count(r, EXT_ZEROED) + count(r, EXT_DIRTY);
}

uint64_t region_count_zeroed(const struct region *r)
{
	return count(r, EXT_ZEROED);
}

/* Runs of extents in state s (and, with a tag, of that tag). */
static int collect_runs(const struct region *r, enum extent_state s, uint32_t tag, uint64_t max,
			struct run **runs, size_t *n_runs)
{
	struct run *out = calloc(r->n ? r->n : 1, sizeof(*out));
	size_t k = 0;
	uint64_t taken = 0;

	if (!out)
		return -ENOMEM;
	for (uint64_t i = 0; i < r->n && taken < max; i++) {
		if (r->state[i] != s || (tag && r->tag_of[i] != tag))
			continue;
		if (k && out[k - 1].first + out[k - 1].count == i)
			out[k - 1].count++;
		else
			out[k++] = (struct run){i, 1};
		taken++;
	}
	*runs = out;
	*n_runs = k;
	return 0;
}

static void set_runs(struct region *r, const struct run *runs, size_t n_runs,
		     enum extent_state from, enum extent_state to, uint32_t tag)
{
	for (size_t i = 0; i < n_runs; i++)
		for (uint64_t e = runs[i].first; e < runs[i].first + runs[i].count && e < r->n; e++)
			if (r->state[e] == from) {
				r->state[e] = to;
				r->tag_of[e] = tag;
			}
	r->pending = true;
}

int region_lease(struct region *r, uint64_t n, struct run **runs, size_t *n_runs)
{
	int q;

	if (n == 0)
		return -EINVAL;
	if (n > region_count_free(r))
		return -ENOSPC;
	if (n > region_count_zeroed(r))
		return -EAGAIN;
	q = collect_runs(r, EXT_ZEROED, 0, n, runs, n_runs);
	if (q < 0)
		return q;
	set_runs(r, *runs, *n_runs, EXT_ZEROED, EXT_LEASED, 0);
	return 0;
}

void region_unlease(struct region *r, const struct run *runs, size_t n_runs)
{
	set_runs(r, runs, n_runs, EXT_LEASED, EXT_DIRTY, 0);
}

int region_commit(struct region *r, const struct run *runs, size_t n_runs, const char *tag,
		  uid_t uid, bool flush_data)
{
	uint32_t id, free_id = 0;

	if (!tag || !*tag)
		return -EINVAL;
	if (strlen(tag) > FAKE_TAG_NAME_MAX)
		return -ENAMETOOLONG;
	if (region_tag_lookup(r, tag, uid, &id) == 0)
		return -EEXIST;
	for (uint32_t i = 1; i <= FAKE_TAGS && !free_id; i++)
		if (!r->tags[i].used)
			free_id = i;
	if (!free_id)
		return -ENOSPC;
	r->tags[free_id].used = true;
	r->tags[free_id].uid = uid;
	strcpy(r->tags[free_id].name, tag);
	set_runs(r, runs, n_runs, EXT_LEASED, EXT_COMMITTED, free_id);
	return 0;
}

/* MOVE with region_move's checks (no loop iteration here: no -EBUSY). */
static int fake_move_check(struct region *r, const struct region_move *mv, size_t n, uid_t uid,
			   uint32_t *from, size_t *bad)
{
	size_t free_ids = 0;
	uint32_t id;

	for (uint32_t i = 1; i <= FAKE_TAGS; i++)
		free_ids += !r->tags[i].used;
	for (size_t k = 0; k < n; k++) {
		*bad = k;
		if (!*mv[k].to_tag || strlen(mv[k].to_tag) > FAKE_TAG_NAME_MAX ||
		    mv[k].extent >= r->n)
			return -EINVAL;
		if (region_tag_lookup(r, mv[k].from_tag, uid, &from[k]) < 0)
			return -ENOENT;
		if (region_tag_lookup(r, mv[k].to_tag, uid, &id) == 0)
			return -EEXIST;
		if (r->state[mv[k].extent] != EXT_COMMITTED || r->tag_of[mv[k].extent] != from[k])
			return -EINVAL;
		for (size_t j = 0; j < k; j++)
			if (strcmp(mv[j].to_tag, mv[k].to_tag) == 0 || mv[j].extent == mv[k].extent)
				return -EINVAL;
	}
	*bad = n;
	return free_ids >= n + 1 ? 0 : -ENOSPC;
}

int region_move(struct region *r, const struct region_move *mv, size_t n, uid_t uid,
		uint32_t *new_ids, size_t *bad)
{
	uint32_t from[LAYOUT_MOVE_MAX];
	size_t dummy;
	int q;

	if (!bad)
		bad = &dummy;
	*bad = n;
	if (n == 0 || n > LAYOUT_MOVE_MAX)
		return -EINVAL;
	q = fake_move_check(r, mv, n, uid, from, bad);
	if (q < 0)
		return q;
	for (size_t k = 0; k < n; k++) {
		uint32_t c = 1;

		while (r->tags[c].used)
			c++;
		r->tags[c].used = true;
		r->tags[c].uid = uid;
		strcpy(r->tags[c].name, mv[k].to_tag);
		r->tag_of[mv[k].extent] = c;
		new_ids[k] = c;
		if (region_tag_extents(r, from[k]) == 0)
			r->tags[from[k]].used = false;
	}
	r->pending = true;
	return 0;
}

uint32_t region_tag_next(const struct region *r, uint32_t after)
{
	for (uint32_t i = after + 1; i <= FAKE_TAGS; i++)
		if (r->tags[i].used)
			return i;
	return 0;
}

int region_tag_get(const struct region *r, uint32_t id, const char **name, uid_t *uid)
{
	long delay = __atomic_load_n(&fake_tag_delay_ns, __ATOMIC_RELAXED);

	if (delay) {
		struct timespec ts = {.tv_nsec = delay};

		(void)nanosleep(&ts, NULL);
	}
	if (id == 0 || id > FAKE_TAGS || !r->tags[id].used)
		return -ENOENT;
	*name = r->tags[id].name;
	*uid = r->tags[id].uid;
	return 0;
}

int region_tag_lookup(const struct region *r, const char *name, uid_t uid, uint32_t *id)
{
	for (uint32_t i = 1; i <= FAKE_TAGS; i++)
		if (r->tags[i].used && r->tags[i].uid == uid &&
		    strcmp(r->tags[i].name, name) == 0) {
			*id = i;
			return 0;
		}
	return -ENOENT;
}

int region_tag_runs(const struct region *r, uint32_t id, struct run **runs, size_t *n_runs,
		    uint64_t *n_extents)
{
	int q;

	if (id == 0 || id > FAKE_TAGS || !r->tags[id].used)
		return -ENOENT;
	q = collect_runs(r, EXT_COMMITTED, id, UINT64_MAX, runs, n_runs);
	if (q < 0)
		return q;
	*n_extents = 0;
	for (size_t i = 0; i < *n_runs; i++)
		*n_extents += (*runs)[i].count;
	return 0;
}

uint64_t region_tag_extents(const struct region *r, uint32_t id)
{
	uint64_t n = 0;

	if (id == 0 || id > FAKE_TAGS || !r->tags[id].used)
		return 0;
	for (uint64_t e = 0; e < r->n; e++)
		n += r->state[e] == EXT_COMMITTED && r->tag_of[e] == id;
	return n;
}

int region_tag_free(struct region *r, uint32_t id, uint64_t *n_extents)
{
	uint64_t n = 0;

	if (id == 0 || id > FAKE_TAGS || !r->tags[id].used)
		return -ENOENT;
	for (uint64_t e = 0; e < r->n; e++)
		if (r->state[e] == EXT_COMMITTED && r->tag_of[e] == id) {
			r->state[e] = EXT_DIRTY;
			r->tag_of[e] = 0;
			n++;
		}
	r->tags[id].used = false;
	r->pending = true;
	*n_extents = n;
	return 0;
}

int region_flush(struct region *r, uint64_t off, uint64_t len)
{
	return off > r->rc->size || len > r->rc->size - off ? -ERANGE : 0;
}

int region_deep_flush(struct region *r, uint64_t off, uint64_t len)
{
	return region_flush(r, off, len);
}

int region_sync(struct region *r)
{
	struct timespec delay = {.tv_nsec = fake_sync_delay_ns};

	if (atomic_load(&r->failed))
		return -EIO;

	if (!r->pending)
		return 0;
	/* A reply that does not wait for us is on the wire before we publish. */
	if (fake_sync_delay_ns)
		(void)nanosleep(&delay, NULL);
	for (int s = 0; s < EXT_NSTATES; s++)
		atomic_store(&r->durable[s], count(r, (enum extent_state)s));
	atomic_fetch_add(&r->syncs, 1);
	r->pending = false;
	r->drains++;
	return 1;
}

int region_zeroer_fd(const struct region *r)
{
	return r->efd;
}

uint64_t region_zeroer_collect(struct region *r)
{
	eventfd_t want = 0;
	uint64_t done = 0;

	if (eventfd_read(r->efd, &want) < 0)
		return 0;
	for (uint64_t e = 0; e < r->n && done < want; e++)
		if (r->state[e] == EXT_DIRTY) {
			r->state[e] = EXT_ZEROED;
			done++;
			if (r->zeroed_fn)
				r->zeroed_fn(r->zeroed_ctx, e, 1);
		}
	if (done) {
		r->pending = true;
		r->bytes_zeroed += done * r->rc->extent_size;
		r->zero_batches++;
	}
	return done;
}

void region_zeroer_set_hook(struct region *r, region_zeroed_fn fn, void *ctx)
{
	r->zeroed_fn = fn;
	r->zeroed_ctx = ctx;
}

void region_zeroer_set_urgent(struct region *r, bool urgent)
{
	atomic_store(&r->urgent, urgent);
}

void region_zeroer_set_need(struct region *r, uint64_t n)
{
	(void)r; /* the fake zeroer hands back nothing early */
	(void)n;
}

void region_zeroer_pause(struct region *r, bool paused)
{
	r->paused = paused;
}

bool region_zeroer_paused(const struct region *r)
{
	return r->paused;
}

void region_zeroer_policy_state(const struct region *r, struct region_policy_state *out)
{
	(void)r;
	*out = (struct region_policy_state){.policy = "full", .zone = "fast"};
}

void region_zeroer_set_rate(struct region *r, uint64_t bytes_per_sec)
{
}

/* The fake's zeroer is the test thread (fake_region_zero): no threads to count. */
int region_zeroer_set_threads(struct region *r, unsigned n)
{
	return 0;
}

int region_get_states(const struct region *r, uint8_t *out, uint64_t first, uint64_t count)
{
	if (first > r->n || count > r->n - first)
		return -ERANGE;
	if (count)
		memcpy(out, r->state + first, count);
	return 0;
}
