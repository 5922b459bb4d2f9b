/* SPDX-License-Identifier: MIT */
/*
 * A thin-provisioned disk on pmemzerod (nbdkit-pmemz-plugin(1)): how it is
 * kept in a region's tags.  Shared by the plugin and `pmemzctl disks`; no
 * I/O, no logging, no libpmemzclient call: pure functions of names and
 * bytes.
 *
 * A disk named D is a set of committed tags of one uid in one region:
 *   nbd/D     its superblock: one extent, struct pmemz_disk_super at offset 0,
 *             the mapping journal from PMEMZ_DISK_JOURNAL_OFFSET (version 2:
 *             journal_slots records; version 1: as many as the extent holds)
 *   nbd/D/I   chunk I of the disk (I in decimal, no leading zeros): one
 *             extent holding the bytes [I * chunk_size, (I + 1) * chunk_size)
 *   nbd/D/pool/S  extents the disk owns ahead of need (S: a sequence number
 *             in decimal), any number of them: zeroed when committed, then
 *             taken one by one by fresh chunks, each mapping recorded in the
 *             journal
 *   nbd/D/ahead/S  the same, of the plugin before the journal: freed at open
 * A chunk is present when its tag exists, or when the journal's latest
 * record for it names an extent of one of the disk's pool tags; otherwise
 * it was never written (or was trimmed) and reads as zeros.
 *
 * The journal makes a fresh chunk's mapping durable with local stores and
 * the write's own drain, no round trip: a record is 32 bytes, checked by a
 * hash seeded with the disk's uuid, and valid when its sequence number is
 * at least the journal's base (an aligned 8-byte word, so moving it is
 * failure-atomic) and it sits in slot seq % slots.  The plugin folds the
 * journal into chunk tags (MOVE, failure-atomic in pmemzerod) in the
 * background, at close and at open, and then moves the base past the
 * folded records.  At open, every pool tag is emptied that way, and what
 * is left in it -- extents held ahead, maybe written by a fresh chunk whose
 * record never became durable -- is freed: the daemon zeroes it again.
 * A plugin that predates pool tags refuses a disk that has any (they are
 * not a chunk's name), so it never frees mapped extents it cannot see;
 * one that predates version 2 superblocks refuses those (a later
 * version), so it never reads a journal of another length than its own.
 * Later changes to the format are feature bits of version 2 (below).
 */
#ifndef PMEMZ_DISK_FORMAT_H
#define PMEMZ_DISK_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PMEMZ_DISK_TAG_PREFIX "nbd/"
#define PMEMZ_DISK_NAME_MAX 32u /* [A-Za-z0-9._-]{1,32}, not "." or ".." */
/* "nbd/" NAME "/ahead/" sequence: fits the daemon's 63-byte tag names */
#define PMEMZ_DISK_TAG_MAX (sizeof(PMEMZ_DISK_TAG_PREFIX) + PMEMZ_DISK_NAME_MAX + 7 + 20)
#define PMEMZ_DISK_AHEAD_SEQ_MAX UINT64_C(99999999999999999) /* 17 digits */
/*
 * Chunks of one disk at most: the plugin's chunk map holds 24 bytes per
 * chunk of the virtual size (reserved address space, touched only where
 * chunks are written), 384 MiB at this limit: 32 TiB with 2 MiB extents.
 */
#define PMEMZ_DISK_MAX_CHUNKS (1ull << 24)

#define PMEMZ_DISK_MAGIC "PMEMZNBD" /* 8 bytes, no NUL on media */
#define PMEMZ_DISK_VERSION 2u	    /* what this plugin writes */
#define PMEMZ_DISK_VERSION_1 1u	    /* what it still reads: the superblock before the masks */
#define PMEMZ_DISK_SUPER_SIZE_1 128u
#define PMEMZ_DISK_SUPER_SIZE_2 256u

/*
 * Feature bits of a version 2 superblock, as ext4's: a reader that finds
 * an incompat bit it does not know refuses the disk and writes nothing;
 * a ro_compat bit it does not know, it serves the disk read-only (and
 * writes nothing); a compat bit it does not know, it serves as usual.  A
 * version 1 superblock has no masks: it reads as the features the plugin
 * that wrote it used (pmemz_disk_super_features).
 *
 * incompat journal: the superblock's extent holds the mapping journal
 * (journal_slots records): a reader that ignored it would read the
 * chunks it maps as zeros, and free their extents with the pool tags.
 * incompat pool: the disk owns extents ahead under its pool tags
 * (nbd/D/pool/S): a reader that did not know them would take them for
 * damage or for another disk's.  Both are set when the disk is made,
 * whenever its extents hold a journal (pool tags need the journal that
 * maps their extents), and never cleared.
 */
#define PMEMZ_DISK_INCOMPAT_JOURNAL (UINT64_C(1) << 0)
#define PMEMZ_DISK_INCOMPAT_POOL (UINT64_C(1) << 1)
#define PMEMZ_DISK_COMPAT_KNOWN UINT64_C(0)
#define PMEMZ_DISK_RO_COMPAT_KNOWN UINT64_C(0)
#define PMEMZ_DISK_INCOMPAT_KNOWN (PMEMZ_DISK_INCOMPAT_JOURNAL | PMEMZ_DISK_INCOMPAT_POOL)

