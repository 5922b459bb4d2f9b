/* SPDX-License-Identifier: MIT */
/* Regions: open (file or device-DAX), close, info, group commit. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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
 * One daemon per region.  Not a lock on the region file itself: a tenant
 * holds an fd of that file (OPEN_REGION) and could take the lock first
 * (F_OFD_SETLK) and keep the daemon from ever starting again.  The lock is
 * a file of our own, in a directory no client can reach, named after the
 * backing file's identity (device and inode, or the device-DAX's device
 * number), so two paths of one file share it.  flock() is per open file
 * description: two sections naming one file in the same daemon conflict too.
 */
static int lock_dir(char **out)
{
	const char *d = getenv("XDG_RUNTIME_DIR");
	_cleanup_free_ char *state = NULL;
	int r;

	if (geteuid() == 0)
		return asprintf(out, "%s", "/run/pmemzerod/locks") < 0 ? -ENOMEM : 0;
	if (d && *d)
		return asprintf(out, "%s/pmemzerod/locks", d) < 0 ? -ENOMEM : 0;
	r = pmemz_default_state_dir(&state);
	if (r < 0)
		return r;
	return asprintf(out, "%s/locks", state) < 0 ? -ENOMEM : 0;
}

static int lock_backing(const struct region_conf *rc, const char *path_of, const struct stat *st,
			int *lock_fd)
{
	_cleanup_free_ char *dir = NULL, *path = NULL;
	_cleanup_close_ int fd = -1;
	char pid[24];
	int q;

	q = lock_dir(&dir);
	if (q < 0)
		return log_error_errno(q, "region '%s': no directory for its lock file: %m",
				       rc->name);
	q = pmemz_mkdir_p(dir, 0700);
	if (q < 0)
		return log_error_errno(q, "region '%s': cannot create the lock directory %s: %m",
				       rc->name, dir);
	if (S_ISCHR(st->st_mode))
		q = asprintf(&path, "%s/dax-%u:%u.lock", dir, major(st->st_rdev),
			     minor(st->st_rdev));
	else
		q = asprintf(&path, "%s/file-%u:%u-%" PRIu64 ".lock", dir, major(st->st_dev),
			     minor(st->st_dev), (uint64_t)st->st_ino);
	if (q < 0)
		return log_error_errno(ENOMEM, "region '%s': out of memory", rc->name);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0)
		return log_error_errno(errno, "region '%s': cannot open the lock file %s: %m",
				       rc->name, path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ssize_t n;

		if (errno != EWOULDBLOCK)
			return log_error_errno(errno, "region '%s': cannot lock %s: %m", rc->name,
					       path);
		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		return log_error_errno(EBUSY, "region '%s': %s is in use by process %s (lock %s)",
				       rc->name, path_of, pid[0] ? pid : "unknown", path);
	}
	(void)snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, strlen(pid), 0) < 0)
		log_debug("region '%s': cannot write the pid into %s: %m", rc->name, path);
	*lock_fd = TAKE_FD(fd);
	return 0;
}

/* Give a new (or empty) file its size: 0 or a positive errno. */
static int allocate_file(int fd, uint64_t size)
{
	int r = posix_fallocate(fd, 0, (off_t)size);

	if (r == EOPNOTSUPP || r == EINVAL)
		r = ftruncate(fd, (off_t)size) < 0 ? errno : 0;
	return r;
}

/* An existing data file: its size, if the configuration and the 4 KiB rule accept it. */
static int existing_size(const struct region_conf *rc, const struct stat *st, uint64_t *size)
{
	char s1[32], s2[32];

	if (st->st_size == 0)
		return log_error_errno(
		    EINVAL,
		    "region '%s': %s is empty; refusing to size and format an existing file "
		    "(was it truncated?  Remove it to have it created%s)",
		    rc->name, rc->path, rc->size ? " at the configured size" : " (set a size)");
	if (rc->size && (uint64_t)st->st_size != rc->size)
		return log_error_errno(EINVAL,
				       "region '%s': %s is %s but the configured size is %s; "
				       "refusing to resize it (set no size to use it as it is)",
				       rc->name, rc->path,
				       pmemz_format_size((uint64_t)st->st_size, s1, sizeof(s1)),
				       pmemz_format_size(rc->size, s2, sizeof(s2)));
	if ((uint64_t)st->st_size % LAYOUT_BLOCK)
		return log_error_errno(EINVAL,
				       "region '%s': %s is %" PRIu64
				       " bytes, not a multiple of 4 KiB; refusing to use it "
				       "(was it truncated or grown?)",
				       rc->name, rc->path, (uint64_t)st->st_size);
	*size = (uint64_t)st->st_size;
	return 0;
}

