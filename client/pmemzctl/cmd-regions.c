/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl regions [REGION] [--map [--width N]]: the configured regions,
 * their layout and extent counts; --map adds each region's extent map
 * (cmd-map.c).
 */
#include <errno.h>

#include "pmemzctl.h"

/* Every listed region's map; one the caller may not see says so and is skipped. */
static int regions_maps(struct ctl *ctl, const struct pmemz_stat *s, unsigned width)
{
	struct out *o = ctl->out;

	o->ops->object_begin(o, "maps");
	for (size_t i = 0; i < pmemz_stat_regions(s); i++) {
		const char *name = pmemz_stat_region_str(s, i, PMEMZ_RS_NAME);
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

static void regions_row(struct out *o, const struct pmemz_stat *s, size_t i)
{
	uint8_t raw[16];
	char uuid[40];

	o->ops->item_begin(o);
	out_str(o, "name", "name", pmemz_stat_region_str(s, i, PMEMZ_RS_NAME));
	out_str(o, "state", "state", ctl_region_state(s, i));
	out_str(o, "path", "path", pmemz_stat_region_str(s, i, PMEMZ_RS_PATH));
	out_size(o, "size", "size", ctl_stat_u64(s, i, PMEMZ_RS_SIZE));
	out_size(o, "extent_size", "extent", ctl_stat_u64(s, i, PMEMZ_RS_EXTENT_SIZE));
	out_u64(o, "extents", "extents", ctl_stat_u64(s, i, PMEMZ_RS_EXTENTS));
	out_u64(o, "zeroed", "zeroed", ctl_stat_u64(s, i, PMEMZ_RS_ZEROED));
	out_u64(o, "dirty", "dirty", ctl_stat_u64(s, i, PMEMZ_RS_DIRTY));
	out_u64(o, "leased", "leased", ctl_stat_u64(s, i, PMEMZ_RS_LEASED));
	out_u64(o, "committed", "committed", ctl_stat_u64(s, i, PMEMZ_RS_COMMITTED));
	out_u64(o, "bad", "bad", ctl_stat_u64(s, i, PMEMZ_RS_BAD));
	out_str(o, "granularity", "granularity", pmemz_stat_region_str(s, i, PMEMZ_RS_GRANULARITY));
	out_bool(o, "devdax", "devdax", ctl_stat_u64(s, i, PMEMZ_RS_DEVDAX));
	out_str(o, "persistence_domain", "persistence",
		pmemz_stat_region_str(s, i, PMEMZ_RS_PERSISTENCE_DOMAIN));
	/* Last: a failure's reason is long text. */
	out_str(o, "failure", "failure", pmemz_stat_region_str(s, i, PMEMZ_RS_FAILURE));
	out_details(o, true);
	out_u64(o, "data_offset", "data offset", ctl_stat_u64(s, i, PMEMZ_RS_DATA_OFFSET));
	out_u64(o, "alignment", "alignment", ctl_stat_u64(s, i, PMEMZ_RS_ALIGNMENT));
	if (pmemz_stat_region_uuid(s, i, raw) == 0)
		out_str(o, "uuid", "uuid", ctl_format_uuid(raw, sizeof(raw), uuid, sizeof(uuid)));
	else
		out_str(o, "uuid", "uuid", "");
	out_u64(o, "tags", "tags", ctl_stat_u64(s, i, PMEMZ_RS_TAGS));
	out_u64(o, "zeroer_threads", "zeroer threads", ctl_stat_u64(s, i, PMEMZ_RS_ZEROER_THREADS));
	out_rate(o, "zero_rate_limit", "zero rate limit",
		 (double)ctl_stat_u64(s, i, PMEMZ_RS_ZERO_RATE_LIMIT));
	out_bool(o, "zeroer_paused", "zeroer paused", ctl_stat_u64(s, i, PMEMZ_RS_PAUSED));
	/* Not the caller's to open: the daemon gave the name only. */
	out_bool(o, "name_only", "name only", ctl_stat_u64(s, i, PMEMZ_RS_NAME_ONLY));
	out_details(o, false);
	o->ops->item_end(o);
}

static int regions_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"map", no_argument, NULL, 'm'},
	    {"width", required_argument, NULL, 'w'},
	    {},
	};
	_cleanup_(pmemz_stat_freep) struct pmemz_stat *s = NULL;
	const char *region = NULL;
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

	r = ctl_stat(ctl, region, &s);
	if (r)
		return r;
	o = ctl->out;

	o->ops->list_begin(o, "regions", "no regions");
	for (size_t i = 0; i < pmemz_stat_regions(s); i++)
		regions_row(o, s, i);
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
