/* SPDX-License-Identifier: MIT */
/*
 * The extent table: every record's verdict (media_rec_check), the counts
 * per state, and per tag id how many COMMITTED records name it.
 */
#include <inttypes.h>
#include <string.h>

#include "check-internal.h"

void check_records_walk(struct checker *c)
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
			check_report_problem(c,
					     "extent %" PRIu64 " (record at offset %" PRIu64
					     " = 0x%016" PRIx64 "): unknown state code 0x%02x",
					     i, off, rec, layout_rec_code(rec));
			rep->invalid_records++;
			continue;
		case REC_TAG_RANGE:
			check_report_problem(c,
					     "extent %" PRIu64 " (record at offset %" PRIu64
					     " = 0x%016" PRIx64
					     "): COMMITTED with tag id %u, not in 1..%" PRIu64,
					     i, off, rec, tag, h->tag_count);
			rep->invalid_records++;
			continue;
		case REC_STRAY_TAG:
			check_report_problem(c,
					     "extent %" PRIu64 " (record at offset %" PRIu64
					     " = 0x%016" PRIx64 "): %s but it carries tag id %u",
					     i, off, rec, check_report_state_name(s), tag);
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
		check_report_problem(c,
				     "%" PRIu64 " extents are LEASED (first: extent %" PRIu64
				     ") in a recovered image; recovery releases every lease",
				     leased, first_leased);
	else if (leased)
		check_report_note(c,
				  "%" PRIu64 " extents are LEASED (first: extent %" PRIu64
				  "); recovery makes them DIRTY",
				  leased, first_leased);
}
