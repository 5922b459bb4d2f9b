/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl discover [DEVICE]: the device-DAX devices of this machine (or
 * one of them) as libdaxctl and libndctl see them (daemon/tools/dax.h): size,
 * alignment, NUMA node, mode, NVDIMM region, persistence domain and the
 * store granularity it implies, bad blocks.  No daemon needed.
 */
#include <string.h>

#include "dax.h"
#include "pmemzctl.h"

extern const struct ctl_cmd cmd_discover;

static void print_dev(struct out *o, const struct dax_dev *d)
{
	o->ops->item_begin(o);
	out_str(o, "path", "device", d->path);
	out_size(o, "size", "size", d->size);
	out_size(o, "align", "align", d->align);
	if (d->numa_node >= 0)
		out_u64(o, "numa_node", "numa", (uint64_t)d->numa_node);
	else
		out_str(o, "numa_node", "numa", NULL);
	out_str(o, "mode", "mode", dax_mode_name(d));
	out_str(o, "region", "region", d->region[0] ? d->region : NULL);
	out_str(o, "persistence_domain", "persistence", dax_persistence_name(d->persistence));
	out_str(o, "granularity", "granularity", dax_persistence_granularity(d->persistence));
	if (d->badblocks_known)
		out_u64(o, "badblocks", "badblocks", d->badblocks);
	else
		out_str(o, "badblocks", "badblocks", NULL);
	out_details(o, true);
	out_str(o, "devname", "devname", d->devname);
	out_u64(o, "major", "major", d->major);
	out_u64(o, "minor", "minor", d->minor);
	out_bool(o, "enabled", "enabled", d->enabled);
	out_u64(o, "dax_region", "dax region", (uint64_t)(d->dax_region >= 0 ? d->dax_region : 0));
	out_str(o, "namespace", "namespace", d->ns[0] ? d->ns : NULL);
	if (d->target_node >= 0)
		out_u64(o, "target_node", "target node", (uint64_t)d->target_node);
	else
		out_str(o, "target_node", "target node", NULL);
	/* "region": not root, so the count is for the whole NVDIMM region. */
	out_str(o, "badblocks_scope", "badblocks scope",
		!d->badblocks_known	   ? NULL
		: d->badblocks_region_wide ? "region"
					   : "device");
	out_details(o, false);
	o->ops->item_end(o);
}

static int discover_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {CTL_COMMON_OPTS, {}};
	_cleanup_free_ struct dax_dev *devs = NULL;
	struct dax_dev one;
	const char *path = NULL;
	size_t n = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT, opts, NULL)) != -1)
		if ((r = ctl_common_opt(ctl, &cmd_discover, c)) >= 0)
			return r;
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(&cmd_discover, "unexpected argument '%s'", argv[optind]);

	if (path) {
		r = dax_lookup(path, &one);
		if (r == -ENODEV) {
			(void)fprintf(stderr, "pmemzctl: %s is not a device-DAX device\n", path);
			return CTL_EXIT_FAIL;
		}
		if (r < 0) {
			(void)fprintf(stderr, "pmemzctl: %s: %s\n", path, strerror(-r));
			return CTL_EXIT_FAIL;
		}
	} else {
		r = dax_discover(&devs, &n);
		if (r < 0) {
			(void)fprintf(stderr, "pmemzctl: cannot list device-DAX devices: %s\n",
				      strerror(-r));
			return CTL_EXIT_FAIL;
		}
	}
	r = ctl_output(ctl);
	if (r)
		return r;
	ctl->out->ops->list_begin(ctl->out, "devices", "no device-DAX devices found");
	if (path)
		print_dev(ctl->out, &one);
	for (size_t i = 0; i < n; i++)
		print_dev(ctl->out, &devs[i]);
	ctl->out->ops->list_end(ctl->out);
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_discover = {
    .name = "discover",
    .args = "[DEVICE]",
    .summary = "device-DAX devices: size, alignment, NUMA node, persistence (no daemon)",
    .options = "Persistence domain of the NVDIMM region: cpu_cache (eADR: byte granularity),\n"
	       "memory_controller (ADR: cache_line), none, or unknown (not an NVDIMM).\n",
    .exec = discover_exec,
};
