/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "connection.h"
#include "dispatch.h"
#include "lease.h"
#include "listener.h"
#include "log.h"
#include "manager.h"
#include "notify.h"
#include "rpc.h"
#include "usage.h"
#include "waitq.h"

/* A commit held back longer than this by a stream of requests runs inline. */
#define COMMIT_MAX_DELAY_NS 1000000ull
#define STATUS_INTERVAL_SEC 1

static void libevent_log_cb(int severity, const char *msg)
{
	switch (severity) {
	case EVENT_LOG_DEBUG:
		log_debug("libevent: %s", msg);
		break;
	case EVENT_LOG_MSG:
		log_info("libevent: %s", msg);
		break;
	case EVENT_LOG_WARN:
		log_warning("libevent: %s", msg);
		break;
	default:
		log_error("libevent: %s", msg);
		break;
	}
}

struct manager_region *manager_find_region(struct manager *m, const char *name)
{
	for (size_t i = 0; i < m->n_regions; i++)
		if (strcmp(m->regions[i]->rc->name, name) == 0)
			return m->regions[i];
	return NULL;
}

#define TOUCHED_MAX 4096u

void manager_region_touch(struct manager_region *mr, const struct connection *c)
{
	uint64_t *v;

	if (mr->touched_all || (mr->n_touched && mr->touched[mr->n_touched - 1] == c->serial))
		return;
	if (mr->n_touched == mr->cap_touched) {
		size_t cap = mr->cap_touched ? 2 * mr->cap_touched : 16;

		v = cap <= TOUCHED_MAX ? realloc(mr->touched, cap * sizeof(*v)) : NULL;
		if (!v) {
			mr->touched_all = true;
			return;
		}
		mr->touched = v;
		mr->cap_touched = cap;
	}
	mr->touched[mr->n_touched++] = c->serial;
}

static bool region_touched_by(const struct manager_region *mr, uint64_t serial)
{
	if (mr->touched_all)
		return true;
	for (size_t i = 0; i < mr->n_touched; i++)
		if (mr->touched[i] == serial)
			return true;
	return false;
}

size_t manager_regions_online(const struct manager *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n_regions; i++)
		n += !m->regions[i]->failed;
	return n;
}

/* A waiting ALLOCATE on a region that has failed: its answer is -EIO. */
static int manager_grant_failed(struct manager *m, struct connection *c, struct manager_region *mr,
				uint64_t n_extents, uint64_t req_id)
{
	char msg[RPC_MSG_MAX];

	(void)snprintf(msg, sizeof(msg), "region '%s' has failed: %s", mr->rc->name, mr->failure);
	(void)rpc_send_error(m, c, req_id, -EIO, msg, RPC_REPLY_ORDERED);
	return 0;
}

/* A waiting ALLOCATE's grant, remembered like a request naming the region. */
static int manager_grant(struct manager *m, struct connection *c, struct manager_region *mr,
			 uint64_t n_extents, uint64_t req_id)
{
	manager_region_touch(mr, c);
	return rpc_allocate_grant(m, c, mr, n_extents, req_id);
}

static void manager_status_cb(evutil_socket_t fd, short what, void *arg);

/* Does this held reply attest state of mr?  ALLOCATE replies name their lease. */
static bool held_reply_attests(const struct manager_region *mr, const struct connection *c,
			       const Pmemz__Response *resp)
{
	const struct lease *l;

	if (resp->status != 0)
		return false;
	switch (resp->op_case) {
	case PMEMZ__RESPONSE__OP_ALLOCATE:
		l = resp->allocate ? lease_table_find(mr->m->leases, resp->allocate->lease) : NULL;
		return l && l->region == mr->index;
	case PMEMZ__RESPONSE__OP_COMMIT:
	case PMEMZ__RESPONSE__OP_FREE:
		/* They do not name a region: a connection that named mr may mean it. */
		return region_touched_by(mr, c->serial);
	default:
		return false; /* reads and NOOPs attest nothing durable */
	}
}

/*
 * c's held replies that attest state of mr, which failed before a commit
 * pass made that state durable, become -EIO error replies with the same
 * request ids: the client learns the truth and the connection goes on.
 */
