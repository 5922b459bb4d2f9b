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
#include "vector.h"

struct manager_region *regions_find(struct manager *m, const char *name)
{
	for (size_t i = 0; i < m->n_regions; i++)
		if (strcmp(m->regions[i]->rc->name, name) == 0)
			return m->regions[i];
	return NULL;
}

/*
 * Serials of connections, for a region: those that named it since the last
 * commit pass (touched: their held replies may attest its state, and are
 * not sent if it fails before that pass makes the state durable), and
 * those that opened it (a reload keeps it up for them).  Written only here.
 */
#define TOUCHED_MAX 4096u

struct serials {
	uint64_t *v;
	size_t n, cap;
};

struct region_users {
	struct serials touched;
	bool touched_all; /* out of room (or memory): assume every connection */
	struct serials openers; /* closed ones pruned as found */
	bool removing;
};

static bool serials_has(const struct serials *s, uint64_t serial)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == serial)
			return true;
	return false;
}

/* Room for one more, first at least, up to max: -ENOMEM otherwise. */
static int serials_reserve(struct serials *s, size_t first, size_t max)
{
	if (s->n >= max)
		return -ENOMEM;
	return PMEMZ_GROW(s->v, &s->cap, MAX(s->n + 1, first));
}

void regions_touch(struct manager_region *mr, const struct connection *c)
{
	struct region_users *u = mr->users;

	if (u->touched_all || (u->touched.n && u->touched.v[u->touched.n - 1] == c->serial))
		return;
	if (serials_reserve(&u->touched, 16, TOUCHED_MAX) < 0) {
		u->touched_all = true;
		return;
	}
	u->touched.v[u->touched.n++] = c->serial;
}

bool regions_touched_by(const struct manager_region *mr, uint64_t serial)
{
	return mr->users->touched_all || serials_has(&mr->users->touched, serial);
}

void regions_touched_clear(struct manager_region *mr)
{
	mr->users->touched.n = 0;
	mr->users->touched_all = false;
}

static void openers_prune(struct manager_region *mr)
{
	struct serials *s = &mr->users->openers;
	size_t k = 0;

	for (size_t i = 0; i < s->n; i++)
		if (connections_find(mr->m, s->v[i]))
			s->v[k++] = s->v[i];
	s->n = k;
}

int regions_opened(struct manager_region *mr, const struct connection *c)
{
	struct serials *s = &mr->users->openers;

	if (serials_has(s, c->serial))
		return 0;
	if (s->n == s->cap)
		openers_prune(mr);
	if (serials_reserve(s, 8, SIZE_MAX) < 0)
		return -ENOMEM;
	s->v[s->n++] = c->serial;
	return 0;
}

size_t regions_openers(struct manager_region *mr)
{
	openers_prune(mr);
	return mr->users->openers.n;
}

bool regions_removing(const struct manager_region *mr)
{
	return mr->users->removing;
}

void regions_set_removing(struct manager_region *mr, bool removing)
{
	mr->users->removing = removing;
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
	mr->users = calloc(1, sizeof(*mr->users));
	if (!mr->users || waitq_new(&mr->waitq) < 0) {
		regions_down(mr);
		return -ENOMEM;
	}
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
	waitq_free(mr->waitq);
	if (mr->users) {
		free(mr->users->touched.v);
		free(mr->users->openers.v);
		free(mr->users);
	}
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

int regions_add(struct manager *m, struct manager_region *mr)
{
	/* Exactly as many as there are: reloads that add regions are rare. */
	if (PMEMZ_GROW(m->regions, NULL, m->n_regions + 1) < 0)
		return -ENOMEM;
	mr->index = (unsigned)m->n_regions;
	m->regions[m->n_regions++] = mr;
	return 0;
}

void regions_replace(struct manager *m, size_t i, struct manager_region *fresh)
{
	struct manager_region *old = m->regions[i];

	fresh->index = (unsigned)i;
	m->regions[i] = fresh;
	regions_down(old);
}

void regions_remove(struct manager *m, size_t i)
{
	regions_down(m->regions[i]);
	memmove(&m->regions[i], &m->regions[i + 1], (m->n_regions - i - 1) * sizeof(*m->regions));
	m->n_regions--;
	for (size_t j = i; j < m->n_regions; j++)
		m->regions[j]->index = (unsigned)j;
}

void regions_use_conf(struct manager *m, const struct daemon_conf *conf)
{
	m->conf = conf;
}

void regions_reconf(struct manager_region *mr, const struct region_conf *rc,
		    const struct daemon_conf *conf)
{
	mr->rc = rc;
	mr->conf = conf;
	if (mr->r) {
		region_set_conf(mr->r, rc);
		region_get_info(mr->r, &mr->info);
		if (!mr->info.name)
			mr->info.name = rc->name;
	} else {
		mr->info.name = rc->name;
		mr->info.path = rc->path;
	}
}

void regions_set_rate(struct manager_region *mr, uint64_t rate)
{
	if (mr->r)
		region_zeroer_set_rate(mr->r, rate);
	mr->zero_rate = rate;
}
