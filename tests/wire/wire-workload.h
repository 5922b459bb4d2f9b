/* SPDX-License-Identifier: MIT */
#ifndef PMEMZ_WIRE_WORKLOAD_H
#define PMEMZ_WIRE_WORKLOAD_H

/*
 * One connection to the daemon at socket_path making every kind of request
 * of libpmemzclient 1.0 to 1.6 on region, which must be fresh, zeroed and
 * the daemon's only one; the caller must be an admin.  0, or -1 after a
 * line on stderr saying what went wrong.
 */
int wire_workload(const char *socket_path, const char *region);

#endif
