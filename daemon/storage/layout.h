/* SPDX-License-Identifier: MIT */
/*
 * On-media format of a region (docs/on-media-format.md):
 *
 *   0       primary header  (one 4 KiB block)
 *   4 KiB   backup header   (one 4 KiB block, same bytes)
 *   8 KiB   extent table    (8 bytes per extent, rounded up to 4 KiB)
 *   ...     tag table       (128 bytes per slot, rounded up to 4 KiB)
 *   ...     data area       (aligned to max(extent size, device alignment))
 *
 * All integers are little-endian (the daemon refuses to build elsewhere).
 */
#ifndef PMEMZ_LAYOUT_H
#define PMEMZ_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pstore.h"
#include "region.h" /* enum extent_state */

#define LAYOUT_BLOCK 4096u
#define LAYOUT_MAGIC "PMEMZRGN" /* 8 bytes, no NUL on media */
#define LAYOUT_VERSION 1u
#define LAYOUT_PRIMARY_OFF 0u
#define LAYOUT_BACKUP_OFF 4096u
#define LAYOUT_EXTENT_TABLE_OFF 8192u
#define LAYOUT_TAG_SLOT_SIZE 128u
#define LAYOUT_MAX_TAGS 65536u
#define LAYOUT_TAG_NAME_MAX 63u
#define LAYOUT_MIN_EXTENT_SIZE 4096u

struct layout_header {
	char magic[8];		   /*   0 LAYOUT_MAGIC */
	uint32_t version;	   /*   8 LAYOUT_VERSION */
	uint32_t header_size;	   /*  12 sizeof(struct layout_header) */
	uint8_t uuid[16];	   /*  16 random (v4) at format */
	uint64_t region_size;	   /*  32 bytes of the whole region */
	uint64_t extent_size;	   /*  40 */
	uint64_t extent_count;	   /*  48 */
	uint64_t extent_table_off; /*  56 */
	uint64_t tag_table_off;	   /*  64 */
	uint64_t tag_count;	   /*  72 */
	uint64_t data_off;	   /*  80 offset of extent 0 */
	uint64_t backup_off;	   /*  88 offset of the backup header */
	uint64_t format_time;	   /*  96 seconds since the Epoch */
	uint64_t data_align;	   /* 104 device alignment at format time */
	uint32_t tag_slot_size;	   /* 112 LAYOUT_TAG_SLOT_SIZE */
	uint32_t flags;		   /* 116 0 */
	uint8_t reserved[132];	   /* 120 zero */
	uint32_t checksum;	   /* 252 CRC32C of bytes 0..251 */
};
_Static_assert(sizeof(struct layout_header) == 256, "header size");

/*
 * Extent record: bits 0-7 state code, 8-31 tag id (0 = none), 32-63
 * generation.
 *
 * The state codes on media are not the enum extent_state values: every two
 * valid codes differ in at least 4 bits, so no single (or double, or
 * triple) bit flip turns one valid state into another -- it makes an
 * unknown code, which recovery quarantines.  ZEROED, the one state whose
 * false appearance would hand out stale data, is 7 bits away from DIRTY and
 * 5 from every other state.  DIRTY is 0, so a zeroed table is all DIRTY.
 * layout_rec() and layout_rec_state() are the only mapping between the
 * codes and enum extent_state.
 */
#define LAYOUT_REC_DIRTY 0x00u
#define LAYOUT_REC_ZEROED 0x7fu
#define LAYOUT_REC_LEASED 0x87u
#define LAYOUT_REC_COMMITTED 0x99u
#define LAYOUT_REC_BAD 0xaau
/* Never a valid code: what layout_rec() stores for a state it does not know. */
#define LAYOUT_REC_INVALID 0xffu

/* The code of an enum extent_state value (LAYOUT_REC_INVALID for others). */
static inline unsigned layout_state_code(unsigned state)
{
	static const uint8_t codes[EXT_NSTATES] = {
	    [EXT_DIRTY] = LAYOUT_REC_DIRTY,   [EXT_ZEROED] = LAYOUT_REC_ZEROED,
	    [EXT_LEASED] = LAYOUT_REC_LEASED, [EXT_COMMITTED] = LAYOUT_REC_COMMITTED,
	    [EXT_BAD] = LAYOUT_REC_BAD,
	};

	return state < EXT_NSTATES ? codes[state] : LAYOUT_REC_INVALID;
}

/* The enum extent_state of a code, or EXT_NSTATES for an unknown code. */
static inline unsigned layout_code_state(unsigned code)
{
	switch (code) {
	case LAYOUT_REC_DIRTY:
		return EXT_DIRTY;
	case LAYOUT_REC_ZEROED:
		return EXT_ZEROED;
	case LAYOUT_REC_LEASED:
		return EXT_LEASED;
	case LAYOUT_REC_COMMITTED:
		return EXT_COMMITTED;
	case LAYOUT_REC_BAD:
		return EXT_BAD;
	}
	return EXT_NSTATES;
}

