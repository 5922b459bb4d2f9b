/* SPDX-License-Identifier: MIT */
/*
 * The zeroer worker pool (zeroer.h): a leaf.  It is handed batches of
 * extent indices and gives them back through its done queue and eventfd;
 * it knows pstore and an address range, nothing of regions or the index
 * (the region's side is region-zeroer.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "util.h"
#include "zeroer.h"

/* Zero at most this much between checks of stop/pause/rate. */
#define ZERO_CHUNK (2ull << 20)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

struct zeroer {
	char *name;
	struct pstore *ps;
	uint8_t *data;
	uint64_t extent_size;
	int efd;
	int numa_node;
	bool prefault; /* zeroer_params.prefault; cleared when the kernel has no such madvise */
	uint64_t *warm; /* prefault: extents zeroed through this mapping once (atomic bits) */
	uint64_t extent_count;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* work, stop, pause/urgent/rate changes */
	struct zbatch *todo, **todo_tail;
	struct zbatch *done, **done_tail;
	bool stop, paused, urgent;
	bool resting; /* policy IDLE: no zeroing unless urgent */
	uint64_t need;	 /* urgent: extents the first waiter lacks, 0 unknown (atomic) */
	uint64_t rate;
	uint64_t policy_rate; /* policy PACED: bytes/s, 0 = none */
	double tokens;	      /* bytes */
	uint64_t refill_ns;

	/*
	 * Workers 0..n_threads-1 run; those at or above want leave (their
	 * batch handed back after the current chunk, as for a pause).
	 */
	unsigned n_threads, want;
	struct zworker *workers; /* CONF_MAX_ZEROER_THREADS of them */
};

struct zworker {
	struct zeroer *z;
	unsigned idx;
	pthread_t thread;
	pid_t tid; /* set by the worker when it starts (atomic), 0 before */
	/*
	 * At normal priority now (atomic): raised by the worker itself or by
	 * zeroer_set_urgent, lowered only by the worker.
	 */
	bool boosted;
};

static void free_list(struct zbatch *b)
{
	while (b) {
		struct zbatch *next = b->next;
		free(b);
		b = next;
	}
}

/* ---- worker side ---- */

/*
 * Idle priority normally (SCHED_IDLE, else nice 19); normal priority while
 * allocations wait, so a busy machine cannot starve them.  Leaving
 * SCHED_IDLE needs CAP_SYS_NICE (or RLIMIT_NICE): without it the boost
 * quietly does not happen and only the rate limit is lifted.
 */
/* False when the change was refused (no CAP_SYS_NICE, a seccomp filter). */
static bool set_priority_of(const struct zeroer *z, pid_t tid, bool urgent)
{
	struct sched_param sp = {.sched_priority = 0};

	if (urgent) {
		if (sched_setscheduler(tid, SCHED_OTHER, &sp) != 0 ||
		    setpriority(PRIO_PROCESS, (id_t)tid, 0) < 0) {
			log_debug("region '%s': zeroer cannot raise its priority", z->name);
			return false;
		}
		return true;
	}
	if (sched_setscheduler(tid, SCHED_IDLE, &sp) != 0 &&
	    setpriority(PRIO_PROCESS, (id_t)tid, 19) < 0) {
		log_debug("region '%s': zeroer keeps its priority: %m", z->name);
		return false;
	}
	return true;
}

static void set_priority(struct zeroer *z, bool urgent)
{
	(void)set_priority_of(z, gettid(), urgent);
}

