/* SPDX-License-Identifier: MIT */
/*
 * The regions' lifecycle in the main loop: up (opened, recovered, its
 * zeroer watched), down, failed (offline, its waiters answered), found by
 * name, and which connections named one since the last commit pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "connection.h"
#include "log.h"
#include "regions.h"
#include "usage.h"
#include "waitq.h"

struct manager_region *regions_find(struct manager *m, const char *name)
{
	for (size_t i = 0; i < m->n_regions; i++)
		if (strcmp(m->regions[i]->rc->name, name) == 0)
			return m->regions[i];
	return NULL;
}

#define TOUCHED_MAX 4096u

void regions_touch(struct manager_region *mr, const struct connection *c)
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

bool regions_touched_by(const struct manager_region *mr, uint64_t serial)
{
	if (mr->touched_all)
		return true;
	for (size_t i = 0; i < mr->n_touched; i++)
		if (mr->touched[i] == serial)
			return true;
	return false;
}

size_t regions_online(const struct manager *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n_regions; i++)
		n += !m->regions[i]->failed;
	return n;
}

void regions_fail(struct manager_region *mr, const char *why)
{
	struct manager *m = mr->m;

	mr->failed = true;
	(void)snprintf(mr->failure, sizeof(mr->failure), "%s", why && *why ? why : "unknown");
	log_error("Region '%s' failed, taking it offline (%zu other region%s serving): %s",
		  mr->rc->name, regions_online(m), regions_online(m) == 1 ? "" : "s", mr->failure);
	if (mr->zeroer_ev)
		(void)event_del(mr->zeroer_ev);
	if (mr->r)
		region_zeroer_pause(mr->r, true);
	waitq_fail(mr);
	/* STATUS (and the removed regions it may free) at once, not at the next tick. */
	if (m->status_ev)
		event_active(m->status_ev, EV_TIMEOUT, 0);
}

int regions_up(struct manager *m, const struct region_conf *rc, const struct daemon_conf *conf,
	       unsigned index, struct manager_region **out)
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
	mr->zeroer_ev = event_new(m->base, region_zeroer_fd(mr->r), EV_READ | EV_PERSIST,
				  m->region_zeroer_cb, mr);
	if (!mr->zeroer_ev || event_priority_set(mr->zeroer_ev, MANAGER_PRIO_IO) < 0 ||
	    event_add(mr->zeroer_ev, NULL) < 0) {
		regions_down(mr);
		return -ENOMEM;
	}
	*out = mr;
	return 0;
}

void regions_down(struct manager_region *mr)
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
