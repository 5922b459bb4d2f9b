/* SPDX-License-Identifier: MIT */
/*
 * Reload (SIGHUP, the unit's ExecReload): the command line and the file it
 * names are parsed again, as at start, into a new configuration; if it has
 * an error nothing changes (the error is logged and put in STATUS).
 * Otherwise, region by region, by name:
 *
 *  - new regions come up as at start (a failed one is reported failed);
 *    a region that did not open at start (or at the last reload) is tried
 *    again;
 *  - removed regions go down when nobody uses them: no lease, no waiting
 *    allocation, no live connection that opened them.  Otherwise they stay
 *    as "removing" (OPEN_REGION and ALLOCATE refused) and go down at the
 *    status tick after their last user is done;
 *  - kept regions take the new allow lists (allow_cgroups too), per-tenant
 *    limits, zero_rate
 *    (when the file's value changed: a `pmemzctl set-rate` survives
 *    reloads that leave zero_rate alone), zeroer_threads and batch_extents;
 *    path, size, extent_size and metadata cannot change while a region is
 *    open: the running values stay, with a warning;
 *  - [daemon]: log_level, admin_group and admin_cgroups apply (to connected
 *    peers too, judged on the uid, groups and cgroup they had at connect);
 *    socket and state_directory stay, with a warning;
 *  - tenant changes only for a region without leases and waiting
 *    allocations (the usage table is rebuilt under the new key); otherwise
 *    the running key stays, with a warning, until a later reload.
 *
 * Every region points into the configuration it was last given (mr->rc,
 * and the storage's region_get_conf); a configuration is freed once no
 * region points into it.  Connections, leases and waiting allocations are
 * untouched: leases name regions by index, renumbered when one goes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "connection.h"
#include "lease.h"
#include "log.h"
#include "notify.h"
#include "regions.h"
#include "reload.h"
#include "rpc.h"
#include "server.h"
#include "status.h"
#include "usage.h"
#include "waitq.h"
#include "vector.h"

/* What reload.c keeps between reloads, for m->reload: nobody else writes it. */
struct reload {
	int argc; /* the command line to parse again */
	char **argv;
	struct daemon_conf **confs; /* owned; the last is m->conf after a reload */
	size_t n_confs, cap_confs;
};