static void pin_to_node(struct zeroer *z)
{
	char path[64], buf[4096];
	_cleanup_fclose_ FILE *f = NULL;
	cpu_set_t set;
	char *p;

	if (z->numa_node < 0)
		return;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", z->numa_node);
	f = fopen(path, "re");
	if (!f || !fgets(buf, sizeof(buf), f))
		return;
	CPU_ZERO(&set);
	p = buf;
	while (*p && *p != '\n') {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;
		if (end == p)
			return;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (unsigned long c = a; c <= b && c < CPU_SETSIZE; c++)
			CPU_SET(c, &set);
		p = *end == ',' ? end + 1 : end;
	}
	if (CPU_COUNT(&set) && pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		log_debug("region '%s': cannot pin the zeroer to node %d", z->name, z->numa_node);
}

static struct timespec deadline_after(uint64_t ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns += (uint64_t)ts.tv_nsec;
	ts.tv_sec += (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	return ts;
}

enum go { GO, YIELD, STOP };

/* The configured rate, or the policy's pace when lower (0: unlimited). */
static uint64_t effective_rate(const struct zeroer *z)
{
	uint64_t a = __atomic_load_n(&z->rate, __ATOMIC_RELAXED);
	uint64_t b = __atomic_load_n(&z->policy_rate, __ATOMIC_RELAXED);

	return !a ? b : !b ? a : MIN(a, b);
}

/*
 * May len more bytes be zeroed now?  Waits for the token bucket (unless
 * urgent or unlimited).  YIELD when paused: the batch ends early and goes
 * back to the main loop.  Called with the lock held.
 */
static enum go throttle_locked(struct zeroer *z, unsigned idx, uint64_t len)
{
	for (;;) {
		uint64_t now, burst;
		double need;
		struct timespec ts;

		uint64_t rate = effective_rate(z);

		if (z->stop)
			return STOP;
		if (z->paused || (z->resting && !z->urgent) || idx >= z->want)
			return YIELD;
		if (rate == 0 || z->urgent)
			return GO;
		now = pmemz_now_ns();
		burst = MAX(len, rate / 10);
		z->tokens += (double)(now - z->refill_ns) * (double)rate / 1e9;
		if (z->tokens > (double)burst)
			z->tokens = (double)burst;
		z->refill_ns = now;
		if (z->tokens >= (double)len) {
			z->tokens -= (double)len;
			return GO;
		}
		need = ((double)len - z->tokens) * 1e9 / (double)rate;
		ts = deadline_after((uint64_t)need + 1);
		(void)pthread_cond_timedwait(&z->cond, &z->lock, &ts);
	}
}

/*
 * A waiting allocation raises the priority at the next chunk, not at the
 * next batch: a batch of 64 x 2 MiB started at SCHED_IDLE on a busy
 * machine would otherwise hold the waiter for as long as the machine
 * keeps the thread off the CPU.
 */
static void follow_urgency(struct zeroer *z, bool urgent, bool *boosted)
{
	if (urgent == __atomic_load_n(boosted, __ATOMIC_RELAXED))
		return;
	set_priority(z, urgent);
	__atomic_store_n(boosted, urgent, __ATOMIC_RELAXED);
}

/*
 * throttle_locked without the lock when nothing can hold the chunk back
 * (not stopping, not paused, no rate to keep): the worker may run at
 * SCHED_IDLE, and a lock it is preempted in holds up the main loop, which
 * takes the same lock to collect and submit batches.  The flags are
 * written under the lock; a change seen one chunk late is harmless.
 */
static enum go throttle(struct zeroer *z, unsigned idx, uint64_t len, bool *urgent)
{
	enum go go;

	*urgent = __atomic_load_n(&z->urgent, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&z->stop, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&z->paused, __ATOMIC_RELAXED) &&
	    idx < __atomic_load_n(&z->want, __ATOMIC_RELAXED) &&
	    (*urgent ||
	     (!__atomic_load_n(&z->resting, __ATOMIC_RELAXED) && effective_rate(z) == 0)))
		return GO;
	pthread_mutex_lock(&z->lock);
	go = throttle_locked(z, idx, len);
	*urgent = z->urgent;
	pthread_mutex_unlock(&z->lock);
	return go;
}

static void signal_main(struct zeroer *z)
{
	uint64_t one = 1;

	if (write(z->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_debug("region '%s': zeroer eventfd: %m", z->name);
}

/*
 * Hand ext[0..k) back while the batch runs: fence what was stored (this
 * thread's NT stores, the extents before k included), then publish k.
 * The release store orders the zeroes' drain before the main loop can see
 * the count; the main loop stores ZEROED only after reading it (I5).
 */
static void hand_back(struct zeroer *z, struct zbatch *b, uint32_t k)
{
	pstore_drain(z->ps);
	b->fences++;
	if (pstore_failed(z->ps, NULL))
		return; /* these zeroes went to no media: nothing is handed back */
	__atomic_store_n(&b->durable, k, __ATOMIC_RELEASE);
	signal_main(z);
}

/*
 * Extents to zero before a hand-back: what the first waiter lacks, shared
 * among the threads.  A waiter of the whole region gets its extents at the
 * batches' ends (one fence and one wake-up per batch, as when nobody
 * waits); a waiter of one gets it after one extent.
 */
static uint32_t hand_back_group(struct zeroer *z)
{
	uint64_t need = __atomic_load_n(&z->need, __ATOMIC_RELAXED);
	unsigned threads = MAX(__atomic_load_n(&z->want, __ATOMIC_RELAXED), 1u);

	return (uint32_t)MIN(MAX(need / threads, (uint64_t)1), (uint64_t)UINT32_MAX);
}

/* Has extent i been stored to through this mapping (its pages mapped)?  Marks it so. */
static bool extent_warm(struct zeroer *z, uint64_t i)
{
	uint64_t bit = 1ull << (i % 64);

	if (!z->warm || i >= z->extent_count)
		return true;
	return __atomic_fetch_or(&z->warm[i / 64], bit, __ATOMIC_RELAXED) & bit;
}

/*
 * One madvise maps the chunk's pages instead of one fault per page at the
 * first stores.  A kernel without MADV_POPULATE_WRITE says EINVAL once and
 * is not asked again; any other failure (a truncated file: EFAULT) is left
 * to the stores, whose fault pstore records.
 */
static void prefault(struct zeroer *z, uint8_t *p, uint64_t len)
{
	if (!__atomic_load_n(&z->prefault, __ATOMIC_RELAXED))
		return;
	if (madvise(p, len, MADV_POPULATE_WRITE) < 0 && (errno == EINVAL || errno == ENOSYS)) {
		__atomic_store_n(&z->prefault, false, __ATOMIC_RELAXED);
		log_debug("region '%s': no MADV_POPULATE_WRITE: first stores fault page by page",
			  z->name);
	}
}

static void zero_batch(struct zeroer *z, unsigned idx, struct zbatch *b, bool *boosted)
{
	uint64_t busy = 0, t0;
	uint32_t k, fenced = 0;
	enum go go = GO;
	bool urgent = __atomic_load_n(boosted, __ATOMIC_RELAXED);

	for (k = 0; k < b->n; k++) {
		uint8_t *p = z->data + b->ext[k] * z->extent_size;
		bool cold = !extent_warm(z, b->ext[k]);

		for (uint64_t off = 0; off < z->extent_size; off += ZERO_CHUNK) {
			uint64_t len = MIN(ZERO_CHUNK, z->extent_size - off);

			go = throttle(z, idx, len, &urgent);
			if (go != GO)
				break;
			follow_urgency(z, urgent, boosted);
			t0 = pmemz_now_ns();
			if (cold)
				prefault(z, p + off, len);
			pstore_zero_nt(z->ps, p + off, len);
			busy += pmemz_now_ns() - t0;
		}
		if (go != GO)
			break; /* ext[k] is not (fully) zeroed */
		/*
		 * Someone waits: the extents zeroed so far are theirs as soon
		 * as they are durable, not after the rest of the batch (issue
		 * 24), once there are as many as they lack.  The last one
		 * waits for the batch's own fence below.
		 */
		if (urgent && k + 1 < b->n && k + 1 - fenced >= hand_back_group(z)) {
			t0 = pmemz_now_ns();
			hand_back(z, b, k + 1);
			busy += pmemz_now_ns() - t0;
			fenced = k + 1;
		}
	}
	/* One fence for the (rest of the) batch: every zero stored above is durable after it. */
	if (k > fenced || b->fences == 0) {
		t0 = pmemz_now_ns();
		pstore_drain(z->ps);
		busy += pmemz_now_ns() - t0;
		b->fences++;
	}
	/*
	 * A fault in the mapping: these zeroes went to no media.  What was
	 * handed back already had its fence checked, and stays handed back.
	 */
	b->done = pstore_failed(z->ps, NULL) ? __atomic_load_n(&b->durable, __ATOMIC_RELAXED) : k;
	b->ran = true;
	b->busy_ns = busy;
}

/*
 * "zero:REGION" (the kernel keeps 15 characters): operators, and the numa
 * VM test, find each region's zeroer threads in /proc/PID/task/x/comm.
 */
static void name_thread(const struct zeroer *z)
{
	char name[16] = "zero:";
	size_t n = strlen(z->name);

	if (n > sizeof(name) - 6)
		n = sizeof(name) - 6;
	memcpy(name + 5, z->name, n);
	name[5 + n] = '\0';
	(void)pthread_setname_np(pthread_self(), name);
}

static void *worker(void *arg)
{
	struct zworker *self = arg;
	struct zeroer *z = self->z;

	name_thread(z);
	set_priority(z, false);
	/* After lowering itself: a boost from zeroer_set_urgent is not undone. */
	__atomic_store_n(&self->tid, gettid(), __ATOMIC_RELEASE);
	pin_to_node(z);
	pthread_mutex_lock(&z->lock);
	for (;;) {
		struct zbatch *b;
		bool urgent;

		while (!z->stop && self->idx < z->want && (z->paused || !z->todo))
			pthread_cond_wait(&z->cond, &z->lock);
		if (z->stop || self->idx >= z->want)
			break;
		b = z->todo;
		z->todo = b->next;
		if (!z->todo)
			z->todo_tail = &z->todo;
		b->next = NULL;
		urgent = z->urgent;
		pthread_mutex_unlock(&z->lock);

		follow_urgency(z, urgent, &self->boosted);
		zero_batch(z, self->idx, b, &self->boosted);

		pthread_mutex_lock(&z->lock);
		*z->done_tail = b;
		z->done_tail = &b->next;
		pthread_mutex_unlock(&z->lock);
		/*
		 * Wake the main loop with the lock released: woken while we
		 * held it, it would block on it until this thread, perhaps at
		 * SCHED_IDLE on a busy machine, got a CPU again (seen: 300 ms).
		 */
		signal_main(z);
		pthread_mutex_lock(&z->lock);
	}
	pthread_mutex_unlock(&z->lock);
	return NULL;
}

/* ---- pool ---- */

int zeroer_new(const struct zeroer_params *p, struct zeroer **out)
{
	struct zeroer *z;
	pthread_condattr_t ca;
	int r;

	z = calloc(1, sizeof(*z));
	if (!z)
		return log_error_errno(ENOMEM, "region '%s': out of memory", p->name);
	z->name = strdup(p->name);
	z->workers = calloc(CONF_MAX_ZEROER_THREADS, sizeof(*z->workers));
	if (!z->name || !z->workers) {
		free(z->name);
		free(z->workers);
		free(z);
		return log_error_errno(ENOMEM, "region '%s': out of memory", p->name);
	}
	z->ps = p->ps;
	z->data = p->data;
	z->extent_size = p->extent_size;
	z->rate = p->rate;
	z->numa_node = p->numa_node;
	z->prefault = p->prefault;
	z->extent_count = p->extent_count;
	/* No bitmap (out of memory): no prefault, the stores fault page by page. */
	z->warm = p->prefault ? calloc((p->extent_count + 63) / 64, sizeof(uint64_t)) : NULL;
	if (!z->warm)
		z->prefault = false;
	z->refill_ns = pmemz_now_ns();
	z->todo_tail = &z->todo;
	z->done_tail = &z->done;
	pthread_mutex_init(&z->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&z->cond, &ca);
	pthread_condattr_destroy(&ca);
	z->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (z->efd < 0) {
		r = log_error_errno(errno, "region '%s': eventfd: %m", p->name);
		zeroer_free(z);
		return r;
	}
	r = zeroer_set_threads(z, p->threads);
	if (r < 0) {
		zeroer_free(z);
		return r;
	}
	*out = z;
	return 0;
}

/* Workers above n leave and are joined; their batches come back through the done queue. */
static void zeroer_shrink(struct zeroer *z, unsigned n)
{
	pthread_mutex_lock(&z->lock);
	__atomic_store_n(&z->want, n, __ATOMIC_RELAXED); /* throttle() reads it unlocked */
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
	while (z->n_threads > n)
		(void)pthread_join(z->workers[--z->n_threads].thread, NULL);
}

int zeroer_set_threads(struct zeroer *z, unsigned n)
{
	unsigned old = z->n_threads;
	int r;

	n = MIN(MAX(n, 1u), CONF_MAX_ZEROER_THREADS);
	if (n <= old) {
		zeroer_shrink(z, n);
		return 0;
	}
	pthread_mutex_lock(&z->lock);
	__atomic_store_n(&z->want, n, __ATOMIC_RELAXED); /* throttle() reads it unlocked */
	pthread_mutex_unlock(&z->lock);
	while (z->n_threads < n) {
		struct zworker *w = &z->workers[z->n_threads];

		w->z = z;
		w->idx = z->n_threads;
		/* Not the tid of a worker that left: it may be another thread's now. */
		__atomic_store_n(&w->tid, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&w->boosted, false, __ATOMIC_RELAXED);
		r = pthread_create(&w->thread, NULL, worker, w);
		if (r != 0) {
			(void)log_error_errno(r, "region '%s': cannot start zeroer thread: %m",
					      z->name);
			/* All or nothing: the count the caller sees is the one that runs. */
			zeroer_shrink(z, old);
			return -r;
		}
		z->n_threads++;
	}
	return 0;
}

void zeroer_free(struct zeroer *z)
{
	if (!z)
		return;
	pthread_mutex_lock(&z->lock);
	__atomic_store_n(&z->stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
	for (unsigned i = 0; i < z->n_threads; i++)
		(void)pthread_join(z->workers[i].thread, NULL);
	free_list(z->todo);
	free_list(z->done);
	if (z->efd >= 0)
		(void)close(z->efd);
	pthread_cond_destroy(&z->cond);
	pthread_mutex_destroy(&z->lock);
	free(z->workers);
	free(z->warm);
	free(z->name);
	free(z);
}

int zeroer_fd(const struct zeroer *z)
{
	return z->efd;
}

void zeroer_submit(struct zeroer *z, struct zbatch *b)
{
	b->next = NULL;
	pthread_mutex_lock(&z->lock);
	*z->todo_tail = b;
	z->todo_tail = &b->next;
	pthread_cond_signal(&z->cond);
	pthread_mutex_unlock(&z->lock);
}

struct zbatch *zeroer_take_done(struct zeroer *z)
{
	struct zbatch *b;
	uint64_t v;

	(void)!read(z->efd, &v, sizeof(v)); /* EAGAIN when nothing was signalled */
	pthread_mutex_lock(&z->lock);
	b = z->done;
	z->done = NULL;
	z->done_tail = &z->done;
	pthread_mutex_unlock(&z->lock);
	return b;
}

void zeroer_set_paused(struct zeroer *z, bool paused)
{
	uint64_t one = 1;

	pthread_mutex_lock(&z->lock);
	__atomic_store_n(&z->paused, paused, __ATOMIC_RELAXED);
	if (paused && z->todo) {
		/* Queued batches go back untouched (done = 0). */
		*z->done_tail = z->todo;
		z->done_tail = z->todo_tail;
		z->todo = NULL;
		z->todo_tail = &z->todo;
		if (write(z->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_debug("region '%s': zeroer eventfd: %m", z->name);
	}
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
}

bool zeroer_paused(struct zeroer *z)
{
	/* Only the main loop writes it: no lock, which a worker may hold. */
	return __atomic_load_n(&z->paused, __ATOMIC_RELAXED);
}

void zeroer_set_urgent(struct zeroer *z, bool urgent)
{
	/*
	 * Raise the workers from here, before taking the lock: a worker at
	 * SCHED_IDLE on a busy machine may not run for hundreds of ms, so it
	 * would reach its own boost (follow_urgency) that late, and it may
	 * even hold the lock meanwhile (seen: 500 ms for the first extent).
	 * Lowering is left to each worker, at its next chunk.
	 */
	if (urgent)
		for (unsigned i = 0; i < z->n_threads; i++) {
			pid_t tid = __atomic_load_n(&z->workers[i].tid, __ATOMIC_ACQUIRE);

			/* Refused: the worker tries again itself (follow_urgency). */
			if (tid > 0 && set_priority_of(z, tid, true))
				__atomic_store_n(&z->workers[i].boosted, true, __ATOMIC_RELAXED);
		}
	pthread_mutex_lock(&z->lock);
	__atomic_store_n(&z->urgent, urgent, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
}

void zeroer_set_policy(struct zeroer *z, uint64_t pace_rate, bool resting)
{
	pthread_mutex_lock(&z->lock);
	__atomic_store_n(&z->policy_rate, pace_rate, __ATOMIC_RELAXED);
	__atomic_store_n(&z->resting, resting, __ATOMIC_RELAXED);
	z->tokens = 0;
	z->refill_ns = pmemz_now_ns();
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
}

void zeroer_set_need(struct zeroer *z, uint64_t n)
{
	/* Read by the workers at each extent, without the lock: a stale value costs a fence. */
	__atomic_store_n(&z->need, n, __ATOMIC_RELAXED);
}

bool zeroer_urgent(struct zeroer *z)
{
	return __atomic_load_n(&z->urgent, __ATOMIC_RELAXED);
}

void zeroer_set_rate(struct zeroer *z, uint64_t bytes_per_sec)
{
	pthread_mutex_lock(&z->lock);
	__atomic_store_n(&z->rate, bytes_per_sec, __ATOMIC_RELAXED);
	z->tokens = 0;
	z->refill_ns = pmemz_now_ns();
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
}