/*
 * A file region.  A missing file is created at the configured size; an
 * existing one is used at the size it has: never resized, never formatted
 * because it is empty (a tenant may have truncated it), and a configured
 * size that differs is an error, not an instruction.
 */
static int open_file(struct region *reg)
{
	const struct region_conf *rc = reg->rc;
	_cleanup_close_ int fd = -1;
	struct stat st;
	bool created = false;
	char s1[32];
	int r;

	fd = open(rc->path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT) {
		if (rc->size == 0)
			return log_error_errno(ENOENT,
					       "region '%s': %s does not exist and no size is "
					       "configured to create it",
					       rc->name, rc->path);
		if (rc->size % LAYOUT_BLOCK)
			return log_error_errno(
			    EINVAL, "region '%s': size %" PRIu64 " is not a multiple of 4 KiB",
			    rc->name, rc->size);
		fd = open(rc->path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_CREAT | O_EXCL, 0600);
		created = fd >= 0;
	}
	if (fd < 0)
		return log_error_errno(errno, "region '%s': cannot open %s: %m", rc->name,
				       rc->path);
	/* From here a failure unlinks what this call created (region_free). */
	reg->created = created;
	if (fstat(fd, &st) < 0)
		return log_error_errno(errno, "region '%s': stat %s: %m", rc->name, rc->path);
	if (!S_ISREG(st.st_mode))
		return log_error_errno(EINVAL,
				       "region '%s': %s is neither a regular file nor a device-DAX",
				       rc->name, rc->path);
	r = lock_backing(rc, rc->path, &st, &reg->lock_fd);
	if (r < 0)
		return r;

	if (!created) {
		r = existing_size(rc, &st, &reg->size);
		if (r < 0)
			return r;
	} else {
		r = allocate_file(fd, rc->size);
		if (r)
			return log_error_errno(r, "region '%s': cannot size %s to %s: %m", rc->name,
					       rc->path,
					       pmemz_format_size(rc->size, s1, sizeof(s1)));
		log_info("region '%s': created %s (%s)", rc->name, rc->path,
			 pmemz_format_size(rc->size, s1, sizeof(s1)));
		reg->size = rc->size;
	}
	reg->fd = TAKE_FD(fd);
	reg->devdax = false;
	return 0;
}

