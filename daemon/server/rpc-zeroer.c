/* SPDX-License-Identifier: MIT */
/*
 * ZEROER (admin only): pause or resume background zeroing and set its byte
 * rate, for one region or (region "") all of them.  Takes effect at once
 * (a batch being zeroed stops at its next 2 MiB chunk) and shows in STAT
 * (paused, zero_rate_limit).  Not persistent: a restarted daemon runs
 * unpaused at the configured rate.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "connection.h"
#include "log.h"
#include "regions.h"
#include "rpc.h"

static void zeroer_apply(struct rpc_call *call, struct manager_region *mr,
			 const Pmemz__ZeroerReq *req)
{
	/* The rate first, so that a resumed zeroer starts at the new one. */
	if (req->has_rate) {
		regions_set_rate(mr, req->rate);
		log_info("Region '%s': zeroing rate %" PRIu64 " bytes/s%s (uid %u)", mr->info.name,
			 req->rate, req->rate ? "" : " (unlimited)", (unsigned)call->c->uid);
	}
	if (req->has_pause) {
		region_zeroer_pause(mr->r, req->pause);
		log_info("Region '%s': background zeroing %s (uid %u)", mr->info.name,
			 req->pause ? "paused" : "resumed", (unsigned)call->c->uid);
	}
}

static int rpc_zeroer_handler(struct rpc_call *call)
{
	const Pmemz__ZeroerReq *req = call->req->zeroer;
	Pmemz__Response resp = PMEMZ__RESPONSE__INIT;
	Pmemz__ZeroerResp zr = PMEMZ__ZEROER_RESP__INIT;
	struct manager *m = call->m;
	const char *name = req->region ? req->region : "";

	if (!req->has_pause && !req->has_rate)
		return rpc_fail(call, -EINVAL, "nothing to change: give pause and/or rate");
	if (*name) {
		struct manager_region *mr =
		    strlen(name) <= CONF_REGION_NAME_MAX ? regions_find(m, name) : NULL;

		if (!mr)
			return rpc_fail(call, -ENOENT, "no region '%.64s'", name);
		if (mr->failed)
			return rpc_fail(call, -EIO, "region '%s' has failed: %s", name,
					mr->failure);
		zeroer_apply(call, mr, req);
	} else {
		for (size_t i = 0; i < m->n_regions; i++)
			if (!m->regions[i]->failed)
				zeroer_apply(call, m->regions[i], req);
	}
	resp.op_case = PMEMZ__RESPONSE__OP_ZEROER;
	resp.zeroer = &zr;
	return rpc_reply(call, &resp, -1, RPC_REPLY_NOW);
}

const struct rpc_descriptor rpc_zeroer = {
    .name = "ZEROER",
    .op = PMEMZ__REQUEST__OP_ZEROER,
    .admin_only = true,
    .handler = rpc_zeroer_handler,
};
