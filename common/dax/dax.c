/* SPDX-License-Identifier: MIT */
/* Device-DAX discovery with libdaxctl, libndctl and libcxl (see dax.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cxl/libcxl.h>
#include <daxctl/libdaxctl.h>
#include <ndctl/libndctl.h>

#include "dax.h"
#include "log.h"
#include "vector.h"

#define SECTOR 512ull

/* ---- names ---- */

const char *dax_persistence_name(enum dax_persistence p)
{
	switch (p) {
	case DAX_PERSIST_CPU_CACHE:
		return "cpu_cache";
	case DAX_PERSIST_MEMCTRL:
		return "memory_controller";
	case DAX_PERSIST_NONE:
		return "none";
	case DAX_PERSIST_UNKNOWN:
		break;
	}
	return "unknown";
}

const char *dax_persistence_granularity(enum dax_persistence p)
{
	return p == DAX_PERSIST_CPU_CACHE ? "byte" : "cache_line";
}

const char *dax_mode_name(const struct dax_dev *d)
{
	if (!d->enabled)
		return "disabled";
	return d->system_ram ? "system-ram" : "devdax";
}

static enum dax_persistence from_ndctl(enum ndctl_persistence_domain d)
{
	switch (d) {
	case PERSISTENCE_CPU_CACHE:
		return DAX_PERSIST_CPU_CACHE;
	case PERSISTENCE_MEM_CTRL:
		return DAX_PERSIST_MEMCTRL;
	case PERSISTENCE_NONE:
		return DAX_PERSIST_NONE;
	case PERSISTENCE_UNKNOWN:
		break;
	}
	return DAX_PERSIST_UNKNOWN;
}

/* ---- pure helpers ---- */

static bool is_region_component(const char *s, size_t len)
{
	if (len <= strlen("region") || strncmp(s, "region", strlen("region")) != 0)
		return false;
	for (size_t i = strlen("region"); i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

int dax_parse_region_path(const char *path, char *region, size_t region_len, char *nddev,
			  size_t nddev_len)
{
	const char *p = path, *found = NULL, *next = NULL;
	size_t found_len = 0, next_len = 0;

	if (region_len)
		region[0] = '\0';
	if (nddev_len)
		nddev[0] = '\0';
	if (!path)
		return -ENOENT;
	/* The last "regionN" component wins: it is the closest parent. */
	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (len && is_region_component(p, len)) {
			const char *q = p + len;

			found = p;
			found_len = len;
			while (*q == '/')
				q++;
			next = q;
			next_len = strcspn(q, "/");
		}
		p += len;
	}
	if (!found || found_len >= region_len)
		return -ENOENT;
	memcpy(region, found, found_len);
	region[found_len] = '\0';
	if (next_len && next_len < nddev_len) {
		memcpy(nddev, next, next_len);
		nddev[next_len] = '\0';
	}
	return 0;
}

size_t dax_clip_badblocks(uint64_t region_res, uint64_t dev_res, uint64_t dev_size,
			  const uint64_t (*sect)[2], size_t n, struct dax_badblock *out,
			  uint64_t *sectors)
{
	uint64_t dev_end = dev_res + dev_size, total = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t s, e;

		if (sect[i][0] > (UINT64_MAX - region_res) / SECTOR ||
		    sect[i][1] > UINT64_MAX / SECTOR)
			continue;
		s = region_res + sect[i][0] * SECTOR;
		if (sect[i][1] * SECTOR > UINT64_MAX - s)
			continue;
		e = s + sect[i][1] * SECTOR;
		s = MAX(s, dev_res);
		e = MIN(e, dev_end);
		if (s >= e)
			continue;
		out[k].off = s - dev_res;
		out[k].len = e - s;
		total += DIV_ROUND_UP(e, SECTOR) - s / SECTOR;
		k++;
	}
	if (sectors)
		*sectors = total;
	return k;
}

/*
 * The namespace index block of a label storage area, as libnvdimm writes it
 * (drivers/nvdimm/label.h, struct nd_namespace_index): little-endian,
 * two copies at offsets 0 and mysize, the newer by a 2-bit sequence number.
 */