static void manager_fail_held(struct manager_region *mr, struct connection *c)
{
	struct out_frame *f;

	for (f = TAILQ_FIRST(&c->held); f; f = TAILQ_NEXT(f, link)) {
		_cleanup_(pmemz__response__free_unpackedp) Pmemz__Response *resp = NULL;
		Pmemz__Response err = PMEMZ__RESPONSE__INIT;
		char msg[RPC_MSG_MAX];
		uint8_t *frame;
		size_t len;

		if (f->off || f->len < PMEMZ_FRAME_HDR ||
		    pmemz_frame_unpack_response(f->data + PMEMZ_FRAME_HDR, f->len - PMEMZ_FRAME_HDR,
						&resp) < 0 ||
		    !held_reply_attests(mr, c, resp))
			continue;
		(void)snprintf(msg, sizeof(msg), "region '%s' failed before this was durable: %s",
			       mr->rc->name, mr->failure);
		err.id = resp->id;
		err.status = -EIO;
		err.message = msg;
		if (pmemz_frame_pack_response(&err, &frame, &len) < 0) {
			/* No memory for the truth: close rather than lie. */
			connection_close(c);
			return;
		}
		connection_frame_replace(c, f, frame, len);
	}
}

void manager_region_fail(struct manager_region *mr, const char *why)
{
	struct manager *m = mr->m;
	struct connection *c, *next;

	if (mr->failed)
		return;
	mr->failed = true;
	(void)snprintf(mr->failure, sizeof(mr->failure), "%s", why && *why ? why : "unknown");
	log_error("Region '%s' failed, taking it offline (%zu other region%s serving): %s",
		  mr->rc->name, manager_regions_online(m),
		  manager_regions_online(m) == 1 ? "" : "s", mr->failure);
	if (mr->zeroer_ev)
		(void)event_del(mr->zeroer_ev);
	if (mr->r)
		region_zeroer_pause(mr->r, true);
	waitq_serve(mr, manager_grant_failed);
	/*
	 * Replies held for a commit pass that this region's state did not
	 * survive would claim what is not durable (I5): they become -EIO.
	 */
	for (c = TAILQ_FIRST(&m->held); c; c = next) {
		next = TAILQ_NEXT(c, held_link); /* manager_fail_held may close c */
		manager_fail_held(mr, c);
	}
	mr->n_touched = 0;
	mr->touched_all = false;
	if (m->status_ev)
		manager_status_cb(-1, 0, m);
}

/* A region whose mapping faulted since it was last looked at goes offline. */
static void manager_check_region(struct manager_region *mr)
{
	char why[160];

	if (!mr->failed && mr->r && region_failed(mr->r, why, sizeof(why)))
		manager_region_fail(mr, why);
}

void manager_request_commit(struct manager *m)
{
	if (m->commit_pending)
		return;
	m->commit_pending = true;
	m->commit_since_ns = pmemz_now_ns();
	event_active(m->commit_ev, EV_TIMEOUT, 0);
}

/*
 * The group commit: serve waiting allocations, make every change of this
 * loop iteration durable, then send the replies that attest them.
 */
static void manager_commit(struct manager *m)
{
	uint64_t drains = 0;

	for (size_t i = 0; i < m->n_regions; i++)
		if (!m->regions[i]->failed)
			waitq_serve(m->regions[i], manager_grant);
	m->commit_pending = false;

	for (size_t i = 0; i < m->n_regions; i++) {
		struct manager_region *mr = m->regions[i];
		char why[160];
		int r;

		if (mr->failed)
			continue;
		r = region_sync(mr->r);
		if (r < 0) {
			/* Replies must not claim durability we could not get. */
			if (!region_failed(mr->r, why, sizeof(why)))
				(void)snprintf(why, sizeof(why),
					       "cannot make its state durable: %s", strerror(-r));
			manager_region_fail(mr, why);
			continue;
		}
		drains += (uint64_t)r;
		mr->n_touched = 0;
		mr->touched_all = false;
	}
	if (drains) {
		m->group_commits++;
		m->group_commit_drains += drains;
	}
	waitq_release(m);
}

static void manager_commit_cb(evutil_socket_t fd, short what, void *arg)
{
	manager_commit(arg);
}

void manager_commit_now(struct manager *m)
{
	if (!m->commit_pending)
		return;
	(void)event_del(m->commit_ev);
	manager_commit(m);
}

