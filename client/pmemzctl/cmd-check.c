/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl check [--no-data] [--recovered] [--metadata META] PATH: offline
 * consistency check of a region file or device-DAX (common/check/check.h),
 * or of a split region's metadata and data (metadata = PATH), read-only, no
 * daemon needed.
 * Exit 0 clean, 1 inconsistent, 2 unusable input (or a usage error), 3
 * unsupported (a newer pmemzerod wrote it).
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "feature-mask.h"
#include "pmemzctl.h"

extern const struct ctl_cmd cmd_check;

static const char *header_verdict(enum layout_hdr_status s, const char *why, char *buf, size_t len)
{
	if (s == HDR_OK)
		return "valid";
	(void)snprintf(buf, len, "%s (%s)", layout_hdr_status_str(s), why);
	return buf;
}

static const char *tag_state_str(uint64_t s)
{
	switch (s) {
	case TAG_FREE:
		return "free";
	case TAG_WRITTEN:
		return "written";
	case TAG_VALID:
		return "valid";
	case TAG_FREEING:
		return "freeing";
	}
	return "unknown";
}

/* The layout version and the features (names, and what this build does not know). */
static void print_features(struct out *o, const struct check_report *rep)
{
	static const char *const keys[3][2] = {{"compat", "compat features"},
					       {"ro_compat", "ro_compat features"},
					       {"incompat", "incompat features"}};
	const uint64_t have[3] = {rep->features.compat, rep->features.ro_compat,
				  rep->features.incompat};
	const uint64_t unknown[3] = {rep->unknown.compat, rep->unknown.ro_compat,
				     rep->unknown.incompat};
	char b[256], ukey[32], ulabel[40];

	out_u64(o, "layout_version", "layout version", rep->layout_version);
	for (unsigned k = 0; k < 3; k++) {
		out_str(o, keys[k][0], keys[k][1], layout_features_str(k, have[k], b, sizeof(b)));
		if (!unknown[k])
			continue;
		(void)snprintf(ukey, sizeof(ukey), "unknown_%s", keys[k][0]);
		(void)snprintf(ulabel, sizeof(ulabel), "unknown %s", keys[k][0]);
		out_str(o, ukey, ulabel, pmemz_mask_str(unknown[k], b, sizeof(b)));
	}
}

static void print_report(struct out *o, const struct check_report *rep, unsigned flags)
{
	const struct layout_header *h = &rep->hdr;
	char b1[256], b2[256];

	out_str(o, "path", "path", rep->path);
	if (rep->meta_path[0])
		out_str(o, "metadata", "metadata", rep->meta_path);
	out_str(o, "status", "status", check_report_status_str(rep));
	if (rep->unsupported[0])
		out_str(o, "unsupported", "unsupported", rep->unsupported);
	out_str(o, "mode", "mode", (flags & CHECK_RECOVERED) ? "recovered" : "as found");
	out_details(o, true);
	out_u64(o, "exit_status", "exit status", (uint64_t)rep->status);
	out_details(o, false);
	out_size(o, "image_size", "image size", rep->image_size);
	if (rep->image_size >= 2 * LAYOUT_BLOCK) {
		out_str(o, "primary_header", "primary header",
			header_verdict(rep->primary_status, rep->primary_why, b1, sizeof(b1)));
		out_str(o, "backup_header", "backup header",
			header_verdict(rep->backup_status, rep->backup_why, b2, sizeof(b2)));
	}
	if (rep->layout_version)
		print_features(o, rep);
	if (rep->have_hdr) {
		out_str(o, "uuid", "uuid",
			ctl_format_uuid(h->uuid, sizeof(h->uuid), b1, sizeof(b1)));
		out_size(o, "region_size", "region size", h->region_size);
		out_size(o, "extent_size", "extent size", h->extent_size);
		out_u64(o, "extent_count", "extents", h->extent_count);
		out_u64(o, "data_offset", "data offset", h->data_off);
		out_u64(o, "tag_slots", "tag slots", h->tag_count);
		out_details(o, true);
		out_u64(o, "extent_table_offset", "extent table offset", h->extent_table_off);
		out_u64(o, "tag_table_offset", "tag table offset", h->tag_table_off);
		out_size(o, "data_align", "data alignment", h->data_align);
		out_u64(o, "format_time", "format time", h->format_time);
		out_details(o, false);
		out_u64(o, "zeroed", "zeroed", rep->count[EXT_ZEROED]);
		out_u64(o, "dirty", "dirty", rep->count[EXT_DIRTY]);
		out_u64(o, "leased", "leased", rep->count[EXT_LEASED]);
		out_u64(o, "committed", "committed", rep->count[EXT_COMMITTED]);
		out_u64(o, "bad", "bad", rep->count[EXT_BAD]);
		out_u64(o, "invalid_records", "invalid records", rep->invalid_records);
		out_u64(o, "valid_tags", "valid tags", rep->valid_tags);
		out_bool(o, "data_checked", "zeroed data checked", rep->data_checked);
		out_u64(o, "zeroed_checked", "zeroed extents read", rep->zeroed_checked);
		out_u64(o, "zeroed_not_zero", "zeroed but not zero", rep->zeroed_not_zero);
		out_u64(o, "rollback_extents", "to roll back", rep->rollback_extents);
		out_u64(o, "release_extents", "to release", rep->release_extents);
		out_details(o, true);
		out_u64(o, "badblocks", "bad ranges known", rep->badblocks);
		out_u64(o, "zeroed_bad", "zeroed with bad blocks", rep->zeroed_bad);
		out_details(o, false);
	}
	out_u64(o, "problem_count", "problems", rep->problems_total);

	if (rep->have_hdr) {
		o->ops->list_begin(o, "tags", "no tags");
		for (size_t i = 0; i < rep->n_tags; i++) {
			const struct check_tag *t = &rep->tags[i];

			o->ops->item_begin(o);
			out_u64(o, "slot", "slot", t->id);
			out_str(o, "name", "tag", t->name);
			out_u64(o, "uid", "uid", t->uid);
			out_str(o, "state", "state", tag_state_str(t->state));
			out_u64(o, "extents", "extents", t->n_extents);
			o->ops->item_end(o);
		}
		o->ops->list_end(o);
	}

	o->ops->list_begin(o, "notes", "no recovery work pending");
	for (size_t i = 0; i < rep->n_notes; i++) {
		o->ops->item_begin(o);
		out_str(o, "message", "note", rep->notes[i]);
		o->ops->item_end(o);
	}
	o->ops->list_end(o);

	o->ops->list_begin(o, "problems", "no problems found");
	for (size_t i = 0; i < rep->n_problems; i++) {
		o->ops->item_begin(o);
		out_str(o, "message", "problem", rep->problems[i]);
		o->ops->item_end(o);
	}
	o->ops->list_end(o);
}