/*
 * The superblock, at offset 0 of the extent of tag nbd/D; little-endian
 * (the daemon's media are too).  The rest of the extent up to the
 * journal (PMEMZ_DISK_JOURNAL_OFFSET) is zero.
 *
 * Version 1 (super_size 128) ends at reserved (zero); its checksum covers
 * bytes [0, 88): everything that never changes.  Version 2 (super_size
 * 256) adds the feature masks and the journal's slot count, and its
 * checksum covers the whole superblock except the checksum itself and
 * size, reserved bytes included (a later feature may use them).
 *
 * size is outside either checksum: the plugin grows a disk with one
 * aligned 8-byte store of size then a flush -- failure-atomic on pmem, so
 * after a crash the superblock holds the old size or the new one, both
 * valid.
 */
struct pmemz_disk_super {
	char magic[8];		/*   0 PMEMZ_DISK_MAGIC */
	uint32_t version;	/*   8 PMEMZ_DISK_VERSION (or _1) */
	uint32_t super_size;	/*  12 PMEMZ_DISK_SUPER_SIZE_2 (or _1) */
	uint64_t chunk_size;	/*  16 the region's extent size at creation */
	uint64_t created;	/*  24 seconds since the epoch */
	uint8_t uuid[16];	/*  32 random, told apart from a re-created disk */
	char name[40];		/*  48 the disk's name, NUL-padded */
	uint64_t checksum;	/*  88 pmemz_disk_super_checksum() */
	uint64_t size;		/*  96 virtual size in bytes */
	uint64_t compat;	/* 104 version 2 on (version 1: reserved, zero) */
	uint64_t ro_compat;	/* 112 */
	uint64_t incompat;	/* 120 */
	uint64_t journal_slots; /* 128 the journal's records (0: no journal) */
	uint8_t reserved[120];	/* 136 zero, for later features */
};
_Static_assert(sizeof(struct pmemz_disk_super) == PMEMZ_DISK_SUPER_SIZE_2, "superblock size");
_Static_assert(__builtin_offsetof(struct pmemz_disk_super, compat) == PMEMZ_DISK_SUPER_SIZE_1 - 24,
	       "version 1 ends with 24 reserved bytes where the masks are");
_Static_assert(__builtin_offsetof(struct pmemz_disk_super, size) % 8 == 0,
	       "size is stored atomically");

/* 0 when name is a valid disk name, else -EINVAL. */
int pmemz_disk_name_valid(const char *name);

/* "nbd/NAME" into buf: 0, -EINVAL (bad name), -ENAMETOOLONG (buf too small). */
int pmemz_disk_super_tag(char *buf, size_t len, const char *disk);
/* "nbd/NAME/INDEX" into buf: 0, -EINVAL, -ENAMETOOLONG. */
int pmemz_disk_chunk_tag(char *buf, size_t len, const char *disk, uint64_t index);
/* "nbd/NAME/ahead/SEQ" into buf (PMEMZ_DISK_TAG_MAX bytes): 0, -EINVAL, -ENAMETOOLONG. */
int pmemz_disk_ahead_tag(char *buf, size_t len, const char *disk, uint64_t seq);
/* "nbd/NAME/pool/SEQ" into buf (PMEMZ_DISK_TAG_MAX bytes): 0, -EINVAL, -ENAMETOOLONG. */
int pmemz_disk_pool_tag(char *buf, size_t len, const char *disk, uint64_t seq);
/* The prefix of a disk's chunk tags, "nbd/NAME/" (for pmemz_tag_foreach). */
int pmemz_disk_chunk_prefix(char *buf, size_t len, const char *disk);

enum pmemz_disk_tag_kind {
	PMEMZ_DISK_TAG_SUPER = 1, /* nbd/NAME */
	PMEMZ_DISK_TAG_CHUNK = 2, /* nbd/NAME/INDEX */
	PMEMZ_DISK_TAG_AHEAD = 3, /* nbd/NAME/ahead/SEQ (*index: SEQ) */
	PMEMZ_DISK_TAG_POOL = 4,  /* nbd/NAME/pool/SEQ (*index: SEQ) */
};
/*
 * What a tag is: PMEMZ_DISK_TAG_SUPER, _CHUNK, _AHEAD or _POOL, with the disk's
 * name copied to disk (at least PMEMZ_DISK_NAME_MAX + 1 bytes) and, for a
 * chunk, its index (< PMEMZ_DISK_MAX_CHUNKS, canonical decimal) in *index;
 * for an ahead or pool tag, its sequence number (at most
 * PMEMZ_DISK_AHEAD_SEQ_MAX).
 * -EINVAL when the tag is not one of a disk's (another application's, or
 * damaged: "nbd/x/007", "nbd/x/y/1").
 */