static int open_backing(struct region *r)
{
	const struct region_conf *rc = r->rc;
	_cleanup_close_ int fd = -1;
	struct dax_dev d;
	struct stat st;
	int ret;

	if (stat(rc->path, &st) < 0 || !S_ISCHR(st.st_mode))
		return open_file(r);
	ret = devdax_geometry(rc->name, rc->path, st.st_rdev, &d);
	if (ret < 0)
		return ret;
	fd = open(rc->path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return log_error_errno(errno, "region '%s': cannot open %s: %m", rc->name,
				       rc->path);
	if (fstat(fd, &st) < 0)
		return log_error_errno(errno, "region '%s': stat %s: %m", rc->name, rc->path);
	if (!S_ISCHR(st.st_mode))
		return log_error_errno(EINVAL, "region '%s': %s changed while being opened",
				       rc->name, rc->path);
	ret = lock_backing(rc, rc->path, &st, &r->lock_fd);
	if (ret < 0)
		return ret;
	if (rc->size && rc->size != d.size)
		log_notice("region '%s': ignoring the configured size: %s is a device-DAX of "
			   "%" PRIu64 " bytes",
			   rc->name, rc->path, d.size);
	r->fd = TAKE_FD(fd);
	r->devdax = true;
	r->size = d.size;
	r->alignment = d.align;
	r->persistence = dax_persistence_name(d.persistence);
	return 0;
}

/* ---- metadata = PATH ---- */

/* An empty metadata file: sized for the data area's tables (formatted later). */
static int size_empty_meta(struct region *r, int fd, uint64_t extent_size)
{
	const struct region_conf *rc = r->rc;
	char s1[32], s2[32];
	uint64_t need;
	int q;

	q = format_meta_size_for(r->size, extent_size, r->alignment, &need);
	if (q < 0)
		return log_error_errno(q,
				       "region '%s': no layout for a data area of %s with "
				       "extents of %s: %m",
				       rc->name, pmemz_format_size(r->size, s1, sizeof(s1)),
				       pmemz_format_size(extent_size, s2, sizeof(s2)));
	q = allocate_file(fd, need);
	if (q)
		return log_error_errno(q, "region '%s': cannot size metadata %s: %m", rc->name,
				       rc->metadata);
	log_info("region '%s': %s metadata %s (%s)", rc->name,
		 r->meta_created ? "created" : "sized the empty", rc->metadata,
		 pmemz_format_size(need, s1, sizeof(s1)));
	r->msize = need;
	return 0;
}

/*
 * The metadata file (or device-DAX) of a split region.  Created, or an
 * empty one sized, for the data file: but a missing one is created only
 * when the data file was created now too, because new metadata for an
 * existing data file drops every allocation in it; an operator who means
 * that creates the empty file first.  An existing one is never resized.
 */
static int open_meta(struct region *r, uint64_t extent_size)
{
	const struct region_conf *rc = r->rc;
	const char *path = rc->metadata;
	_cleanup_close_ int fd = -1;
	struct stat st;
	int q;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT) {
		if (!r->created)
			return log_error_errno(
			    ENOENT,
			    "region '%s': metadata %s does not exist, but the data %s does; "
			    "refusing to start it on new metadata, which would drop everything "
			    "allocated in it (to mean that, create %s empty)",
			    rc->name, path, rc->path, path);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_CREAT | O_EXCL, 0600);
		r->meta_created = fd >= 0;
	}
	if (fd < 0)
		return log_error_errno(errno, "region '%s': cannot open metadata %s: %m", rc->name,
				       path);
	if (fstat(fd, &st) < 0)
		return log_error_errno(errno, "region '%s': stat %s: %m", rc->name, path);
	q = lock_backing(rc, path, &st, &r->mlock_fd);
	if (q < 0)
		return q;
	if (S_ISCHR(st.st_mode)) {
		struct dax_dev d;

		q = devdax_geometry(rc->name, path, st.st_rdev, &d);
		if (q < 0)
			return q;
		r->msize = d.size;
		r->mdevdax = true;
	} else if (!S_ISREG(st.st_mode)) {
		return log_error_errno(EINVAL,
				       "region '%s': metadata %s is neither a regular file nor a "
				       "device-DAX",
				       rc->name, path);
	} else if (st.st_size == 0) {
		q = size_empty_meta(r, fd, extent_size);
		if (q < 0)
			return q;
	} else if ((uint64_t)st.st_size % LAYOUT_BLOCK) {
		return log_error_errno(EINVAL,
				       "region '%s': metadata %s is %" PRIu64
				       " bytes, not a multiple of 4 KiB; refusing to use it",
				       rc->name, path, (uint64_t)st.st_size);
	} else {
		r->msize = (uint64_t)st.st_size;
	}
	r->mfd = TAKE_FD(fd);
	return 0;
}

/* Map the metadata and load (or format) the header from it. */
static int load_split(struct region *r, uint64_t extent_size)
{
	const struct region_conf *rc = r->rc;
	_cleanup_free_ struct pstore_badblock *bbs = NULL;
	size_t n_bbs = 0;
	uint64_t end;
	int ret;

	ret = open_meta(r, extent_size ? extent_size : MAX(CONF_DEFAULT_EXTENT_SIZE, r->alignment));
	if (ret < 0)
		return ret;
	ret = pstore_open(r->mfd, r->msize, r->name, &r->mps);
	if (ret < 0)
		return ret;
	r->mbase = pstore_base(r->mps);
	ret = pstore_badblocks(r->mps, &bbs, &n_bbs);
	if (ret < 0 && ret != -ENOTSUP)
		log_warning("region '%s': cannot read the bad block list of metadata %s: %s",
			    r->name, rc->metadata, strerror(-ret));
	ret = format_load_split(r->mps, r->size, r->name, extent_size, r->alignment, bbs, n_bbs,
				&r->hdr, &r->loaded);
	if (ret < 0)
		return ret;
	end = layout_tables_end(r->hdr.tag_table_off, r->hdr.tag_count);
	if (!r->mdevdax && pstore_size(r->mps) != end)
		return log_error_errno(EINVAL,
				       "region '%s': metadata %s is %" PRIu64
				       " bytes but its tables need %" PRIu64
				       "; refusing to use or resize it",
				       r->name, rc->metadata, pstore_size(r->mps), end);
	return 0;
}

static void region_drain(struct region *r)
{
	pstore_drain(r->ps);
	if (r->mps != r->ps)
		pstore_drain(r->mps);
}

