/* SPDX-License-Identifier: MIT */
/*
 * Offline consistency check of a region image (check.h).  Reads only.
 *
 * The rules are the daemon's, from the media module (media.h): which header
 * is used, what a record or a slot is, what the records naming a slot say
 * about it, whether committed extents are missing; the checker walks the
 * image itself and reports their verdicts.  In a raw (crashed) image
 * the states recovery resolves on purpose -- LEASED records, WRITTEN and
 * FREEING slots, COMMITTED records under a WRITTEN or FREEING slot with an
 * intact body -- are notes, not problems; with CHECK_RECOVERED they are
 * problems.  Everything else that recovery treats as damage (and
 * quarantines) is a problem in both modes: in particular COMMITTED records
 * under a FREE slot, which no crash leaves (region-tag.c).
 *
 * A media error (SIGBUS) while reading is caught: in the metadata it makes
 * the image unusable, in a ZEROED extent it is a problem of that extent.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dax.h"
#include "util.h"

/* On the heap: it must survive a siglongjmp with defined contents. */
struct checker {
	const uint8_t *base; /* headers and tables: the image, or a split region's metadata */
	uint64_t size;
	/* The extents: the image again, or a split region's data file (data_split). */
	const uint8_t *data;
	uint64_t data_size;
	bool data_split;
	const struct media_badblock *data_bbs;
	size_t n_data_bbs;
	bool meta_device; /* the metadata is a device: larger than its tables is fine */
	unsigned flags;
	struct check_report *rep;
	int err; /* first allocation failure */
	bool unusable;
	enum media_refusal verdict; /* media_region_refusal's, on the headers and sizes */
	size_t cap_problems, cap_notes, cap_tags;
	const struct media_badblock *bbs; /* never read */
	size_t n_bbs;
	/* Per tag id, [0] unused: */
	uint8_t *kind;	 /* enum media_slot_kind */
	uint64_t *cnt;	 /* COMMITTED records naming the slot */
	uint64_t *first; /* the first of them */
	struct layout_tag *slots; /* the tag table, copied: slots[id - 1] */
	bool hold; /* recovery holds back records under WRITTEN / FREEING slots */
};

/* ---- lines ---- */

static void push_line(struct checker *c, char ***v, size_t *n, size_t *cap, char *line)
{
	if (!line) {
		c->err = -ENOMEM;
		return;
	}
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		char **nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv) {
			free(line);
			c->err = -ENOMEM;
			return;
		}
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = line;
}

static char *vformat(const char *fmt, va_list ap) _printf_(1, 0);
static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

static void problem(struct checker *c, const char *fmt, ...) _printf_(2, 3);
static void problem(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	c->rep->problems_total++;
	if (c->rep->n_problems >= CHECK_MAX_LINES)
		return;
	va_start(ap, fmt);
	push_line(c, &c->rep->problems, &c->rep->n_problems, &c->cap_problems, vformat(fmt, ap));
	va_end(ap);
}

static void note(struct checker *c, const char *fmt, ...) _printf_(2, 3);
static void note(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	if (c->rep->n_notes >= CHECK_MAX_LINES)
		return;
	va_start(ap, fmt);
	push_line(c, &c->rep->notes, &c->rep->n_notes, &c->cap_notes, vformat(fmt, ap));
	va_end(ap);
}

#define unusable(c, ...)                                                                           \
	do {                                                                                       \
		(c)->unusable = true;                                                              \
		problem((c), __VA_ARGS__);                                                         \
	} while (0)

/*
 * The media module's verdict that the daemon refuses the region
 * (media.h: enum media_refusal): unusable, the first verdict recorded in
 * the report, and a problem line that ends with the reason.
 */
static void refuse(struct checker *c, enum media_refusal why, const char *fmt, ...) _printf_(3, 4);
static void refuse(struct checker *c, enum media_refusal why, const char *fmt, ...)
{
	_cleanup_free_ char *detail = NULL;
	va_list ap;

	c->unusable = true;
	if (c->rep->refusal == REFUSE_NONE)
		c->rep->refusal = why;
	va_start(ap, fmt);
	detail = vformat(fmt, ap);
	va_end(ap);
	if (!detail) {
		c->err = -ENOMEM;
		return;
	}
	problem(c, "%s; the daemon refuses the region (%s)", detail, media_refusal_str(why));
}

/* A name from the media, printable: at most 63 bytes, anything odd as '?'. */
static const char *safe_name(const char name[64], char out[LAYOUT_TAG_NAME_MAX + 1])
{
	size_t i;

	for (i = 0; i < LAYOUT_TAG_NAME_MAX && name[i]; i++)
		out[i] = (unsigned char)name[i] < 0x20 || (unsigned char)name[i] >= 0x7f ||
				 name[i] == '\''
			     ? '?'
			     : name[i];
	out[i] = '\0';
	return out;
}