#define NSINDEX_SIG "NAMESPACE_INDEX"
#define NSINDEX_SIG_LEN 16
#define NSINDEX_OFF_SEQ 20
#define NSINDEX_OFF_MYOFF 24
#define NSINDEX_OFF_MYSIZE 32
#define NSINDEX_OFF_OTHEROFF 40
#define NSINDEX_OFF_LABELOFF 48
#define NSINDEX_OFF_NSLOT 56
#define NSINDEX_OFF_CHECKSUM 64
#define NSINDEX_OFF_FREE 72
#define NSINDEX_MAX_SIZE (16ull << 20)

static uint64_t le_get(const uint8_t *p, size_t bytes)
{
	uint64_t v = 0;

	for (size_t i = bytes; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* libnvdimm's nd_fletcher64() over little-endian 32-bit words, the checksum field as zero. */
uint64_t dax_lsa_index_checksum(const void *block, uint64_t size)
{
	const uint8_t *b = block;
	uint32_t lo = 0;
	uint64_t hi = 0;

	for (uint64_t i = 0; i + 4 <= size; i += 4) {
		bool in_sum = i >= NSINDEX_OFF_CHECKSUM && i < NSINDEX_OFF_CHECKSUM + 8;

		lo += in_sum ? 0 : (uint32_t)le_get(b + i, 4);
		hi += lo;
	}
	return hi << 32 | lo;
}

/* The block at b (of the len bytes at lsa) is a valid index block number i of size size. */
static bool nsindex_valid(const uint8_t *lsa, size_t len, unsigned i, uint64_t size)
{
	const uint8_t *b = lsa + i * size;
	uint64_t nslot;

	if ((i + 1) * size > len || memcmp(b, NSINDEX_SIG, NSINDEX_SIG_LEN) != 0)
		return false;
	nslot = le_get(b + NSINDEX_OFF_NSLOT, 4);
	return (le_get(b + NSINDEX_OFF_SEQ, 4) & 3) != 0 &&
	       le_get(b + NSINDEX_OFF_MYSIZE, 8) == size &&
	       le_get(b + NSINDEX_OFF_MYOFF, 8) == i * size &&
	       le_get(b + NSINDEX_OFF_OTHEROFF, 8) == (1 - i) * size &&
	       le_get(b + NSINDEX_OFF_LABELOFF, 8) == 2 * size &&
	       NSINDEX_OFF_FREE + DIV_ROUND_UP(nslot, 8) <= size &&
	       dax_lsa_index_checksum(b, size) == le_get(b + NSINDEX_OFF_CHECKSUM, 8);
}

int dax_lsa_labels_in_use(const void *buf, size_t len, uint64_t *used, uint64_t *index_size)
{
	const uint8_t *lsa = buf;
	uint64_t size, nslot, n = 0;
	const uint8_t *b, *free_map;
	bool v0, v1;

	if (index_size)
		*index_size = 0;
	*used = 0;
	if (len < NSINDEX_OFF_FREE)
		return -EINVAL;
	if (memcmp(lsa, NSINDEX_SIG, NSINDEX_SIG_LEN) != 0)
		return -ENODATA; /* the first block's header tells the size: without it, nothing */
	size = le_get(lsa + NSINDEX_OFF_MYSIZE, 8);
	if (size < NSINDEX_OFF_FREE || size % 8 || size > NSINDEX_MAX_SIZE)
		return -ENODATA;
	if (index_size)
		*index_size = size;
	if (len < 2 * size)
		return -EINVAL;
	v0 = nsindex_valid(lsa, len, 0, size);
	v1 = nsindex_valid(lsa, len, 1, size);
	if (!v0 && !v1)
		return -ENODATA;
	if (v0 && v1) {
		/* Sequence numbers run 1, 2, 3, 1...: the successor is newer. */
		unsigned s0 = le_get(lsa + NSINDEX_OFF_SEQ, 4) & 3;
		unsigned s1 = le_get(lsa + size + NSINDEX_OFF_SEQ, 4) & 3;

		v0 = s1 % 3 + 1 == s0;
	}
	b = v0 ? lsa : lsa + size;
	nslot = le_get(b + NSINDEX_OFF_NSLOT, 4);
	free_map = b + NSINDEX_OFF_FREE;
	for (uint64_t i = 0; i < nslot; i++)
		if (!(free_map[i / 8] & (1u << (i % 8))))
			n++;
	*used = n;
	return 0;
}

int dax_cxl_create_region_cmd(const char *root_decoder, const struct dax_cxl_memdev *memdevs,
			      size_t n, char *buf, size_t len)
{
	size_t off;
	int k;

	k = snprintf(buf, len, "cxl create-region -m -t pmem -d %s -w %zu",
		     root_decoder[0] ? root_decoder : "DECODER", n);
	if (k < 0 || (size_t)k >= len)
		return -ENOSPC;
	off = (size_t)k;
	for (size_t i = 0; i < n; i++) {
		k = snprintf(buf + off, len - off, " %s", memdevs[i].name);
		if (k < 0 || (size_t)k >= len - off)
			return -ENOSPC;
		off += (size_t)k;
	}
	return 0;
}

const char *dax_cxl_describe(const struct dax_cxl *c, char *buf, size_t len)
{
	size_t off;
	int k;

	if (!c->known) {
		(void)snprintf(buf, len,
			       "CXL (region unknown: its address is readable by root only)");
		return buf;
	}
	k = snprintf(buf, len, "CXL %s (root decoder %s, %u way%s x %u B):", c->region,
		     c->root_decoder, c->ways, c->ways == 1 ? "" : "s", c->granularity);
	off = k < 0 ? len : MIN((size_t)k, len);
	for (size_t i = 0; i < c->nmemdevs && off < len; i++) {
		k = snprintf(buf + off, len - off, "%s %s (serial 0x%" PRIx64 ")", i ? "," : "",
			     c->memdevs[i].name, c->memdevs[i].serial);
		off = k < 0 ? len : MIN(off + (size_t)k, len);
	}
	return buf;
}

/* ---- library contexts ---- */

/* The libraries' messages, one debug line each (they end theirs with a newline). */
__attribute__((format(printf, 3, 0))) static void lib_log(const char *lib, const char *fn,
							  const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	log_debug("%s: %s: %s", lib, fn, buf);
}

__attribute__((format(printf, 6, 0))) static void
daxctl_log(struct daxctl_ctx *ctx _unused_, int pri _unused_, const char *file _unused_,
	   int line _unused_, const char *fn, const char *fmt, va_list ap)
{
	lib_log("libdaxctl", fn, fmt, ap);
}

__attribute__((format(printf, 6, 0))) static void
ndctl_log(struct ndctl_ctx *ctx _unused_, int pri _unused_, const char *file _unused_,
	  int line _unused_, const char *fn, const char *fmt, va_list ap)
{
	lib_log("libndctl", fn, fmt, ap);
}

__attribute__((format(printf, 6, 0))) static void
cxl_log(struct cxl_ctx *ctx _unused_, int pri _unused_, const char *file _unused_,
	int line _unused_, const char *fn, const char *fmt, va_list ap)
{
	lib_log("libcxl", fn, fmt, ap);
}

static void cxl_unrefp(struct cxl_ctx **c)
{
	if (*c)
		cxl_unref(*c);
}

/* *c is NULL on failure (-errno, after a debug line). */
static int cxl_ctx_new(struct cxl_ctx **c)
{
	int r = cxl_new(c);

	if (r < 0) {
		*c = NULL;
		return log_debug_errno(r, "cxl_new: %m");
	}
	cxl_set_log_fn(*c, cxl_log);
	return 0;
}

static void daxctl_unrefp(struct daxctl_ctx **c)
{
	if (*c)
		daxctl_unref(*c);
}

static void ndctl_unrefp(struct ndctl_ctx **c)
{
	if (*c)
		ndctl_unref(*c);
}

/* libdaxctl is required; without libndctl the NVDIMM fields stay unknown. */
static int contexts_new(struct daxctl_ctx **dctx, struct ndctl_ctx **nctx)
{
	int r;

	*nctx = NULL;
	r = daxctl_new(dctx);
	if (r < 0) {
		*dctx = NULL;
		return log_debug_errno(r, "daxctl_new: %m");
	}
	daxctl_set_log_fn(*dctx, daxctl_log);
	r = ndctl_new(nctx);
	if (r < 0) {
		*nctx = NULL;
		log_debug("ndctl_new: %s", strerror(-r));
		return 0;
	}
	ndctl_set_log_fn(*nctx, ndctl_log);
	return 0;
}

/* ---- one device ---- */

static bool res_known(unsigned long long res)
{
	return res != 0 && res != ULLONG_MAX;
}

static int read_int_attr(const char *path, int *out)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f || fscanf(f, "%d", out) != 1)
		return -ENOENT;
	return 0;
}

