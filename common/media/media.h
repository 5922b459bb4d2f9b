/* SPDX-License-Identifier: MIT */
/*
 * The media module (pmemzd_media): the on-media format of a region and the
 * rules that read it, as pure functions of an image, a header block, a
 * record or a tag slot (docs/on-media-format.md).  No pmem stores, no
 * logging, no configuration: recovery (daemon/storage) applies the
 * verdicts through pstore, the offline checker (common/check/check.c)
 * reports them, and each rule is written here once.
 *
 *   0       primary header  (one 4 KiB block)
 *   4 KiB   backup header   (one 4 KiB block, same bytes)
 *   8 KiB   extent table    (8 bytes per extent, rounded up to 4 KiB)
 *   ...     tag table       (128 bytes per slot, rounded up to 4 KiB)
 *   ...     data area       (aligned to max(extent size, device alignment))
 *
 * All integers are little-endian (the daemon refuses to build elsewhere).
 *
 * Split layout (metadata = PATH, incompat feature split): the two
 * headers and the tables, at the offsets above, are a metadata file (or
 * device) of their own, layout_meta_size() bytes; the data file holds only
 * the data area, extent 0 at its offset 0 (data_off 0), and region_size is
 * the data file's size.  Tenants map the data file only.
 */
#ifndef PMEMZ_MEDIA_H
#define PMEMZ_MEDIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum extent_state {
	EXT_DIRTY = 0, /* free, content unknown (a formatted table is all DIRTY) */
	EXT_ZEROED = 1,
	EXT_LEASED = 2,
	EXT_COMMITTED = 3,
	EXT_BAD = 4,
};
#define EXT_NSTATES 5

struct run {
	uint64_t first; /* extent index */
	uint64_t count;
};

/* A range of the image the media cannot read (offsets from its start). */
struct media_badblock {
	uint64_t off;
	uint64_t len;
};

#define LAYOUT_BLOCK 4096u
#define LAYOUT_MAGIC "PMEMZRGN" /* 8 bytes, no NUL on media */
/*
 * Layout version 2 (what a format writes) is version 1 plus the feature
 * masks; version 1 headers keep opening as the features they had
 * (layout_header_features), and are never rewritten as version 2, so the
 * build that wrote them still opens them.
 */
#define LAYOUT_VERSION 2u
#define LAYOUT_VERSION_MIN 1u
#define LAYOUT_PRIMARY_OFF 0u
#define LAYOUT_BACKUP_OFF 4096u
#define LAYOUT_EXTENT_TABLE_OFF 8192u
#define LAYOUT_TAG_SLOT_SIZE 128u
#define LAYOUT_MAX_TAGS 65536u
#define LAYOUT_TAG_NAME_MAX 63u
#define LAYOUT_MIN_EXTENT_SIZE 4096u
/*
 * Version 1 header flags: the only one; any other bit set is damage.  A
 * version 2 header carries split as an incompat feature, its flags word
 * is reserved (zero).
 */
#define LAYOUT_FLAG_SPLIT 0x1u /* split layout: metadata in a file of its own */

/*
 * Feature masks (version 2; docs/on-media-format.md, "Features").  A reader
 * that finds a bit it does not know: compat, uses the region and keeps the
 * bit in any header it rewrites; ro_compat, may read but never write it
 * (pmemzerod refuses it, pmemzctl check reads it); incompat, neither reads
 * its tables nor writes it.
 */
#define LAYOUT_INCOMPAT_SPLIT (UINT64_C(1) << 0) /* metadata in a file of its own */
#define LAYOUT_INCOMPAT_MOVE (UINT64_C(1) << 1)	 /* MOVE links in tag slots */
#define LAYOUT_COMPAT_KNOWN UINT64_C(0)
#define LAYOUT_RO_COMPAT_KNOWN UINT64_C(0)
#define LAYOUT_INCOMPAT_KNOWN (LAYOUT_INCOMPAT_SPLIT | LAYOUT_INCOMPAT_MOVE)

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
	uint32_t flags;		   /* 116 v1: 0 or LAYOUT_FLAG_SPLIT; v2: zero */
	uint64_t compat;	   /* 120 v2: features a reader may ignore (v1: zero) */
	uint64_t ro_compat;	   /* 128 v2: features a reader may read without */
	uint64_t incompat;	   /* 136 v2: features a reader must know */
	uint8_t reserved[108];	   /* 144 zero */
	uint32_t checksum;	   /* 252 CRC32C of bytes 0..251 */
};
_Static_assert(sizeof(struct layout_header) == 256, "header size");
_Static_assert(offsetof(struct layout_header, compat) == 120, "masks where v1 had reserved bytes");