static const char *state_name(unsigned s)
{
	static const char *const names[EXT_NSTATES] = {"DIRTY", "ZEROED", "LEASED", "COMMITTED",
						       "BAD"};

	return s < EXT_NSTATES ? names[s] : "?";
}

const char *check_status_str(enum check_status s)
{
	switch (s) {
	case CHECK_CLEAN:
		return "clean";
	case CHECK_INCONSISTENT:
		return "inconsistent";
	case CHECK_UNUSABLE:
		return "unusable";
	}
	return "?";
}

/* ---- SIGBUS: a media error, or a file truncated under the mapping ---- */

/* volatile: the compiler must not drop stores that only the handler reads */
static __thread sigjmp_buf *volatile bus_jmp;
static __thread volatile uintptr_t bus_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (bus_jmp) {
		bus_addr = (uintptr_t)si->si_addr;
		siglongjmp(*bus_jmp, 1);
	}
	(void)signal(sig, SIG_DFL);
	(void)raise(sig);
}

/* ---- headers and geometry ---- */

static const char *hdr_verdict(enum layout_hdr_status s)
{
	return s == HDR_BLANK ? "blank (all zero)" : layout_hdr_status_str(s);
}

/*
 * The daemon's verdict on the headers and sizes (media_region_refusal), and
 * the header it uses.  false: no header to check the tables with.
 */
static bool check_headers(struct checker *c)
{
	struct check_report *rep = c->rep;
	struct media_image img = {
	    .base = c->base,
	    .size = c->size,
	    .data_size = c->data_size,
	    .split = c->data_split,
	    .meta_exact = !c->meta_device,
	    .bbs = c->bbs,
	    .n_bbs = c->n_bbs,
	};
	struct media_headers m;
	enum layout_hdr_status sp, sb;

	c->verdict = media_region_refusal(&img, &m);
	if (c->verdict == REFUSE_TOO_SMALL) {
		refuse(c, c->verdict,
		       "image is %" PRIu64 " bytes: too small for the two header blocks (%u)",
		       c->size, 2 * LAYOUT_BLOCK);
		return false;
	}
	sp = m.primary;
	sb = m.backup;
	(void)snprintf(rep->primary_why, sizeof(rep->primary_why), "%s", m.primary_why);
	(void)snprintf(rep->backup_why, sizeof(rep->backup_why), "%s", m.backup_why);
	rep->primary_status = sp;
	rep->backup_status = sb;
	rep->primary_ok = sp == HDR_OK;
	rep->backup_ok = sb == HDR_OK;

	if (m.choice == HDRS_PRIMARY) {
		rep->hdr = m.hp;
		if (m.differ) {
			rep->headers_differ = true;
			problem(c,
				"backup header (offset %u) is valid but differs from the primary; "
				"the daemon rewrites it from the primary",
				LAYOUT_BACKUP_OFF);
		} else if (sb == HDR_UNREADABLE) {
			problem(c, "backup header (offset %u) is unreadable (%s)",
				LAYOUT_BACKUP_OFF, rep->backup_why);
		} else if (m.repair_backup) {
			problem(c,
				"backup header (offset %u) is %s (%s); the daemon rewrites it from "
				"the primary",
				LAYOUT_BACKUP_OFF, hdr_verdict(sb), rep->backup_why);
		}
	} else if (sb == HDR_OK) {
		/* The daemon uses the backup (or refuses): check the region it describes. */
		rep->hdr = m.hb;
		if (m.choice != HDRS_BACKUP)
			refuse(c, c->verdict,
			       "primary header (offset 0) is %s (%s) but the backup is valid",
			       hdr_verdict(sp), rep->primary_why);
		else if (!m.repair_primary)
			problem(c,
				"primary header (offset 0) is unreadable (%s); the daemon uses the "
				"backup header",
				rep->primary_why);
		else
			problem(c,
				"primary header (offset 0) is %s (%s); the daemon uses the backup "
				"header and repairs the primary",
				hdr_verdict(sp), rep->primary_why);
	} else {
		if ((sp == HDR_BLANK || sp == HDR_FOREIGN) &&
		    (sb == HDR_BLANK || sb == HDR_FOREIGN))
			refuse(c, c->verdict,
			       "not a pmemzerod region: primary header %s (%s), backup header "
			       "%s (%s)",
			       hdr_verdict(sp), rep->primary_why, hdr_verdict(sb),
			       rep->backup_why);
		else
			refuse(c, c->verdict,
			       "both headers are unusable: primary (offset 0) %s (%s), backup "
			       "(offset %u) %s (%s)",
			       hdr_verdict(sp), rep->primary_why, LAYOUT_BACKUP_OFF,
			       hdr_verdict(sb), rep->backup_why);
		return false;
	}
	rep->have_hdr = true;
	return true;
}

