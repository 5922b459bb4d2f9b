/* SPDX-License-Identifier: MIT */
/*
 * Device-DAX discovery, shared by the daemon (start-up, device-DAX regions)
 * and pmemzctl discover.  libdaxctl gives the devices (size, alignment,
 * mode); libndctl gives what only the NVDIMM region knows (persistence
 * domain, bad blocks, the namespace); libcxl, for an NVDIMM region that a
 * CXL pmem region provides, the CXL side (memdevs, serials, region, root
 * decoder, interleave).  Read-only; no daemon needed; logs at debug level
 * only (the caller reports).  Without root a few sysfs attributes are
 * unreadable (physical addresses): bad blocks are then counted for the
 * whole NVDIMM region (badblocks_region_wide), and a device on CXL is known
 * to be on CXL but not on which CXL region.
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

#define DAX_CXL_MAX_MEMDEVS 16

struct dax_cxl_memdev {
	char name[32]; /* "mem0" */
	uint64_t serial;
};

/* The CXL side of a device-DAX device whose NVDIMM region is a CXL pmem region. */
struct dax_cxl {
	bool on_cxl;	       /* the NVDIMM bus is CXL's nvdimm bridge */
	bool known;	       /* the CXL region below was found (needs root) */
	char region[32];       /* CXL region ("region0"; not the NVDIMM region's name) */
	char root_decoder[32]; /* the CXL window it was made in ("decoder0.0") */
	unsigned ways;	       /* interleave ways */
	unsigned granularity;  /* interleave granularity, bytes */
	size_t nmemdevs;       /* in interleave position order */
	struct dax_cxl_memdev memdevs[DAX_CXL_MAX_MEMDEVS];
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
	struct dax_cxl cxl;
};

/*
 * A CXL memdev with persistent capacity that is in no CXL region although
 * its label storage area holds namespace labels: a pmem region (and the
 * data behind those labels) that exists but is not assembled.  Linux 6.1
 * does not assemble CXL regions at boot: `command` brings it back.
 */
struct dax_cxl_unassembled {
	struct dax_cxl_memdev memdev;
	char root_decoder[32]; /* a pmem-capable window that reaches the memdev; "" if none */
	bool labels_known;     /* false: the label area was unreadable (not root) */
	uint64_t labels;       /* labels in use in the label storage area */
	char command[160];     /* "cxl create-region -m -t pmem -d decoder0.0 -w 1 mem0" */
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
 * The CXL memdevs whose pmem region exists in their labels but is not
 * assembled (see struct dax_cxl_unassembled), by name.  *out is malloc'ed
 * (NULL when there are none).  -errno when libcxl cannot be set up; a
 * machine without CXL has none.
 */
int dax_cxl_unassembled(struct dax_cxl_unassembled **out, size_t *n);

/*
 * The daemon's start-up: one info line per device (or "No device-DAX
 * devices found"), one more for a device on CXL, and a warning for each
 * CXL pmem region that is not assembled; never fails.
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

/*
 * Labels in use in a label storage area that starts with buf (len bytes:
 * both namespace index blocks, as the kernel's libnvdimm writes them to an
 * NVDIMM's or a CXL memdev's LSA): the newest valid index block's slots
 * that are not free.  -ENODATA when neither index block is valid (a blank
 * or foreign label area), -EINVAL when buf is too short to tell.
 * *index_size (optional) gets the index block size read from the first
 * block's header (to read more when len was too short), 0 if unknown.
 */
int dax_lsa_labels_in_use(const void *buf, size_t len, uint64_t *used, uint64_t *index_size);
/* An index block's checksum as libnvdimm computes it (Fletcher-64, checksum field as 0). */
uint64_t dax_lsa_index_checksum(const void *block, uint64_t size);

/* "cxl create-region -m -t pmem -d DECODER -w N MEMDEV..."; -ENOSPC when it does not fit. */
int dax_cxl_create_region_cmd(const char *root_decoder, const struct dax_cxl_memdev *memdevs,
			      size_t n, char *buf, size_t len);

/*
 * One line about the CXL side of a device, for logs and the text output:
 * "CXL region0 (root decoder decoder0.0, 1 way x 256 B): mem0 (serial
 * 0x1234)", or "CXL (region unknown: not root)".  Returns buf.
 */
const char *dax_cxl_describe(const struct dax_cxl *c, char *buf, size_t len);

#endif