void manager_commit_if_overdue(struct manager *m)
{
	if (!m->commit_pending || pmemz_now_ns() - m->commit_since_ns < COMMIT_MAX_DELAY_NS)
		return;
	(void)event_del(m->commit_ev);
	manager_commit(m);
}

static void manager_conn_closed(struct connection *c, bool released_leases)
{
	waitq_cancel(c);
	rpc_job_cancel(c);
	/* Extents went back to the free pool: durable with the next commit pass. */
	if (released_leases)
		manager_request_commit(c->m);
}

static const struct connection_hooks manager_conn_hooks = {
    .request = dispatch_request,
    .closed = manager_conn_closed,
    .held = waitq_hold,
    .read_done = manager_commit_if_overdue,
};

static void manager_reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	struct manager *m = arg;
	struct connection *c;

	while ((c = TAILQ_FIRST(&m->dead))) {
		TAILQ_REMOVE(&m->dead, c, link);
		connection_free(c);
	}
}

static void manager_zeroer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct manager_region *mr = arg;

	if (mr->failed)
		return;
	/* ZEROED states are stored now, durable with the commit pass, which
	 * also hands the new extents to waiting allocations. */
	if (region_zeroer_collect(mr->r) > 0 || mr->n_waiters)
		manager_request_commit(mr->m);
	manager_check_region(mr);
}

static void manager_format_status(struct manager *m, char *buf, size_t len)
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
		waiters += mr->n_waiters;
		zeroed_bytes += st.count[EXT_ZEROED] * mr->info.extent_size;
		total_bytes += mr->info.extent_count * mr->info.extent_size;
	}
	n = m->n_regions - n_failed;
	if (m->reload_error[0]) {
		/* First: the operator who just reloaded looks for this. */
		int k = snprintf(buf, len, "RELOAD FAILED, configuration unchanged: %s; ",
				 m->reload_error);

		if (k < 0 || (size_t)k >= len)
			return;
		buf += k;
		len -= (size_t)k;
	}
	for (size_t i = 0; i < m->n_regions; i++) {
		const struct manager_region *mr = m->regions[i];
		int k;

		if (!mr->removing)
			continue;
		k = snprintf(buf, len, "region '%s' removed, kept while in use; ", mr->rc->name);
		if (k < 0 || (size_t)k >= len)
			return;
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
			return;
		buf += k;
		len -= (size_t)k;
	}
	(void)snprintf(
	    buf, len,
	    "%zu region%s: %s of %s zeroed (%" PRIu64 "/%" PRIu64 " extents), %" PRIu64
	    " dirty%s, %" PRIu64 " leased, %" PRIu64 " committed; %" PRIu64 " client%s%s",
	    n, n == 1 ? "" : "s", pmemz_format_size(zeroed_bytes, zeroed_s, sizeof(zeroed_s)),
	    pmemz_format_size(total_bytes, total_s, sizeof(total_s)), count[EXT_ZEROED], total,
	    count[EXT_DIRTY], zeroing ? " (zeroing)" : "", count[EXT_LEASED], count[EXT_COMMITTED],
	    m->n_connections, m->n_connections == 1 ? "" : "s",
	    waiters ? ", allocations waiting" : "");
}

void manager_update_status(struct manager *m)
{
	char status[sizeof(m->status)];

	manager_format_status(m, status, sizeof(status));
	if (strcmp(status, m->status) == 0)
		return;
	memcpy(m->status, status, sizeof(status));
	notify_status(status);
}

static void manager_status_cb(evutil_socket_t fd, short what, void *arg)
{
	struct manager *m = arg;

	/* Faults seen by reads, or by a zeroer batch not collected yet. */
	for (size_t i = 0; i < m->n_regions; i++)
		manager_check_region(m->regions[i]);
	manager_reap_removed(m);
	manager_update_status(m);
}

static void manager_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	notify_watchdog();
}

static void manager_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct manager *m = arg;

	if (sig == SIGHUP) {
		manager_reload(m);
		return;
	}
	log_info("Received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	manager_stop(m, 0);
}

void manager_stop(struct manager *m, int status)
{
	struct connection *c;

	if (m->stopping)
		return;
	m->stopping = true;
	m->exit_status = status;
	notify_stopping("Shutting down");
	listener_free(m->listener);
	m->listener = NULL;
	/* Send what is done, then drop the clients (their leases go DIRTY). */
	if (status == 0 && m->commit_pending) {
		(void)event_del(m->commit_ev);
		manager_commit(m);
	}
	while ((c = TAILQ_FIRST(&m->connections)))
		connection_close(c);
	(void)event_base_loopbreak(m->base);
}