static struct ndctl_region *nd_find_region(struct ndctl_ctx *nctx, const char *name, uint64_t phys)
{
	struct ndctl_bus *bus;
	struct ndctl_region *reg;

	if (!nctx)
		return NULL;
	if (name[0]) {
		for (bus = ndctl_bus_get_first(nctx); bus; bus = ndctl_bus_get_next(bus)) {
			for (reg = ndctl_region_get_first(bus); reg;
			     reg = ndctl_region_get_next(reg)) {
				if (strcmp(ndctl_region_get_devname(reg), name) == 0)
					return reg;
			}
		}
	}
	if (!phys)
		return NULL;
	for (bus = ndctl_bus_get_first(nctx); bus; bus = ndctl_bus_get_next(bus)) {
		for (reg = ndctl_region_get_first(bus); reg; reg = ndctl_region_get_next(reg)) {
			unsigned long long res = ndctl_region_get_resource(reg);

			if (res_known(res) && phys >= res &&
			    phys - res < ndctl_region_get_size(reg))
				return reg;
		}
	}
	return NULL;
}

static struct ndctl_namespace *nd_find_namespace(struct ndctl_region *reg, const char *nddev,
						 uint64_t phys)
{
	struct ndctl_namespace *ndns;
	struct ndctl_dax *ndax;

	if (nddev[0]) {
		for (ndax = ndctl_dax_get_first(reg); ndax; ndax = ndctl_dax_get_next(ndax)) {
			if (strcmp(ndctl_dax_get_devname(ndax), nddev) == 0)
				return ndctl_dax_get_namespace(ndax);
		}
	}
	if (!phys)
		return NULL;
	for (ndns = ndctl_namespace_get_first(reg); ndns; ndns = ndctl_namespace_get_next(ndns)) {
		unsigned long long res = ndctl_namespace_get_resource(ndns);

		if (res_known(res) && phys >= res && phys - res < ndctl_namespace_get_size(ndns))
			return ndns;
	}
	return NULL;
}