/* The three feature masks of a header. */
struct layout_features {
	uint64_t compat, ro_compat, incompat;
};

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

/*
 * MOVE (docs/on-media-format.md, "Move"): the reserved bytes of a slot may
 * carry a link.  A batch *marker* slot (never a tag: empty name, uid 0)
 * decides a MOVE request: VALID with nonce N means every *member* slot
 * whose link names it with nonce N rolls forward; anything else rolls
 * WRITTEN members back.  A member is a new tag of one extent moved from
 * a source slot.  Old regions have zero reserved bytes: no link.  A link
 * is read only from a slot whose checksum is right (it covers them).
 */
#define LINK_NONE UINT64_C(0)
#define LINK_MEMBER UINT64_C(0x424d454d45564f4d) /* "MOVEMEMB" */
#define LINK_MARKER UINT64_C(0x4b52414d45564f4d) /* "MOVEMARK" */
#define LAYOUT_MOVE_MAX 256u			 /* members of one batch */

struct layout_link {
	uint64_t kind;	 /*  96 LINK_NONE, LINK_MEMBER or LINK_MARKER */
	uint32_t batch;	 /* 104 member: the marker's slot id */
	uint32_t source; /* 108 member: the source slot id */
	uint64_t nonce;	 /* 112 the batch's nonce (marker and members) */
	uint64_t arg;	 /* 120 member: the extent index; marker: the number of members */
};
_Static_assert(sizeof(struct layout_link) == 32, "link size");

static inline void layout_tag_link(const struct layout_tag *t, struct layout_link *l)
{
	__builtin_memcpy(l, t->reserved, sizeof(*l));
}
static inline void layout_tag_set_link(struct layout_tag *t, const struct layout_link *l)
{
	__builtin_memcpy(t->reserved, l, sizeof(*l));
}

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
/* The same, byte by byte from a table: the reference; and whether the CPU's is used. */
uint32_t layout_crc32c_table(uint32_t crc, const void *p, size_t len);
bool layout_crc32c_hw(void);

/*
 * 0 when extent_size is usable with a device alignment of align: a multiple
 * of 4 KiB and of align, at least 4 KiB.  -EINVAL otherwise.
 */
int layout_check_extent_size(uint64_t extent_size, uint64_t align);
/* Lay out a region.  -EINVAL for a bad extent size, -ENOSPC when no extent fits. */
int layout_compute(uint64_t region_size, uint64_t extent_size, uint64_t align,
		   struct layout_geometry *g);
/*
 * Lay out a split region: data_size bytes of data file (region_size),
 * data_off 0, the tables in the metadata file.  Same errors.
 */
int layout_compute_split(uint64_t data_size, uint64_t extent_size, uint64_t align,
			 struct layout_geometry *g);

/*
 * A tag name as it may stand on media: 0, -EINVAL (empty, C0 control
 * characters or DEL) or -ENAMETOOLONG (> 63 bytes).  Recovery, the checker
 * and lookups by name apply this rule, so tags committed by earlier
 * versions (whose names need not be UTF-8) stay valid, openable and
 * releasable.
 */
int layout_tag_name_valid(const char *name);
/*
 * A name for a new tag (COMMIT): the rule above, and valid UTF-8 without C1
 * controls, bidi marks, embeddings, overrides or isolates, which could make
 * a name display as another in logs and listings.
 */
int layout_tag_name_new_valid(const char *name);
uint32_t layout_tag_checksum(const struct layout_tag *t);