/* A record with a raw state code (tests, damage). */
static inline uint64_t layout_rec_raw(unsigned code, uint32_t tag, uint32_t gen)
{
	return (uint64_t)(code & 0xffu) | ((uint64_t)(tag & 0xffffffu) << 8) |
	       ((uint64_t)gen << 32);
}
/* A record in enum extent_state state. */
static inline uint64_t layout_rec(unsigned state, uint32_t tag, uint32_t gen)
{
	return layout_rec_raw(layout_state_code(state), tag, gen);
}
/* The raw state code of a record. */
static inline unsigned layout_rec_code(uint64_t rec)
{
	return (unsigned)(rec & 0xffu);
}
/* The enum extent_state of a record; EXT_NSTATES when its code is unknown. */
static inline unsigned layout_rec_state(uint64_t rec)
{
	return layout_code_state(layout_rec_code(rec));
}
static inline uint32_t layout_rec_tag(uint64_t rec)
{
	return (uint32_t)((rec >> 8) & 0xffffffu);
}
static inline uint32_t layout_rec_gen(uint64_t rec)
{
	return (uint32_t)(rec >> 32);
}

/*
 * Tag slot state word, changed with one 8-byte store.  Every two valid
 * words differ in 32 bits; any other word is damage.  FREE is 0, so a
 * zeroed table is all FREE.
 */
#define TAG_FREE UINT64_C(0)			 /* unused */
#define TAG_WRITTEN UINT64_C(0x0f0f0f0f0f0f0f0f) /* commit: body durable, not yet valid */
#define TAG_VALID UINT64_C(0x3333333333333333)	 /* committed */
#define TAG_FREEING UINT64_C(0x5555555555555555) /* free: body kept, records going DIRTY */

struct layout_tag {
	uint64_t state;	    /*   0 TAG_FREE, TAG_WRITTEN, TAG_VALID, TAG_FREEING */
	uint32_t uid;	    /*   8 owner */
	uint32_t checksum;  /*  12 CRC32C of uid and bytes 16..127 */
	uint64_t ctime;	    /*  16 commit time, seconds since the Epoch */
	uint64_t n_extents; /* 24 extents committed under the tag */
	char name[64];	    /*  32 NUL-terminated, zero-padded */
	uint8_t reserved[32];
};
_Static_assert(sizeof(struct layout_tag) == LAYOUT_TAG_SLOT_SIZE, "tag slot size");

struct layout_geometry {
	uint64_t region_size;
	uint64_t extent_size;
	uint64_t data_align;
	uint64_t extent_count;
	uint64_t extent_table_off;
	uint64_t tag_table_off;
	uint64_t tag_count;
	uint64_t data_off;
};

uint32_t layout_crc32c(uint32_t crc, const void *p, size_t len);

/*
 * 0 when extent_size is usable with a device alignment of align: a multiple
 * of 4 KiB and of align, at least 4 KiB.  -EINVAL otherwise.
 */
int layout_check_extent_size(uint64_t extent_size, uint64_t align);
/* Lay out a region.  -EINVAL for a bad extent size, -ENOSPC when no extent fits. */
int layout_compute(uint64_t region_size, uint64_t extent_size, uint64_t align,
		   struct layout_geometry *g);

/* 0, -EINVAL (empty, control characters) or -ENAMETOOLONG (> 63 bytes). */
int layout_tag_name_valid(const char *name);
uint32_t layout_tag_checksum(const struct layout_tag *t);

enum layout_hdr_status {
	HDR_OK,
	HDR_BLANK,	 /* the whole 4 KiB block is zero */
	HDR_FOREIGN,	 /* not our magic */
	HDR_CORRUPT,	 /* our magic, but checksum or fields are wrong */
	HDR_UNSUPPORTED, /* intact, but a layout version we do not know */
	HDR_UNREADABLE,	 /* a media error (bad block) covers it */
};
const char *layout_hdr_status_str(enum layout_hdr_status s);

/* Seal (checksum) a header. */
void layout_header_seal(struct layout_header *h);
/*
 * Check one header block (LAYOUT_BLOCK bytes).  On HDR_OK *h is filled.
 * why (may be NULL) gets a short description of the damage.
 */
enum layout_hdr_status layout_header_check(const void *block, struct layout_header *h, char *why,
					   size_t why_len);

/*
 * Format the region: invalidate both headers, write empty tables, then the
 * backup header and last the primary, each step drained.  Existing contents
 * are destroyed: the caller must have decided the region is blank (or the
 * operator forced it).
 */
int layout_format(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		  struct layout_header *out);

/*
 * Load and validate the header of a mapped region, or format a blank one.
 * extent_size: the configured one (0 = accept what is on the media).
 * align: the device alignment now.  bbs: bad blocks of the source.
 * Refusals are logged naming the region and the damage; the media is then
 * untouched.  A damaged primary with a good backup is repaired (warning).
 * *formatted tells whether the region was blank and has been formatted.
 */
int layout_load(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		const struct pstore_badblock *bbs, size_t n_bbs, struct layout_header *out,
		bool *formatted);

/* Does [off, off+len) overlap a bad block? */
bool layout_range_bad(const struct pstore_badblock *bbs, size_t n, uint64_t off, uint64_t len);

#endif