/* Bad sectors of reg, region-relative: malloc'ed pairs {offset, length}. */
static int nd_region_badblocks(struct ndctl_region *reg, uint64_t (**out)[2], size_t *n)
{
	_cleanup_free_ uint64_t(*v)[2] = NULL;
	size_t nv = 0, cap = 0;
	struct badblock *bb;

	for (bb = ndctl_region_get_first_badblock(reg); bb;
	     bb = ndctl_region_get_next_badblock(reg)) {
		int r = PMEMZ_GROW(v, &cap, nv + 1);

		if (r < 0)
			return r;
		v[nv][0] = bb->offset;
		v[nv][1] = bb->len;
		nv++;
	}
	*out = TAKE_PTR(v);
	*n = nv;
	return 0;
}

/* ---- CXL ---- */

#define cxl_root_decoder_foreach(ctx, bus, dec)                                                    \
	for ((bus) = cxl_bus_get_first(ctx); (bus); (bus) = cxl_bus_get_next(bus))                 \
		for ((dec) = cxl_decoder_get_first(cxl_bus_get_port(bus)); (dec);                  \
		     (dec) = cxl_decoder_get_next(dec))

static void memdev_set(struct dax_cxl_memdev *m, struct cxl_memdev *memdev)
{
	(void)snprintf(m->name, sizeof(m->name), "%s", cxl_memdev_get_devname(memdev));
	m->serial = cxl_memdev_get_serial(memdev);
}

