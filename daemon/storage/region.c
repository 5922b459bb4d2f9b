/* SPDX-License-Identifier: MIT */
/* Regions: open (file or device-DAX), close, info, group commit. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dax.h"
#include "format.h"
#include "log.h"
#include "region-internal.h"

/* ---- device-DAX ---- */

/*
 * The device-DAX char device st_rdev as libdaxctl/libndctl see it (dax.h):
 * size and alignment, and what the NVDIMM region says (persistence domain,
 * bad blocks), logged in one line.
 */
static int devdax_geometry(const char *name, const char *path, dev_t rdev, struct dax_dev *d)
{
	char s1[32], s2[32], numa[16];
	int r;

	r = dax_lookup_rdev(rdev, d);
	if (r == -ENODEV)
		return log_error_errno(
		    ENODEV,
		    "region '%s': %s is a character device that libdaxctl does not "
		    "know as a device-DAX",
		    name, path);
	if (r < 0)
		return log_error_errno(r, "region '%s': libdaxctl: %m", name);
	if (d->size == 0 || !d->enabled)
		return log_error_errno(ENODEV, "region '%s': %s (%s) is disabled or empty", name,
				       path, d->devname);
	if (d->system_ram)
		return log_error_errno(EBUSY, "region '%s': %s (%s) is in system-ram mode", name,
				       path, d->devname);
	if (d->numa_node >= 0)
		(void)snprintf(numa, sizeof(numa), "%d", d->numa_node);
	else
		(void)snprintf(numa, sizeof(numa), "unknown");
	log_info("region '%s': %s is %s%s%s%s%s: %s, alignment %s, NUMA node %s, persistence "
		 "domain %s, %" PRIu64 " bad sector(s)%s",
		 name, path, d->devname, d->region[0] ? " on " : "", d->region, d->ns[0] ? "/" : "",
		 d->ns, pmemz_format_size(d->size, s1, sizeof(s1)),
		 pmemz_format_size(d->align, s2, sizeof(s2)), numa,
		 dax_persistence_name(d->persistence), d->badblocks,
		 d->badblocks_known ? "" : " (unknown: no NVDIMM region)");
	return 0;
}

/* ---- open the backing fd ---- */

/*
 * One daemon per region: a POSIX write lock on the whole file (per process,
 * so a client holding the fd it got by SCM_RIGHTS does not keep it).
 */
static int lock_backing(int fd, const struct region_conf *rc)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};

	if (fcntl(fd, F_SETLK, &fl) == 0)
		return 0;
	if (errno == EACCES || errno == EAGAIN) {
		(void)fcntl(fd, F_GETLK, &fl);
		return log_error_errno(EBUSY, "region '%s': %s is in use by process %d", rc->name,
				       rc->path, (int)fl.l_pid);
	}
	log_debug("region '%s': cannot lock %s: %m", rc->name, rc->path);
	return 0; /* a filesystem without locks: go on */
}

static int open_file(const struct region_conf *rc, int *fd_out, uint64_t *size_out,
		     bool *created_out)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	bool created = false;
	char s1[32], s2[32];
	int r;

	fd = open(rc->path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (rc->size == 0)
			return log_error_errno(ENOENT,
					       "region '%s': %s does not exist and no size is "
					       "configured to create it",
					       rc->name, rc->path);
		fd = open(rc->path, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0600);
		created = fd >= 0;
	}
	if (fd < 0)
		return log_error_errno(errno, "region '%s': cannot open %s: %m", rc->name,
				       rc->path);
	r = lock_backing(fd, rc);
	if (r < 0)
		goto fail;
	if (fstat(fd, &st) < 0)
		return log_error_errno(errno, "region '%s': stat %s: %m", rc->name, rc->path);
	if (!S_ISREG(st.st_mode))
		return log_error_errno(EINVAL,
				       "region '%s': %s is neither a regular file nor a device-DAX",
				       rc->name, rc->path);

	if (st.st_size == 0 && rc->size) {
		/* New (or empty) file: blank, give it its configured size. */
		if (rc->size % LAYOUT_BLOCK) {
			r = log_error_errno(
			    EINVAL, "region '%s': size %" PRIu64 " is not a multiple of 4 KiB",
			    rc->name, rc->size);
			goto fail;
		}
		r = posix_fallocate(fd, 0, (off_t)rc->size);
		if (r == EOPNOTSUPP || r == EINVAL)
			r = ftruncate(fd, (off_t)rc->size) < 0 ? errno : 0;
		if (r) {
			r = log_error_errno(r, "region '%s': cannot size %s to %s: %m", rc->name,
					    rc->path, pmemz_format_size(rc->size, s1, sizeof(s1)));
			goto fail;
		}
		if (created)
			log_info("region '%s': created %s (%s)", rc->name, rc->path,
				 pmemz_format_size(rc->size, s1, sizeof(s1)));
		*size_out = rc->size;
		*created_out = created;
	} else if (rc->size && (uint64_t)st.st_size != rc->size) {
		return log_error_errno(EINVAL,
				       "region '%s': %s is %s but the configured size is %s; "
				       "refusing to resize it (set no size to use it as it is)",
				       rc->name, rc->path,
				       pmemz_format_size((uint64_t)st.st_size, s1, sizeof(s1)),
				       pmemz_format_size(rc->size, s2, sizeof(s2)));
	} else if (st.st_size == 0) {
		return log_error_errno(EINVAL, "region '%s': %s is empty and no size is configured",
				       rc->name, rc->path);
	} else {
		/* libpmem2 maps whole pages. */
		*size_out = (uint64_t)st.st_size & ~((uint64_t)LAYOUT_BLOCK - 1);
	}
	*fd_out = TAKE_FD(fd);
	return 0;
