/* SPDX-License-Identifier: MIT */
/* On-media format: geometry, header checks, format and load (layout.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "conf.h"
#include "layout.h"
#include "log.h"
#include "region.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the on-media format is little-endian; add byte swapping before porting"
#endif

/* ---- CRC32C (Castagnoli), reflected, table driven ---- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t layout_crc32c(uint32_t crc, const void *p, size_t len)
{
	const uint8_t *b = p;

	(void)pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- geometry ---- */

int layout_check_extent_size(uint64_t extent_size, uint64_t align)
{
	if (align == 0)
		align = LAYOUT_BLOCK;
	if (align & (align - 1))
		return -EINVAL;
	if (extent_size < LAYOUT_MIN_EXTENT_SIZE || extent_size % LAYOUT_BLOCK ||
	    extent_size % align)
		return -EINVAL;
	return 0;
}

static uint64_t meta_end(uint64_t count)
{
	uint64_t tags = MIN(count, (uint64_t)LAYOUT_MAX_TAGS);

	return LAYOUT_EXTENT_TABLE_OFF + ALIGN_UP(count * 8, (uint64_t)LAYOUT_BLOCK) +
	       ALIGN_UP(tags * LAYOUT_TAG_SLOT_SIZE, (uint64_t)LAYOUT_BLOCK);
}

static uint64_t data_off_for(uint64_t count, uint64_t extent_size, uint64_t align)
{
	return ALIGN_UP(meta_end(count), MAX(extent_size, align));
}

int layout_compute(uint64_t region_size, uint64_t extent_size, uint64_t align,
		   struct layout_geometry *g)
{
	uint64_t n, d;

	if (align == 0)
		align = LAYOUT_BLOCK;
	if (layout_check_extent_size(extent_size, align) < 0)
		return -EINVAL;
	if (region_size > (UINT64_MAX >> 2))
		return -EINVAL;
	/* Start from an upper bound: the metadata for it is no smaller than needed. */
	n = region_size / extent_size;
	d = data_off_for(n, extent_size, align);
	n = d >= region_size ? 0 : (region_size - d) / extent_size;
	while (data_off_for(n + 1, extent_size, align) + (n + 1) * extent_size <= region_size)
		n++;
	if (n == 0)
		return -ENOSPC;

	*g = (struct layout_geometry){
	    .region_size = region_size,
	    .extent_size = extent_size,
	    .data_align = align,
	    .extent_count = n,
	    .extent_table_off = LAYOUT_EXTENT_TABLE_OFF,
	    .tag_table_off = LAYOUT_EXTENT_TABLE_OFF + ALIGN_UP(n * 8, (uint64_t)LAYOUT_BLOCK),
	    .tag_count = MIN(n, (uint64_t)LAYOUT_MAX_TAGS),
	    .data_off = data_off_for(n, extent_size, align),
	};
	return 0;
}

/* ---- tags ---- */

int layout_tag_name_valid(const char *name)
{
	size_t len;

	if (!name || !*name)
		return -EINVAL;
	len = strnlen(name, LAYOUT_TAG_NAME_MAX + 1);
	if (len > LAYOUT_TAG_NAME_MAX)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return -EINVAL;
	return 0;
}

uint32_t layout_tag_checksum(const struct layout_tag *t)
{
	uint32_t c = layout_crc32c(0, &t->uid, sizeof(t->uid));

	return layout_crc32c(c, (const uint8_t *)t + 16, sizeof(*t) - 16);
}

/* ---- headers ---- */

const char *layout_hdr_status_str(enum layout_hdr_status s)
{
	switch (s) {
	case HDR_OK:
		return "valid";
	case HDR_BLANK:
		return "blank";
	case HDR_FOREIGN:
		return "foreign";
	case HDR_CORRUPT:
		return "corrupt";
	case HDR_UNSUPPORTED:
		return "unsupported version";
	case HDR_UNREADABLE:
		return "unreadable (media error)";
	}
	return "?";
}

void layout_header_seal(struct layout_header *h)
{
	h->checksum = layout_crc32c(0, h, offsetof(struct layout_header, checksum));
}

static bool all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t w;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, b + i, 8);
		if (w)
			return false;
	}
	for (; i < len; i++)
		if (b[i])
			return false;
	return true;
}

#define WHY(...)                                                                                   \
	do {                                                                                       \
		if (why)                                                                           \
			snprintf(why, why_len, __VA_ARGS__);                                       \
	} while (0)