enum layout_hdr_status {
	HDR_OK,
	HDR_BLANK,	 /* the whole 4 KiB block is zero */
	HDR_FOREIGN,	 /* not our magic */
	HDR_CORRUPT,	 /* our magic, but checksum or fields are wrong */
	HDR_UNSUPPORTED, /* intact, but written by a newer build: a layout version or an
			    incompat feature we do not know */
	HDR_UNREADABLE,	 /* a media error (bad block) covers it */
};
const char *layout_hdr_status_str(enum layout_hdr_status s);

/* Seal (checksum) a header. */
void layout_header_seal(struct layout_header *h);
/*
 * Check one header block (LAYOUT_BLOCK bytes).  On HDR_OK and
 * HDR_UNSUPPORTED *h is filled (of an unsupported header only the version
 * and the masks mean anything).  why (may be NULL) gets a short
 * description of the damage, or of what is not supported.  A valid header
 * may carry compat and ro_compat features this build does not know
 * (layout_header_unknown); then its reserved bytes are not checked either,
 * since such a feature may use them.
 */
enum layout_hdr_status layout_header_check(const void *block, struct layout_header *h, char *why,
					   size_t why_len);

/*
 * The features of a header, a version 1 header read as the features it
 * had: incompat move (its slots may hold MOVE links) and, with
 * LAYOUT_FLAG_SPLIT, split.
 */
void layout_header_features(const struct layout_header *h, struct layout_features *f);
/* The features of h this build does not know (all zero for version 1). */
void layout_header_unknown(const struct layout_header *h, struct layout_features *u);
/* Is h a split region's header (incompat split, or v1 LAYOUT_FLAG_SPLIT)? */
bool layout_header_split(const struct layout_header *h);
/*
 * The names of a mask's bits ("split, move"), which: 0 compat, 1
 * ro_compat, 2 incompat; a bit without a name as "bit N"; "none" for 0.
 * Returns buf.
 */
const char *layout_features_str(unsigned which, uint64_t mask, char *buf, size_t len);

/* Does [off, off+len) overlap a bad block? */
bool layout_range_bad(const struct media_badblock *bbs, size_t n, uint64_t off, uint64_t len);

/*
 * End of the extent and tag tables (the metadata a format zeroes and a bad
 * block makes unusable), from a header's or a geometry's fields.
 */
static inline uint64_t layout_tables_end(uint64_t tag_table_off, uint64_t tag_count)
{
	uint64_t tags = tag_count * LAYOUT_TAG_SLOT_SIZE;

	return tag_table_off + ((tags + LAYOUT_BLOCK - 1) & ~(uint64_t)(LAYOUT_BLOCK - 1));
}

/* Bytes of a split region's metadata file: both headers and the tables. */
static inline uint64_t layout_meta_size(const struct layout_geometry *g)
{
	return layout_tables_end(g->tag_table_off, g->tag_count);
}

/*
 * Do a header's geometry fields agree with layout_compute() (or, split
 * (layout_header_split), layout_compute_split()) of its sizes?
 */
bool layout_geometry_matches(const struct layout_header *h);

/* ---- the two header blocks ---- */

/* Which header a region is used with (media_headers_read). */
enum media_hdr_choice {
	HDRS_PRIMARY,	  /* the primary is valid */
	HDRS_BACKUP,	  /* the primary is blank, corrupt or unreadable; the backup valid */
	HDRS_BLANK,	  /* both blocks are blank: a new region, unless its headers were wiped */
	HDRS_FOREIGN,	  /* the primary is foreign: refused, whatever the backup */
	HDRS_UNSUPPORTED, /* a header (either) is a newer build's: refused, neither used
			     nor rewritten */
	HDRS_NONE,	  /* no valid header, not both blank */
};

struct media_headers {
	enum layout_hdr_status primary, backup;
	struct layout_header hp, hb; /* each filled when its status is HDR_OK or HDR_UNSUPPORTED */
	char primary_why[160], backup_why[160];
	enum media_hdr_choice choice;
	bool differ;	     /* both valid, with different bytes */
	bool repair_primary; /* HDRS_BACKUP: the primary is rewritten from the backup */
	bool repair_backup;  /* HDRS_PRIMARY: the backup is rewritten from the primary */
	/*
	 * The features this build does not know, of every intact header (valid
	 * or unsupported), and the highest layout version it does not know (0:
	 * none): a newer build wrote them.
	 */
	struct layout_features unknown;
	uint32_t newer_version;
};