/* ---- open / close ---- */

static void region_free(struct region *r)
{
	if (!r)
		return;
	region_zeroer_stop(r);
	region_tags_free(r);
	region_moves_free(r);
	region_index_free(r);
	if (r->mps != r->ps)
		pstore_close(r->mps);
	pstore_close(r->ps);
	if (r->fd >= 0)
		(void)close(r->fd);
	if (r->mfd >= 0)
		(void)close(r->mfd);
	/* region_open failed on files it had just created */
	if (r->created)
		(void)unlink(r->rc->path);
	if (r->meta_created)
		(void)unlink(r->rc->metadata);
	/* Last: the locks cover the unlinks. */
	if (r->lock_fd >= 0)
		(void)close(r->lock_fd);
	if (r->mlock_fd >= 0)
		(void)close(r->mlock_fd);
	free(r);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct region *, region_free)

static struct region *region_new(const struct region_conf *rc)
{
	struct region *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->fd = -1;
	r->lock_fd = -1;
	r->mfd = -1;
	r->mlock_fd = -1;
	r->rc = rc;
	r->name = rc->name;
	r->zeroer_threads =
	    rc->zeroer_threads ? MIN(rc->zeroer_threads, CONF_MAX_ZEROER_THREADS) : 1;
	r->batch_extents = rc->batch_extents ? rc->batch_extents : CONF_DEFAULT_BATCH_EXTENTS;
	return r;
}

/* The backing file or device, mapped; *extent_size: the configured one, 0 to follow the media. */
static int map_backing(struct region *r, uint64_t *extent_size)
{
	const struct region_conf *rc = r->rc;
	char s1[32], s2[32];
	uint64_t align;
	int ret;

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
	*extent_size = rc->extent_size_default ? 0 : rc->extent_size;
	if (*extent_size && layout_check_extent_size(*extent_size, r->alignment) < 0)
		return log_error_errno(EINVAL,
				       "region '%s': extent size %s must be at least 4 KiB and a "
				       "multiple of 4 KiB and of the device alignment %s",
				       r->name, pmemz_format_size(rc->extent_size, s1, sizeof(s1)),
				       pmemz_format_size(r->alignment, s2, sizeof(s2)));
	return 0;
}

/* Headers loaded (formatted if need be) and the geometry taken from them. */
static int load_layout(struct region *r, uint64_t extent_size, const struct pstore_badblock *bbs,
		       size_t n_bbs)
{
	int ret;

	if (r->rc->metadata) {
		ret = load_split(r, extent_size);
	} else {
		r->mps = r->ps;
		r->mbase = r->base;
		ret = format_load(r->ps, r->name, extent_size, r->alignment, bbs, n_bbs, &r->hdr,
				  &r->loaded);
	}
	if (ret < 0)
		return ret;
	r->extent_count = r->hdr.extent_count;
	r->extent_size = r->hdr.extent_size;
	r->data_off = r->hdr.data_off;
	r->tag_count = (uint32_t)r->hdr.tag_count;
	/* Inside the mapping: format_load checked the geometry against its size. */
	r->recs = (uint64_t *)(r->mbase + r->hdr.extent_table_off);
	r->slots = (struct layout_tag *)(r->mbase + r->hdr.tag_table_off);
	return 0;
}

/* The index and the tags, built by recovery from the media. */
static int build_index(struct region *r, const struct pstore_badblock *bbs, size_t n_bbs)
{
	int ret = region_index_init(r);

	if (ret >= 0)
		ret = region_tags_init(r);
	if (ret >= 0)
		ret = region_recover(r, bbs, n_bbs);
	if (ret < 0)
		return log_error_errno(ret, "region '%s': recovery: %m", r->name);
	/* A fault while loading or recovering: what recovery stored went nowhere. */
	if (region_failed(r, NULL, 0)) {
		char why[160];

		(void)region_failed(r, why, sizeof(why));
		return log_error_errno(EIO, "region '%s': %s", r->name, why);
	}
	return 0;
}

