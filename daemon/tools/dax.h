/* SPDX-License-Identifier: MIT */
/*
 * Device-DAX discovery, shared by the daemon (start-up, device-DAX regions)
 * and pmemzctl discover.  libdaxctl gives the devices (size, alignment,
 * mode); libndctl gives what only the NVDIMM region knows (persistence
 * domain, bad blocks, the namespace).  Read-only; no daemon needed; logs
 * at debug level only (the caller reports).  Without root a few sysfs
 * attributes are unreadable (physical addresses): bad blocks are then
 * counted for the whole NVDIMM region (badblocks_region_wide).
 */
#ifndef PMEMZ_DAX_H
#define PMEMZ_DAX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a store becomes persistent (the NVDIMM region's persistence_domain). */
enum dax_persistence {
	DAX_PERSIST_UNKNOWN = 0, /* no NVDIMM region behind the device, or it does not say */
	DAX_PERSIST_NONE,	 /* the region reports none: flush, and deep flush to be sure */
	DAX_PERSIST_MEMCTRL,	 /* ADR: durable once flushed to the memory controller */
	DAX_PERSIST_CPU_CACHE,	 /* eADR: durable once globally visible (no flush) */
};

struct dax_dev {
	char devname[32]; /* "dax0.0" */
	char path[48];	  /* "/dev/dax0.0" */
	unsigned major, minor;
	uint64_t size;	   /* bytes; 0 for an idle (unconfigured) device */
	uint64_t align;	   /* mapping alignment in bytes (the device's, else its region's) */
	uint64_t resource; /* physical start address; 0 when unreadable (not root) */
	int numa_node;	   /* -1 when unknown */
	int target_node;   /* node the memory would join as system-ram; -1 when unknown */
	bool enabled;	   /* bound to a driver */
	bool system_ram;   /* bound to kmem (mode system-ram), not usable as a region */
	int dax_region;	   /* libdaxctl region id */
	char region[32];   /* NVDIMM region ("region0"), "" when not an NVDIMM */
	char ns[32];	   /* NVDIMM namespace ("namespace0.0"), "" when unknown */
	enum dax_persistence persistence;
	bool badblocks_known;
	bool badblocks_region_wide; /* count is for the whole region (offsets unknown) */
	uint64_t badblocks;	    /* bad 512-byte sectors inside the device */
};

/* A bad range of a device, in bytes from the start of the device. */
struct dax_badblock {
	uint64_t off;
	uint64_t len;
};

/*
 * Every device-DAX device with a size (idle seed devices are skipped),
 * sorted by name.  *out is malloc'ed (NULL when there are none).
 * -errno when libdaxctl cannot be set up; a missing libndctl view only
 * leaves the NVDIMM fields unknown.
 */
int dax_discover(struct dax_dev **out, size_t *n);

/*
 * The device-DAX character device at path (any name: matched by
 * major:minor).  -ENODEV when path is not a character device that libdaxctl
 * knows, -errno from stat().
 */
int dax_lookup(const char *path, struct dax_dev *out);
int dax_lookup_rdev(dev_t rdev, struct dax_dev *out);

/*
 * The bad ranges libndctl reports for the device's NVDIMM region, clipped
 * to the device and in device offsets.  -ENOTSUP when the device has no
 * NVDIMM region or its physical addresses are unreadable (not root).
 * *out is malloc'ed (NULL when there are none).
 */
int dax_badblocks(const struct dax_dev *d, struct dax_badblock **out, size_t *n);

/*
 * The daemon's start-up: one info line per device (or "No device-DAX
 * devices found"); never fails.
 */
void dax_log_devices(void);

/* "cpu_cache", "memory_controller", "none", "unknown". */
const char *dax_persistence_name(enum dax_persistence p);
/*
 * The libpmem2 store granularity a mapping of such a device gets: "byte"
 * for cpu_cache (eADR), else "cache_line" (libpmem2 treats device-DAX as
 * pmem whatever the region says).
 */
const char *dax_persistence_granularity(enum dax_persistence p);
/* "devdax", "system-ram" or "disabled". */
const char *dax_mode_name(const struct dax_dev *d);

/* ---- helpers, exposed for the unit tests ---- */

/*
 * From a libdaxctl region path such as
 * "/sys/devices/platform/ACPI0012:00/ndbus0/region0/dax0.0", the NVDIMM
 * region ("region0") and the nd device ("dax0.0").  -ENOENT when the path
 * has no "regionN" component.
 */
int dax_parse_region_path(const char *path, char *region, size_t region_len, char *nddev,
			  size_t nddev_len);

/*
 * Region-relative bad sectors (offset and length in 512-byte sectors, as
 * libndctl and sysfs give them) to byte ranges of the device at dev_res
 * (physical) of dev_size bytes in a region at region_res: out-of-device
 * parts are dropped.  out needs room for n entries; returns how many were
 * written.  *sectors (optional) gets the bad sectors inside the device.
 */
size_t dax_clip_badblocks(uint64_t region_res, uint64_t dev_res, uint64_t dev_size,
			  const uint64_t (*sect)[2], size_t n, struct dax_badblock *out,
			  uint64_t *sectors);

#endif