/*
 * Read both header blocks of an image of at least 2 * LAYOUT_BLOCK bytes
 * (a block under a bad range is HDR_UNREADABLE, not read) and choose as
 * the daemon does.  A primary that is a torn copy of a valid backup (every
 * non-zero 8-byte word equal to the backup's: a format or repair
 * interrupted while it wrote the primary) is corrupt, not foreign.
 */
void media_headers_read(const void *base, const struct media_badblock *bbs, size_t n_bbs,
			struct media_headers *m);

/*
 * Both header blocks are blank: is the rest a region whose headers were
 * wiped?  Counts the non-zero records of the extent table a format of
 * (size, extent_size, align) would write that are intact (media_rec_check
 * with LAYOUT_MAX_TAGS) against those that are not.  Random or foreign
 * data has almost no intact non-zero records; a used region has them
 * (ZEROED, COMMITTED, generations) and few others.  Returns the intact
 * count when they are not outnumbered (then *first is the first of them),
 * else 0.
 */
uint64_t media_wiped_records(const void *base, uint64_t size, uint64_t extent_size, uint64_t align,
			     const struct media_badblock *bbs, size_t n_bbs, uint64_t *first);

/*
 * The primary header is blank and the backup is not valid: was a format
 * interrupted while it wrote the backup?  Then the backup block holds a
 * torn header -- each 8-byte word either the new value or still zero, the
 * rest of the block zero -- and the tables are zero (the format zeroes
 * them, drained, before it writes any header).
 */
bool media_interrupted_format(const void *base, uint64_t size, uint64_t extent_size, uint64_t align,
			      const struct media_badblock *bbs, size_t n_bbs);

/*
 * A split region's metadata image whose both header blocks are blank (or
 * whose format was interrupted before the primary): is everything after
 * the headers zero, so that a format destroys nothing?  (A split format
 * never touches the data file, whose extents all start DIRTY.)
 */
bool media_meta_tables_blank(const void *meta, uint64_t meta_size);

/* ---- is the region usable? ---- */

/*
 * Why recovery refuses a region -- and so why the checker calls its image
 * unusable (`pmemzctl check` exit 2).  One rule for both: region_open
 * refuses exactly these, and logs the reason; the checker reports the
 * same verdict (check_report.refusal) and, where it can still read the
 * tables, lists what they hold.
 */
enum media_refusal {
	REFUSE_NONE,	    /* usable: recovery opens it */
	REFUSE_TOO_SMALL,   /* smaller than the two header blocks */
	REFUSE_BLANK,	    /* no header and the primary is blank: not a region (yet); the
			       daemon formats it when nothing would be lost (media_wiped_records,
			       media_interrupted_format, media_meta_tables_blank), else refuses */
	REFUSE_NO_HEADER,   /* neither header valid, the primary not blank */
	REFUSE_FOREIGN,	    /* the primary is foreign: never formatted over, whatever the backup */
	REFUSE_UNSUPPORTED, /* a header is of a layout version we do not know */
	REFUSE_INCOMPAT,    /* a header carries incompat features we do not know */
	REFUSE_RO_COMPAT,   /* a header carries ro_compat features we do not know: readable,
			       never written (the daemon refuses it, the checker reads it) */
	REFUSE_LAYOUT_KIND, /* a split region's header opened inline, or the reverse */
	REFUSE_SIZE,	    /* the image (split: data file) is not region_size bytes: never resized */
	REFUSE_META_SIZE,   /* split: the metadata is smaller than its tables, or a file of
			       another size */
	REFUSE_TABLES_BAD,  /* a bad block in the extent or tag table */
	REFUSE_MISSING,	    /* committed extents missing from the table (MISSING_REFUSE) */
};
const char *media_refusal_str(enum media_refusal r);
/*
 * Is r a newer build's format rather than damage (REFUSE_UNSUPPORTED,
 * REFUSE_INCOMPAT, REFUSE_RO_COMPAT)?  The checker calls such an image
 * "unsupported", never unusable.
 */
