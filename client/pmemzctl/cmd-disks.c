/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl disks REGION: the nbd disks of a region (nbdkit-pmemz-plugin(1)).
 *
 * The disks and their bytes come from disk-set.c (shared with pmemzctl
 * metrics); the superblock and the mapping journal are read through the
 * region's mapping, where any tenant of the region may have written
 * anything, so they are checked like any input.  Any tenant may also
 * truncate the region's file (or it is shorter than the daemon thinks): a
 * load past its end raises SIGBUS, caught (common/sigbus.h) and reported
 * for that disk alone.
 *
 * Whether an nbdkit serves a disk now is not shown: the only probe is the
 * disk's claim, and a try-claim + unclaim makes an nbdkit that starts at
 * that instant fail with -EBUSY (and claims are per uid: an admin could not
 * probe another uid's disk anyway).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "disk-format.h"
#include "pmemzctl.h"
#include "sigbus.h"

_Static_assert(CTL_DISK_NAME_MAX == PMEMZ_DISK_NAME_MAX, "a disk name fits struct ctl_disk");

struct disks_emit {
	struct out *o;
	struct pmemz_region *r;
	const char *region;
	unsigned unreadable; /* disks whose superblock or journal could not be read */
};

static void disks_emit_one(struct ctl_disk *d, void *arg)
{
	struct disks_emit *e = arg;
	struct out *o = e->o;

	int r = ctl_disk_read(e->r, d);

	if (r == -EIO) {
		(void)fprintf(
		    stderr,
		    "pmemzctl: region '%s', disk '%s' of uid %u: I/O error (SIGBUS) reading "
		    "its %s: the region file is shorter than its mapping, or a media error\n",
		    e->region, d->name, (unsigned)d->uid,
		    strcmp(d->state, "unreadable journal") == 0 ? "mapping journal" : "superblock");
		e->unreadable++;
	} else if (r < 0) {
		/* listed with its tags' figures; the command fails */
		(void)fprintf(stderr,
			      "pmemzctl: region '%s', disk '%s' of uid %u: out of memory reading "
			      "its mapping journal\n",
			      e->region, d->name, (unsigned)d->uid);
		e->unreadable++;
	}
	o->ops->item_begin(o);
	out_str(o, "name", "disk", d->name);
	out_u64(o, "uid", "uid", d->uid);
	/* Unknown without a sound superblock: a string where a number would be (as "unlimited"). */
	if (d->size)
		out_size(o, "size", "size", d->size);
	else
		out_str(o, "size", "size", "unknown");
	out_size(o, "allocated", "allocated", d->allocated);
	out_u64(o, "chunks", "chunks", d->chunks);
	out_size(o, "ahead", "ahead", d->ahead);
	out_str(o, "state", "state", d->state);
	o->ops->item_end(o);
}

struct disk_delete {
	const char *disk;
	uint64_t chunks, bytes;
};

/*
 * One tag under nbd/DISK/: freed when it is one of DISK's chunk, pool or
 * ahead tags, else left alone.  The chunks the journal maps go with their
 * pool tags (counted in bytes, not in chunks: the journal is not read).
 */
static int disk_delete_one(struct pmemz_alloc *a, const char *tag, void *arg)
{
	char name[PMEMZ_DISK_NAME_MAX + 1];
	struct disk_delete *del = arg;
	size_t bytes = pmemz_alloc_size(a);
	uint64_t index;

	int kind = pmemz_disk_tag_parse(tag, name, &index);

	if ((kind != PMEMZ_DISK_TAG_CHUNK && kind != PMEMZ_DISK_TAG_POOL &&
	     kind != PMEMZ_DISK_TAG_AHEAD) ||
	    strcmp(name, del->disk) != 0) {
		pmemz_alloc_close(a);
		return 0;
	}
	if (pmemz_alloc_release(a) < 0)
		return -1; /* the message is set */
	if (kind == PMEMZ_DISK_TAG_CHUNK)
		del->chunks++;
	del->bytes += bytes;
	return 0;
}

/*
 * A disk a later plugin made with features this build does not know
 * (incompat or ro_compat) is not this build's to free: true (said why).
 * One without a superblock, or with a damaged or unreadable one (a file
 * cut under it), is freed as before.
 */
static bool disk_later(struct pmemz_region *reg, const char *sb_tag, const char *disk)
{
	struct pmemz_disk_super sb;
	struct pmemz_alloc *a = NULL;
	enum ctl_disk_verdict v;
	const char *state;
	char buf[160];
	size_t len = 0;
	const void *p;
	int r;

	if (pmemz_alloc_open(reg, sb_tag, &a) < 0)
		return false; /* none (or gone): the delete says what it finds */
	p = pmemz_alloc_range(a, 0, &len);
	pmemz_sigbus_install();
	r = p && len >= sizeof(sb) ? pmemz_sigbus_copy(&sb, p, sizeof(sb)) : -EIO;
	pmemz_alloc_close(a);
	if (r < 0)
		return false;
	v = ctl_disk_super_verdict(&sb, disk, pmemz_region_extent_size(reg), &state, buf,
				   sizeof(buf));
	if (v != CTL_DISK_READONLY && v != CTL_DISK_UNSUPPORTED)
		return false;
	(void)fprintf(stderr,
		      "pmemzctl: disk '%s' was made by a later version of nbdkit-pmemz-plugin "
		      "(%s): not deleted; delete it with that version\n",
		      disk, state);
	return true;
}

/*
 * Free the caller's disk: its chunks and pool, then its superblock, all
 * under the disk's claim, so no nbdkit serves it meanwhile.  Chunks first:
 * an interrupted delete leaves a disk that opens, with chunks that read as
 * zeros (a journal record naming an extent no pool holds maps nothing),
 * and is deleted again; the superblock first would leave chunks that no
 * disk owns.
 */
static int disks_delete(struct ctl *ctl, struct pmemz_region *reg, const char *region,
			const char *disk)
{
	char sb_tag[PMEMZ_DISK_TAG_MAX], prefix[PMEMZ_DISK_TAG_MAX];
	struct disk_delete del = {.disk = disk};
	struct pmemz_alloc *sb = NULL;
	uint64_t sb_bytes = 0;
	int r;

	if (pmemz_disk_super_tag(sb_tag, sizeof(sb_tag), disk) < 0 ||
	    pmemz_disk_chunk_prefix(prefix, sizeof(prefix), disk) < 0)
		return ctl_usage_error(&cmd_disks, "'%s' is not a disk name ([A-Za-z0-9._-]{1,%u})",
				       disk, PMEMZ_DISK_NAME_MAX);
	if (pmemz_region_claim(reg, sb_tag) < 0) {
		(void)fprintf(stderr, "pmemzctl: disk '%s' is in use, not deleted: %s\n", disk,
			      pmemz_errormsg());
		return CTL_EXIT_FAIL;
	}
	if (disk_later(reg, sb_tag, disk)) {
		(void)pmemz_region_unclaim(reg, sb_tag);
		return CTL_EXIT_FAIL;
	}
	r = pmemz_tag_foreach(reg, prefix, disk_delete_one, &del);
	if (r == 0) {
		r = pmemz_alloc_open(reg, sb_tag, &sb);
		if (r == 0) {
			sb_bytes = pmemz_alloc_size(sb);
			r = pmemz_alloc_release(sb);
		} else if (r == -ENOENT && del.chunks) {
			r = 0; /* chunks without a superblock: gone now too */
		} else if (r == -ENOENT) {
			(void)pmemz_region_unclaim(reg, sb_tag);
			(void)fprintf(stderr, "pmemzctl: no disk '%s' of uid %u in region '%s'\n",
				      disk, pmemz_client_uid(ctl->client), region);
			return CTL_EXIT_FAIL;
		}
	}
	if (r != 0) {
		/* the message is the library's; the claim goes with the connection */
		(void)fprintf(stderr,
			      "pmemzctl: deleting disk '%s' stopped after %llu chunks: %s\n", disk,
			      (unsigned long long)del.chunks, pmemz_errormsg());
		return CTL_EXIT_FAIL;
	}
	(void)pmemz_region_unclaim(reg, sb_tag);

	r = ctl_output(ctl);
	if (r)
		return r;
	out_str(ctl->out, "region", "region", region);
	out_str(ctl->out, "deleted", "deleted", disk);
	out_u64(ctl->out, "chunks", "chunks", del.chunks);
	out_size(ctl->out, "freed", "freed", del.bytes + sb_bytes);
	return ctl_finish(ctl);
}

static int disks_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"delete", required_argument, NULL, 'D'},
	    {},
	};
	_cleanup_(ctl_disk_set_done) struct ctl_disk_set set = {};
	const char *delete = NULL;
	struct pmemz_region *reg = NULL;
	struct disks_emit emit;
	const char *region;
	bool all;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT, opts, NULL)) != -1) {
		if (c == 'D') {
			delete = optarg;
			continue;
		}
		if ((r = ctl_common_opt(ctl, &cmd_disks, c)) >= 0)
			return r;
	}
	if (optind >= argc)
		return ctl_usage_error(&cmd_disks, "which region?");
	region = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(&cmd_disks, "unexpected argument '%s'", argv[optind]);

	r = ctl_connect(ctl);
	if (r)
		return r;
	/* An admin sees every uid's disks, anyone else their own. */
	all = pmemz_client_is_admin(ctl->client);
	/* The mapping first: it also says whether the caller may use the region. */
	if (pmemz_region_open_readonly(ctl->client, region, &reg) < 0)
		return ctl_fail();
	if (delete) {
		r = disks_delete(ctl, reg, region, delete);
		pmemz_region_close(reg);
		return r;
	}
	r = ctl_disk_set_list(ctl->client, reg, region, all, &set);
	if (r < 0) {
		pmemz_region_close(reg);
		return ctl_fail();
	}
	r = ctl_output(ctl);
	if (r) {
		pmemz_region_close(reg);
		return r;
	}

	out_str(ctl->out, "region", "region", region);
	out_size(ctl->out, "chunk_size", "chunk size", pmemz_region_extent_size(reg));
	ctl->out->ops->list_begin(ctl->out, "disks", "no disks");
	emit = (struct disks_emit){.o = ctl->out, .r = reg, .region = region};
	pmemz_sigbus_install();
	ctl_disk_set_foreach(&set, disks_emit_one, &emit);
	ctl->out->ops->list_end(ctl->out);
	pmemz_region_close(reg);
	r = ctl_finish(ctl);
	/* every disk is listed; one that could not be read fails the command */
	if (r == CTL_EXIT_OK && emit.unreadable)
		r = CTL_EXIT_FAIL;
	return r;
}

const struct ctl_cmd cmd_disks = {
    .name = "disks",
    .args = "REGION [--delete DISK]",
    .summary = "nbd disks of a region (nbdkit-pmemz-plugin): size, allocated bytes, chunks",
    .options = "      --delete DISK  free the caller's disk DISK (refused while an nbdkit\n"
	       "                     serves it)\n",
    .exec = disks_exec,
};