/*
 * Report the size verdicts (check_headers decided them) and whether the
 * tables can be read: false when they cannot (the reason recorded).
 */
static bool check_geometry(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	uint64_t meta_end = layout_tables_end(h->tag_table_off, h->tag_count);
	bool split = (h->flags & LAYOUT_FLAG_SPLIT) != 0;

	switch (c->verdict) {
	case REFUSE_LAYOUT_KIND:
		refuse(c, c->verdict,
		       split ? "the header is that of a region whose metadata is in a file of its "
			       "own: check it with --metadata THIS_FILE DATA_FILE"
			     : "the metadata file holds the header of a region that keeps its "
			       "metadata inline, not a split region's");
		return false;
	case REFUSE_SIZE:
		if (c->data_size < h->region_size)
			refuse(c, c->verdict,
			       "%s is truncated: %" PRIu64 " bytes, but the header says the region "
			       "is %" PRIu64 " bytes",
			       split ? "data file" : "image", c->data_size, h->region_size);
		else
			refuse(c, c->verdict,
			       "%s is %" PRIu64 " bytes but the header says the region is %" PRIu64
			       " bytes: grown, and a region is never resized",
			       split ? "data file" : "image", c->data_size, h->region_size);
		break;
	case REFUSE_META_SIZE:
		refuse(c, c->verdict,
		       "metadata file is %" PRIu64 " bytes but its tables end at %" PRIu64
		       " (a metadata file is never resized)",
		       c->size, meta_end);
		break;
	case REFUSE_TABLES_BAD:
		refuse(c, c->verdict,
		       "bad blocks in the extent or tag table (offsets %" PRIu64 "..%" PRIu64 ")",
		       h->extent_table_off, meta_end);
		return false;
	default:
		break;
	}
	/* Whatever the verdict, the tables are listed when they can be read. */
	if (!layout_geometry_matches(h) || h->tag_count > LAYOUT_MAX_TAGS ||
	    h->data_off + h->extent_count * h->extent_size > h->region_size) {
		unusable(c,
			 "header geometry is inconsistent: size %" PRIu64 ", extent size %" PRIu64
			 ", count %" PRIu64 ", data at %" PRIu64,
			 h->region_size, h->extent_size, h->extent_count, h->data_off);
		return false;
	}
	if (meta_end > c->size) {
		unusable(c,
			 "image ends at %" PRIu64
			 ", inside the extent or tag table (ends at %" PRIu64 "): not read",
			 c->size, meta_end);
		return false;
	}
	if (layout_range_bad(c->bbs, c->n_bbs, h->extent_table_off,
			     meta_end - h->extent_table_off)) {
		unusable(c,
			 "bad blocks in the extent or tag table (offsets %" PRIu64 "..%" PRIu64
			 "): not read",
			 h->extent_table_off, meta_end);
		return false;
	}
	return true;
}

/* ---- tag slots ---- */

static void add_tag(struct checker *c, uint32_t id, const struct layout_tag *t)
{
	struct check_report *rep = c->rep;
	struct check_tag *ct;
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	if (rep->n_tags == c->cap_tags) {
		size_t ncap = c->cap_tags ? 2 * c->cap_tags : 16;
		struct check_tag *nv = realloc(rep->tags, ncap * sizeof(*nv));

		if (!nv) {
			c->err = -ENOMEM;
			return;
		}
		rep->tags = nv;
		c->cap_tags = ncap;
	}
	ct = &rep->tags[rep->n_tags++];
	memset(ct, 0, sizeof(*ct));
	ct->id = id;
	ct->uid = t->uid;
	ct->state = t->state;
	(void)snprintf(ct->name, sizeof(ct->name), "%s", safe_name(t->name, nm));
}

