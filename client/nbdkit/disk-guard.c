/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: every load and store into the region's mapping.
 *
 * Any tenant of a file region can ftruncate or punch it through the
 * descriptor the daemon hands out (a media error does the same on a
 * device): a load or store in the lost part then raises SIGBUS, which
 * would kill nbdkit and drop every client of the disk without an error.
 * Each access runs under a guard of the mapping (common/sigbus.h, per
 * thread: nbdkit serves requests on many), so a fault fails that request
 * alone with EIO and the rest of the disk is still served.  One guard per
 * copy (sigsetjmp without the signal mask: no system call), not per line.
 * A guarded function holds no lock and owns nothing: after a fault it is
 * abandoned where it was, and its caller releases what it holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"
#include "sigbus.h"

void disk_guard_init(void)
{
	pmemz_sigbus_install();
}

/* A fault the guard caught (-EIO with its address): one log line, with the offset. */
static int disk_fault(struct disk *d, int r)
{
	if (r == -EIO && pmemz_bus.addr) {
		uintptr_t off = pmemz_bus.addr - (uintptr_t)d->base;

		nbdkit_error("pmemz: region '%s' faults (SIGBUS) at offset %" PRIuPTR
			     ": its file was truncated or punched under the mapping, or the media "
			     "failed (EIO)",
			     d->cfg.region, off);
	}
	return r;
}

int disk_guard(struct disk *d, int (*fn)(void *arg), void *arg)
{
	pmemz_bus.addr = 0;
	return disk_fault(d, pmemz_sigbus_run(d->base, d->region_size, fn, arg));
}

int disk_load(struct disk *d, void *dst, const char *src, size_t len)
{
	pmemz_bus.addr = 0;
	return disk_fault(d, pmemz_sigbus_copy(dst, src, len));
}

struct copy {
	struct disk *d;
	void *dst;
	const void *src;
	size_t len;
};

static int store(void *arg)
{
	struct copy *c = arg;

	return pmemz_memcpy(c->d->r, c->dst, c->src, c->len, PMEMZ_MEM_NODRAIN);
}

int disk_store(struct disk *d, char *dst, const void *src, size_t len)
{
	struct copy c = {.d = d, .dst = dst, .src = src, .len = len};
	int r = disk_guard(d, store, &c);

	if (r < 0 && r != -EIO)
		nbdkit_error("pmemz: copy into the region failed: %s", pmemz_errormsg());
	return r;
}