enum layout_hdr_status layout_header_check(const void *block, struct layout_header *out, char *why,
					   size_t why_len)
{
	struct layout_header h;
	struct layout_geometry g;
	uint32_t c;

	if (all_zero(block, LAYOUT_BLOCK)) {
		WHY("all zero");
		return HDR_BLANK;
	}
	memcpy(&h, block, sizeof(h));
	if (memcmp(h.magic, LAYOUT_MAGIC, sizeof(h.magic)) != 0) {
		char m[8 * 4 + 1];
		for (size_t i = 0; i < sizeof(h.magic); i++)
			snprintf(m + 2 * i, 3, "%02x", (unsigned char)h.magic[i]);
		WHY("foreign magic 0x%s", m);
		return HDR_FOREIGN;
	}
	c = layout_crc32c(0, &h, offsetof(struct layout_header, checksum));
	if (c != h.checksum) {
		WHY("checksum mismatch (stored 0x%08x, computed 0x%08x)", h.checksum, c);
		return HDR_CORRUPT;
	}
	if (h.version != LAYOUT_VERSION) {
		WHY("layout version %u (this daemon knows %u)", h.version, LAYOUT_VERSION);
		return HDR_UNSUPPORTED;
	}
	if (h.header_size != sizeof(h) || h.tag_slot_size != LAYOUT_TAG_SLOT_SIZE ||
	    h.backup_off != LAYOUT_BACKUP_OFF || h.flags != 0 ||
	    !all_zero(h.reserved, sizeof(h.reserved))) {
		WHY("unexpected field values");
		return HDR_CORRUPT;
	}
	if (layout_compute(h.region_size, h.extent_size, h.data_align, &g) < 0 ||
	    g.extent_count != h.extent_count || g.extent_table_off != h.extent_table_off ||
	    g.tag_table_off != h.tag_table_off || g.tag_count != h.tag_count ||
	    g.data_off != h.data_off) {
		WHY("inconsistent geometry (size %" PRIu64 ", extent size %" PRIu64
		    ", count %" PRIu64 ")",
		    h.region_size, h.extent_size, h.extent_count);
		return HDR_CORRUPT;
	}
	if (out)
		*out = h;
	WHY("valid");
	return HDR_OK;
}

bool layout_range_bad(const struct pstore_badblock *bbs, size_t n, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < n; i++)
		if (bbs[i].off < off + len && off < bbs[i].off + bbs[i].len)
			return true;
	return false;
}

static void header_block(const struct layout_header *h, uint8_t block[LAYOUT_BLOCK])
{
	memset(block, 0, LAYOUT_BLOCK);
	memcpy(block, h, sizeof(*h));
}

static int write_header(struct pstore *ps, uint64_t off, const struct layout_header *h)
{
	_cleanup_free_ uint8_t *block = malloc(LAYOUT_BLOCK);

	if (!block)
		return -ENOMEM;
	header_block(h, block);
	pstore_memcpy(ps, (uint8_t *)pstore_base(ps) + off, block, LAYOUT_BLOCK);
	pstore_drain(ps);
	return 0;
}

int layout_format(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		  struct layout_header *out)
{
	struct layout_geometry g;
	struct layout_header h;
	uint8_t *base = pstore_base(ps);
	char s1[32], s2[32];
	int r;

	r = layout_compute(pstore_size(ps), extent_size, align, &g);
	if (r == -EINVAL)
		return log_error_errno(r,
				       "region '%s': extent size %" PRIu64
				       " is not a multiple of 4 KiB and of the device alignment %s",
				       name, extent_size, pmemz_format_size(align, s1, sizeof(s1)));
	if (r < 0)
		return log_error_errno(
		    r,
		    "region '%s': too small (%s) to hold one %s extent after its "
		    "metadata",
		    name, pmemz_format_size(pstore_size(ps), s1, sizeof(s1)),
		    pmemz_format_size(extent_size, s2, sizeof(s2)));

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, LAYOUT_MAGIC, sizeof(h.magic));
	h.version = LAYOUT_VERSION;
	h.header_size = sizeof(h);
	if (getrandom(h.uuid, sizeof(h.uuid), 0) != (ssize_t)sizeof(h.uuid))
		return log_error_errno(errno ? errno : EIO, "region '%s': getrandom: %m", name);
	h.uuid[6] = (uint8_t)((h.uuid[6] & 0x0f) | 0x40); /* version 4 */
	h.uuid[8] = (uint8_t)((h.uuid[8] & 0x3f) | 0x80); /* variant 1 */
	h.region_size = g.region_size;
	h.extent_size = g.extent_size;
	h.extent_count = g.extent_count;
	h.extent_table_off = g.extent_table_off;
	h.tag_table_off = g.tag_table_off;
	h.tag_count = g.tag_count;
	h.data_off = g.data_off;
	h.backup_off = LAYOUT_BACKUP_OFF;
	h.format_time = (uint64_t)time(NULL);
	h.data_align = g.data_align;
	h.tag_slot_size = LAYOUT_TAG_SLOT_SIZE;
	layout_header_seal(&h);

	/* A crash at any point leaves either a blank region or a complete one. */
	pstore_zero_nt(ps, base, 2 * LAYOUT_BLOCK);
	pstore_drain(ps);
	pstore_zero_nt(ps, base + g.extent_table_off,
		       g.tag_table_off - g.extent_table_off +
			   ALIGN_UP(g.tag_count * LAYOUT_TAG_SLOT_SIZE, (uint64_t)LAYOUT_BLOCK));
	pstore_drain(ps);
	r = write_header(ps, LAYOUT_BACKUP_OFF, &h);
	if (r >= 0)
		r = write_header(ps, LAYOUT_PRIMARY_OFF, &h);
	if (r < 0)
		return log_error_errno(r, "region '%s': format: %m", name);

	log_info("region '%s': formatted: %" PRIu64 " extents of %s, data at offset %" PRIu64
		 ", %" PRIu64 " tag slots",
		 name, g.extent_count, pmemz_format_size(g.extent_size, s1, sizeof(s1)), g.data_off,
		 g.tag_count);
	if (out)
		*out = h;
	return 0;
}