static int manager_add_event(struct manager *m, struct event **ev, evutil_socket_t fd, short what,
			     event_callback_fn cb, void *arg, int prio, bool add)
{
	*ev = event_new(m->base, fd, what, cb, arg);
	if (!*ev || event_priority_set(*ev, prio) < 0 || (add && event_add(*ev, NULL) < 0))
		return -ENOMEM;
	return 0;
}

int manager_region_up(struct manager *m, const struct region_conf *rc,
		      const struct daemon_conf *conf, unsigned index, struct manager_region **out)
{
	struct manager_region *mr = calloc(1, sizeof(*mr));
	int q;

	if (!mr)
		return -ENOMEM;
	mr->m = m;
	mr->index = index;
	mr->rc = rc;
	mr->conf = conf;
	mr->zero_rate = rc->zero_rate;
	mr->info.name = rc->name;
	mr->info.path = rc->path;
	log_clear_last_error();
	q = region_open(rc, &mr->r);
	if (q < 0) {
		const char *why = log_last_error();

		mr->r = NULL;
		mr->failed = true;
		if (*why)
			(void)snprintf(mr->failure, sizeof(mr->failure), "%s", why);
		else
			(void)snprintf(mr->failure, sizeof(mr->failure), "cannot open: %s",
				       strerror(-q));
		*out = mr;
		return 0;
	}
	region_get_info(mr->r, &mr->info);
	if (!mr->info.name)
		mr->info.name = rc->name;
	if (manager_add_event(m, &mr->zeroer_ev, region_zeroer_fd(mr->r), EV_READ | EV_PERSIST,
			      manager_zeroer_cb, mr, MANAGER_PRIO_IO, true) < 0) {
		manager_region_down(mr);
		return -ENOMEM;
	}
	*out = mr;
	return 0;
}

void manager_region_down(struct manager_region *mr)
{
	if (!mr)
		return;
	if (mr->zeroer_ev)
		event_free(mr->zeroer_ev);
	usage_free(mr);
	free(mr->touched);
	free(mr->openers);
	if (mr->r) {
		if (mr->m->exit_status == 0 && !mr->failed) {
			int r = region_sync(mr->r);

			if (r < 0)
				(void)log_error_errno(r, "Failed to sync region '%s': %m",
						      mr->rc->name);
		}
		region_close(mr->r);
	}
	free(mr);
}

void manager_set_args(struct manager *m, int argc, char **argv)
{
	m->argc = argc;
	m->argv = argv;
}

int manager_new(const struct daemon_conf *conf, struct manager **out)
{
	_cleanup_(manager_freep) struct manager *m = NULL;
	int r = 0;

	m = calloc(1, sizeof(*m));
	if (!m)
		return log_error_errno(ENOMEM, "Out of memory");
	m->conf = conf;
	m->conn_hooks = &manager_conn_hooks;
	TAILQ_INIT(&m->connections);
	TAILQ_INIT(&m->held);
	TAILQ_INIT(&m->dead);
	TAILQ_INIT(&m->jobs);
	m->start_ns = pmemz_now_ns();

	event_set_log_callback(libevent_log_cb);
	m->base = event_base_new();
	if (!m->base || event_base_priority_init(m->base, MANAGER_NPRIO) < 0)
		return log_error_errno(ENOMEM, "Failed to create the event loop");
	if (lease_table_new(&m->leases) < 0 || claim_table_new(&m->claims) < 0 ||
	    manager_add_event(m, &m->commit_ev, -1, 0, manager_commit_cb, m, MANAGER_PRIO_COMMIT,
			      false) < 0 ||
	    manager_add_event(m, &m->reaper_ev, -1, 0, manager_reaper_cb, m, MANAGER_PRIO_IO,
			      false) < 0)
		return log_error_errno(ENOMEM, "Out of memory");

	m->regions = calloc(conf->n_regions ? conf->n_regions : 1, sizeof(*m->regions));
	if (!m->regions)
		return log_error_errno(ENOMEM, "Out of memory");
	for (size_t i = 0; i < conf->n_regions; i++) {
		struct manager_region *mr;

		if (manager_region_up(m, &conf->regions[i], conf, (unsigned)i, &mr) < 0)
			return log_error_errno(ENOMEM, "Out of memory for region '%s'",
					       conf->regions[i].name);
		m->regions[m->n_regions++] = mr;
		/* A region that does not open is offline; the others serve (degraded start). */
		if (mr->failed && r == 0)
			r = -EIO;
	}
	if (conf->n_regions && manager_regions_online(m) == 0)
		return log_error_errno(r, "No region could be opened, exiting");
	if (r < 0)
		log_warning("%zu of %zu regions failed to open (see above); serving the others",
			    conf->n_regions - manager_regions_online(m), conf->n_regions);
	if (conf->n_regions == 0)
		log_warning("No regions configured");
	*out = TAKE_PTR(m);
	return 0;
}