int reload_new(struct reload **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void reload_set_args(struct reload *rl, int argc, char **argv)
{
	rl->argc = argc;
	rl->argv = argv;
}

void reload_free(struct reload *rl)
{
	if (!rl)
		return;
	for (size_t i = 0; i < rl->n_confs; i++) {
		conf_free(rl->confs[i]);
		free(rl->confs[i]);
	}
	free(rl->confs);
	free(rl);
}

/* ---- who uses a region ---- */

void reload_region_opened(struct manager_region *mr, const struct connection *c)
{
	if (regions_opened(mr, c) < 0)
		log_warning("region '%s': out of memory recording that connection %" PRIu64
			    " opened it; a reload may take it down under that client",
			    mr->rc->name, c->serial);
}

/* Leases of live connections on mr. */
static uint64_t region_leases(const struct manager *m, const struct manager_region *mr)
{
	const struct connection *c;
	uint64_t leases = 0;

	for (c = connections_first(m); c; c = TAILQ_NEXT(c, link)) {
		const struct lease *l;

		for (l = LIST_FIRST(&c->leases); l; l = LIST_NEXT(l, owner_link))
			leases += l->region == mr->index;
	}
	return leases;
}

bool reload_region_busy(struct manager *m, struct manager_region *mr, char *why, size_t len)
{
	uint64_t leases = region_leases(m, mr);
	size_t openers = regions_openers(mr);
	bool job = rpc_job_region(m, mr);

	if (why && len)
		(void)snprintf(why, len,
			       "%" PRIu64 " lease(s), %" PRIu64
			       " waiting allocation(s), %zu connection(s) that opened it%s",
			       leases, waitq_count(mr), openers,
			       job ? ", a FLUSH, MAP or LIST in progress" : "");
	return leases || waitq_count(mr) || openers || job;
}

/* ---- regions going and configurations freed ---- */

static bool conf_in_use(const struct manager *m, const struct daemon_conf *c)
{
	if (c == m->conf)
		return true;
	for (size_t i = 0; i < m->n_regions; i++)
		if (m->regions[i]->conf == c)
			return true;
	return false;
}

static void confs_gc(struct manager *m)
{
	struct reload *rl = m->reload;
	size_t k = 0;

	for (size_t i = 0; i < rl->n_confs; i++) {
		if (conf_in_use(m, rl->confs[i])) {
			rl->confs[k++] = rl->confs[i];
			continue;
		}
		conf_free(rl->confs[i]);
		free(rl->confs[i]);
	}
	rl->n_confs = k;
}

/* Take m->regions[i] down and out; the regions after it move up one index. */
static void remove_region(struct manager *m, size_t i)
{
	struct manager_region *mr = m->regions[i];
	struct connection *c;

	log_notice("Region '%s' removed from the configuration: closing it", mr->rc->name);
	regions_remove(m, i);
	/* Leases name their region by index (lease.h). */
	for (c = connections_first(m); c; c = TAILQ_NEXT(c, link)) {
		struct lease *l;

		for (l = LIST_FIRST(&c->leases); l; l = LIST_NEXT(l, owner_link))
			if (l->region > i)
				l->region--;
	}
}

void reload_reap_removed(struct manager *m)
{
	bool committed = false;

	for (size_t i = m->n_regions; i-- > 0;) {
		struct manager_region *mr = m->regions[i];

		if (!regions_removing(mr) || reload_region_busy(m, mr, NULL, 0))
			continue;
		/* Replies held for this iteration's commit may attest its state. */
		if (!committed) {
			commit_now(m);
			committed = true;
		}
		log_notice("Region '%s' is no longer in use", mr->rc->name);
		remove_region(m, i);
	}
	if (committed)
		confs_gc(m);
}

/* ---- applying a new configuration ---- */

struct reload_summary {
	unsigned added, removed, kept_busy, changed, refused;
};

static void refuse(struct manager *m, const char *why)
{
	status_reload_result(m, why);
}

/*
 * tenant = ...: rows, waiters' turns and leases are keyed by it, so it
 * changes only while the region has no lease and no waiter: the usage
 * table goes and is rebuilt under the new key on its next use (committed
 * usage from the tag table; re-zeroed counters start again).  false: the
 * running key stays in rc.
 */
static bool region_tenant_change(struct manager_region *mr, struct region_conf *rc)
{
	uint64_t leases = region_leases(mr->m, mr);

	if (leases || waitq_count(mr)) {
		log_warning("region '%s': tenant cannot change while it has leases or waiting "
			    "allocations (%" PRIu64 " lease(s), %" PRIu64 " waiting); keeping "
			    "the running key (reload again once they are done)",
			    rc->name, leases, waitq_count(mr));
		rc->tenant_cgroup = mr->rc->tenant_cgroup;
		rc->tenant_levels = mr->rc->tenant_levels;
		return false;
	}
	usage_free(mr);
	return true;
}

/* The new values of a kept region; the running ones of what cannot change. */
static void apply_region(struct manager_region *mr, struct region_conf *rc,
			 const struct daemon_conf *nc, struct reload_summary *sum)
{
	unsigned ch = conf_diff_region(mr->rc, rc);
	char names[192];

	if (ch & CONF_CHANGE_FIXED) {
		if (conf_diff_keep_fixed(rc, mr->rc) < 0) {
			log_error("region '%s': out of memory, keeping its whole old configuration",
				  rc->name);
			sum->refused++;
			return;
		}
		log_warning("region '%s': %s cannot change while the region is open; keeping the "
			    "running value (restart the daemon to apply)",
			    rc->name, conf_diff_names(ch & CONF_CHANGE_FIXED, names, sizeof(names)));
		sum->refused++;
	}
	if ((ch & CONF_CHANGE_ZEROER_THREADS) && mr->r &&
	    region_zeroer_set_threads(mr->r, rc->zeroer_threads) < 0) {
		log_error("region '%s': zeroer_threads stays %u", rc->name,
			  mr->rc->zeroer_threads);
		rc->zeroer_threads = mr->rc->zeroer_threads;
		ch &= ~(unsigned)CONF_CHANGE_ZEROER_THREADS;
		sum->refused++;
	}
	if ((ch & CONF_CHANGE_TENANT) && !region_tenant_change(mr, rc)) {
		ch &= ~(unsigned)CONF_CHANGE_TENANT;
		sum->refused++;
	}
	/* Only a changed file value overrides a rate set at runtime (pmemzctl set-rate). */
	if (ch & CONF_CHANGE_ZERO_RATE)
		regions_set_rate(mr, rc->zero_rate);
	regions_reconf(mr, rc, nc);
	if (regions_removing(mr)) {
		regions_set_removing(mr, false);
		log_notice("Region '%s' is in the configuration again: it stays", rc->name);
	}
	ch &= ~(unsigned)CONF_CHANGE_FIXED;
	if (ch) {
		log_notice("region '%s': %s changed", rc->name,
			   conf_diff_names(ch, names, sizeof(names)));
		sum->changed++;
	}
}

/* [daemon]: what cannot change keeps its running value. */
static int daemon_keep_fixed(const struct daemon_conf *old, struct daemon_conf *nc,
			     struct reload_summary *sum)
{
	struct {
		const char *key;
		char *const *was;
		char **now;
	} fixed[] = {
	    {"socket", &old->socket_path, &nc->socket_path},
	    {"state_directory", &old->state_dir, &nc->state_dir},
	};

	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
		char *keep;

		if (!*fixed[i].was || (*fixed[i].now && strcmp(*fixed[i].was, *fixed[i].now) == 0))
			continue;
		keep = strdup(*fixed[i].was);
		if (!keep)
			return -ENOMEM;
		log_warning("[daemon] %s cannot change while the daemon runs; keeping %s (restart "
			    "the daemon to apply)",
			    fixed[i].key, keep);
		free(*fixed[i].now);
		*fixed[i].now = keep;
		sum->refused++;
	}
	return 0;
}

