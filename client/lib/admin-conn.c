/* SPDX-License-Identifier: MIT */
/*
 * The connection side of libpmemzadmin.h: what HELLO said, the daemon's
 * connections (CLIENTS), zeroer control (ZEROER) and read-only region
 * handles for tools.
 */
#include <errno.h>
#include <stdlib.h>

#include "libpmemzadmin.h"
#include "wire.h"
#include "vector.h"

/* Pages until the daemon says there are no more (each a frame). */
#define CLIENTS_PAGES_MAX 100000u

PMEMZ_EXPORT const char *pmemz_client_socket(const struct pmemz_client *c)
{
	return c ? pmemz_client_path(c) : NULL;
}

PMEMZ_EXPORT const char *pmemz_client_daemon_version(const struct pmemz_client *c)
{
	return c ? pmemz_client_hello(c)->daemon_version : NULL;
}

PMEMZ_EXPORT unsigned pmemz_client_protocol(const struct pmemz_client *c)
{
	return c ? pmemz_client_hello(c)->version : 0;
}

PMEMZ_EXPORT int pmemz_client_protocol_range(const struct pmemz_client *c, unsigned *min,
					     unsigned *max)
{
	const struct pmemz_hello *h;

	if (!c || !min || !max)
		return pmemz_err(-EINVAL, "pmemz_client_protocol_range: NULL argument");
	h = pmemz_client_hello(c);
	if (!h->has_range)
		return -ENODATA;
	*min = h->min_version;
	*max = h->max_version;
	return 0;
}

PMEMZ_EXPORT unsigned pmemz_client_uid(const struct pmemz_client *c)
{
	return c ? pmemz_client_hello(c)->uid : 0;
}

PMEMZ_EXPORT bool pmemz_client_is_admin(const struct pmemz_client *c)
{
	return c && pmemz_client_hello(c)->admin;
}

PMEMZ_EXPORT int pmemz_admin_zeroer_pause(struct pmemz_client *c, const char *region, bool pause)
{
	if (!c)
		return pmemz_err(-EINVAL, "pmemz_admin_zeroer_pause: client is NULL");
	return pmemz_wire_zeroer(c, region, pause, NULL);
}

PMEMZ_EXPORT int pmemz_admin_zeroer_rate(struct pmemz_client *c, const char *region, uint64_t rate)
{
	if (!c)
		return pmemz_err(-EINVAL, "pmemz_admin_zeroer_rate: client is NULL");
	return pmemz_wire_zeroer(c, region, -1, &rate);
}

struct pmemz_clients {
	Pmemz__Response **pages;
	size_t n_pages, cap_pages;
	const Pmemz__ClientInfo **v; /* into the pages */
	size_t n;
};

PMEMZ_EXPORT void pmemz_clients_free(struct pmemz_clients *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n_pages; i++)
		pmemz_response_free(l->pages[i]);
	free(l->pages);
	free(l->v);
	free(l);
}

/* Index every connection of the pages. */
static int clients_index(struct pmemz_clients *l)
{
	size_t n = 0;

	for (size_t p = 0; p < l->n_pages; p++)
		n += l->pages[p]->clients->n_clients;
	l->v = calloc(n ? n : 1, sizeof(*l->v));
	if (!l->v)
		return pmemz_err(-ENOMEM, "out of memory");
	for (size_t p = 0; p < l->n_pages; p++)
		for (size_t i = 0; i < l->pages[p]->clients->n_clients; i++)
			l->v[l->n++] = l->pages[p]->clients->clients[i];
	return 0;
}

PMEMZ_EXPORT int pmemz_admin_clients(struct pmemz_client *c, struct pmemz_clients **out)
{
	struct pmemz_clients *l;
	uint64_t after = 0;
	int r = 0;

	if (!c || !out)
		return pmemz_err(-EINVAL, "pmemz_admin_clients: NULL argument");
	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return pmemz_err(-ENOMEM, "out of memory");
	for (bool more = true; more && l->n_pages < CLIENTS_PAGES_MAX;) {
		const Pmemz__ClientsResp *cr;

		r = PMEMZ_GROW(l->pages, &l->cap_pages, l->n_pages + 1);
		if (r < 0) {
			r = pmemz_err(r, "out of memory");
			break;
		}
		r = pmemz_wire_clients(c, after, &l->pages[l->n_pages]);
		if (r < 0)
			break;
		cr = l->pages[l->n_pages++]->clients;
		more = cr->has_next && cr->next > after;
		after = cr->next;
	}
	if (r == 0)
		r = clients_index(l);
	if (r < 0) {
		pmemz_clients_free(l);
		return r;
	}
	*out = l;
	return 0;
}

PMEMZ_EXPORT size_t pmemz_clients_count(const struct pmemz_clients *l)
{
	return l ? l->n : 0;
}

PMEMZ_EXPORT int pmemz_clients_u64(const struct pmemz_clients *l, size_t i,
				   enum pmemz_clients_key k, uint64_t *v)
{
	const Pmemz__ClientInfo *ci;

	if (!l || i >= l->n || !v)
		return pmemz_err(-EINVAL, "pmemz_clients_u64: no connection %zu", i);
	ci = l->v[i];
	switch (k) {
	case PMEMZ_CONN_SERIAL:
		*v = ci->serial;
		return 0;
	case PMEMZ_CONN_UID:
		*v = ci->uid;
		return 0;
	case PMEMZ_CONN_GID:
		*v = ci->gid;
		return 0;
	case PMEMZ_CONN_PID:
		*v = (uint64_t)(ci->pid > 0 ? ci->pid : 0);
		return 0;
	case PMEMZ_CONN_ADMIN:
		*v = ci->admin;
		return 0;
	case PMEMZ_CONN_LEASES:
		*v = ci->leases;
		return 0;
	case PMEMZ_CONN_LEASED_BYTES:
		*v = ci->leased_bytes;
		return 0;
	case PMEMZ_CONN_WAITERS:
		*v = ci->waiters;
		return 0;
	case PMEMZ_CONN_BYTES_QUEUED:
		*v = ci->bytes_queued;
		return 0;
	case PMEMZ_CONN_CONNECTED_SEC:
		*v = ci->connected_sec;
		return 0;
	case PMEMZ_CONN_CGROUP_ID:
		*v = ci->cgroup_id;
		return ci->has_cgroup_id ? 0 : -ENODATA;
	default:
		return pmemz_err(-EINVAL, "pmemz_clients_u64: unknown key %d", (int)k);
	}
}

PMEMZ_EXPORT const char *pmemz_clients_cgroup(const struct pmemz_clients *l, size_t i)
{
	return l && i < l->n ? l->v[i]->cgroup : NULL;
}

PMEMZ_EXPORT const char *pmemz_clients_identity(const struct pmemz_clients *l, size_t i)
{
	return l && i < l->n ? l->v[i]->identity : NULL;
}

PMEMZ_EXPORT int pmemz_region_open_readonly(struct pmemz_client *c, const char *name,
					    struct pmemz_region **out)
{
	return pmemz_region_open_mapped(c, name, &pmemz_region_readonly_mapper, out);
}

PMEMZ_EXPORT uint64_t pmemz_region_extent_count(const struct pmemz_region *r)
{
	return r ? r->extent_count : 0;
}

PMEMZ_EXPORT uint64_t pmemz_region_data_offset(const struct pmemz_region *r)
{
	return r ? r->data_offset : 0;
}
