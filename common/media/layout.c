/* SPDX-License-Identifier: MIT */
/* On-media format: CRC, geometry, tag names, header blocks (media.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "feature-mask.h"
#include "media-internal.h"
#include "util.h"

/*
 * ---- CRC32C (Castagnoli), reflected ----
 * The SSE4.2 crc32 instruction computes this very polynomial, 8 bytes a
 * step: the table took 3-11% of the daemon's CPU under the nbd disk's
 * fresh writes (a tag slot per moved extent).  The table stays for other
 * CPUs, and as the reference the unit test holds the instruction to.
 */

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

uint32_t layout_crc32c_table(uint32_t crc, const void *p, size_t len)
{
	const uint8_t *b = p;

	(void)pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const void *p,
							   size_t len)
{
	const uint8_t *b = p;
	uint64_t c = ~crc;

	for (; len && ((uintptr_t)b & 7); len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
	for (; len >= 8; len -= 8, b += 8) {
		uint64_t w;

		memcpy(&w, b, sizeof(w));
		c = __builtin_ia32_crc32di(c, w);
	}
	for (; len; len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
	return ~(uint32_t)c;
}

static bool crc_hw(void)
{
	static int have = -1; /* racy first use: every thread finds the same answer */

	if (__atomic_load_n(&have, __ATOMIC_RELAXED) < 0) {
		__builtin_cpu_init();
		__atomic_store_n(&have, __builtin_cpu_supports("sse4.2") ? 1 : 0, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&have, __ATOMIC_RELAXED) == 1;
}

bool layout_crc32c_hw(void)
{
	return crc_hw();
}

uint32_t layout_crc32c(uint32_t crc, const void *p, size_t len)
{
	return crc_hw() ? crc_sse42(crc, p, len) : layout_crc32c_table(crc, p, len);
}
#else
bool layout_crc32c_hw(void)
{
	return false;
}

uint32_t layout_crc32c(uint32_t crc, const void *p, size_t len)
{
	return layout_crc32c_table(crc, p, len);
}
#endif

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

	return layout_tables_end(
	    LAYOUT_EXTENT_TABLE_OFF + ALIGN_UP(count * 8, (uint64_t)LAYOUT_BLOCK), tags);
}

static uint64_t data_off_for(uint64_t count, uint64_t extent_size, uint64_t align)
{
	return ALIGN_UP(meta_end(count), MAX(extent_size, align));
}

/* The tables of n extents at their fixed offsets, the data at data_off. */
static void geometry_of(struct layout_geometry *g, uint64_t region_size, uint64_t extent_size,
			uint64_t align, uint64_t n, uint64_t data_off)
{
	*g = (struct layout_geometry){
	    .region_size = region_size,
	    .extent_size = extent_size,
	    .data_align = align,
	    .extent_count = n,
	    .extent_table_off = LAYOUT_EXTENT_TABLE_OFF,
	    .tag_table_off = LAYOUT_EXTENT_TABLE_OFF + ALIGN_UP(n * 8, (uint64_t)LAYOUT_BLOCK),
	    .tag_count = MIN(n, (uint64_t)LAYOUT_MAX_TAGS),
	    .data_off = data_off,
	};
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
	/*
	 * Also what keeps the sums below from wrapping for a hostile header's
	 * sizes: extent size and alignment at most region_size < 2^62.
	 */
	if (extent_size > region_size)
		return -ENOSPC;
	/* Start from an upper bound: the metadata for it is no smaller than needed. */
	n = region_size / extent_size;
	d = data_off_for(n, extent_size, align);
	n = d >= region_size ? 0 : (region_size - d) / extent_size;
	while (data_off_for(n + 1, extent_size, align) + (n + 1) * extent_size <= region_size)
		n++;
	if (n == 0)
		return -ENOSPC;

	geometry_of(g, region_size, extent_size, align, n, data_off_for(n, extent_size, align));
	return 0;
}

int layout_compute_split(uint64_t data_size, uint64_t extent_size, uint64_t align,
			 struct layout_geometry *g)
{
	uint64_t n;

	if (align == 0)
		align = LAYOUT_BLOCK;
	if (layout_check_extent_size(extent_size, align) < 0 || data_size > (UINT64_MAX >> 2))
		return -EINVAL;
	n = data_size / extent_size;
	if (n == 0)
		return -ENOSPC;
	geometry_of(g, data_size, extent_size, align, n, 0);
	return 0;
}

/* ---- tags ---- */

/*
 * One UTF-8 sequence at s (len bytes left): its code point and length, or
 * 0 for an invalid one (overlong, surrogate, above U+10FFFF, truncated).
 */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
	static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
	size_t n;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n > len)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min_cp[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/*
 * Code points a name must not carry: C0/C1 controls and DEL (they move the
 * cursor or end the line in a log or terminal), and the directional marks,
 * embeddings, overrides and isolates, which make a name display as another
 * ("Trojan Source").
 */
static bool tag_cp_forbidden(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x200e || c == 0x200f ||
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

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

int layout_tag_name_new_valid(const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t len;
	int r = layout_tag_name_valid(name);

	if (r < 0)
		return r;
	len = strlen(name);
	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t n = utf8_decode(s + i, len - i, &c);

		if (n == 0 || tag_cp_forbidden(c))
			return -EINVAL;
		i += n;
	}
	return 0;
}

uint32_t layout_tag_checksum(const struct layout_tag *t)
{
	uint32_t c = layout_crc32c(0, &t->uid, sizeof(t->uid));

	return layout_crc32c(c, (const uint8_t *)t + 16, sizeof(*t) - 16);
}

/* ---- headers ---- */

bool layout_geometry_matches(const struct layout_header *h)
{
	struct layout_geometry g;
	int r = layout_header_split(h)
		    ? layout_compute_split(h->region_size, h->extent_size, h->data_align, &g)
		    : layout_compute(h->region_size, h->extent_size, h->data_align, &g);

	return r == 0 && g.extent_count == h->extent_count &&
	       g.extent_table_off == h->extent_table_off && g.tag_table_off == h->tag_table_off &&
	       g.tag_count == h->tag_count && g.data_off == h->data_off;
}

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
		return "unsupported";
	case HDR_UNREADABLE:
		return "unreadable (media error)";
	}
	return "?";
}

