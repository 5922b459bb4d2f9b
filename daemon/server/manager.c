/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "commit.h"
#include "connection.h"
#include "dispatch.h"
#include "heap.h"
#include "lease.h"
#include "listener.h"
#include "log.h"
#include "manager.h"
#include "notify.h"
#include "regions.h"
#include "reload.h"
#include "status.h"
#include "rpc.h"
#include "usage.h"
#include "waitq.h"

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

static void manager_status_cb(evutil_socket_t fd, short what, void *arg);

/* A region whose mapping faulted since it was last looked at goes offline. */
static void manager_check_region(struct manager_region *mr)
{
	char why[160];

	if (!mr->failed && mr->r && region_failed(mr->r, why, sizeof(why)))
		commit_fail_region(mr, why);
}

static void manager_conn_closed(struct connection *c, bool released_leases)
{
	bool others_wait = waitq_cancel(c);

	commit_forget(c);
	rpc_job_cancel(c);
	/*
	 * Extents went back to the free pool, or allocations queued behind
	 * c's may fit now: the next commit pass makes it durable, serves them.
	 */
	if (released_leases || others_wait)
		commit_request(c->m);
}

static const struct connection_hooks manager_conn_hooks = {
    .request = dispatch_request,
    .closed = manager_conn_closed,
    .held = commit_hold,
    .read_done = commit_if_overdue,
};

static void manager_zeroer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct manager_region *mr = arg;

	if (mr->failed)
		return;
	/* ZEROED states are stored now, durable with the commit pass, which
	 * also hands the new extents to waiting allocations. */
	if (region_zeroer_collect(mr->r) > 0 || waitq_count(mr))
		commit_request(mr->m);
	manager_check_region(mr);
}

static void manager_status_cb(evutil_socket_t fd, short what, void *arg)
{
	struct manager *m = arg;

	/* Faults seen by reads, or by a zeroer batch not collected yet. */
	for (size_t i = 0; i < m->n_regions; i++)
		manager_check_region(m->regions[i]);
	reload_reap_removed(m);
	status_update(m);
	heap_tick();
}

static void manager_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	notify_watchdog();
}

static void manager_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct manager *m = arg;

	if (sig == SIGHUP) {
		reload_sighup(m);
		return;
	}
	log_info("Received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	manager_stop(m, 0);
}

void manager_stop(struct manager *m, int status)
{
	if (m->stopping)
		return;
	m->stopping = true;
	m->exit_status = status;
	notify_stopping("Shutting down");
	listener_free(m->listener);
	m->listener = NULL;
	/* Send what is done, then drop the clients (their leases go DIRTY). */
	if (status == 0)
		commit_now(m);
	connections_close_all(m);
	(void)event_base_loopbreak(m->base);
}

void manager_set_args(struct manager *m, int argc, char **argv)
{
	reload_set_args(m->reload, argc, argv);
}

int manager_new(const struct daemon_conf *conf, struct manager **out)
{
	_cleanup_(manager_freep) struct manager *m = NULL;
	int r = 0;

	m = calloc(1, sizeof(*m));
	if (!m)
		return log_error_errno(ENOMEM, "Out of memory");
	regions_use_conf(m, conf);
	m->region_zeroer_cb = manager_zeroer_cb;
	m->start_ns = pmemz_now_ns();

	event_set_log_callback(libevent_log_cb);
	m->base = event_base_new();
	if (!m->base || event_base_priority_init(m->base, MANAGER_NPRIO) < 0)
		return log_error_errno(ENOMEM, "Failed to create the event loop");
	if (reload_new(&m->reload) < 0 || lease_table_new(&m->leases) < 0 ||
	    claim_table_new(&m->claims) < 0 || commit_new(m, &m->commit) < 0 ||
	    connections_new(m, &manager_conn_hooks, &m->conns) < 0 ||
	    rpc_jobs_new(m, &m->jobs) < 0 || status_new(&m->status) < 0)
		return log_error_errno(ENOMEM, "Out of memory");

	for (size_t i = 0; i < conf->n_regions; i++) {
		struct manager_region *mr;

		if (regions_up(m, &conf->regions[i], conf, (unsigned)i, &mr) < 0)
			return log_error_errno(ENOMEM, "Out of memory for region '%s'",
					       conf->regions[i].name);
		if (regions_add(m, mr) < 0) {
			regions_down(mr);
			return log_error_errno(ENOMEM, "Out of memory for region '%s'",
					       conf->regions[i].name);
		}
		/* A region that does not open is offline; the others serve (degraded start). */
		if (mr->failed && r == 0)
			r = -EIO;
	}
	if (conf->n_regions && regions_online(m) == 0)
		return log_error_errno(r, "No region could be opened, exiting");
	if (r < 0)
		log_warning("%zu of %zu regions failed to open (see above); serving the others",
			    conf->n_regions - regions_online(m), conf->n_regions);
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

	log_info("Ready, listening on %s", listener_describe(m->listener));
	status_ready(m);
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
	if (!m)
		return;
	listener_free(m->listener);
	m->listener = NULL;
	m->stopping = true;
	/* Connections first: closing one calls into commit, rpc jobs and the regions. */
	if (m->conns)
		connections_close_all(m);
	connections_free(m->conns);
	for (size_t i = 0; i < m->n_regions; i++)
		regions_down(m->regions[i]);
	free(m->regions);
	reload_free(m->reload);
	for (size_t i = 0; i < ARRAY_SIZE(m->sig_ev); i++)
		if (m->sig_ev[i])
			event_free(m->sig_ev[i]);
	if (m->status_ev)
		event_free(m->status_ev);
	if (m->watchdog_ev)
		event_free(m->watchdog_ev);
	commit_free(m->commit);
	rpc_jobs_free(m->jobs);
	status_free(m->status);
	lease_table_free(m->leases);
	claim_table_free(m->claims);
	if (m->base)
		event_base_free(m->base);
	free(m);
}