fail:
	if (created)
		(void)unlink(rc->path);
	return r;
}

static int open_backing(struct region *r)
{
	const struct region_conf *rc = r->rc;
	struct stat st;
	int fd, ret;

	if (stat(rc->path, &st) == 0 && S_ISCHR(st.st_mode)) {
		struct dax_dev d;

		ret = devdax_geometry(rc->name, rc->path, st.st_rdev, &d);
		if (ret < 0)
			return ret;
		fd = open(rc->path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return log_error_errno(errno, "region '%s': cannot open %s: %m", rc->name,
					       rc->path);
		if (rc->size && rc->size != d.size)
			log_notice(
			    "region '%s': ignoring the configured size: %s is a device-DAX of "
			    "%" PRIu64 " bytes",
			    rc->name, rc->path, d.size);
		r->fd = fd;
		r->devdax = true;
		r->size = d.size;
		r->alignment = d.align;
		r->persistence = dax_persistence_name(d.persistence);
		return lock_backing(fd, rc);
	}
	ret = open_file(rc, &r->fd, &r->size, &r->created);
	if (ret < 0)
		return ret;
	r->devdax = false;
	return 0;
}

/* ---- open / close ---- */

static void region_free(struct region *r)
{
	if (!r)
		return;
	region_zeroer_stop(r);
	region_tags_free(r);
	region_index_free(r);
	pstore_close(r->ps);
	if (r->fd >= 0)
		(void)close(r->fd);
	if (r->created) /* region_open failed on a file it had just created */
		(void)unlink(r->rc->path);
	free(r);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct region *, region_free)

int region_open(const struct region_conf *rc, struct region **out)
{
	_cleanup_(region_freep) struct region *r = NULL;
	_cleanup_free_ struct pstore_badblock *bbs = NULL;
	size_t n_bbs = 0;
	bool formatted;
	uint64_t align, extent_size;
	char s1[32], s2[32];
	int ret;

	*out = NULL;
	if (!rc || !rc->name || !rc->path)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return log_error_errno(ENOMEM, "region '%s': out of memory", rc->name);
	r->fd = -1;
	r->rc = rc;
	r->name = rc->name;
	r->zeroer_threads =
	    rc->zeroer_threads ? MIN(rc->zeroer_threads, CONF_MAX_ZEROER_THREADS) : 1;
	r->batch_extents = rc->batch_extents ? rc->batch_extents : CONF_DEFAULT_BATCH_EXTENTS;

	ret = open_backing(r);
	if (ret < 0)
		return ret;
	ret = pstore_open(r->fd, r->size, r->name, &r->ps);
	if (ret < 0)
		return ret;
	r->base = pstore_base(r->ps);
	r->size = pstore_size(r->ps);
	align = pstore_source_alignment(r->ps);
	r->alignment = MAX(MAX(r->alignment, align), (uint64_t)LAYOUT_BLOCK);

	/* An extent size nobody configured follows the media, or the device. */
	extent_size = rc->extent_size_default ? 0 : rc->extent_size;
	if (extent_size && layout_check_extent_size(extent_size, r->alignment) < 0)
		return log_error_errno(EINVAL,
				       "region '%s': extent size %s must be at least 4 KiB and a "
				       "multiple of 4 KiB and of the device alignment %s",
				       r->name, pmemz_format_size(rc->extent_size, s1, sizeof(s1)),
				       pmemz_format_size(r->alignment, s2, sizeof(s2)));

	ret = pstore_badblocks(r->ps, &bbs, &n_bbs);
	if (ret < 0 && ret != -ENOTSUP)
		log_warning("region '%s': cannot read the bad block list: %s", r->name,
			    strerror(-ret));
	if (n_bbs)
		log_warning("region '%s': libpmem2 reports %zu bad blocks", r->name, n_bbs);

	ret = layout_load(r->ps, r->name, extent_size, r->alignment, bbs, n_bbs, &r->hdr,
			  &formatted);
	if (ret < 0)
		return ret;
	r->extent_count = r->hdr.extent_count;
	r->extent_size = r->hdr.extent_size;
	r->data_off = r->hdr.data_off;
	r->tag_count = (uint32_t)r->hdr.tag_count;
	r->recs = (uint64_t *)(r->base + r->hdr.extent_table_off);
	r->slots = (struct layout_tag *)(r->base + r->hdr.tag_table_off);

	ret = region_index_init(r);
	if (ret >= 0)
		ret = region_tags_init(r);
	if (ret >= 0)
		ret = region_recover(r, bbs, n_bbs);
	if (ret < 0)
		return log_error_errno(ret, "region '%s': recovery: %m", r->name);

	ret = region_zeroer_start(r);
	if (ret < 0)
		return ret;
	region_zeroer_kick(r);

	log_info("region '%s': %s %s, %" PRIu64 " extents of %s, granularity %s, %u zeroer "
		 "thread(s)",
		 r->name, r->devdax ? "device-DAX" : "file", rc->path, r->extent_count,
		 pmemz_format_size(r->extent_size, s1, sizeof(s1)), pstore_granularity_name(r->ps),
		 r->zeroer_threads);
	r->created = false;
	*out = TAKE_PTR(r);
	return 0;
}

void region_close(struct region *r)
{
	if (!r)
		return;
	region_zeroer_stop(r);
	(void)region_sync(r); /* complete this iteration's work: state durable */
	pstore_drain(r->ps);
	region_free(r);
}

void region_close_abandon(struct region *r)
{
	if (!r)
		return;
	region_zeroer_stop(r);
	region_free(r);
}

struct pstore *region_get_pstore(const struct region *r)
{
	return r->ps;
}

/* ---- info ---- */

const struct region_conf *region_get_conf(const struct region *r)
{
	return r->rc;
}

void region_get_info(const struct region *r, struct region_info *info)
{
	memset(info, 0, sizeof(*info));
	info->name = r->name;
	info->path = r->rc->path;
	info->size = r->size;
	info->extent_size = r->extent_size;
	info->extent_count = r->extent_count;
	info->data_offset = r->data_off;
	memcpy(info->uuid, r->hdr.uuid, sizeof(info->uuid));
	info->devdax = r->devdax;
	info->alignment = r->alignment;
	info->granularity = pstore_granularity_name(r->ps);
	info->persistence_domain = r->persistence;
}

void region_get_stats(const struct region *r, struct region_stats *st)
{
	*st = r->st;
	memcpy(st->count, r->count, sizeof(st->count));
	st->zeroing = r->n_in_batch;
	st->tags = r->n_tags;
}

int region_get_fd(const struct region *r)
{
	return r->fd;
}

/* ---- group commit ---- */

int region_sync(struct region *r)
{
	int drains = 1;

	if (!r->pending)
		return 0;
	/*
	 * Drain 1: everything stored and flushed this iteration (data, new tags'
	 * bodies and WRITTEN, FREEING, leases, unleases, ZEROED).
	 */
	pstore_drain(r->ps);
	/* Drain 2: the records of this iteration's commits and frees. */
	if (region_tags_phase1(r)) {
		pstore_drain(r->ps);
		drains++;
	}
	/* Drain 3 (commits only): VALID.  A FREE rides along, or waits for the next drain. */
	if (region_tags_phase2(r)) {
		pstore_drain(r->ps);
		drains++;
	}
	region_tags_synced(r);
	/* Freed extents' DIRTY records are durable: the zeroer may have them. */
	region_release_pending(r);
	r->pending = false;
	r->st.drains += (uint64_t)drains;
	region_zeroer_kick(r);
	return drains;
}