bool media_refusal_unsupported(enum media_refusal r);

/* What a region is opened on. */
struct media_image {
	const void *base;   /* the headers and tables: the region, or a split region's metadata */
	uint64_t size;	    /* bytes at base */
	uint64_t data_size; /* bytes of the data: size inline, the data file's when split */
	bool split;	    /* opened as a split region (metadata = PATH) */
	bool meta_exact;    /* split: the metadata must be exactly its tables (a file, never
			       resized); a device need only hold them */
	const struct media_badblock *bbs; /* bad ranges at base */
	size_t n_bbs;
};

/*
 * The header-level verdict on img: reads both headers into *m (when img
 * holds them) and says whether the region is usable as far as its headers
 * and sizes go.  REFUSE_NONE: the header of m->choice describes a region
 * that fits img.  The tables' verdict (REFUSE_MISSING) is
 * media_missing_extents()'s.
 */
enum media_refusal media_region_refusal(const struct media_image *img, struct media_headers *m);

/* ---- extent records ---- */

/* What is wrong with an extent record: anything but REC_INTACT is damage. */
enum media_rec_verdict {
	REC_INTACT,
	REC_UNKNOWN_STATE, /* not one of the five state codes */
	REC_TAG_RANGE,	   /* COMMITTED, with a tag id not in 1..tag_count */
	REC_STRAY_TAG,	   /* not COMMITTED, yet it carries a tag id */
};
enum media_rec_verdict media_rec_check(uint64_t rec, uint64_t tag_count);

/* ---- tag slots ---- */

/*
 * What a tag slot is.  From its own bytes (media_slot_classify): FREE,
 * WRITTEN, FREEING, VALID or DAMAGED.  Against the COMMITTED records that
 * name it (media_named_slot, media_missing_extents) it may become:
 * SLOT_DAMAGED too; SLOT_ORPHANED, a FREE slot that COMMITTED records name
 * (damage: no crash leaves it); SLOT_HELD, a WRITTEN or FREEING slot whose
 * COMMITTED records may be another tag's lost extents.  The records under
 * DAMAGED, ORPHANED and HELD slots are quarantined, left as they are, and
 * the slot is never reused (a new tag in it would adopt them).
 */
enum media_slot_kind {
	SLOT_FREE,
	SLOT_WRITTEN,
	SLOT_FREEING,
	SLOT_VALID,
	SLOT_DAMAGED,
	SLOT_HELD,
	SLOT_ORPHANED,
};

/* Why media_slot_classify() says SLOT_DAMAGED. */
enum media_slot_damage {
	SLOT_UNDAMAGED,
	SLOT_BAD_STATE,	   /* not one of the four state words */
	SLOT_BAD_SUM,	   /* VALID, checksum mismatch */
	SLOT_NAME_NO_NUL,  /* VALID, the name is not NUL-terminated */
	SLOT_NAME_INVALID, /* VALID, the name is not a valid tag name */
};

/* why may be NULL. */
enum media_slot_kind media_slot_classify(const struct layout_tag *s, enum media_slot_damage *why);
bool media_slot_sum_ok(const struct layout_tag *s);
/* All 128 bytes zero (a zeroed block of the tag table, rather than a freed slot). */
bool media_slot_blank(const struct layout_tag *s);

/*
 * The named-slot rule: cnt intact COMMITTED records name a slot of kind.
 * A WRITTEN or FREEING slot's body was durable before any such record
 * (region-tag.c): unless it is intact (media_slot_sum_ok) and names at
 * least cnt extents, the slot is SLOT_DAMAGED.  A FREE slot named at all
 * is SLOT_ORPHANED.  Otherwise (or cnt == 0) kind is returned unchanged.
 */
enum media_slot_kind media_named_slot(const struct layout_tag *s, enum media_slot_kind kind,
				      uint64_t cnt);

/* ---- MOVE batches ---- */