static int check_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"no-data", no_argument, NULL, 'n'},
	    {"recovered", no_argument, NULL, 'r'},
	    {"metadata", required_argument, NULL, 'M'},
	    {},
	};
	struct check_report rep;
	const char *path, *meta = NULL;
	unsigned flags = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT "nrM:", opts, NULL)) != -1) {
		if (c == 'M') {
			meta = optarg;
			continue;
		}
		if (c == 'n') {
			flags |= CHECK_NO_DATA;
			continue;
		}
		if (c == 'r') {
			flags |= CHECK_RECOVERED;
			continue;
		}
		if ((r = ctl_common_opt(ctl, &cmd_check, c)) >= 0)
			return r;
	}
	if (optind >= argc)
		return ctl_usage_error(&cmd_check, "which region file or device?");
	path = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(&cmd_check, "unexpected argument '%s'", argv[optind]);

	r = meta ? check_path_split(meta, path, flags, &rep) : check_path(path, flags, &rep);
	if (r < 0) {
		(void)fprintf(stderr, "pmemzctl: cannot check %s%s%s: %s\n", path,
			      meta ? " with metadata " : "", meta ? meta : "",
			      r == -EINVAL || r == -ENODEV ? "not a regular file or a device-DAX"
							   : strerror(-r));
		return CHECK_UNUSABLE;
	}
	r = ctl_output(ctl);
	if (r) {
		check_report_free(&rep);
		return r;
	}
	print_report(ctl->out, &rep, flags);
	r = ctl_finish(ctl);
	if (r == CTL_EXIT_OK)
		r = (int)rep.status;
	check_report_free(&rep);
	return r;
}

const struct ctl_cmd cmd_check = {
    .name = "check",
    .args = "[--no-data] [--recovered] [--metadata META] PATH",
    .summary = "offline check of a region file or device-DAX (no daemon; read-only)",
    .options = "  -n, --no-data    do not read the data of ZEROED extents\n"
	       "  -r, --recovered  the image was recovered: LEASED records and half-made\n"
	       "                   commits are problems, not pending recovery work\n"
	       "  -M, --metadata META  PATH is the data of a region whose header and tables\n"
	       "                   are in META (metadata = META in pmemzerod.conf)\n"
	       "Exit status: 0 clean, 1 inconsistent, 2 unusable input, 3 unsupported\n"
	       "(written by a newer pmemzerod).\n",
    .exec = check_exec,
};
