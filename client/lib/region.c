/* SPDX-License-Identifier: MIT */
/*
 * Regions: OPEN_REGION hands us the region's fd, which the handle's mapper
 * maps whole and we close (region-map.c: read-write with libpmem2, for
 * applications; read-only with mmap, for tools that must not be able to
 * store, such as pmemzctl).  The mapping stays until the last handle that uses
 * it is gone: pmemz_region_close() drops the caller's reference and every
 * allocation handle holds one too, so closing a region with live
 * allocations is safe and their addresses stay valid until they are closed.
 *
 * region.c sits on the transport and below every other layer: what claim.c
 * and reserve.c keep on a handle they look after themselves, through the
 * hooks they register on it (closing, reconnecting, the last reference).
 * The client's list of handles is region.c's too, for
 * pmemz_client_reconnect to open each again and mark the ones it finds
 * changed stale.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct pmemz_region *, pmemz_region_unref)

static void region_track(struct pmemz_region *r)
{
	struct pmemz_client *c = r->c;

	pthread_mutex_lock(&c->lock);
	LIST_INSERT_HEAD(&c->regions, r, link);
	r->tracked = true;
	pthread_mutex_unlock(&c->lock);
}

static void region_untrack(struct pmemz_region *r)
{
	struct pmemz_client *c = r->c;

	pthread_mutex_lock(&c->lock);
	if (r->tracked) {
		LIST_REMOVE(r, link);
		r->tracked = false;
	}
	pthread_mutex_unlock(&c->lock);
}

/* A reference unless the last one is gone already (then it is being untracked). */
static bool region_ref_live(struct pmemz_region *r)
{
	unsigned n = __atomic_load_n(&r->refs, __ATOMIC_RELAXED);

	while (n > 0)
		if (__atomic_compare_exchange_n(&r->refs, &n, n + 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return true;
	return false;
}

int pmemz_region_list_live(struct pmemz_client *c, struct pmemz_region ***out, size_t *n)
{
	struct pmemz_region **regions = NULL, *r;
	size_t k = 0, cap = 0;

	pthread_mutex_lock(&c->lock);
	LIST_FOREACH(r, &c->regions, link)
		cap++;
	regions = cap ? calloc(cap, sizeof(*regions)) : NULL;
	if (regions)
		LIST_FOREACH(r, &c->regions, link)
			if (region_ref_live(r))
				regions[k++] = r;
	pthread_mutex_unlock(&c->lock);
	if (cap && !regions)
		return pmemz_err(-ENOMEM, "out of memory");
	*out = regions;
	*n = k;
	return 0;
}

int pmemz_region_add_hooks(struct pmemz_region *r, const struct pmemz_region_hooks *h)
{
	int ret = 0;

	pthread_mutex_lock(&r->c->lock);
	for (size_t i = 0; i < r->n_hooks && h; i++)
		if (r->hooks[i] == h)
			h = NULL;
	if (h && r->n_hooks == PMEMZ_REGION_HOOKS_MAX)
		ret = -ENOSPC;
	else if (h)
		r->hooks[r->n_hooks++] = h;
	pthread_mutex_unlock(&r->c->lock);
	return ret;
}

/* A copy of r's hooks, to call them without the lock (they send requests). */
static size_t region_hooks(struct pmemz_region *r,
			   const struct pmemz_region_hooks *out[PMEMZ_REGION_HOOKS_MAX])
{
	size_t n;

	pthread_mutex_lock(&r->c->lock);
	n = r->n_hooks;
	memcpy(out, r->hooks, n * sizeof(*out));
	pthread_mutex_unlock(&r->c->lock);
	return n;
}

int pmemz_region_reconnected(struct pmemz_region *r, int state)
{
	const struct pmemz_region_hooks *h[PMEMZ_REGION_HOOKS_MAX];
	size_t n = region_hooks(r, h);
	char msg[512];
	int ret = 0;

	/* Why re-opening failed, or the first layer's failure: what the others met since is not. */
	(void)snprintf(msg, sizeof(msg), "%s", pmemz_errormsg());
	for (size_t i = 0; i < n; i++) {
		int hr = h[i]->reconnected ? h[i]->reconnected(r, state) : 0;

		if (hr < 0 && !ret) {
			ret = hr;
			(void)snprintf(msg, sizeof(msg), "%s", pmemz_errormsg());
		}
	}
	return pmemz_err(ret, "%s", msg);
}

int pmemz_region_mark_stale(struct pmemz_region *r, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&r->c->lock);
	va_start(ap, fmt);
	(void)vsnprintf(r->stale_msg, sizeof(r->stale_msg), fmt, ap);
	va_end(ap);
	__atomic_store_n(&r->stale, -ESTALE, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&r->c->lock);
	return pmemz_err(-ESTALE, "%s", r->stale_msg);
}

static int region_set_info(struct pmemz_region *r, const Pmemz__RegionInfo *info)
{
	uint64_t data_bytes;

	if (info->extent_size == 0 ||
	    __builtin_mul_overflow(info->extent_count, info->extent_size, &data_bytes) ||
	    __builtin_add_overflow(data_bytes, info->data_offset, &data_bytes) ||
	    data_bytes > info->size)
		return pmemz_err(-EPROTO,
				 "daemon sent an inconsistent layout for region '%s': size %llu, "
				 "%llu extents of %llu bytes at offset %llu",
				 info->name, (unsigned long long)info->size,
				 (unsigned long long)info->extent_count,
				 (unsigned long long)info->extent_size,
				 (unsigned long long)info->data_offset);
	r->name = strdup(info->name);
	r->path = strdup(info->path);
	r->granularity = strdup(info->granularity);
	if (!r->name || !r->path || !r->granularity)
		return pmemz_err(-ENOMEM, "out of memory");
	r->size = info->size;
	r->extent_size = info->extent_size;
	r->extent_count = info->extent_count;
	r->data_offset = info->data_offset;
	r->alignment = info->alignment;
	r->devdax = info->devdax;
	if (info->uuid.len == sizeof(r->uuid))
		memcpy(r->uuid, info->uuid.data, sizeof(r->uuid));
	return 0;
}

int pmemz_region_open_mapped(struct pmemz_client *c, const char *name,
			     const struct pmemz_region_mapper *mapper, struct pmemz_region **out)
{
	_cleanup_(pmemz_region_unrefp) struct pmemz_region *r = NULL;
	_cleanup_response_ Pmemz__Response *resp = NULL;
	_cleanup_close_ int fd = -1;
	int ret;

	if (!out)
		return pmemz_err(-EINVAL, "pmemz_region_open: out is NULL");
	*out = NULL;
	if (!c)
		return pmemz_err(-EINVAL, "pmemz_region_open: client is NULL");
	if (!name || !*name)
		return pmemz_err(-EINVAL, "pmemz_region_open: empty region name");

	ret = pmemz_wire_open_region(c, name, &resp, &fd);
	if (ret < 0)
		return ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return pmemz_err(-ENOMEM, "out of memory");
	r->refs = 1;
	r->c = c;
	r->mapper = mapper;
	pmemz_client_ref(c);
	ret = region_set_info(r, resp->open_region->info);
	if (ret < 0)
		return ret;
	if (!resp->open_region->fd_follows || fd < 0)
		return pmemz_err(-EPROTO, "daemon sent no file descriptor for region '%s'", name);
	ret = mapper->map(r, fd);
	if (ret < 0)
		return ret;
	if (r->map_size < r->data_offset + r->extent_count * r->extent_size)
		return pmemz_err(
		    -EPROTO, "region '%s' maps %zu bytes, less than its %llu byte layout", name,
		    r->map_size,
		    (unsigned long long)(r->data_offset + r->extent_count * r->extent_size));
	region_track(r);
	*out = TAKE_PTR(r);
	return 0;
}

void pmemz_region_ref(struct pmemz_region *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

void pmemz_region_unref(struct pmemz_region *r)
{
	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	region_untrack(r);
	/* The last reference: nobody adds hooks any more. */
	for (size_t i = 0; i < r->n_hooks; i++)
		if (r->hooks[i]->release)
			r->hooks[i]->release(r);
	if (r->base)
		r->mapper->unmap(r);
	pmemz_client_unref(r->c);
	free(r->name);
	free(r->path);
	free(r->granularity);
	free(r);
}

int pmemz_region_check(struct pmemz_region *r)
{
	char msg[sizeof(r->stale_msg)];
	int stale;

	if (!__atomic_load_n(&r->stale, __ATOMIC_ACQUIRE))
		return 0; /* the common case, without the client's lock */
	pthread_mutex_lock(&r->c->lock);
	stale = r->stale;
	if (stale)
		memcpy(msg, r->stale_msg, sizeof(msg));
	pthread_mutex_unlock(&r->c->lock);
	return stale ? pmemz_err(stale, "%s", msg) : 0;
}

PMEMZ_EXPORT void pmemz_region_close(struct pmemz_region *r)
{
	const struct pmemz_region_hooks *h[PMEMZ_REGION_HOOKS_MAX];
	size_t n;

	if (!r)
		return;
	/* Reserved leases and claims go back to the daemon now. */
	n = region_hooks(r, h);
	for (size_t i = 0; i < n; i++)
		if (h[i]->close)
			h[i]->close(r);
	pmemz_region_unref(r);
}

PMEMZ_EXPORT size_t pmemz_region_extent_size(const struct pmemz_region *r)
{
	return r ? (size_t)r->extent_size : 0;
}

PMEMZ_EXPORT size_t pmemz_region_size(const struct pmemz_region *r)
{
	return r ? r->map_size : 0;
}

PMEMZ_EXPORT void *pmemz_region_address(const struct pmemz_region *r)
{
	return r ? r->base : NULL;
}
