/* SPDX-License-Identifier: MIT */
/*
 * CLIENTS (admin only): every connection with the identity taken at accept
 * (peer.h) and what it holds: leases, waiting allocations, reply bytes.
 * Paged by serial, so that any number of connections can be listed one
 * frame at a time; connections that come or go between pages may or may
 * not be seen, the others are seen once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "rpc.h"

/* Bytes of a ClientInfo besides its cgroup: fixed fields, tags, lengths. */
#define CLIENT_INFO_COST 128u

struct clients_reply {
	Pmemz__ClientInfo *rows;
	Pmemz__ClientInfo **ptrs;
};

static void clients_reply_done(struct clients_reply *s)
{
	free(s->rows);
	free(s->ptrs);
}

static void client_to_pb(const struct manager *m, const struct connection *c, uint64_t now_ns,
			 Pmemz__ClientInfo *pb)
{
	const struct lease *l;

	pmemz__client_info__init(pb);
	pb->serial = c->serial;
	pb->uid = (uint32_t)c->uid;
	pb->gid = (uint32_t)c->gid;
	pb->pid = (int32_t)c->pid;
	pb->cgroup = c->cgroup;
	pb->identity = (char *)(uintptr_t)peer_how_name(c->how);
	pb->has_cgroup_id = c->cgroup_id != 0;
	pb->cgroup_id = c->cgroup_id;
	pb->admin = c->admin;
	for (l = LIST_FIRST(&c->leases); l; l = LIST_NEXT(l, owner_link)) {
		pb->leases++;
		if (l->region < m->n_regions)
			pb->leased_bytes += l->n_extents * m->regions[l->region]->info.extent_size;
	}
	pb->waiters = c->n_waiters;
	pb->bytes_queued = c->mem;
	pb->connected_sec = (now_ns - c->accepted_ns) / 1000000000ull;
}

static int rpc_clients_handler(struct rpc_call *call)
{
	const Pmemz__ClientsReq *req = call->req->clients;
	uint64_t after = req && req->has_after ? req->after : 0;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__ClientsResp cr = PMEMZ__CLIENTS_RESP__INIT;
	_cleanup_(clients_reply_done) struct clients_reply s = {0};
	const struct connection *c;
	uint64_t now = pmemz_now_ns();
	size_t n = 0, budget = PMEMZ_FRAME_MAX - 256u;

	s.rows = calloc(connections_count(call->m) + 1, sizeof(*s.rows));
	s.ptrs = calloc(connections_count(call->m) + 1, sizeof(*s.ptrs));
	if (!s.rows || !s.ptrs)
		return rpc_fail(call, -ENOMEM, "out of memory");
	/* Connections are in accept order: serials ascend. */
	for (c = connections_first(call->m); c; c = TAILQ_NEXT(c, link)) {
		size_t cost = CLIENT_INFO_COST + (c->cgroup ? strlen(c->cgroup) : 0);

		if (c->serial <= after)
			continue;
		if (n == connections_count(call->m))
			break;
		if (n && cost > budget) {
			cr.has_next = true;
			cr.next = s.rows[n - 1].serial;
			break;
		}
		budget -= cost;
		client_to_pb(call->m, c, now, &s.rows[n]);
		s.ptrs[n] = &s.rows[n];
		n++;
	}
	cr.n_clients = n;
	cr.clients = s.ptrs;
	resp.op_case = PMEMZ__RESPONSE__OP_CLIENTS;
	resp.clients = &cr;
	return rpc_reply(call, &resp, -1, RPC_REPLY_NOW);
}

const struct rpc_descriptor rpc_clients = {
    .name = "CLIENTS",
    .op = PMEMZ__REQUEST__OP_CLIENTS,
    .admin_only = true,
    .handler = rpc_clients_handler,
};