int manager_start(struct manager *m)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct timeval status_tv = {.tv_sec = STATUS_INTERVAL_SEC};
	uint64_t wd_usec;
	int r;

	r = listener_new(m, m->conf->socket_path, &m->listener);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		m->sig_ev[i] = evsignal_new(m->base, sigs[i], manager_signal_cb, m);
		if (!m->sig_ev[i] || event_priority_set(m->sig_ev[i], MANAGER_PRIO_IO) < 0 ||
		    event_add(m->sig_ev[i], NULL) < 0)
			return log_error_errno(ENOMEM, "Failed to install signal handlers");
	}
	m->status_ev = event_new(m->base, -1, EV_PERSIST, manager_status_cb, m);
	if (!m->status_ev || event_priority_set(m->status_ev, MANAGER_PRIO_IO) < 0 ||
	    event_add(m->status_ev, &status_tv) < 0)
		return log_error_errno(ENOMEM, "Failed to create the status timer");
	if (notify_watchdog_enabled(&wd_usec)) {
		struct timeval tv = {.tv_sec = (time_t)(wd_usec / 2 / 1000000),
				     .tv_usec = (suseconds_t)(wd_usec / 2 % 1000000)};

		m->watchdog_ev = event_new(m->base, -1, EV_PERSIST, manager_watchdog_cb, m);
		if (!m->watchdog_ev || event_priority_set(m->watchdog_ev, MANAGER_PRIO_IO) < 0 ||
		    event_add(m->watchdog_ev, &tv) < 0)
			return log_error_errno(ENOMEM, "Failed to create the watchdog timer");
		log_debug("Watchdog every %" PRIu64 " us", wd_usec / 2);
	}

	manager_format_status(m, m->status, sizeof(m->status));
	log_info("Ready, listening on %s", listener_describe(m->listener));
	notify_ready(m->status);
	return 0;
}

int manager_run(struct manager *m)
{
	if (event_base_dispatch(m->base) < 0)
		return log_error_errno(EIO, "Event loop failed");
	return m->exit_status;
}

void manager_free(struct manager *m)
{
	struct connection *c;

	if (!m)
		return;
	listener_free(m->listener);
	m->listener = NULL;
	m->stopping = true;
	while ((c = TAILQ_FIRST(&m->connections)))
		connection_close(c);
	while ((c = TAILQ_FIRST(&m->dead))) {
		TAILQ_REMOVE(&m->dead, c, link);
		connection_free(c);
	}
	for (size_t i = 0; i < m->n_regions; i++)
		manager_region_down(m->regions[i]);
	free(m->regions);
	for (size_t i = 0; i < m->n_confs; i++) {
		conf_free(m->confs[i]);
		free(m->confs[i]);
	}
	free(m->confs);
	for (size_t i = 0; i < ARRAY_SIZE(m->sig_ev); i++)
		if (m->sig_ev[i])
			event_free(m->sig_ev[i]);
	if (m->status_ev)
		event_free(m->status_ev);
	if (m->watchdog_ev)
		event_free(m->watchdog_ev);
	if (m->commit_ev)
		event_free(m->commit_ev);
	if (m->reaper_ev)
		event_free(m->reaper_ev);
	lease_table_free(m->leases);
	claim_table_free(m->claims);
	free(m->uid_conns);
	if (m->jobs_ev)
		event_free(m->jobs_ev);
	if (m->base)
		event_base_free(m->base);
	free(m);
}