/* The memdev at interleave position pos of region, NULL when not (yet) set. */
static struct cxl_memdev *region_memdev(struct cxl_region *region, unsigned pos)
{
	struct cxl_decoder *ep = cxl_region_get_target_decoder(region, (int)pos);

	return ep ? cxl_decoder_get_memdev(ep) : NULL;
}

/* The CXL pmem region holding physical address phys: its memdevs, window, interleave. */
static void fill_cxl(struct cxl_ctx *cctx, uint64_t phys, struct dax_cxl *c)
{
	struct cxl_bus *bus;
	struct cxl_decoder *root;
	struct cxl_region *region;

	if (!cctx || !phys)
		return;
	cxl_root_decoder_foreach(cctx, bus, root)
	{
		for (region = cxl_region_get_first(root); region;
		     region = cxl_region_get_next(region)) {
			unsigned long long res = cxl_region_get_resource(region);

			if (!res_known(res) || phys < res ||
			    phys - res >= cxl_region_get_size(region))
				continue;
			c->known = true;
			(void)snprintf(c->region, sizeof(c->region), "%s",
				       cxl_region_get_devname(region));
			(void)snprintf(c->root_decoder, sizeof(c->root_decoder), "%s",
				       cxl_decoder_get_devname(root));
			c->ways = cxl_region_get_interleave_ways(region);
			c->granularity = cxl_region_get_interleave_granularity(region);
			for (unsigned pos = 0; pos < c->ways && c->nmemdevs < DAX_CXL_MAX_MEMDEVS;
			     pos++) {
				struct cxl_memdev *m = region_memdev(region, pos);

				if (m)
					memdev_set(&c->memdevs[c->nmemdevs++], m);
			}
			return;
		}
	}
}

static bool memdev_in_a_region(struct cxl_ctx *cctx, struct cxl_memdev *memdev)
{
	struct cxl_bus *bus;
	struct cxl_decoder *root;
	struct cxl_region *region;

	cxl_root_decoder_foreach(cctx, bus, root)
	{
		for (region = cxl_region_get_first(root); region;
		     region = cxl_region_get_next(region)) {
			unsigned ways = cxl_region_get_interleave_ways(region);

			for (unsigned pos = 0; pos < ways; pos++)
				if (region_memdev(region, pos) == memdev)
					return true;
		}
	}
	return false;
}

/* The first pmem-capable window whose targets lead to memdev. */
static void memdev_root_decoder(struct cxl_ctx *cctx, struct cxl_memdev *memdev, char *out,
				size_t len)
{
	struct cxl_bus *bus;
	struct cxl_decoder *root;

	out[0] = '\0';
	cxl_root_decoder_foreach(cctx, bus, root)
	{
		if (cxl_decoder_is_pmem_capable(root) &&
		    cxl_decoder_get_target_by_memdev(root, memdev)) {
			(void)snprintf(out, len, "%s", cxl_decoder_get_devname(root));
			return;
		}
	}
}

/* Labels in use in memdev's label storage area (read over its mailbox: root only). */
static int memdev_labels_in_use(struct cxl_memdev *memdev, uint64_t *used)
{
	_cleanup_free_ uint8_t *buf = NULL;
	uint8_t head[256];
	size_t lsa = cxl_memdev_get_label_size(memdev), n = MIN(lsa, sizeof(head));
	uint64_t isz = 0;
	int r;

	if (lsa == 0)
		return -ENODATA;
	r = cxl_memdev_read_label(memdev, head, n, 0);
	if (r < 0)
		return r;
	r = dax_lsa_labels_in_use(head, n, used, &isz);
	if (r != -EINVAL)
		return r;
	/* The header told the index block size: read both blocks. */
	if (isz == 0 || 2 * isz > lsa)
		return -ENODATA;
	buf = malloc(2 * isz);
	if (!buf)
		return -ENOMEM;
	r = cxl_memdev_read_label(memdev, buf, 2 * isz, 0);
	if (r < 0)
		return r;
	return dax_lsa_labels_in_use(buf, 2 * isz, used, NULL);
}