int pmemz_disk_tag_parse(const char *tag, char *disk, uint64_t *index);

/* Chunks of a disk of size bytes (the last one may be partly outside it). */
static inline uint64_t pmemz_disk_chunks(uint64_t size, uint64_t chunk_size)
{
	return size / chunk_size + (size % chunk_size != 0);
}

/*
 * Whether a disk of size bytes in chunks of chunk_size fits the chunk map:
 * 0, or -EINVAL (size 0, chunk size 0 or not a multiple of 4 KiB) or
 * -EFBIG (more than PMEMZ_DISK_MAX_CHUNKS chunks) with *why saying so.
 */
int pmemz_disk_size_valid(uint64_t size, uint64_t chunk_size, const char **why);

/* The checksum of sb as its version defines it (v1: bytes [0, 88); v2: all but checksum, size). */
uint64_t pmemz_disk_super_checksum(const struct pmemz_disk_super *sb);
/*
 * A new version 2 superblock (checksum set); uuid: 16 random bytes;
 * journal_slots: the journal's records, at most pmemz_disk_journal_slots
 * (chunk_size) (0: no journal, and no extents owned ahead).
 */
void pmemz_disk_super_init(struct pmemz_disk_super *sb, const char *disk, uint64_t size,
			   uint64_t chunk_size, uint64_t created, const uint8_t uuid[16],
			   uint64_t journal_slots);
/*
 * Check a superblock read from media (a copy: media may change under the
 * check) for the disk named disk in a region of extent chunk_size: 0, or
 * -EUCLEAN (not a superblock, damaged, another disk's) or -EPROTO (a
 * later version, or incompat features this build does not know: the
 * disk is unsupported, not damaged) or -EINVAL (another chunk size, or a
 * size out of range) with *why, a static string, saying which.  Unknown
 * ro_compat and compat bits pass: pmemz_disk_super_unknown tells them.
 */
int pmemz_disk_super_check(const struct pmemz_disk_super *sb, const char *disk, uint64_t chunk_size,
			   const char **why);

/* What a superblock (checked) says the disk uses. */
struct pmemz_disk_features {
	uint64_t compat, ro_compat, incompat;
	uint64_t journal_slots; /* 0: no journal */
};
/*
 * The features of a checked superblock.  Version 1 has no masks: its
 * journal is as many records as the extent holds (none when it holds
 * fewer than PMEMZ_DISK_JOURNAL_MIN_SLOTS), and it may have pool tags.
 */
void pmemz_disk_super_features(const struct pmemz_disk_super *sb, struct pmemz_disk_features *f);
/* The bits of f this build does not know, mask by mask. */
void pmemz_disk_super_unknown(const struct pmemz_disk_features *f,
			      struct pmemz_disk_features *unknown);

/*
 * The mapping journal, in the superblock's extent: the base at
 * PMEMZ_DISK_JOURNAL_OFFSET, the records from PMEMZ_DISK_JOURNAL_RECORDS.
 * A record maps chunk `chunk` to extent `extent` (its number in the
 * region's data area); check is pmemz_disk_jrec_check() of the rest.
 */
#define PMEMZ_DISK_JOURNAL_OFFSET 4096u
#define PMEMZ_DISK_JOURNAL_RECORDS 8192u
#define PMEMZ_DISK_JOURNAL_MIN_SLOTS 64u /* fewer: no journal, no extents owned ahead */
#define PMEMZ_DISK_JOURNAL_SLOTS_MIN 4u	 /* a version 2 journal's own count: at least this */

struct pmemz_disk_jrec {
	uint64_t seq;
	uint64_t chunk;
	uint64_t extent;
	uint64_t check;
};
_Static_assert(sizeof(struct pmemz_disk_jrec) == 32, "a journal record");

/*
 * Record slots in an extent of chunk_size bytes (0: too small for a
 * journal): what a new disk's journal holds, and at most what a version 2
 * superblock may say.
 */
size_t pmemz_disk_journal_slots(uint64_t chunk_size);
uint64_t pmemz_disk_jrec_check(const uint8_t uuid[16], uint64_t seq, uint64_t chunk,
			       uint64_t extent);
void pmemz_disk_jrec_make(struct pmemz_disk_jrec *rec, const uint8_t uuid[16], uint64_t seq,
			  uint64_t chunk, uint64_t extent);
/*
 * Is rec (a copy) a live record of slot `slot` of `slots`: its check right,
 * its sequence number at least base and in that slot, its chunk below
 * nchunks?
 */
bool pmemz_disk_jrec_valid(const struct pmemz_disk_jrec *rec, const uint8_t uuid[16], uint64_t base,
			   size_t slot, size_t slots, uint64_t nchunks);
/*
 * Of valid records v[0..n): the latest of each chunk, and of those, the
 * latest naming each extent (an earlier one's chunk reads zero), left at
 * the front sorted by chunk; returns their number.  Reorders v.
 */
size_t pmemz_disk_journal_latest(struct pmemz_disk_jrec *v, size_t n);

#endif
