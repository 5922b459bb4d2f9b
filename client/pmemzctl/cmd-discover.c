/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl discover [DEVICE]: the device-DAX devices of this machine (or
 * one of them) as libdaxctl and libndctl see them (common/dax/dax.h): size,
 * alignment, NUMA node, mode, NVDIMM region, persistence domain and the
 * store granularity it implies, bad blocks; for a device on a CXL pmem
 * region also the CXL side (list "cxl": memdevs and serials, CXL region,
 * root decoder, interleave, persistence domain); and, without DEVICE, the
 * CXL pmem regions that exist in labels but are not assembled (list
 * "cxl_unassembled", with the cxl create-region command that brings each
 * back).  No daemon needed.
 */
#include <inttypes.h>
#include <stdio.h>
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

/* Interleave position order: "mem0,mem1" and "0x1234,0x5678". */
static void memdev_lists(const struct dax_cxl *c, char *names, char *serials, size_t len)
{
	size_t on = 0, os = 0;

	names[0] = serials[0] = '\0';
	for (size_t i = 0; i < c->nmemdevs; i++) {
		int k = snprintf(names + on, len - on, "%s%s", i ? "," : "", c->memdevs[i].name);

		on = k < 0 ? len - 1 : MIN(on + (size_t)k, len - 1);
		k = snprintf(serials + os, len - os, "%s0x%" PRIx64, i ? "," : "",
			     c->memdevs[i].serial);
		os = k < 0 ? len - 1 : MIN(os + (size_t)k, len - 1);
	}
}

static void print_cxl(struct out *o, const struct dax_dev *d)
{
	const struct dax_cxl *c = &d->cxl;
	char names[DAX_CXL_MAX_MEMDEVS * 33], serials[DAX_CXL_MAX_MEMDEVS * 20];

	memdev_lists(c, names, serials, MIN(sizeof(names), sizeof(serials)));
	o->ops->item_begin(o);
	out_str(o, "path", "device", d->path);
	out_str(o, "memdev", "memdev", c->known ? names : NULL);
	out_str(o, "serial", "serial", c->known ? serials : NULL);
	out_str(o, "cxl_region", "cxl region", c->known ? c->region : NULL);
	out_str(o, "root_decoder", "root decoder", c->known ? c->root_decoder : NULL);
	if (c->known) {
		out_u64(o, "interleave_ways", "ways", c->ways);
		out_u64(o, "interleave_granularity", "granularity", c->granularity);
	} else {
		out_str(o, "interleave_ways", "ways", NULL);
		out_str(o, "interleave_granularity", "granularity", NULL);
	}
	out_str(o, "persistence_domain", "persistence", dax_persistence_name(d->persistence));
	out_details(o, true);
	out_str(o, "region", "region", d->region[0] ? d->region : NULL);
	out_details(o, false);
	o->ops->item_end(o);
}

static void print_unassembled(struct out *o, const struct dax_cxl_unassembled *u)
{
	char serial[24];

	(void)snprintf(serial, sizeof(serial), "0x%" PRIx64, u->memdev.serial);
	o->ops->item_begin(o);
	out_str(o, "memdev", "memdev", u->memdev.name);
	out_str(o, "serial", "serial", serial);
	out_str(o, "root_decoder", "root decoder", u->root_decoder[0] ? u->root_decoder : NULL);
	if (u->labels_known)
		out_u64(o, "labels", "labels", u->labels);
	else
		out_str(o, "labels", "labels", NULL);
	out_str(o, "command", "assemble with", u->command);
	o->ops->item_end(o);
}

static int discover_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {CTL_COMMON_OPTS, {}};
	_cleanup_free_ struct dax_dev *devs = NULL;
	_cleanup_free_ struct dax_cxl_unassembled *unasm = NULL;
	struct dax_dev one;
	const char *path = NULL;
	size_t n = 0, ncxl = 0, nunasm = 0;
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
		/* No libcxl view: there is nothing to say about CXL. */
		if (dax_cxl_unassembled(&unasm, &nunasm) < 0)
			nunasm = 0;
	}
	if (path)
		ncxl = one.cxl.on_cxl;
	for (size_t i = 0; i < n; i++)
		ncxl += devs[i].cxl.on_cxl;
	r = ctl_output(ctl);
	if (r)
		return r;
	ctl->out->ops->list_begin(ctl->out, "devices", "no device-DAX devices found");
	if (path)
		print_dev(ctl->out, &one);
	for (size_t i = 0; i < n; i++)
		print_dev(ctl->out, &devs[i]);
	ctl->out->ops->list_end(ctl->out);
	/* The CXL lists only where there is CXL: an NVDIMM machine's output is unchanged. */
	if (ncxl) {
		ctl->out->ops->list_begin(ctl->out, "cxl", NULL);
		if (path)
			print_cxl(ctl->out, &one);
		for (size_t i = 0; i < n; i++)
			if (devs[i].cxl.on_cxl)
				print_cxl(ctl->out, &devs[i]);
		ctl->out->ops->list_end(ctl->out);
	}
	if (nunasm) {
		ctl->out->ops->list_begin(ctl->out, "cxl_unassembled", NULL);
		for (size_t i = 0; i < nunasm; i++)
			print_unassembled(ctl->out, &unasm[i]);
		ctl->out->ops->list_end(ctl->out);
		for (size_t i = 0; i < nunasm; i++) {
			char note[320];

			(void)snprintf(
			    note, sizeof(note),
			    "NOTE: CXL memdev %s holds a pmem region that is not assembled"
			    " (Linux does not at boot): run '%s'",
			    unasm[i].memdev.name, unasm[i].command);
			ctl->out->ops->block(ctl->out, note);
		}
	}
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_discover = {
    .name = "discover",
    .args = "[DEVICE]",
    .summary = "device-DAX devices: size, alignment, NUMA node, persistence, CXL (no daemon)",
    .options = "Persistence domain of the NVDIMM region: cpu_cache (eADR: byte granularity),\n"
	       "memory_controller (ADR: cache_line), none, or unknown (not an NVDIMM).\n"
	       "A device on a CXL pmem region also gets its memdevs, serials, CXL region,\n"
	       "root decoder and interleave; a CXL pmem region that exists in a memdev's\n"
	       "labels but is not assembled is listed with the cxl create-region command\n"
	       "that brings it back (the label count needs root).\n",
    .exec = discover_exec,
};
