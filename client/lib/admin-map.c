/* SPDX-License-Identifier: MIT */
/*
 * pmemz_admin_map (libpmemzadmin.h): a region's extent states as runs of
 * one state.  The daemon sends runs, or (older daemons) one state byte per
 * extent; both are checked to cover the region exactly and come out as
 * runs, the adjacent ones of one state merged.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "libpmemzadmin.h"
#include "wire.h"
#include "vector.h"

struct map_run {
	enum pmemz_extent_state state;
	uint64_t first, count;
};

struct pmemz_map {
	uint64_t n, extent_size;
	struct map_run *runs;
	size_t n_runs, cap;
};

PMEMZ_EXPORT void pmemz_map_free(struct pmemz_map *m)
{
	if (!m)
		return;
	free(m->runs);
	free(m);
}

static enum pmemz_extent_state map_state_of(uint32_t v)
{
	return v < PMEMZ_EXTENT_UNKNOWN ? (enum pmemz_extent_state)v : PMEMZ_EXTENT_UNKNOWN;
}

static int map_push(struct pmemz_map *m, enum pmemz_extent_state s, uint64_t count)
{
	uint64_t first =
	    m->n_runs ? m->runs[m->n_runs - 1].first + m->runs[m->n_runs - 1].count : 0;

	if (count == 0)
		return 0;
	if (m->n_runs && m->runs[m->n_runs - 1].state == s) {
		m->runs[m->n_runs - 1].count += count;
		return 0;
	}
	if (PMEMZ_GROW(m->runs, &m->cap, m->n_runs + 1) < 0)
		return pmemz_err(-ENOMEM, "out of memory");
	m->runs[m->n_runs++] = (struct map_run){.state = s, .first = first, .count = count};
	return 0;
}

static int map_from_wire(struct pmemz_map *m, const Pmemz__MapResp *mp)
{
	uint64_t total = 0;
	int r;

	m->n = mp->extent_count;
	m->extent_size = mp->has_extent_size ? mp->extent_size : 0;
	if (mp->n_runs == 0) {
		if (mp->states.len != mp->extent_count)
			return pmemz_err(-EPROTO,
					 "daemon sent %zu extent states for %" PRIu64 " extents",
					 mp->states.len, mp->extent_count);
		for (size_t i = 0; i < mp->states.len; i++) {
			r = map_push(m, map_state_of(mp->states.data[i]), 1);
			if (r < 0)
				return r;
		}
		return 0;
	}
	for (size_t i = 0; i < mp->n_runs; i++) {
		if (mp->runs[i]->count > mp->extent_count - total)
			break;
		total += mp->runs[i]->count;
		r = map_push(m, map_state_of(mp->runs[i]->state), mp->runs[i]->count);
		if (r < 0)
			return r;
	}
	if (total != mp->extent_count)
		return pmemz_err(-EPROTO,
				 "daemon sent state runs that do not cover %" PRIu64 " extents",
				 mp->extent_count);
	return 0;
}

PMEMZ_EXPORT int pmemz_admin_map(struct pmemz_client *c, const char *region,
				 struct pmemz_map **out)
{
	_cleanup_response_ Pmemz__Response *resp = NULL;
	struct pmemz_map *m;
	int r;

	if (!c || !out || !region)
		return pmemz_err(-EINVAL, "pmemz_admin_map: NULL argument");
	*out = NULL;
	r = pmemz_wire_map(c, region, &resp);
	if (r < 0)
		return r;
	if (!resp->map)
		return pmemz_err(-EPROTO, "daemon sent an empty MAP reply");
	m = calloc(1, sizeof(*m));
	if (!m)
		return pmemz_err(-ENOMEM, "out of memory");
	r = map_from_wire(m, resp->map);
	if (r < 0) {
		pmemz_map_free(m);
		return r;
	}
	*out = m;
	return 0;
}

PMEMZ_EXPORT uint64_t pmemz_map_extents(const struct pmemz_map *m)
{
	return m ? m->n : 0;
}

PMEMZ_EXPORT uint64_t pmemz_map_extent_size(const struct pmemz_map *m)
{
	return m ? m->extent_size : 0;
}

PMEMZ_EXPORT size_t pmemz_map_runs(const struct pmemz_map *m)
{
	return m ? m->n_runs : 0;
}

PMEMZ_EXPORT int pmemz_map_run(const struct pmemz_map *m, size_t i, enum pmemz_extent_state *state,
			       uint64_t *first, uint64_t *count)
{
	if (!m || i >= m->n_runs || !state || !first || !count)
		return pmemz_err(-EINVAL, "pmemz_map_run: no run %zu", i);
	*state = m->runs[i].state;
	*first = m->runs[i].first;
	*count = m->runs[i].count;
	return 0;
}