static enum layout_hdr_status check_at(const struct pstore *ps, uint64_t off,
				       const struct pstore_badblock *bbs, size_t n_bbs,
				       struct layout_header *h, char *why, size_t why_len)
{
	if (layout_range_bad(bbs, n_bbs, off, LAYOUT_BLOCK)) {
		WHY("media error in the block");
		return HDR_UNREADABLE;
	}
	return layout_header_check((const uint8_t *)pstore_base(ps) + off, h, why, why_len);
}

/*
 * Both header blocks are blank: is the rest a region whose headers were
 * wiped?  Counts the non-zero records of the extent table the format would
 * write that are well-formed (a state we know, a tag only when COMMITTED)
 * against those that are not.  Random or foreign data has almost no
 * well-formed non-zero records; a used region has them (ZEROED, COMMITTED,
 * generations) and few others.  Returns the well-formed count when they
 * are not outnumbered (then *first is the first of them), else 0.
 */
static uint64_t wiped_region_records(const struct pstore *ps, uint64_t extent_size, uint64_t align,
				     const struct pstore_badblock *bbs, size_t n_bbs,
				     uint64_t *first)
{
	const uint8_t *base = pstore_base(ps);
	struct layout_geometry g;
	uint64_t ok = 0, bad = 0;

	if (layout_compute(pstore_size(ps), extent_size, align, &g) < 0 ||
	    layout_range_bad(bbs, n_bbs, g.extent_table_off, g.extent_count * 8))
		return 0;
	for (uint64_t i = 0; i < g.extent_count; i++) {
		uint64_t rec;
		unsigned st;
		uint32_t tag;

		memcpy(&rec, base + g.extent_table_off + i * 8, sizeof(rec));
		if (rec == 0)
			continue;
		st = layout_rec_state(rec);
		tag = layout_rec_tag(rec);
		if (st < EXT_NSTATES &&
		    (st == EXT_COMMITTED ? tag >= 1 && tag <= LAYOUT_MAX_TAGS : tag == 0)) {
			if (ok++ == 0)
				*first = i;
		} else {
			bad++;
		}
	}
	return ok >= bad ? ok : 0;
}

/*
 * A header block written over a blank (or torn) one by an interrupted
 * write: every non-zero 8-byte word equals the corresponding word of the
 * good copy.  A primary torn that way while a format or a repair wrote it
 * may lack its magic word and look foreign; it is our header, half written.
 */
static bool torn_copy_of(const uint8_t *block, const uint8_t *good)
{
	for (size_t off = 0; off < LAYOUT_BLOCK; off += 8) {
		uint64_t w, g;

		memcpy(&w, block + off, 8);
		memcpy(&g, good + off, 8);
		if (w != 0 && w != g)
			return false;
	}
	return true;
}

/*
 * The primary header is blank and the backup is not valid: was a format
 * interrupted while it wrote the backup (step 3)?  Then the backup block
 * holds a torn header -- each 8-byte word either the new value or still
 * zero, the rest of the block zero -- and the tables are zero (step 2 was
 * drained).  Anything else is not ours to format.
 */