/* What a slot is to the MOVE batches on the image (bit flags, media_moves_resolve). */
#define MOVE_ROLE_MARKER 0x01u	/* a batch marker, WRITTEN or VALID: ends FREE */
#define MOVE_ROLE_FORWARD 0x02u /* a member of a decided batch: VALID, its extent COMMITTED to it */
#define MOVE_ROLE_BACK 0x04u	/* a WRITTEN member of an undecided batch: ends FREE */
#define MOVE_ROLE_SOURCE 0x08u	/* VALID source of forward members: its count is recomputed */
#define MOVE_ROLE_BAD 0x10u	/* a member of a decided batch whose link is wrong, or the
				   marker of such a batch: damage */
#define MOVE_ROLE_FWD_REC 0x20u /* forward, and its extent's record still names the source */

struct media_moves {
	uint64_t markers;  /* marker slots WRITTEN or VALID */
	uint64_t decided;  /* of those, VALID (the batch rolls forward) */
	uint64_t forward;  /* member slots rolled forward */
	uint64_t back;	   /* member slots rolled back */
	uint64_t bad;	   /* member slots with a bad link */
	uint64_t held;	   /* decided markers with a bad member: kept VALID, as damage (never reused) */
	uint64_t records;  /* records that still name their source (to store) */
	uint64_t emptied;  /* sources left with no extent */
	uint32_t first_bad; /* slot id of the first bad member, 0: none */
};

/*
 * The one rule for MOVE batches on an image (recovery applies it, the
 * checker reports it).  slots[0..tag_count) is a copy of the tag table,
 * recs the extent table (extent_count records, any alignment), cnt[id]
 * the intact COMMITTED records naming id (id 1..tag_count).  Fills
 * role[id] and turns slots and cnt into what they are once every decided
 * batch has finished: forward members VALID and named by their extent,
 * sources VALID with their new count (and checksum), so the other rules
 * (media_slot_classify, media_named_slot, media_missing_extents) run on
 * the result unchanged.  A member is forward only when its marker is a
 * VALID, intact marker with its nonce, its source and extent are in
 * range and the extent's record names the source or the member; a member
 * of a decided batch otherwise (or one of two naming one extent) is
 * MOVE_ROLE_BAD, to be taken as a damaged slot (media_moves_kind).
 * -ENOMEM, or 0.
 */
int media_moves_resolve(struct layout_tag *slots, uint32_t tag_count, const void *recs,
			uint64_t extent_count, uint64_t *cnt, uint8_t *role, struct media_moves *sum);
/* A slot's kind after media_slot_classify and the moves: MOVE_ROLE_BAD is damage. */
enum media_slot_kind media_moves_kind(enum media_slot_kind kind, uint8_t role);

/* ---- committed extents missing from the table ---- */

enum media_missing_verdict {
	MISSING_NONE,	/* none missing, or damage accounts for them */
	MISSING_HOLD,	/* only the records under WRITTEN / FREEING slots can: hold those */
	MISSING_REFUSE, /* nothing accounts for them: they would look free, the region is refused */
};

struct media_missing {
	uint64_t deficit;     /* extents VALID tags were committed with that no record names */
	uint64_t candidates;  /* records that may be them, without the held ones */
	uint64_t held;	      /* COMMITTED records under WRITTEN / FREEING slots */
	uint32_t n_short;     /* VALID tags named by fewer records than committed */
	uint32_t first_short; /* the first of them (0: none) */
	enum media_missing_verdict verdict;
};

/*
 * A VALID slot records how many extents were committed under it, and no
 * crash changes that number before the slot stops being VALID.  When
 * records are missing (fewer than committed), the lost ones must be among
 * the candidates: the damaged records, the records under ORPHANED slots,
 * under a DAMAGED slot those beyond its own count (all of them when its
 * checksum is wrong), the surplus of other VALID tags.  If those do not
 * account for them, the records under WRITTEN and FREEING slots (normally
 * released) are held back as well, and if even they do not, the region
 * is refused.
 *
 * slots[id - 1], kind[id] (after media_named_slot) and cnt[id] (intact
 * COMMITTED records naming id) for id in 1..tag_count; damaged_recs:
 * records that are not REC_INTACT.
 */
void media_missing_extents(const struct layout_tag *slots, uint32_t tag_count, const uint8_t *kind,
			   const uint64_t *cnt, uint64_t damaged_recs, struct media_missing *m);

#endif
