/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-pmemz-plugin: the connection to pmemzerod going away and coming
 * back (a daemon restart, kill -9 of the daemon).  Only the calls that
 * need the daemon (a fresh chunk, TRIM) ever see it: writes into present
 * chunks and reads go on meanwhile, the mapping stays valid.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "disk.h"
#include "libpmemzclient.h"

bool disk_conn_lost(int r)
{
	return r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE;
}

int disk_nbd_errno(int r)
{
	switch (-r) {
	case ENOSPC:
	case EDQUOT:
		/* the kernel and fio must see "no space", not an I/O error */
		return ENOSPC;
	case ENOMEM:
		return ENOMEM;
	case EPERM:
	case EACCES:
		return EPERM;
	case ESHUTDOWN:
		return ESHUTDOWN;
	case ENOTSUP:
		return ENOTSUP; /* a FAST_ZERO that would be slow: the client writes zeros */
	default:
		return EIO;
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int disk_reconnect(struct disk *d, uint64_t gen)
{
	uint64_t deadline = now_ms() + (uint64_t)d->cfg.reconnect_seconds * 1000u;
	unsigned backoff = 10;
	int r;

	pthread_mutex_lock(&d->reconnect_lock);
	r = __atomic_load_n(&d->failed, __ATOMIC_ACQUIRE);
	if (r < 0 || disk_gen(d) != gen) {
		/* another thread reconnected (or gave up) since the caller's call */
		pthread_mutex_unlock(&d->reconnect_lock);
		return r;
	}
	nbdkit_debug("pmemz: connection to pmemzerod lost, reconnecting");
	for (;;) {
		r = pmemz_client_reconnect(d->c);
		if (r == 0 || r == -ESTALE || r == -EBUSY)
			break;
		if (now_ms() >= deadline)
			break;
		nbdkit_debug("pmemz: reconnect: %s; retrying in %u ms", pmemz_errormsg(), backoff);
		sleep_ms(backoff);
		backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
	}
	if (r == 0) {
		__atomic_add_fetch(&d->gen, 1, __ATOMIC_ACQ_REL);
		nbdkit_debug("pmemz: reconnected to pmemzerod");
	} else if (r == -ESTALE || r == -EBUSY) {
		/*
		 * The region was re-formatted or is gone (ESTALE), or another
		 * process claimed the disk while we were away (EBUSY): writing
		 * on would corrupt someone else's disk.  Fail every request.
		 */
		nbdkit_error("pmemz: disk %s of region %s cannot be served any more: %s",
			     d->cfg.name, d->cfg.region, pmemz_errormsg());
		__atomic_store_n(&d->failed, -ESHUTDOWN, __ATOMIC_RELEASE);
		r = -ESHUTDOWN;
	} else {
		nbdkit_error("pmemz: pmemzerod did not come back within %u s: %s",
			     d->cfg.reconnect_seconds, pmemz_errormsg());
	}
	pthread_mutex_unlock(&d->reconnect_lock);
	return r;
}