/* Removed ones: down now, or kept (refusing new users) while in use. */
static void apply_removed(struct manager *m, struct daemon_conf *nc, struct reload_summary *sum)
{
	for (size_t i = m->n_regions; i-- > 0;) {
		struct manager_region *mr = m->regions[i];
		char why[160];

		if (conf_find_region(nc, mr->rc->name))
			continue;
		if (!reload_region_busy(m, mr, why, sizeof(why))) {
			remove_region(m, i);
			sum->removed++;
			continue;
		}
		sum->kept_busy++;
		if (!regions_removing(mr))
			log_warning("Region '%s' was removed from the configuration but is in use "
				    "(%s): it keeps serving them, refuses new OPEN_REGION and "
				    "ALLOCATE, and closes once they are done",
				    mr->rc->name, why);
		regions_set_removing(mr, true);
	}
}

/* Regions that never opened: nothing uses them, try again with the new file. */
static void apply_retry_failed(struct manager *m, struct daemon_conf *nc)
{
	for (size_t i = 0; i < m->n_regions; i++) {
		struct manager_region *mr = m->regions[i], *fresh;
		struct region_conf *rc = conf_find_region(nc, mr->rc->name);

		if (!rc || !mr->failed || mr->r)
			continue;
		if (regions_up(m, rc, nc, (unsigned)i, &fresh) < 0) {
			log_error("region '%s': out of memory, not tried again", rc->name);
			continue;
		}
		regions_replace(m, i, fresh);
		if (fresh->failed)
			log_notice("Region '%s' still does not open (see above)", rc->name);
		else
			log_notice("Region '%s' is online now", rc->name);
	}
}

static void apply_added(struct manager *m, struct daemon_conf *nc, struct reload_summary *sum)
{
	for (size_t i = 0; i < nc->n_regions; i++) {
		struct region_conf *rc = &nc->regions[i];
		struct manager_region *mr;

		if (regions_find(m, rc->name))
			continue;
		if (regions_up(m, rc, nc, (unsigned)m->n_regions, &mr) < 0) {
			log_error("region '%s': out of memory, not added", rc->name);
			continue;
		}
		if (regions_add(m, mr) < 0) {
			log_error("region '%s': out of memory, not added", rc->name);
			regions_down(mr);
			continue;
		}
		sum->added++;
		if (mr->failed)
			log_notice("New region '%s' did not open (see above): reported failed",
				   rc->name);
		else
			log_notice("New region '%s' is online", rc->name);
	}
}

