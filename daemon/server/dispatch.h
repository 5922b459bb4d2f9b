/* SPDX-License-Identifier: MIT */
/*
 * The top of a request's way in: the table of RPC descriptors (one per
 * rpc-*.c file) and the dispatcher the connection's owner hands to the
 * transport as its "request arrived" hook.  Nothing below calls up here.
 */
#ifndef PMEMZ_DISPATCH_H
#define PMEMZ_DISPATCH_H

#include "rpc.h"

const struct rpc_descriptor *dispatch_lookup(Pmemz__Request__OpCase op);
/*
 * Run one decoded request (version already checked).  nul_field: a string
 * field cut at a NUL by unpacking (connection_hooks), refused with -EINVAL.
 */
void dispatch_request(struct connection *c, const Pmemz__Request *req, const char *nul_field);

#endif
