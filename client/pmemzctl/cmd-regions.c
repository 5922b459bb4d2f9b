/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl regions [REGION] [--map [--width N]]: the configured regions,
 * their layout and extent counts; --map adds each region's extent map
 * (cmd-map.c).
 */
#include <errno.h>

#include "pmemzctl.h"

/* Every listed region's map; one the caller may not see says so and is skipped. */
static int regions_maps(struct ctl *ctl, const Pmemz__StatResp *s, unsigned width)
{
	struct out *o = ctl->out;

	o->ops->object_begin(o, "maps");
	for (size_t i = 0; i < s->n_regions; i++) {
		const char *name = s->regions[i]->info->name;
		int r;

		o->ops->object_begin(o, name);
		r = ctl_map_show(ctl, name, width);
		if (r == -EACCES || r == -EPERM) {
			out_str(o, "region", "region", name);
			out_str(o, "error", "map", pmemz_errormsg());
		} else if (r < 0) {
			return ctl_fail();
		}
		o->ops->object_end(o);
	}
	o->ops->object_end(o);
	return 0;
}

static int regions_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"map", no_argument, NULL, 'm'},
	    {"width", required_argument, NULL, 'w'},
	    {},
	};
	_cleanup_response_ Pmemz__Response *resp = NULL;
	const char *region = NULL;
	const Pmemz__StatResp *s;
	struct out *o;
	bool map = false;
	unsigned width = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT "mw:", opts, NULL)) != -1) {
		if (c == 'm') {
			map = true;
			continue;
		}
		if (c == 'w') {
			if ((r = ctl_map_parse_width(&cmd_regions, optarg, &width)) != 0)
				return r;
			continue;
		}
		if ((r = ctl_common_opt(ctl, &cmd_regions, c)) >= 0)
			return r;
	}
	if (optind < argc)
		region = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(&cmd_regions, "unexpected argument '%s'", argv[optind]);

	r = ctl_stat(ctl, region, &resp);
	if (r)
		return r;
	s = resp->stat;
	o = ctl->out;

	o->ops->list_begin(o, "regions", "no regions");
	for (size_t i = 0; i < s->n_regions; i++) {
		const Pmemz__RegionStat *rs = s->regions[i];
		const Pmemz__RegionInfo *in = rs->info;
		char uuid[40];

		o->ops->item_begin(o);
		out_str(o, "name", "name", in->name);
		out_str(o, "state", "state", ctl_region_state(rs));
		out_str(o, "path", "path", in->path);
		out_size(o, "size", "size", in->size);
		out_size(o, "extent_size", "extent", in->extent_size);
		out_u64(o, "extents", "extents", in->extent_count);
		out_u64(o, "zeroed", "zeroed", rs->zeroed);
		out_u64(o, "dirty", "dirty", rs->dirty);
		out_u64(o, "leased", "leased", rs->leased);
		out_u64(o, "committed", "committed", rs->committed);
		out_u64(o, "bad", "bad", rs->bad);
		out_str(o, "granularity", "granularity", in->granularity);
		out_bool(o, "devdax", "devdax", in->devdax);
		out_str(o, "persistence_domain", "persistence", in->persistence_domain);
		/* Last: a failure's reason is long text. */
		out_str(o, "failure", "failure", rs->failure);
		out_details(o, true);
		out_u64(o, "data_offset", "data offset", in->data_offset);
		out_u64(o, "alignment", "alignment", in->alignment);
		out_str(o, "uuid", "uuid",
			ctl_format_uuid(in->uuid.data, in->uuid.len, uuid, sizeof(uuid)));
		out_u64(o, "tags", "tags", rs->tags);
		out_u64(o, "zeroer_threads", "zeroer threads", rs->zeroer_threads);
		out_rate(o, "zero_rate_limit", "zero rate limit", (double)rs->zero_rate_limit);
		out_bool(o, "zeroer_paused", "zeroer paused", rs->has_paused && rs->paused);
		/* Not the caller's to open: the daemon gave the name only. */
		out_bool(o, "name_only", "name only", rs->has_name_only && rs->name_only);
		out_details(o, false);
		o->ops->item_end(o);
	}
	o->ops->list_end(o);
	if (map && (r = regions_maps(ctl, s, width)) != 0)
		return r;
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_regions = {
    .name = "regions",
    .args = "[REGION] [--map [--width N]]",
    .summary = "regions: path, size, extent size and count, states, granularity",
    .options = "  -m, --map      each region's extent map (see map)\n"
	       "  -w, --width N  map characters per line\n",
    .exec = regions_exec,
};
