/* SPDX-License-Identifier: MIT */
/* pmsim: simulated persistence domain (see pmsim.h). */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pmsim.h"

#define LINE 64u
#define MAX_FLUSHERS 4

struct pend {
	uint64_t off, len;
	uint64_t seq;
	uint8_t *data; /* NULL: all zero */
	pid_t tid;
	unsigned n_fl;
	pid_t fl[MAX_FLUSHERS]; /* threads that flushed it (a drain by any makes it durable) */
};

struct pmsim {
	pthread_mutex_t lock;
	uint64_t size;
	uint8_t *durable;
	const uint8_t *base; /* the traced mapping */
	struct pstore *ps;
	struct pstore_tracer tracer;

	struct pend *v;
	size_t n, cap;
	uint64_t seq;

	uint64_t drains, cut_at;
	pid_t only_tid, main_tid;
	bool cut;
	uint64_t fp;
	uint64_t *fplog;
	size_t fpcap;
};

pid_t pmsim_gettid(void)
{
	static __thread pid_t tid;

	if (!tid)
		tid = (pid_t)syscall(SYS_gettid);
	return tid;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "pmsim: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static void fp_event(struct pmsim *s, unsigned kind, uint64_t off, uint64_t len)
{
	uint64_t who = s->main_tid && pmsim_gettid() == s->main_tid;

	s->fp = mix(s->fp, ((uint64_t)kind << 1) | who);
	s->fp = mix(s->fp, off);
	s->fp = mix(s->fp, len);
}

/* ---- the pending list ---- */

static void reserve(struct pmsim *s, size_t extra)
{
	if (s->n + extra <= s->cap)
		return;
	s->cap = (s->cap ? s->cap * 2 : 256) + extra;
	s->v = realloc(s->v, s->cap * sizeof(*s->v));
	if (!s->v) {
		fprintf(stderr, "pmsim: out of memory\n");
		abort();
	}
}

static bool all_zero(const uint8_t *p, size_t len)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		if (w)
			return false;
	}
	for (; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static void record_store(struct pmsim *s, const void *dst, size_t len)
{
	const uint8_t *p = dst;
	struct pend *e;

	if (len == 0)
		return;
	assert(p >= s->base && (uint64_t)(p - s->base) + len <= s->size);
	reserve(s, 1);
	e = &s->v[s->n++];
	memset(e, 0, sizeof(*e));
	e->off = (uint64_t)(p - s->base);
	e->len = len;
	e->seq = ++s->seq;
	e->tid = pmsim_gettid();
	if (!all_zero(p, len)) {
		e->data = xmalloc(len);
		memcpy(e->data, p, len);
	}
	fp_event(s, 1, e->off, len);
}

static bool flushed_by(const struct pend *e, pid_t tid)
{
	for (unsigned i = 0; i < e->n_fl; i++)
		if (e->fl[i] == tid)
			return true;
	return false;
}

static void add_flusher(struct pend *e, pid_t tid)
{
	if (!flushed_by(e, tid) && e->n_fl < MAX_FLUSHERS)
		e->fl[e->n_fl++] = tid;
}

/* A piece [off, off+len) of e, with its own copy of the data. */
static struct pend piece(const struct pend *e, uint64_t off, uint64_t len)
{
	struct pend p = *e;

	p.off = off;
	p.len = len;
	if (e->data) {
		p.data = xmalloc(len);
		memcpy(p.data, e->data + (off - e->off), len);
	}
	return p;
}

static void record_flush(struct pmsim *s, const void *ptr, size_t len)
{
	uint64_t a, b;
	pid_t tid = pmsim_gettid();

	if (len == 0)
		return;
	a = (uint64_t)((const uint8_t *)ptr - s->base);
	b = a + len;
	fp_event(s, 2, a, len);
	a &= ~(uint64_t)(LINE - 1);
	b = (b + LINE - 1) & ~(uint64_t)(LINE - 1);
	if (b > s->size)
		b = s->size;

	for (size_t i = 0; i < s->n; i++) {
		struct pend *e = &s->v[i];
		uint64_t end = e->off + e->len, lo, hi;
		struct pend parts[3];
		unsigned np = 0, mid = 0;

		if (e->off >= b || end <= a || flushed_by(e, tid))
			continue;
		if (e->off >= a && end <= b) {
			add_flusher(e, tid);
			continue;
		}
		/* Partly inside: split into the pieces before, inside and after. */
		lo = e->off > a ? e->off : a;
		hi = end < b ? end : b;
		if (e->off < lo)
			parts[np++] = piece(e, e->off, lo - e->off);
		mid = np;
		parts[np++] = piece(e, lo, hi - lo);
		if (hi < end)
			parts[np++] = piece(e, hi, end - hi);
		add_flusher(&parts[mid], tid);
		free(e->data);
		reserve(s, np - 1);
		memmove(&s->v[i + np], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
		memcpy(&s->v[i], parts, np * sizeof(*parts));
		s->n += np - 1;
		i += np - 1;
	}
}

static void apply(uint8_t *img, const struct pend *e)
{
	if (e->data)
		memcpy(img + e->off, e->data, e->len);
	else
		memset(img + e->off, 0, e->len);
}

static void record_drain(struct pmsim *s)
{
	pid_t tid = pmsim_gettid();
	size_t out = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct pend *e = &s->v[i];

		if (flushed_by(e, tid)) {
			apply(s->durable, e);
			free(e->data);
			continue;
		}
		s->v[out++] = *e;
	}
	s->n = out;
}

/* ---- tracer callbacks ---- */

static void cb_store(void *ctx, const void *dst, size_t len, bool nt)
{
	struct pmsim *s = ctx;

	(void)nt; /* non-temporal or not: pending until flushed and drained either way */
	pthread_mutex_lock(&s->lock);
	if (!s->cut)
		record_store(s, dst, len);
	pthread_mutex_unlock(&s->lock);
}

static void cb_flush(void *ctx, const void *p, size_t len)
{
	struct pmsim *s = ctx;

	pthread_mutex_lock(&s->lock);
	if (!s->cut)
		record_flush(s, p, len);
	pthread_mutex_unlock(&s->lock);
}

static void cb_drain(void *ctx)
{
	struct pmsim *s = ctx;
	pid_t tid = pmsim_gettid();

	pthread_mutex_lock(&s->lock);
	if (!s->cut) {
		fp_event(s, 3, 0, 0);
		if (!s->only_tid || tid == s->only_tid) {
			s->drains++;
			if (s->fplog && s->drains <= s->fpcap)
				s->fplog[s->drains - 1] = s->fp;
			if (s->cut_at && s->drains == s->cut_at)
				s->cut = true; /* power fails: this drain never happened */
		}
		if (!s->cut)
			record_drain(s);
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- API ---- */

struct pmsim *pmsim_new(uint64_t size)
{
	struct pmsim *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->size = size;
	s->durable = calloc(1, size);
	if (!s->durable) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->tracer = (struct pstore_tracer){
	    .store = cb_store, .flush = cb_flush, .drain = cb_drain, .ctx = s};
	return s;
}

static void clear_pending(struct pmsim *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].data);
	s->n = 0;
}

void pmsim_free(struct pmsim *s)
{
	if (!s)
		return;
	clear_pending(s);
	free(s->v);
	free(s->durable);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void pmsim_reset(struct pmsim *s, const void *initial)
{
	pthread_mutex_lock(&s->lock);
	s->ps = NULL; /* the mapping may be gone: forget it, do not touch it */
	s->base = NULL;
	clear_pending(s);
	if (initial)
		memcpy(s->durable, initial, s->size);
	else
		memset(s->durable, 0, s->size);
	s->seq = 0;
	s->drains = 0;
	s->cut_at = 0;
	s->only_tid = 0;
	s->cut = false;
	s->fp = 0;
	s->fplog = NULL;
	s->fpcap = 0;
	pthread_mutex_unlock(&s->lock);
}

void pmsim_attach(struct pmsim *s, struct pstore *ps)
{
	if (pstore_size(ps) != s->size) {
		fprintf(stderr, "pmsim: mapping of %llu bytes, simulator of %llu\n",
			(unsigned long long)pstore_size(ps), (unsigned long long)s->size);
		abort();
	}
	pthread_mutex_lock(&s->lock);
	s->ps = ps;
	s->base = pstore_base(ps);
	pthread_mutex_unlock(&s->lock);
	pstore_set_tracer(ps, &s->tracer);
}

void pmsim_detach(struct pmsim *s)
{
	if (s->ps)
		pstore_set_tracer(s->ps, NULL);
	pthread_mutex_lock(&s->lock);
	s->ps = NULL;
	pthread_mutex_unlock(&s->lock);
}

void pmsim_arm(struct pmsim *s, uint64_t cut_at, pid_t only_tid)
{
	pthread_mutex_lock(&s->lock);
	s->cut_at = cut_at;
	s->only_tid = only_tid;
	pthread_mutex_unlock(&s->lock);
}

bool pmsim_cut(const struct pmsim *s)
{
	return __atomic_load_n(&s->cut, __ATOMIC_ACQUIRE);
}

uint64_t pmsim_drains(const struct pmsim *s)
{
	return __atomic_load_n(&s->drains, __ATOMIC_ACQUIRE);
}

uint64_t pmsim_fingerprint(const struct pmsim *s)
{
	return __atomic_load_n(&s->fp, __ATOMIC_ACQUIRE);
}

void pmsim_set_main(struct pmsim *s, pid_t main_tid)
{
	s->main_tid = main_tid;
}

void pmsim_log_fingerprints(struct pmsim *s, uint64_t *log, size_t cap)
{
	pthread_mutex_lock(&s->lock);
	s->fplog = log;
	s->fpcap = log ? cap : 0;
	pthread_mutex_unlock(&s->lock);
}

size_t pmsim_pending(const struct pmsim *s, uint64_t *bytes)
{
	uint64_t b = 0;

	for (size_t i = 0; i < s->n; i++)
		b += s->v[i].len;
	if (bytes)
		*bytes = b;
	return s->n;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void pmsim_image(const struct pmsim *s, uint64_t seed, void *out)
{
	static const unsigned keep_of_8[3] = {4, 1, 7};
	uint8_t *img = out;
	uint64_t rng = seed * 0x2545f4914f6cdd1dull + 1;
	unsigned keep = keep_of_8[seed % 3];

	memcpy(img, s->durable, s->size);
	for (size_t i = 0; i < s->n; i++) {
		const struct pend *e = &s->v[i];
		uint64_t end = e->off + e->len;

		if (seed == 0)
			break;
		if (seed == 1) {
			apply(img, e);
			continue;
		}
		for (uint64_t u = e->off & ~7ull; u < end; u += 8) {
			uint64_t lo = u > e->off ? u : e->off, hi = u + 8 < end ? u + 8 : end;

			if ((splitmix(&rng) & 7) >= keep)
				continue;
			if (e->data)
				memcpy(img + lo, e->data + (lo - e->off), hi - lo);
			else
				memset(img + lo, 0, hi - lo);
		}
	}
}

const uint8_t *pmsim_durable(const struct pmsim *s)
{
	return s->durable;
}

bool pmsim_surely_zero(const struct pmsim *s, uint64_t off, uint64_t len)
{
	bool ok;

	pthread_mutex_lock((pthread_mutex_t *)(uintptr_t)&s->lock);
	ok = all_zero(s->durable + off, len);
	for (size_t i = 0; ok && i < s->n; i++) {
		const struct pend *e = &s->v[i];
		uint64_t lo, hi;

		if (!e->data || e->off >= off + len || e->off + e->len <= off)
			continue;
		lo = e->off > off ? e->off : off;
		hi = e->off + e->len < off + len ? e->off + e->len : off + len;
		ok = all_zero(e->data + (lo - e->off), hi - lo);
	}
	pthread_mutex_unlock((pthread_mutex_t *)(uintptr_t)&s->lock);
	return ok;
}

void pmsim_note_store(struct pmsim *s, const void *p, size_t len)
{
	cb_store(s, p, len, false);
}

/* ---- tracing region_open(): pstore_open is wrapped (-Wl,--wrap=pstore_open) ---- */

static struct pmsim *trace_next;

void pmsim_trace_next_opens(struct pmsim *s)
{
	__atomic_store_n(&trace_next, s, __ATOMIC_RELEASE);
}

int __real_pstore_open(int fd, uint64_t size, const char *name, struct pstore **out);
int __wrap_pstore_open(int fd, uint64_t size, const char *name, struct pstore **out);

int __wrap_pstore_open(int fd, uint64_t size, const char *name, struct pstore **out)
{
	struct pmsim *s = __atomic_load_n(&trace_next, __ATOMIC_ACQUIRE);
	int r = __real_pstore_open(fd, size, name, out);

	if (r == 0 && s)
		pmsim_attach(s, *out);
	return r;
}