static bool interrupted_format(const struct pstore *ps, uint64_t extent_size, uint64_t align,
			       const struct pstore_badblock *bbs, size_t n_bbs)
{
	const uint8_t *base = pstore_base(ps);
	const uint8_t *b = base + LAYOUT_BACKUP_OFF;
	struct layout_header want;
	struct layout_geometry g;
	uint64_t w, v;

	if (layout_compute(pstore_size(ps), extent_size, align, &g) < 0 ||
	    layout_range_bad(bbs, n_bbs, LAYOUT_BACKUP_OFF, g.data_off - LAYOUT_BACKUP_OFF))
		return false;
	/* The words whose value a format of this region knows. */
	memset(&want, 0, sizeof(want));
	memcpy(want.magic, LAYOUT_MAGIC, sizeof(want.magic));
	want.version = LAYOUT_VERSION;
	want.header_size = sizeof(want);
	want.region_size = pstore_size(ps);
	want.extent_table_off = LAYOUT_EXTENT_TABLE_OFF;
	want.backup_off = LAYOUT_BACKUP_OFF;
	want.tag_slot_size = LAYOUT_TAG_SLOT_SIZE;
	for (size_t off = 0; off < LAYOUT_BLOCK; off += 8) {
		memcpy(&w, b + off, 8);
		if (w == 0)
			continue;
		switch (off) {
		case 0:
		case 8:
		case 32:
		case 56:
		case 88:
		case 112:
			memcpy(&v, (const uint8_t *)&want + off, 8);
			if (w != v)
				return false;
			break;
		case 16: /* uuid */
		case 24:
		case 40: /* extent_size ... data_off */
		case 48:
		case 64:
		case 72:
		case 80:
		case 96:  /* format_time */
		case 104: /* data_align */
			break;
		case 248: /* reserved (zero) and the checksum */
			if (w & 0xffffffffu)
				return false;
			break;
		default: /* reserved, and the rest of the block */
			return false;
		}
	}
	/* What step 2 zeroed (the padding up to data_off is never written). */
	return all_zero(base + g.extent_table_off,
			g.tag_table_off - g.extent_table_off +
			    ALIGN_UP(g.tag_count * LAYOUT_TAG_SLOT_SIZE, (uint64_t)LAYOUT_BLOCK));
}