static void classify_slots(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	memcpy(c->slots, c->base + h->tag_table_off, h->tag_count * sizeof(*c->slots));
	for (uint32_t id = 1; id <= h->tag_count; id++) {
		const struct layout_tag *t = &c->slots[id - 1];
		uint64_t off = h->tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE;
		enum media_slot_damage why;

		c->kind[id] = (uint8_t)media_slot_classify(t, &why);
		if (c->kind[id] == SLOT_FREE)
			continue;
		switch (why) {
		case SLOT_UNDAMAGED:
			break;
		case SLOT_BAD_SUM:
			problem(c,
				"tag slot %u (offset %" PRIu64 ", '%s', uid %u): VALID but "
				"its checksum is wrong (stored 0x%08x, computed 0x%08x)",
				id, off, safe_name(t->name, nm), t->uid, t->checksum,
				layout_tag_checksum(t));
			break;
		case SLOT_NAME_NO_NUL:
			problem(c,
				"tag slot %u (offset %" PRIu64
				"): VALID but its name is not "
				"NUL-terminated",
				id, off);
			break;
		case SLOT_NAME_INVALID:
			problem(c,
				"tag slot %u (offset %" PRIu64 ", '%s', uid %u): VALID but "
				"its name is invalid",
				id, off, safe_name(t->name, nm), t->uid);
			break;
		case SLOT_BAD_STATE:
			problem(
			    c, "tag slot %u (offset %" PRIu64 "): unknown state word 0x%016" PRIx64,
			    id, off, t->state);
			break;
		}
		add_tag(c, id, t);
	}
}