int dax_cxl_unassembled(struct dax_cxl_unassembled **out, size_t *n)
{
	_cleanup_(cxl_unrefp) struct cxl_ctx *cctx = NULL;
	_cleanup_free_ struct dax_cxl_unassembled *v = NULL;
	struct cxl_memdev *memdev;
	size_t nv = 0;
	int r;

	*out = NULL;
	*n = 0;
	r = cxl_ctx_new(&cctx);
	if (r < 0)
		return r;
	cxl_memdev_foreach(cctx, memdev)
	{
		struct dax_cxl_unassembled u = {0};

		if (cxl_memdev_get_pmem_size(memdev) == 0 || memdev_in_a_region(cctx, memdev))
			continue;
		memdev_set(&u.memdev, memdev);
		r = memdev_labels_in_use(memdev, &u.labels);
		if (r == -ENODATA || (r == 0 && u.labels == 0))
			continue; /* blank labels: nothing to bring back */
		if (r < 0)
			log_debug("cxl: %s: label area unreadable: %s", u.memdev.name,
				  strerror(-r));
		u.labels_known = r == 0;
		memdev_root_decoder(cctx, memdev, u.root_decoder, sizeof(u.root_decoder));
		(void)dax_cxl_create_region_cmd(u.root_decoder, &u.memdev, 1, u.command,
						sizeof(u.command));
		r = PMEMZ_GROW(v, NULL, nv + 1);
		if (r < 0)
			return r;
		v[nv++] = u;
	}
	*out = TAKE_PTR(v);
	*n = nv;
	return 0;
}

static void fill_nd(struct ndctl_ctx *nctx, struct cxl_ctx *cctx, struct daxctl_region *dreg,
		    struct dax_dev *d)
{
	_cleanup_free_ uint64_t(*sect)[2] = NULL;
	_cleanup_free_ struct dax_badblock *bbs = NULL;
	struct ndctl_region *reg;
	struct ndctl_namespace *ndns;
	char region[sizeof(d->region)], nddev[64];
	const char *provider;
	unsigned long long region_res;
	size_t n = 0;

	(void)dax_parse_region_path(daxctl_region_get_path(dreg), region, sizeof(region), nddev,
				    sizeof(nddev));
	reg = nd_find_region(nctx, region, d->resource);
	if (!reg)
		return;
	(void)snprintf(d->region, sizeof(d->region), "%s", ndctl_region_get_devname(reg));
	d->persistence = from_ndctl(ndctl_region_get_persistence_domain(reg));
	ndns = nd_find_namespace(reg, nddev, d->resource);
	if (ndns)
		(void)snprintf(d->ns, sizeof(d->ns), "%s", ndctl_namespace_get_devname(ndns));
	if (d->numa_node < 0)
		d->numa_node = ndctl_region_get_numa_node(reg);
	region_res = ndctl_region_get_resource(reg);
	/* A CXL pmem region's NVDIMM region sits on the nvdimm bridge's bus. */
	provider = ndctl_bus_get_provider(ndctl_region_get_bus(reg));
	d->cxl.on_cxl = provider && strcmp(provider, "CXL") == 0;
	if (d->cxl.on_cxl)
		fill_cxl(cctx, res_known(region_res) ? region_res : d->resource, &d->cxl);

	if (nd_region_badblocks(reg, &sect, &n) < 0)
		return;
	d->badblocks_known = true;
	if (!res_known(region_res) || !d->resource) {
		/* Offsets unknown (not root): count what the whole region has. */
		d->badblocks_region_wide = true;
		for (size_t i = 0; i < n; i++)
			d->badblocks += sect[i][1];
		return;
	}
	if (n) {
		bbs = calloc(n, sizeof(*bbs));
		if (!bbs) {
			d->badblocks_known = false;
			return;
		}
	}
	(void)dax_clip_badblocks(region_res, d->resource, d->size, (const uint64_t(*)[2])sect, n,
				 bbs, &d->badblocks);
}

static void fill(struct daxctl_dev *dev, struct ndctl_ctx *nctx, struct cxl_ctx *cctx,
		 struct dax_dev *d)
{
	struct daxctl_region *dreg = daxctl_dev_get_region(dev);
	char path[128];
	int node;