int layout_load(struct pstore *ps, const char *name, uint64_t extent_size, uint64_t align,
		const struct pstore_badblock *bbs, size_t n_bbs, struct layout_header *out,
		bool *formatted)
{
	struct layout_header hp, hb, h;
	enum layout_hdr_status sp, sb;
	char whyp[160], whyb[160], s1[32], s2[32];
	bool repair_primary = false, repair_backup = false;
	uint64_t meta_len;
	int r;

	*formatted = false;
	if (pstore_size(ps) < 2 * LAYOUT_BLOCK)
		return log_error_errno(ENOSPC, "region '%s': too small (%" PRIu64 " bytes)", name,
				       pstore_size(ps));
	sp = check_at(ps, LAYOUT_PRIMARY_OFF, bbs, n_bbs, &hp, whyp, sizeof(whyp));
	sb = check_at(ps, LAYOUT_BACKUP_OFF, bbs, n_bbs, &hb, whyb, sizeof(whyb));
	if (sp == HDR_FOREIGN && sb == HDR_OK &&
	    torn_copy_of((const uint8_t *)pstore_base(ps) + LAYOUT_PRIMARY_OFF,
			 (const uint8_t *)pstore_base(ps) + LAYOUT_BACKUP_OFF)) {
		sp = HDR_CORRUPT;
		snprintf(whyp, sizeof(whyp), "a torn copy of the backup: an interrupted write");
	}

	if (sp == HDR_BLANK && sb == HDR_BLANK) {
		uint64_t used, first = 0;

		if (extent_size == 0)
			extent_size = MAX(CONF_DEFAULT_EXTENT_SIZE, align);
		used = wiped_region_records(ps, extent_size, align, bbs, n_bbs, &first);
		if (used)
			return log_error_errno(
			    EUCLEAN,
			    "region '%s': both header blocks are blank, but the extent table "
			    "holds %" PRIu64 " records of a used region (first: extent %" PRIu64
			    " at offset %" PRIu64 "): were its headers wiped? Refusing to format "
			    "over it (to reuse it as a new region, zero it first)",
			    name, used, first, (uint64_t)LAYOUT_EXTENT_TABLE_OFF + first * 8);
		r = layout_format(ps, name, extent_size, align, out);
		if (r < 0)
			return r;
		*formatted = true;
		return 0;
	}
	switch (sp) {
	case HDR_OK:
		h = hp;
		if (sb != HDR_OK || memcmp(&hp, &hb, sizeof(hp)) != 0) {
			if (sb == HDR_UNREADABLE)
				log_warning(
				    "region '%s': backup header is unreadable (media error); "
				    "continuing with the primary",
				    name);
			else {
				log_warning("region '%s': backup header %s (%s); rewriting it from "
					    "the primary",
					    name,
					    sb == HDR_OK ? "differs" : layout_hdr_status_str(sb),
					    whyb);
				repair_backup = true;
			}
		}
		break;
	case HDR_FOREIGN:
		return log_error_errno(EMEDIUMTYPE,
				       "region '%s': %s holds a foreign header (%s); refusing to "
				       "touch it (format it explicitly to use it)",
				       name, "offset 0", whyp);
	case HDR_UNSUPPORTED:
		return log_error_errno(ENOTSUP,
				       "region '%s': primary header has %s; refusing to touch it",
				       name, whyp);
	case HDR_BLANK:
	case HDR_CORRUPT:
	case HDR_UNREADABLE:
		if (sb != HDR_OK) {
			uint64_t es = extent_size ? extent_size : MAX(CONF_DEFAULT_EXTENT_SIZE, align);

			if (sp == HDR_BLANK && interrupted_format(ps, es, align, bbs, n_bbs)) {
				log_warning("region '%s': a format was interrupted (blank primary "
					    "header, incomplete backup, empty tables); formatting "
					    "again",
					    name);
				r = layout_format(ps, name, es, align, out);
				if (r < 0)
					return r;
				*formatted = true;
				return 0;
			}
			if (sp == HDR_BLANK)
				return log_error_errno(
				    EUCLEAN,
				    "region '%s': primary header is blank but the "
				    "backup header block is %s (%s); refusing to "
				    "touch it",
				    name, layout_hdr_status_str(sb), whyb);
			return log_error_errno(
			    EUCLEAN,
			    "region '%s': primary header %s (%s) and backup header "
			    "%s (%s); refusing to touch it",
			    name, layout_hdr_status_str(sp), whyp, layout_hdr_status_str(sb), whyb);
		}
		h = hb;
		log_warning("region '%s': primary header %s (%s); using the backup header%s", name,
			    layout_hdr_status_str(sp), whyp,
			    sp == HDR_UNREADABLE ? "" : " and repairing the primary");
		repair_primary = sp != HDR_UNREADABLE;
		break;
	}

	/* The chosen header must fit what we run on now. */
	if (h.region_size != pstore_size(ps))
		return log_error_errno(EINVAL,
				       "region '%s': header says the region is %" PRIu64
				       " bytes but it is %" PRIu64
				       " bytes (%s); refusing to touch it",
				       name, h.region_size, pstore_size(ps),
				       h.region_size > pstore_size(ps) ? "truncated?" : "grown?");
	if (extent_size && extent_size != h.extent_size)
		return log_error_errno(EINVAL,
				       "region '%s': configured extent size %s differs from the "
				       "on-media extent size %s; refusing (reformat to change it)",
				       name, pmemz_format_size(extent_size, s1, sizeof(s1)),
				       pmemz_format_size(h.extent_size, s2, sizeof(s2)));
	if (align && (h.extent_size % align || h.data_off % align))
		return log_error_errno(EINVAL,
				       "region '%s': the device alignment is now %s, which the "
				       "on-media layout (extent size %s) does not satisfy",
				       name, pmemz_format_size(align, s1, sizeof(s1)),
				       pmemz_format_size(h.extent_size, s2, sizeof(s2)));
	meta_len = h.tag_table_off +
		   ALIGN_UP(h.tag_count * LAYOUT_TAG_SLOT_SIZE, (uint64_t)LAYOUT_BLOCK) -
		   h.extent_table_off;
	if (layout_range_bad(bbs, n_bbs, h.extent_table_off, meta_len))
		return log_error_errno(EIO,
				       "region '%s': media errors in the extent or tag table; "
				       "refusing to use it (clear the errors or reformat)",
				       name);

	if (repair_primary) {
		r = write_header(ps, LAYOUT_PRIMARY_OFF, &h);
		if (r < 0)
			return log_error_errno(r, "region '%s': repairing the primary header: %m",
					       name);
	}
	if (repair_backup) {
		r = write_header(ps, LAYOUT_BACKUP_OFF, &h);
		if (r < 0)
			return log_error_errno(r, "region '%s': repairing the backup header: %m",
					       name);
	}
	*out = h;
	return 0;
}
