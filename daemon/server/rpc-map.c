/* SPDX-License-Identifier: MIT */
/*
 * MAP: the state of every extent of a region, for a picture of it
 * (pmemzctl map).  One byte per extent when that fits in a frame, else the
 * run-length encoding of the same bytes from extent 0; -EMSGSIZE when even
 * the runs do not fit.  Open to the peers allowed to open the region, and
 * to admins.
 *
 * The runs of a large region are counted in slices (rpc.h), so the states
 * are not one snapshot: an extent that changed state meanwhile shows the
 * state it had when its slice ran.  Good enough for a picture.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "regions.h"
#include "rpc.h"
#include "vector.h"

/* States read per region_get_states() call while counting runs. */
#define MAP_CHUNK 65536u
/* A StateRun takes at least 6 bytes on the wire: more runs never fit. */
#define MAP_RUNS_MAX (PMEMZ_FRAME_MAX / 6u)

struct state_run {
	uint8_t state;
	uint64_t count;
};

struct map_reply {
	struct manager_region *mr; /* stable: reload keeps a region a job names (rpc_job_region) */
	uint64_t n, next; /* extents, and the first not counted yet */
	uint8_t *states;  /* bytes reply, or the chunk buffer of the runs reply */
	struct state_run *runs;
	size_t n_runs, cap_runs;
	Pmemz__StateRun *pb;
	Pmemz__StateRun **ptrs;
};

static void map_reply_done(struct map_reply *m)
{
	free(m->states);
	free(m->runs);
	free(m->pb);
	free(m->ptrs);
}

/* The region, for a peer allowed to open it or an admin. */
static int map_region(struct rpc_call *call, const char *name, struct manager_region **out)
{
	int r = rpc_region(call, name, out);

	if (r == -EACCES && call->c->admin) {
		*out = regions_find(call->m, name);
		call->msg[0] = '\0';
		return 0;
	}
	return r;
}

static int map_push(struct map_reply *m, uint8_t state)
{
	if (m->n_runs && m->runs[m->n_runs - 1].state == state) {
		m->runs[m->n_runs - 1].count++;
		return 0;
	}
	if (m->n_runs == MAP_RUNS_MAX)
		return -EMSGSIZE;
	/* 256 at first: a region's map rarely has fewer runs. */
	if (PMEMZ_GROW(m->runs, &m->cap_runs, MAX(m->n_runs + 1, 256)) < 0)
		return -ENOMEM;
	m->runs[m->n_runs++] = (struct state_run){.state = state, .count = 1};
	return 0;
}

/*
 * Run-length encode the region's states from extent m->next on, until
 * deadline_ns: 1 for more, 0 when done.
 */
static int map_runs(struct map_reply *m, const struct region *reg, uint64_t deadline_ns)
{
	uint64_t n = m->n;
	int r;

	for (; m->next < n; m->next += MAP_CHUNK) {
		uint64_t len = MIN((uint64_t)MAP_CHUNK, n - m->next);

		if (pmemz_now_ns() >= deadline_ns)
			return 1;
		r = region_get_states(reg, m->states, m->next, len);
		if (r < 0)
			return r;
		for (uint64_t k = 0; k < len; k++) {
			r = map_push(m, m->states[k]);
			if (r < 0)
				return r;
		}
	}
	if (m->n_runs == 0)
		return 0;
	m->pb = calloc(m->n_runs, sizeof(*m->pb));
	m->ptrs = calloc(m->n_runs, sizeof(*m->ptrs));
	if (!m->pb || !m->ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_runs; i++) {
		pmemz__state_run__init(&m->pb[i]);
		m->pb[i].state = m->runs[i].state;
		m->pb[i].count = m->runs[i].count;
		m->ptrs[i] = &m->pb[i];
	}
	return 0;
}

static void map_reply_free(void *p)
{
	if (!p)
		return;
	map_reply_done(p);
	free(p);
}

static void map_reply_init(Pmemz__Response *resp, Pmemz__MapResp *mp,
			   const struct manager_region *mr)
{
	mp->extent_count = mr->info.extent_count;
	mp->has_extent_size = true;
	mp->extent_size = mr->info.extent_size;
	resp->op_case = PMEMZ__RESPONSE__OP_MAP;
	resp->map = mp;
}

/* The runs reply, a slice at a time. */
static int map_runs_step(struct rpc_call *call, void *state, uint64_t deadline_ns)
{
	struct map_reply *m = state;
	struct manager_region *mr = m->mr;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__MapResp mp = PMEMZ__MAP_RESP__INIT;
	int r = map_runs(m, mr->r, deadline_ns);

	if (r > 0)
		return 1;
	if (r == -ENOMEM)
		return rpc_fail(call, r, "out of memory");
	if (r < 0 && r != -EMSGSIZE)
		return rpc_fail(call, r, "region '%s': reading the extent states failed",
				mr->info.name);
	map_reply_init(&resp, &mp, mr);
	if (r == 0) {
		mp.n_runs = m->n_runs;
		mp.runs = m->ptrs;
	}
	if (r == -EMSGSIZE || !rpc_response_fits(&resp))
		return rpc_fail(call, -EMSGSIZE,
				"region '%s': the map of %" PRIu64
				" extents has too many state runs (%zu%s) for one %u KiB reply",
				mr->info.name, m->n, m->n_runs, r == -EMSGSIZE ? " or more" : "",
				PMEMZ_FRAME_MAX / 1024u);
	return rpc_reply(call, &resp, -1, RPC_REPLY_ORDERED);
}

static int rpc_map_handler(struct rpc_call *call)
{
	const Pmemz__MapReq *req = call->req->map;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__MapResp mp = PMEMZ__MAP_RESP__INIT;
	struct map_reply *m;
	struct manager_region *mr;
	uint64_t n;
	int r;

	r = map_region(call, req->region, &mr);
	if (r < 0)
		return r;
	n = mr->info.extent_count;
	map_reply_init(&resp, &mp, mr);

	/* One byte per extent when that fits: at most a frame's worth, quick. */
	if (n <= PMEMZ_FRAME_MAX) {
		_cleanup_free_ uint8_t *states = malloc(n ? n : 1);

		if (!states)
			return rpc_fail(call, -ENOMEM, "out of memory");
		r = region_get_states(mr->r, states, 0, n);
		if (r < 0)
			return rpc_fail(call, r, "region '%s': reading the extent states failed",
					mr->info.name);
		mp.states.data = states;
		mp.states.len = n;
		if (rpc_response_fits(&resp))
			return rpc_reply(call, &resp, -1, RPC_REPLY_ORDERED);
	}

	/* Else runs, from extent 0, in slices. */
	m = calloc(1, sizeof(*m));
	if (m)
		m->states = malloc(MIN((uint64_t)MAP_CHUNK, n ? n : 1));
	if (!m || !m->states) {
		map_reply_free(m);
		return rpc_fail(call, -ENOMEM, "out of memory");
	}
	m->mr = mr;
	m->n = n;
	return rpc_job_start(call, mr, map_runs_step, map_reply_free, m,
			     sizeof(*m) + MAP_CHUNK + MAP_RUNS_MAX * sizeof(struct state_run));
}

const struct rpc_descriptor rpc_map = {
    .name = "MAP",
    .op = PMEMZ__REQUEST__OP_MAP,
    .admin_only = false,
    .handler = rpc_map_handler,
};