	memset(d, 0, sizeof(*d));
	(void)snprintf(d->devname, sizeof(d->devname), "%s", daxctl_dev_get_devname(dev));
	(void)snprintf(d->path, sizeof(d->path), "/dev/%s", d->devname);
	d->major = (unsigned)daxctl_dev_get_major(dev);
	d->minor = (unsigned)daxctl_dev_get_minor(dev);
	d->size = daxctl_dev_get_size(dev);
	d->align = daxctl_dev_get_align(dev);
	if (d->align == 0)
		d->align = daxctl_region_get_align(dreg);
	d->resource = daxctl_dev_get_resource(dev);
	if (!res_known(d->resource))
		d->resource = 0;
	d->enabled = daxctl_dev_is_enabled(dev) > 0;
	d->system_ram = d->enabled && daxctl_dev_get_memory(dev) != NULL;
	d->dax_region = daxctl_region_get_id(dreg);
	d->target_node = daxctl_dev_get_target_node(dev);
	d->numa_node = -1;
	(void)snprintf(path, sizeof(path), "/sys/bus/dax/devices/%s/numa_node", d->devname);
	if (read_int_attr(path, &node) == 0 && node >= 0)
		d->numa_node = node;
	d->persistence = DAX_PERSIST_UNKNOWN;
	fill_nd(nctx, cctx, dreg, d);
	log_debug("dax: %s: %" PRIu64 " bytes, align %" PRIu64 ", region %s, %s, %" PRIu64
		  " bad sectors",
		  d->devname, d->size, d->align, d->region[0] ? d->region : "-",
		  dax_persistence_name(d->persistence), d->badblocks);
}

/* ---- public ---- */

static int devcmp(const void *a, const void *b)
{
	return strverscmp(((const struct dax_dev *)a)->devname,
			  ((const struct dax_dev *)b)->devname);
}

int dax_discover(struct dax_dev **out, size_t *n)
{
	_cleanup_(daxctl_unrefp) struct daxctl_ctx *dctx = NULL;
	_cleanup_(ndctl_unrefp) struct ndctl_ctx *nctx = NULL;
	_cleanup_(cxl_unrefp) struct cxl_ctx *cctx = NULL;
	_cleanup_free_ struct dax_dev *v = NULL;
	struct daxctl_region *reg;
	struct daxctl_dev *dev;
	size_t nv = 0, cap = 0;
	int r;

	*out = NULL;
	*n = 0;
	r = contexts_new(&dctx, &nctx);
	if (r < 0)
		return r;
	for (reg = daxctl_region_get_first(dctx); reg; reg = daxctl_region_get_next(reg)) {
		for (dev = daxctl_dev_get_first(reg); dev; dev = daxctl_dev_get_next(dev)) {
			if (daxctl_dev_get_size(dev) == 0)
				continue; /* an idle seed device */
			r = PMEMZ_GROW(v, &cap, nv + 1);
			if (r < 0)
				return r;
			/* Without libcxl the CXL fields stay unknown. */
			if (!cctx)
				(void)cxl_ctx_new(&cctx);
			fill(dev, nctx, cctx, &v[nv++]);
		}
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), devcmp);
	*out = TAKE_PTR(v);
	*n = nv;
	return 0;
}

int dax_lookup_rdev(dev_t rdev, struct dax_dev *out)
{
	_cleanup_(daxctl_unrefp) struct daxctl_ctx *dctx = NULL;
	_cleanup_(ndctl_unrefp) struct ndctl_ctx *nctx = NULL;
	_cleanup_(cxl_unrefp) struct cxl_ctx *cctx = NULL;
	struct daxctl_region *reg;
	struct daxctl_dev *dev;
	int r;

	r = contexts_new(&dctx, &nctx);
	if (r < 0)
		return r;
	for (reg = daxctl_region_get_first(dctx); reg; reg = daxctl_region_get_next(reg)) {
		for (dev = daxctl_dev_get_first(reg); dev; dev = daxctl_dev_get_next(dev)) {
			if ((unsigned)daxctl_dev_get_major(dev) != major(rdev) ||
			    (unsigned)daxctl_dev_get_minor(dev) != minor(rdev))
				continue;
			(void)cxl_ctx_new(&cctx);
			fill(dev, nctx, cctx, out);
			return 0;
		}
	}
	return -ENODEV;
}