static int cmp_tag_owner(const void *a, const void *b, void *arg)
{
	const struct layout_tag *slots = arg;
	const struct layout_tag *x = &slots[*(const uint32_t *)a - 1];
	const struct layout_tag *y = &slots[*(const uint32_t *)b - 1];
	int r;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	r = strcmp(x->name, y->name);
	if (r)
		return r;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Two intact VALID slots with the same (name, uid): recovery hides the second. */
static void check_duplicates(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	_cleanup_free_ uint32_t *ids = malloc(MAX(h->tag_count, (uint64_t)1) * sizeof(*ids));
	size_t n = 0;
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	if (!ids) {
		c->err = -ENOMEM;
		return;
	}
	for (uint32_t id = 1; id <= h->tag_count; id++)
		if (c->kind[id] == SLOT_VALID)
			ids[n++] = id;
	qsort_r(ids, n, sizeof(*ids), cmp_tag_owner, c->slots);
	for (size_t k = 1; k < n; k++) {
		const struct layout_tag *a = &c->slots[ids[k - 1] - 1], *b = &c->slots[ids[k] - 1];

		if (a->uid == b->uid && strcmp(a->name, b->name) == 0)
			problem(
			    c,
			    "tag '%s' of uid %u is in slots %u and %u; the daemon hides slot %u "
			    "and quarantines its extents",
			    safe_name(b->name, nm), b->uid, ids[k - 1], ids[k], ids[k]);
	}
}

/* ---- extent records ---- */

static void check_records(struct checker *c)
{
	struct check_report *rep = c->rep;
	const struct layout_header *h = &rep->hdr;
	uint64_t leased = 0, first_leased = 0;

	for (uint64_t i = 0; i < h->extent_count; i++) {
		uint64_t off = h->extent_table_off + i * 8, rec;
		unsigned s;
		uint32_t tag;

		memcpy(&rec, c->base + off, sizeof(rec));
		s = layout_rec_state(rec);
		tag = layout_rec_tag(rec);
		switch (media_rec_check(rec, h->tag_count)) {
		case REC_INTACT:
			break;
		case REC_UNKNOWN_STATE:
			problem(c,
				"extent %" PRIu64 " (record at offset %" PRIu64 " = 0x%016" PRIx64
				"): unknown state code 0x%02x",
				i, off, rec, layout_rec_code(rec));
			rep->invalid_records++;
			continue;
		case REC_TAG_RANGE:
			problem(c,
				"extent %" PRIu64 " (record at offset %" PRIu64 " = 0x%016" PRIx64
				"): COMMITTED with tag id %u, not in 1..%" PRIu64,
				i, off, rec, tag, h->tag_count);
			rep->invalid_records++;
			continue;
		case REC_STRAY_TAG:
			problem(c,
				"extent %" PRIu64 " (record at offset %" PRIu64 " = 0x%016" PRIx64
				"): %s but it carries tag id %u",
				i, off, rec, state_name(s), tag);
			rep->invalid_records++;
			continue;
		}
		rep->count[s]++;
		if (s == EXT_LEASED && leased++ == 0)
			first_leased = i;
		if (s == EXT_COMMITTED && c->cnt[tag]++ == 0)
			c->first[tag] = i;
	}
	if (leased && (c->flags & CHECK_RECOVERED))
		problem(c,
			"%" PRIu64 " extents are LEASED (first: extent %" PRIu64
			") in a recovered image; recovery releases every lease",
			leased, first_leased);
	else if (leased)
		note(c,
		     "%" PRIu64 " extents are LEASED (first: extent %" PRIu64
		     "); recovery makes them DIRTY",
		     leased, first_leased);
}

/*
 * The named-slot rule (media_named_slot): a WRITTEN or FREEING slot named
 * by COMMITTED records with a body that is not intact or names fewer
 * extents is damage, as the daemon sees it; a FREE slot named is orphaned
 * (reported by check_slot_use).
 */
static void check_named_slots(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	char nm[LAYOUT_TAG_NAME_MAX + 1];

	for (uint32_t id = 1; id <= h->tag_count; id++) {
		const struct layout_tag *t = &c->slots[id - 1];
		enum media_slot_kind was = c->kind[id], now = media_named_slot(t, was, c->cnt[id]);

		c->kind[id] = (uint8_t)now;
		if (now != SLOT_DAMAGED || was == SLOT_DAMAGED)
			continue;
		problem(c,
			"tag slot %u (offset %" PRIu64 ", '%s', uid %u): %s with %" PRIu64
			" COMMITTED extents (first: extent %" PRIu64 "), but %s; the daemon "
			"quarantines them",
			id, h->tag_table_off + (uint64_t)(id - 1) * LAYOUT_TAG_SLOT_SIZE,
			safe_name(t->name, nm), t->uid,
			was == SLOT_WRITTEN ? "WRITTEN (a half-made commit)"
					    : "FREEING (a half-done free)",
			c->cnt[id], c->first[id],
			media_slot_sum_ok(t) ? "it was committed with fewer extents"
					     : "its checksum is wrong");
	}
}

/* Committed extents missing from the table (media_missing_extents), as the daemon decides. */
static void check_missing(struct checker *c)
{
	const struct layout_header *h = &c->rep->hdr;
	struct media_missing m;

	media_missing_extents(c->slots, (uint32_t)h->tag_count, c->kind, c->cnt,
			      c->rep->invalid_records, &m);
	if (m.verdict == MISSING_NONE)
		return;
	c->hold = true;
	if (m.verdict == MISSING_HOLD)
		problem(c,
			"%" PRIu64 " committed extents are missing and only the %" PRIu64
			" COMMITTED records under WRITTEN or FREEING slots can account for them: "
			"the daemon quarantines those instead of releasing them",
			m.deficit, m.held);
	else
		refuse(c, REFUSE_MISSING,
		       "%" PRIu64 " committed extents are missing from the extent table and no "
		       "damaged record accounts for them (a zeroed block of the table?): they "
		       "would look free and be zeroed",
		       m.deficit);
}

/* Each slot against the records that name it. */
static void check_slot_use(struct checker *c)
{
	struct check_report *rep = c->rep;
	const struct layout_header *h = &rep->hdr;
	bool recovered = c->flags & CHECK_RECOVERED;
	char nm[LAYOUT_TAG_NAME_MAX + 1];
	size_t k = 0;

	for (uint32_t id = 1; id <= h->tag_count; id++) {
		const struct layout_tag *t = &c->slots[id - 1];
		uint64_t cnt = c->cnt[id], first = c->first[id];

		if (c->kind[id] != SLOT_FREE && c->kind[id] != SLOT_ORPHANED) {
			/* rep->tags holds the non-FREE slots in id order */
			while (k < rep->n_tags && rep->tags[k].id < id)
				k++;
			if (k < rep->n_tags && rep->tags[k].id == id)
				rep->tags[k].n_extents = cnt;
		}
		switch ((enum media_slot_kind)c->kind[id]) {
		case SLOT_VALID:
			rep->valid_tags++;
			if (cnt == 0)
				problem(c,
					"tag '%s' (uid %u, slot %u) is VALID but no extent record "
					"names it (committed with %" PRIu64 " extents)",
					safe_name(t->name, nm), t->uid, id, t->n_extents);
			else if (cnt != t->n_extents)
				problem(c,
					"tag '%s' (uid %u, slot %u) was committed with %" PRIu64
					" extents but %" PRIu64
					" records name it (first: extent %" PRIu64 ")",
					safe_name(t->name, nm), t->uid, id, t->n_extents, cnt,
					first);
			break;
		case SLOT_WRITTEN:
			if (c->hold && cnt && !recovered)
				problem(c,
					"tag slot %u: half-made commit (WRITTEN) with %" PRIu64
					" COMMITTED extents (first: extent %" PRIu64
					"); held back, not rolled back, while extents are missing",
					id, cnt, first);
			else if (recovered)
				problem(
				    c,
				    "tag slot %u is WRITTEN (a half-made commit) in a recovered "
				    "image; %" PRIu64 " COMMITTED extents name it",
				    id, cnt);
			else {
				rep->rollback_extents += cnt;
				note(c,
				     "tag slot %u: half-made commit (WRITTEN); recovery rolls back "
				     "its "
				     "%" PRIu64 " extents and frees the slot",
				     id, cnt);
			}
			break;
		case SLOT_FREEING:
			if (c->hold && cnt && !recovered)
				problem(c,
					"tag slot %u: half-done free (FREEING) with %" PRIu64
					" COMMITTED extents (first: extent %" PRIu64
					"); held back, not released, while extents are missing",
					id, cnt, first);
			else if (recovered)
				problem(c,
					"tag slot %u is FREEING (a half-done free) in a recovered "
					"image; %" PRIu64 " COMMITTED extents name it",
					id, cnt);
			else {
				rep->release_extents += cnt;
				note(c,
				     "tag slot %u: half-done free (FREEING); recovery releases its "
				     "%" PRIu64 " remaining extents and frees the slot",
				     id, cnt);
			}
			break;
		case SLOT_FREE:
			break;
		case SLOT_ORPHANED:
			/* No crash leaves this: the daemon quarantines them (never zeroed). */
			problem(c,
				"%" PRIu64 " COMMITTED extents (first: extent %" PRIu64
				") name tag slot %u, which is %s: media damage (no crash leaves "
				"that); the daemon quarantines them",
				cnt, first, id,
				media_slot_blank(t) ? "blank (a zeroed block of the tag table?)"
						 : "FREE");
			break;
		case SLOT_HELD: /* not set here: c->hold marks WRITTEN / FREEING records held */
		case SLOT_DAMAGED:
			if (cnt)
				problem(
				    c,
				    "%" PRIu64 " COMMITTED extents (first: extent %" PRIu64
				    ") belong to damaged tag slot %u; the daemon quarantines them",
				    cnt, first, id);
			break;
		}
	}
}

/* ---- data (I1) ---- */

#define ZERO_CHUNK (64u * 1024u)
static const uint8_t zero_chunk[ZERO_CHUNK];

/* Offset of the first non-zero byte of [p, p+len), or UINT64_MAX. */
static uint64_t first_nonzero(const uint8_t *p, uint64_t len)
{
	for (uint64_t off = 0; off < len; off += ZERO_CHUNK) {
		size_t n = (size_t)MIN((uint64_t)ZERO_CHUNK, len - off);

		if (memcmp(p + off, zero_chunk, n) != 0) {
			for (size_t i = 0; i < n; i++)
				if (p[off + i])
					return off + i;
		}
	}
	return UINT64_MAX;
}

/* 0 all zero, 1 not (*nz set), -EIO unreadable (*nz: the failing address offset). */
static int extent_zero(const uint8_t *p, uint64_t len, uint64_t *nz)
{
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = bus_jmp;

	if (sigsetjmp(jb, 1)) {
		bus_jmp = outer;
		*nz = bus_addr >= (uintptr_t)p ? (uint64_t)(bus_addr - (uintptr_t)p) : 0;
		return -EIO;
	}
	bus_jmp = &jb;
	*nz = first_nonzero(p, len);
	bus_jmp = outer;
	return *nz == UINT64_MAX ? 0 : 1;
}

static void check_data(struct checker *c)
{
	struct check_report *rep = c->rep;
	const struct layout_header *h = &rep->hdr;
	uint64_t skipped = 0;

	rep->data_checked = true;
	for (uint64_t i = 0; i < h->extent_count; i++) {
		uint64_t rec, off = h->data_off + i * h->extent_size, nz;
		int r;

		memcpy(&rec, c->base + h->extent_table_off + i * 8, sizeof(rec));
		if (rec != layout_rec(EXT_ZEROED, 0, layout_rec_gen(rec)))
			continue;
		if (off + h->extent_size > c->data_size) {
			skipped++;
			continue;
		}
		if (layout_range_bad(c->data_bbs, c->n_data_bbs, off, h->extent_size)) {
			rep->zeroed_bad++;
			if (c->flags & CHECK_RECOVERED)
				problem(c,
					"extent %" PRIu64 " (data at offset %" PRIu64
					") is ZEROED but has a bad block; recovery marks it BAD",
					i, off);
			else
				note(c,
				     "extent %" PRIu64 " (data at offset %" PRIu64
				     ") is ZEROED and has a bad block; recovery marks it BAD",
				     i, off);
			continue;
		}
		rep->zeroed_checked++;
		r = extent_zero(c->data + off, h->extent_size, &nz);
		if (r == 0)
			continue;
		rep->zeroed_not_zero++;
		if (r < 0)
			problem(c,
				"extent %" PRIu64 " (data at offset %" PRIu64
				") is ZEROED but unreadable: media error at offset %" PRIu64,
				i, off, off + nz);
		else
			problem(c,
				"extent %" PRIu64 " (data at offset %" PRIu64
				") is ZEROED but byte %" PRIu64 " (offset %" PRIu64
				") is 0x%02x: stale data would be handed out (I1)",
				i, off, nz, off + nz, c->data[off + nz]);
	}
	if (skipped)
		problem(c, "%" PRIu64 " ZEROED extents lie beyond the end of the data: not checked",
			skipped);
}

/* ---- the check ---- */

static void run_checks(struct checker *c)
{
	const struct layout_header *h;

	if (!check_headers(c))
		return;
	if (!check_geometry(c))
		return;
	h = &c->rep->hdr;
	c->kind = calloc(h->tag_count + 1, sizeof(*c->kind));
	c->cnt = calloc(h->tag_count + 1, sizeof(*c->cnt));
	c->first = calloc(h->tag_count + 1, sizeof(*c->first));
	c->slots = calloc(MAX(h->tag_count, (uint64_t)1), sizeof(*c->slots));
	if (!c->kind || !c->cnt || !c->first || !c->slots) {
		c->err = -ENOMEM;
		return;
	}
	classify_slots(c);
	check_duplicates(c);
	check_records(c);
	check_named_slots(c);
	check_missing(c);
	check_slot_use(c);
	if (!(c->flags & CHECK_NO_DATA))
		check_data(c);
}

int check_image(const void *base, uint64_t size, unsigned flags, struct check_report *rep)
{
	return check_image_badblocks(base, size, flags, NULL, 0, rep);
}

/*
 * meta: headers and tables (with bbs); data: the extents (with data_bbs);
 * split: data is a split region's data file, else data == meta.
 */
static int check_run(const void *meta, uint64_t meta_size, const void *data, uint64_t data_size,
		     bool split, bool meta_device, unsigned flags, const struct media_badblock *bbs,
		     size_t n_bbs, const struct media_badblock *data_bbs, size_t n_data_bbs,
		     struct check_report *rep)
{
	struct sigaction sa = {0}, old;
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = bus_jmp;
	struct checker *c;
	int r;

	memset(rep, 0, sizeof(*rep));
	rep->image_size = meta_size; /* where the headers are */
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base = meta;
	c->size = meta ? meta_size : 0;
	c->data = data;
	c->data_size = data ? data_size : 0;
	c->data_split = split;
	c->meta_device = meta_device;
	c->flags = flags;
	c->rep = rep;
	c->bbs = bbs;
	c->n_bbs = n_bbs;
	c->data_bbs = data_bbs;
	c->n_data_bbs = n_data_bbs;
	rep->badblocks = n_bbs + (split ? n_data_bbs : 0);

	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	(void)sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(jb, 1)) {
		bus_jmp = outer;
		if (split && bus_addr >= (uintptr_t)data && bus_addr - (uintptr_t)data < data_size)
			unusable(c, "media error (SIGBUS) reading the data file at offset %" PRIu64,
				 (uint64_t)(bus_addr - (uintptr_t)data));
		else
			unusable(c, "media error (SIGBUS) reading the metadata at offset %" PRIu64,
				 (uint64_t)(bus_addr - (uintptr_t)meta));
	} else {
		bus_jmp = &jb;
		run_checks(c);
		bus_jmp = outer;
	}
	(void)sigaction(SIGBUS, &old, NULL);

	if (rep->problems_total > rep->n_problems) {
		char *s = NULL;

		if (asprintf(&s, "... and %" PRIu64 " more problems not listed",
			     rep->problems_total - rep->n_problems) < 0)
			s = NULL;
		push_line(c, &rep->problems, &rep->n_problems, &c->cap_problems, s);
	}
	rep->status = c->unusable		? CHECK_UNUSABLE
		      : rep->problems_total > 0 ? CHECK_INCONSISTENT
						: CHECK_CLEAN;
	r = c->err;
	free(c->kind);
	free(c->cnt);
	free(c->first);
	free(c->slots);
	free(c);
	if (r < 0)
		check_report_free(rep);
	return r;
}

