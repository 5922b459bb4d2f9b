/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the offline checker (pmemzctl check) on an arbitrary image.
 *
 * Input: one byte of flags, then the image.  Flag bits: 0 CHECK_RECOVERED,
 * 1 CHECK_NO_DATA, 2 two bad ranges follow (4 bytes each: 16-bit offset and
 * 16-bit length, in 64-byte units) before the image.  The checker must not
 * crash, and its report must be consistent.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fuzz.h"
#include "log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_set_max_level(getenv("PMEMZ_FUZZ_DEBUG") ? LOG_DEBUG : LOG_EMERG);
	return 0;
}

static void check_report_consistent(const struct check_report *rep)
{
	uint64_t sum = 0;

	bool refused = rep->status == CHECK_UNUSABLE || rep->status == CHECK_UNSUPPORTED;

	FUZZ_ASSERT(rep->status == CHECK_CLEAN || rep->status == CHECK_INCONSISTENT ||
		    rep->status == CHECK_UNUSABLE || rep->status == CHECK_UNSUPPORTED);
	FUZZ_ASSERT(rep->n_problems <= CHECK_MAX_LINES + 1);
	FUZZ_ASSERT(rep->n_notes <= CHECK_MAX_LINES + 1);
	FUZZ_ASSERT(rep->problems_total >= (rep->n_problems > CHECK_MAX_LINES ? CHECK_MAX_LINES
									     : rep->n_problems));
	for (size_t i = 0; i < rep->n_problems; i++)
		FUZZ_ASSERT(rep->problems[i] && strlen(rep->problems[i]) > 0);
	for (size_t i = 0; i < rep->n_notes; i++)
		FUZZ_ASSERT(rep->notes[i] != NULL);
	if (rep->status == CHECK_CLEAN)
		FUZZ_ASSERT(rep->problems_total == 0);
	/*
	 * The daemon's refusal is what makes an image unusable or unsupported
	 * (a SIGBUS aside: none here), and only a newer build's format is
	 * unsupported, with its reason.
	 */
	FUZZ_ASSERT(refused == (rep->refusal != REFUSE_NONE));
	if (rep->status == CHECK_UNSUPPORTED)
		FUZZ_ASSERT(media_refusal_unsupported(rep->refusal) && rep->unsupported[0]);
	if (refused)
		return;
	/* A usable image: a header, and every record counted exactly once. */
	FUZZ_ASSERT(rep->have_hdr);
	for (int s = 0; s < EXT_NSTATES; s++)
		sum += rep->count[s];
	FUZZ_ASSERT(sum + rep->invalid_records == rep->hdr.extent_count);
	FUZZ_ASSERT(rep->n_tags <= rep->hdr.tag_count);
	for (size_t i = 0; i < rep->n_tags; i++) {
		FUZZ_ASSERT(rep->tags[i].id >= 1 && rep->tags[i].id <= rep->hdr.tag_count);
		FUZZ_ASSERT(memchr(rep->tags[i].name, 0, sizeof(rep->tags[i].name)) != NULL);
	}
	FUZZ_ASSERT(rep->zeroed_not_zero <= rep->zeroed_checked + rep->zeroed_bad);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pstore_badblock bbs[2];
	struct check_report rep;
	unsigned flags = 0;
	size_t n_bbs = 0;
	uint8_t *img;
	int r;

	if (size < 1)
		return 0;
	flags = (data[0] & 1 ? CHECK_RECOVERED : 0) | (data[0] & 2 ? CHECK_NO_DATA : 0);
	if (data[0] & 4) {
		if (size < 9)
			return 0;
		for (size_t i = 0; i < 2; i++) {
			const uint8_t *b = data + 1 + 4 * i;

			bbs[i].off = (uint64_t)(b[0] | b[1] << 8) * 64;
			bbs[i].len = (uint64_t)(b[2] | b[3] << 8) * 64;
		}
		n_bbs = 2;
		data += 8;
		size -= 8;
	}
	data++;
	size--;
	/* An exact copy: ASan sees every byte read past the image. */
	img = malloc(size ? size : 1);
	FUZZ_ASSERT(img != NULL);
	if (size)
		memcpy(img, data, size);
	r = n_bbs ? check_image_badblocks(img, size, flags, bbs, n_bbs, &rep)
		  : check_image(img, size, flags, &rep);
	FUZZ_ASSERT(r == 0 || r == -ENOMEM);
	if (r == 0) {
		check_report_consistent(&rep);
		check_report_free(&rep);
	}
	free(img);
	return 0;
}