static void apply(struct manager *m, struct daemon_conf *nc, struct reload_summary *sum)
{
	const struct daemon_conf *old = m->conf;
	struct connection *c;

	for (size_t i = 0; i < m->n_regions; i++) {
		struct manager_region *mr = m->regions[i];
		struct region_conf *rc = conf_find_region(nc, mr->rc->name);

		if (rc && (!mr->failed || mr->r))
			apply_region(mr, rc, nc, sum);
	}
	/* Removed ones first: a new region may take over the path of one that goes. */
	apply_removed(m, nc, sum);
	apply_retry_failed(m, nc);
	apply_added(m, nc, sum);
	if (nc->log_level != old->log_level) {
		log_set_max_level(nc->log_level);
		log_notice("log_level changed to %d (syslog priority)", nc->log_level);
	}
	/*
	 * Admin rights follow admin_group and admin_cgroups for the peers
	 * already connected too, judged on the identity they had at connect.
	 */
	for (c = connections_first(m); c; c = TAILQ_NEXT(c, link)) {
		struct peer id = {.uid = c->uid,
				  .gid = c->gid,
				  .cgroup = c->cgroup,
				  .groups = c->groups,
				  .n_groups = c->n_groups};

		c->admin = peer_is_admin(nc, &id);
	}
	regions_use_conf(m, nc);
}

void reload_sighup(struct manager *m)
{
	struct reload *rl = m->reload;
	_cleanup_free_ char *errs = NULL;
	struct reload_summary sum = {0};
	struct daemon_conf *nc = NULL;
	size_t errs_len = 0;
	FILE *f;
	int r;

	notify_reloading();
	if (!rl->argv) {
		log_error("SIGHUP: cannot reload, the command line is unknown");
		refuse(m, "the command line is unknown");
		return;
	}
	log_info("SIGHUP: reloading the configuration (%s)",
		 m->conf->config_path ? m->conf->config_path : "no configuration file");
	f = open_memstream(&errs, &errs_len);
	nc = calloc(1, sizeof(*nc));
	if (!f || !nc || PMEMZ_GROW(rl->confs, &rl->cap_confs, rl->n_confs + 1) < 0) {
		if (f)
			(void)fclose(f);
		free(nc);
		log_error("Configuration not reloaded: out of memory");
		refuse(m, "out of memory");
		return;
	}
	r = conf_load(nc, rl->argc, rl->argv, f);
	(void)fclose(f);
	if (r < 0) {
		/* As `pmemzerod -n` prints them: FILE:LINE: message. */
		char *save = NULL, *first = NULL;

		for (char *line = errs ? strtok_r(errs, "\n", &save) : NULL; line;
		     line = strtok_r(NULL, "\n", &save)) {
			log_error("Configuration not reloaded: %s", line);
			if (!first)
				first = line;
		}
		if (!first)
			log_error("Configuration not reloaded: %s", strerror(-r));
		refuse(m, first ? first : strerror(-r));
		conf_free(nc);
		free(nc);
		return;
	}
	if (daemon_keep_fixed(m->conf, nc, &sum) < 0) {
		log_error("Configuration not reloaded: out of memory");
		refuse(m, "out of memory");
		conf_free(nc);
		free(nc);
		return;
	}
	/* Replies held for this iteration's commit: sent before regions change. */
	commit_now(m);
	rl->confs[rl->n_confs++] = nc;
	apply(m, nc, &sum);
	confs_gc(m);
	log_notice("Configuration reloaded: %zu region(s), %u added, %u removed, %u kept while "
		   "in use, %u changed, %u change(s) refused",
		   m->n_regions, sum.added, sum.removed, sum.kept_busy, sum.changed, sum.refused);
	status_reload_result(m, NULL);
}