void layout_header_seal(struct layout_header *h)
{
	h->checksum = layout_crc32c(0, h, offsetof(struct layout_header, checksum));
}

bool layout_all_zero(const void *p, size_t len)
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

/* ---- features ---- */

void layout_header_features(const struct layout_header *h, struct layout_features *f)
{
	if (h->version == 1) {
		/* What every version 1 build could write: MOVE links, and split by its flag. */
		*f = (struct layout_features){
		    .incompat = LAYOUT_INCOMPAT_MOVE |
				((h->flags & LAYOUT_FLAG_SPLIT) ? LAYOUT_INCOMPAT_SPLIT : 0),
		};
		return;
	}
	*f = (struct layout_features){h->compat, h->ro_compat, h->incompat};
}

void layout_header_unknown(const struct layout_header *h, struct layout_features *u)
{
	layout_header_features(h, u);
	u->compat &= ~LAYOUT_COMPAT_KNOWN;
	u->ro_compat &= ~LAYOUT_RO_COMPAT_KNOWN;
	u->incompat &= ~LAYOUT_INCOMPAT_KNOWN;
}

bool layout_header_split(const struct layout_header *h)
{
	struct layout_features f;

	layout_header_features(h, &f);
	return (f.incompat & LAYOUT_INCOMPAT_SPLIT) != 0;
}

static const char *feature_name(unsigned which, unsigned bit)
{
	static const char *const incompat[] = {"split", "move"};

	if (which == 2 && bit < ARRAY_SIZE(incompat))
		return incompat[bit];
	return NULL;
}

const char *layout_features_str(unsigned which, uint64_t mask, char *buf, size_t len)
{
	size_t o = 0;
	unsigned n = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	if (!mask)
		pmemz_append(buf, len, &o, "none");
	for (unsigned b = 0; b < 64; b++) {
		const char *name = feature_name(which, b);

		if (!(mask & (UINT64_C(1) << b)))
			continue;
		if (name)
			pmemz_append(buf, len, &o, "%s%s", n++ ? ", " : "", name);
		else
			pmemz_append(buf, len, &o, "%sbit %u", n++ ? ", " : "", b);
	}
	return buf;
}

/* ---- header checks ---- */

#define WHY(...)                                                                                   \
	do {                                                                                       \
		if (why)                                                                           \
			snprintf(why, why_len, __VA_ARGS__);                                       \
	} while (0)

/*
 * The reserved fields of a version's header are zero: v1, the flags
 * beyond split and every byte after them; v2, the flags word and the bytes
 * after the masks -- unless a compat or ro_compat feature this build does
 * not know may use them.
 */
static bool reserved_zero(const struct layout_header *h)
{
	struct layout_features u;

	if (h->version == 1)
		return !(h->flags & ~LAYOUT_FLAG_SPLIT) && !h->compat && !h->ro_compat &&
		       !h->incompat && layout_all_zero(h->reserved, sizeof(h->reserved));
	layout_header_unknown(h, &u);
	if (u.compat || u.ro_compat)
		return true;
	return !h->flags && layout_all_zero(h->reserved, sizeof(h->reserved));
}

/* Intact (magic, checksum): is it a layout this build knows? */
static enum layout_hdr_status check_known(const struct layout_header *h, char *why, size_t why_len)
{
	struct layout_features u;
	char m[96];

	if (h->version < LAYOUT_VERSION_MIN || h->version > LAYOUT_VERSION) {
		WHY("layout version %u, this build knows %u to %u: a newer pmemzerod wrote it",
		    h->version, LAYOUT_VERSION_MIN, LAYOUT_VERSION);
		return HDR_UNSUPPORTED;
	}
	layout_header_unknown(h, &u);
	if (u.incompat) {
		WHY("unknown incompat features %s: a newer pmemzerod wrote it",
		    pmemz_mask_str(u.incompat, m, sizeof(m)));
		return HDR_UNSUPPORTED;
	}
	return HDR_OK;
}

enum layout_hdr_status layout_header_check(const void *block, struct layout_header *out, char *why,
					   size_t why_len)
{
	struct layout_header h;
	enum layout_hdr_status s;
	uint32_t c;

	if (layout_all_zero(block, LAYOUT_BLOCK)) {
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
	/* A newer build's header: nothing past its version and masks is ours to judge. */
	s = check_known(&h, why, why_len);
	if (s != HDR_OK) {
		if (out)
			*out = h;
		return s;
	}
	if (h.header_size != sizeof(h) || h.tag_slot_size != LAYOUT_TAG_SLOT_SIZE ||
	    h.backup_off != LAYOUT_BACKUP_OFF || !reserved_zero(&h)) {
		WHY("unexpected field values");
		return HDR_CORRUPT;
	}
	if (!layout_geometry_matches(&h)) {
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

bool layout_range_bad(const struct media_badblock *bbs, size_t n, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < n; i++)
		if (bbs[i].off < off + len && off < bbs[i].off + bbs[i].len)
			return true;
	return false;
}