int region_open(const struct region_conf *rc, struct region **out)
{
	_cleanup_(region_freep) struct region *r = NULL;
	_cleanup_free_ struct pstore_badblock *bbs = NULL;
	size_t n_bbs = 0;
	uint64_t extent_size;
	char s1[32];
	int ret;

	*out = NULL;
	if (!rc || !rc->name || !rc->path)
		return -EINVAL;
	r = region_new(rc);
	if (!r)
		return log_error_errno(ENOMEM, "region '%s': out of memory", rc->name);
	ret = map_backing(r, &extent_size);
	if (ret < 0)
		return ret;
	ret = pstore_badblocks(r->ps, &bbs, &n_bbs);
	if (ret < 0 && ret != -ENOTSUP)
		log_warning("region '%s': cannot read the bad block list: %s", r->name,
			    strerror(-ret));
	if (n_bbs)
		log_warning("region '%s': libpmem2 reports %zu bad blocks", r->name, n_bbs);
	ret = load_layout(r, extent_size, bbs, n_bbs);
	if (ret >= 0)
		ret = build_index(r, bbs, n_bbs);
	/* After every check, recovery's too: a region refused is not written to at all. */
	if (ret >= 0)
		ret = format_repair(r->mps, r->name, &r->loaded);
	if (ret >= 0)
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
	r->meta_created = false;
	*out = TAKE_PTR(r);
	return 0;
}

void region_close(struct region *r)
{
	if (!r)
		return;
	region_zeroer_stop(r);
	(void)region_sync(r); /* complete this iteration's work: state durable */
	region_drain(r);
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

void region_set_conf(struct region *r, const struct region_conf *rc)
{
	r->rc = rc;
	r->name = rc->name;
	r->batch_extents = rc->batch_extents ? rc->batch_extents : CONF_DEFAULT_BATCH_EXTENTS;
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
	st->numa_node = r->z ? r->numa_node : -1;
}

int region_get_fd(const struct region *r)
{
	return r->fd;
}

int region_open_fd(const struct region *r)
{
	char proc[32];
	struct stat a, b;
	int fd;

	/*
	 * A new open file description of the same file: what a tenant does to
	 * its fd's flags, offset or OFD locks stays with that description.
	 */
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->fd);
	fd = open(proc, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT) /* no /proc: the path, if it is still the same file */
		fd = open(r->rc->path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &a) < 0 || fstat(r->fd, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino || a.st_rdev != b.st_rdev) {
		(void)close(fd);
		return -ESTALE;
	}
	return fd;
}

bool region_failed(const struct region *r, char *why, size_t len)
{
	uint64_t off;
	bool meta;

	if (!region_mapping_failed(r, &off, &meta))
		return false;
	if (why && len) {
		if (off == UINT64_MAX)
			(void)snprintf(why, len, "a store outside the mapping was refused");
		else
			(void)snprintf(why, len,
				       "I/O error at offset %" PRIu64
				       "%s (SIGBUS: file truncated or hole-punched, or a media "
				       "error)",
				       off, meta ? " of the metadata" : "");
	}
	return true;
}

/* ---- group commit ---- */

int region_sync(struct region *r)
{
	int drains = 1;

	/*
	 * A faulted mapping makes nothing durable: no state that attests
	 * earlier stores may follow, and no reply may claim it (I5).  Checked
	 * after every drain, before the next phase stores.
	 */
	if (region_failed(r, NULL, 0))
		return -EIO;
	if (!r->pending)
		return 0;
	/*
	 * Drain 1: everything stored and flushed this iteration (data, new tags'
	 * bodies and WRITTEN, FREEING, leases, unleases, ZEROED).
	 */
	region_drain(r);
	if (region_failed(r, NULL, 0))
		return -EIO;
	/* The MOVE markers whose FREE that drain made durable may be reused. */
	region_moves_release(r);
	/*
	 * Drain 2: the records of this iteration's commits and frees, and the
	 * MOVE batches' decisions (markers VALID).
	 */
	bool tags1 = region_tags_phase1(r), moves1 = region_moves_phase1(r);

	if (tags1 || moves1) {
		region_drain(r);
		drains++;
		if (region_failed(r, NULL, 0))
			return -EIO;
	}
	/*
	 * Drain 3 (commits and moves): VALID, moved records.  A FREE rides
	 * along, or waits for the next drain.
	 */
	bool tags2 = region_tags_phase2(r), moves2 = region_moves_phase2(r);

	if (tags2 || moves2) {
		region_drain(r);
		drains++;
		if (region_failed(r, NULL, 0))
			return -EIO;
	}
	region_tags_synced(r);
	region_moves_synced(r);
	/* Freed extents' DIRTY records are durable: the zeroer may have them. */
	region_index_release_pending(r);
	r->pending = false;
	r->st.drains += (uint64_t)drains;
	region_zeroer_kick(r);
	return drains;
}