int check_image_badblocks(const void *base, uint64_t size, unsigned flags,
			  const struct media_badblock *bbs, size_t n_bbs, struct check_report *rep)
{
	return check_run(base, size, base, size, false, false, flags, bbs, n_bbs, bbs, n_bbs, rep);
}

int check_image_split(const void *meta, uint64_t meta_size, const void *data, uint64_t data_size,
		      unsigned flags, struct check_report *rep)
{
	return check_run(meta, meta_size, data, data_size, true, false, flags, NULL, 0, NULL, 0,
			 rep);
}

/* ---- files and devices ---- */

/* Without libdaxctl's answer: map one alignment unit and read the header's size. */
static int devdax_size_from_header(int fd, uint64_t *size)
{
	static const uint64_t aligns[] = {2ull << 20, 1ull << 30, 4096};

	for (size_t k = 0; k < ARRAY_SIZE(aligns); k++) {
		struct layout_header h;
		void *m = mmap(NULL, aligns[k], PROT_READ, MAP_SHARED, fd, 0);
		enum layout_hdr_status s;

		if (m == MAP_FAILED)
			continue;
		s = layout_header_check(m, &h, NULL, 0);
		if (s != HDR_OK)
			s = layout_header_check((const uint8_t *)m + LAYOUT_BACKUP_OFF, &h, NULL,
						0);
		(void)munmap(m, aligns[k]);
		if (s != HDR_OK)
			return -EMEDIUMTYPE;
		*size = h.region_size;
		return 0;
	}
	return -ENODEV;
}

