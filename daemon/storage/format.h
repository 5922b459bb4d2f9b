/* SPDX-License-Identifier: MIT */
/*
 * Writing the on-media format (media.h) through pstore: format a region,
 * load its header and repair a damaged copy.  What the header blocks say
 * and which one is used is the media module's (media_headers_read); this
 * file applies it and logs.
 */
#ifndef PMEMZ_FORMAT_H
#define PMEMZ_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "media.h"
#include "pstore.h"

/*
 * Format the region: invalidate both headers, write empty tables, then the
 * backup header and last the primary, each step drained.  Existing contents
 * are destroyed: the caller must have decided the region is blank (or the
 * operator forced it).
 */
int format_layout(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		  struct layout_header *out);

/* What format_load found: a format done, header repairs left to do (format_repair). */
struct format_loaded {
	bool formatted;	     /* the region was blank and has been formatted */
	bool repair_primary; /* the primary is rewritten from the backup */
	bool repair_backup;  /* the backup is rewritten from the primary */
};

/*
 * Load and validate the header of a mapped region, or format a blank one.
 * extent_size: the configured one (0 = accept what is on the media).
 * align: the device alignment now.  bbs: bad blocks of the source.
 * Refusals are logged naming the region and the damage; the media is then
 * untouched.  Writes nothing but a format: a damaged copy of the header
 * (a warning now) is repaired by format_repair, once nothing else refuses
 * the region (recovery may still: a refused region is left untouched).
 */
int format_load(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		const struct pstore_badblock *bbs, size_t n_bbs, struct layout_header *out,
		struct format_loaded *res);

/*
 * The same for a split region (metadata = PATH): meta maps the metadata
 * file (headers and tables), data_size is the data file's size.  A blank
 * metadata image (tables all zero) is formatted; nothing is ever written
 * to the data file.
 */
int format_load_split(struct pstore *meta, uint64_t data_size, const char *name,
		      uint64_t extent_size, uint64_t align, const struct pstore_badblock *bbs,
		      size_t n_bbs, struct layout_header *out, struct format_loaded *res);
/*
 * The repairs format_load found (res), written: the good header block
 * copied whole over the damaged one, drained.  -errno (logged).
 */
int format_repair(struct pstore *ps, const char *name, const struct format_loaded *res);
/*
 * Bytes of metadata a split format of data_size bytes needs (extent_size 0:
 * the default for the alignment).  -EINVAL, -ENOSPC as layout_compute_split.
 */
int format_meta_size_for(uint64_t data_size, uint64_t extent_size, uint64_t align,
			 uint64_t *meta_size);
#endif
