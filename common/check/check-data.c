/* SPDX-License-Identifier: MIT */
/*
 * The data (I1): every ZEROED extent is read back and must be all zero;
 * one that cannot be read (SIGBUS) or has a bad block is reported.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <string.h>

#include "check-internal.h"

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
	sigjmp_buf *volatile outer = pmemz_bus.jmp;

	if (sigsetjmp(jb, 1)) {
		pmemz_bus.jmp = outer;
		*nz =
		    pmemz_bus.addr >= (uintptr_t)p ? (uint64_t)(pmemz_bus.addr - (uintptr_t)p) : 0;
		return -EIO;
	}
	pmemz_bus.jmp = &jb;
	*nz = first_nonzero(p, len);
	pmemz_bus.jmp = outer;
	return *nz == UINT64_MAX ? 0 : 1;
}

void check_data_zeroed(struct checker *c)
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
				check_report_problem(
				    c,
				    "extent %" PRIu64 " (data at offset %" PRIu64
				    ") is ZEROED but has a bad block; recovery marks it BAD",
				    i, off);
			else
				check_report_note(
				    c,
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
			check_report_problem(
			    c,
			    "extent %" PRIu64 " (data at offset %" PRIu64
			    ") is ZEROED but unreadable: media error at offset %" PRIu64,
			    i, off, off + nz);
		else
			check_report_problem(c,
					     "extent %" PRIu64 " (data at offset %" PRIu64
					     ") is ZEROED but byte %" PRIu64 " (offset %" PRIu64
					     ") is 0x%02x: stale data would be handed out (I1)",
					     i, off, nz, off + nz, c->data[off + nz]);
	}
	if (skipped)
		check_report_problem(
		    c, "%" PRIu64 " ZEROED extents lie beyond the end of the data: not checked",
		    skipped);
}