int dax_lookup(const char *path, struct dax_dev *out)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENODEV;
	return dax_lookup_rdev(st.st_rdev, out);
}

int dax_badblocks(const struct dax_dev *d, struct dax_badblock **out, size_t *n)
{
	_cleanup_(ndctl_unrefp) struct ndctl_ctx *nctx = NULL;
	_cleanup_free_ uint64_t(*sect)[2] = NULL;
	_cleanup_free_ struct dax_badblock *v = NULL;
	struct ndctl_region *reg;
	unsigned long long region_res;
	size_t ns = 0, nv;
	int r;

	*out = NULL;
	*n = 0;
	if (!d->region[0] || !d->resource)
		return -ENOTSUP;
	r = ndctl_new(&nctx);
	if (r < 0)
		return log_debug_errno(r, "ndctl_new: %m");
	ndctl_set_log_fn(nctx, ndctl_log);
	reg = nd_find_region(nctx, d->region, 0);
	if (!reg)
		return -ENODEV;
	region_res = ndctl_region_get_resource(reg);
	if (!res_known(region_res))
		return -ENOTSUP;
	r = nd_region_badblocks(reg, &sect, &ns);
	if (r < 0)
		return r;
	if (ns == 0)
		return 0;
	v = calloc(ns, sizeof(*v));
	if (!v)
		return -ENOMEM;
	nv = dax_clip_badblocks(region_res, d->resource, d->size, (const uint64_t(*)[2])sect, ns, v,
				NULL);
	if (nv == 0)
		return 0;
	*out = TAKE_PTR(v);
	*n = nv;
	return 0;
}

static void log_cxl_unassembled(void)
{
	_cleanup_free_ struct dax_cxl_unassembled *u = NULL;
	size_t n = 0;

	if (dax_cxl_unassembled(&u, &n) < 0)
		return; /* no libcxl view: nothing to say about CXL */
	for (size_t i = 0; i < n; i++) {
		char labels[48];

		if (u[i].labels_known)
			(void)snprintf(labels, sizeof(labels),
				       "holds %" PRIu64 " namespace label(s)", u[i].labels);
		else
			(void)snprintf(labels, sizeof(labels), "may hold namespace labels");
		log_warning("CXL memdev %s (serial 0x%" PRIx64 ") %s but is in no CXL region: its "
			    "pmem region is not assembled (Linux does not at boot); bring it back "
			    "with '%s'",
			    u[i].memdev.name, u[i].memdev.serial, labels, u[i].command);
	}
}

void dax_log_devices(void)
{
	_cleanup_free_ struct dax_dev *v = NULL;
	size_t n = 0;
	int r;

	log_cxl_unassembled();
	r = dax_discover(&v, &n);
	if (r < 0) {
		log_info("device-DAX discovery unavailable: %s", strerror(-r));
		return;
	}
	if (n == 0) {
		log_info("No device-DAX devices found");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct dax_dev *d = &v[i];
		char s1[32], s2[32], numa[16], bad[32];

		if (d->numa_node >= 0)
			(void)snprintf(numa, sizeof(numa), "%d", d->numa_node);
		else
			(void)snprintf(numa, sizeof(numa), "unknown");
		if (d->badblocks_known)
			(void)snprintf(bad, sizeof(bad), "%" PRIu64, d->badblocks);
		else
			(void)snprintf(bad, sizeof(bad), "unknown");
		log_info("device-DAX %s: %s, alignment %s, NUMA node %s, mode %s, region %s, "
			 "persistence domain %s, bad sectors %s",
			 d->path, pmemz_format_size(d->size, s1, sizeof(s1)),
			 pmemz_format_size(d->align, s2, sizeof(s2)), numa, dax_mode_name(d),
			 d->region[0] ? d->region : "none", dax_persistence_name(d->persistence),
			 bad);
		if (d->cxl.on_cxl) {
			char cxl[512];

			log_info("device-DAX %s is on %s, persistence domain %s", d->path,
				 dax_cxl_describe(&d->cxl, cxl, sizeof(cxl)),
				 dax_persistence_name(d->persistence));
		}
	}
}