struct mapped {
	void *map;
	uint64_t size;
	bool device;
	struct media_badblock *bbs;
	size_t n_bbs;
};

static void mapped_done(struct mapped *m)
{
	if (m->map)
		(void)munmap(m->map, m->size);
	free(m->bbs);
}

/* Map PATH read-only (file or device-DAX, with its bad ranges when known). */
static int map_path(const char *path, struct mapped *m)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	uint64_t size;
	int r;

	memset(m, 0, sizeof(*m));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISCHR(st.st_mode)) {
		struct dax_dev d;
		_cleanup_free_ struct dax_badblock *dbb = NULL;
		size_t n = 0;

		m->device = true;
		r = dax_lookup_rdev(st.st_rdev, &d);
		if (r >= 0 && d.size) {
			size = d.size;
			/* -ENOTSUP (not root, no NVDIMM region): read everything */
			if (dax_badblocks(&d, &dbb, &n) >= 0 && n) {
				m->bbs = calloc(n, sizeof(*m->bbs));
				if (!m->bbs)
					return -ENOMEM;
				for (size_t k = 0; k < n; k++)
					m->bbs[k] = (struct media_badblock){dbb[k].off, dbb[k].len};
				m->n_bbs = n;
			}
		} else {
			r = devdax_size_from_header(fd, &size);
			if (r < 0)
				return r;
		}
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else {
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if (size > 0) {
		void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

		if (map == MAP_FAILED)
			return -errno;
		(void)madvise(map, size, MADV_SEQUENTIAL);
		m->map = map;
	}
	m->size = size;
	return 0;
}

int check_path(const char *path, unsigned flags, struct check_report *rep)
{
	struct mapped m;
	int r;

	memset(rep, 0, sizeof(*rep));
	r = map_path(path, &m);
	if (r < 0) {
		mapped_done(&m);
		return r;
	}
	r = check_image_badblocks(m.map, m.size, flags, m.bbs, m.n_bbs, rep);
	mapped_done(&m);
	if (r >= 0)
		(void)snprintf(rep->path, sizeof(rep->path), "%s", path);
	return r;
}

int check_path_split(const char *meta_path, const char *data_path, unsigned flags,
		     struct check_report *rep)
{
	struct mapped meta, data;
	int r;

	memset(rep, 0, sizeof(*rep));
	memset(&data, 0, sizeof(data));
	r = map_path(meta_path, &meta);
	if (r >= 0)
		r = map_path(data_path, &data);
	if (r >= 0)
		r = check_run(meta.map, meta.size, data.map, data.size, true, meta.device, flags,
			      meta.bbs, meta.n_bbs, data.bbs, data.n_bbs, rep);
	mapped_done(&meta);
	mapped_done(&data);
	if (r >= 0) {
		(void)snprintf(rep->path, sizeof(rep->path), "%s", data_path);
		(void)snprintf(rep->meta_path, sizeof(rep->meta_path), "%s", meta_path);
	}
	return r;
}

void check_report_free(struct check_report *rep)
{
	if (!rep)
		return;
	for (size_t i = 0; i < rep->n_problems; i++)
		free(rep->problems[i]);
	for (size_t i = 0; i < rep->n_notes; i++)
		free(rep->notes[i]);
	free(rep->problems);
	free(rep->notes);
	free(rep->tags);
	rep->problems = rep->notes = NULL;
	rep->tags = NULL;
	rep->n_problems = rep->n_notes = rep->n_tags = 0;
}
