/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: recovery (region_open) on an arbitrary metadata image, as a
 * tenant who maps the whole region can leave it for the next start.  The
 * region file is a memfd, opened by its /proc/self/fd path.
 *
 * Input: the first FUZZ_MEDIA_META bytes of a FUZZ_MEDIA_SIZE-byte region
 * file (headers, extent table, tag table: seed images have 12 extents of
 * 4 KiB); the rest of the file is zero.  Oracles:
 *   - region_open never crashes or hangs (libFuzzer's -timeout);
 *   - the checker and recovery agree on whether the image is usable:
 *     region_open succeeds exactly when check_path() says neither
 *     "unusable" nor "unsupported", which it says exactly when its report
 *     carries the media module's refusal (check_report.refusal);
 *     REFUSE_BLANK, no region yet, which the daemon may format, aside;
 *   - a region_open that refuses leaves the file byte for byte as it was
 *     (REFUSE_BLANK aside: the daemon formats what holds nothing);
 *   - what recovery accepted and closed passes check_path() with
 *     CHECK_RECOVERED (which counts every crash state left as a problem):
 *     clean if the raw image had nothing but crash states, and never more
 *     problems than before (damage recovery quarantines stays on the media,
 *     for the operator, and is counted again);
 *   - a second recovery finds nothing more to do: the same report.
 * ZEROED extents' data is not read (CHECK_NO_DATA): recovery does not read
 * data either, and the tenant can write it anyway.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fuzz-media.h"
#include "fuzz.h"
#include "log.h"
#include "region.h"

static int image_fd = -1;
static char path[64];
static struct region_conf rc;
static bool verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	verbose = getenv("PMEMZ_FUZZ_DEBUG") != NULL;
	log_set_max_level(verbose ? LOG_DEBUG : LOG_EMERG);
	/* CLWB + SFENCE instead of an msync per flush: the same code paths, faster. */
	(void)setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	/* The region file is a memfd: nothing is left behind, even after a crash. */
	image_fd = memfd_create("pmemz-fuzz-media", MFD_CLOEXEC);
	FUZZ_ASSERT(image_fd >= 0);
	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", image_fd);
	rc.name = (char *)"fuzz";
	rc.path = path;
	rc.size = 0; /* the file exists */
	rc.extent_size_default = true; /* follow the media, as pmemzctl check does */
	rc.extent_size = 0;
	rc.zeroer_threads = 1;
	rc.batch_extents = 4;
	rc.source = (char *)"fuzz-media";
	return 0;
}

static uint8_t img[FUZZ_MEDIA_SIZE];

static void write_image(const uint8_t *data, size_t size)
{
	memset(img, 0, sizeof(img));
	memcpy(img, data, size < FUZZ_MEDIA_META ? size : FUZZ_MEDIA_META);
	FUZZ_ASSERT(ftruncate(image_fd, 0) == 0);
	FUZZ_ASSERT(pwrite(image_fd, img, sizeof(img), 0) == (ssize_t)sizeof(img));
}

/* The file is still the image written (img), at its size. */
static bool image_unchanged(void)
{
	static uint8_t now[FUZZ_MEDIA_SIZE + 1];

	return pread(image_fd, now, sizeof(now), 0) == (ssize_t)sizeof(img) &&
	       memcmp(now, img, sizeof(img)) == 0;
}

static void dump(const char *what, const struct check_report *rep)
{
	fprintf(stderr, "%s: %s (%s)\n", what, check_status_str(rep->status),
		media_refusal_str(rep->refusal));
	for (size_t i = 0; i < rep->n_problems; i++)
		fprintf(stderr, "  problem: %s\n", rep->problems[i]);
	for (size_t i = 0; i < rep->n_notes; i++)
		fprintf(stderr, "  note: %s\n", rep->notes[i]);
}

static bool recovered_ok(const struct check_report *pre, const struct check_report *post)
{
	/* CHECK_RECOVERED makes every crash state left a problem (a damaged slot stays as it is). */
	if (post->status == CHECK_UNUSABLE || post->status == CHECK_UNSUPPORTED ||
	    post->count[EXT_LEASED] != 0)
		return false;
	if (pre->status == CHECK_CLEAN && post->status != CHECK_CLEAN)
		return false;
	return post->problems_total <= pre->problems_total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct check_report pre, post, again;
	struct region *r = NULL;
	bool agree, refused;
	int ret;

	write_image(data, size);
	FUZZ_ASSERT(check_path(path, CHECK_NO_DATA, &pre) == 0);
	ret = region_open(&rc, &r);
	/*
	 * One verdict (media.h, enum media_refusal): the checker says
	 * unusable exactly when the daemon refuses, and a refusal is why.
	 * REFUSE_BLANK aside: no region yet, which the daemon formats when
	 * nothing would be lost and the checker cannot call a region.
	 */
	refused = pre.status == CHECK_UNUSABLE || pre.status == CHECK_UNSUPPORTED;
	agree = pre.refusal == REFUSE_BLANK ||
		((ret == 0) == !refused && refused == (pre.refusal != REFUSE_NONE));
	if (verbose || !agree) {
		dump("checker before recovery", &pre);
		fprintf(stderr, "region_open: %s\n", ret ? strerror(-ret) : "ok");
	}
	FUZZ_ASSERT(agree);
	if (ret < 0) {
		/* Refused: nothing written, not a header repair, not a recovery store. */
		FUZZ_ASSERT(pre.refusal == REFUSE_BLANK || image_unchanged());
		check_report_free(&pre);
		return 0;
	}
	region_close(r);

	FUZZ_ASSERT(check_path(path, CHECK_RECOVERED | CHECK_NO_DATA, &post) == 0);
	if (verbose || !recovered_ok(&pre, &post)) {
		dump("checker before recovery", &pre);
		dump("checker after recovery", &post);
	}
	FUZZ_ASSERT(recovered_ok(&pre, &post));
	check_report_free(&pre);

	/* Idempotent: recovery of a recovered image changes nothing the checker sees. */
	FUZZ_ASSERT(region_open(&rc, &r) == 0);
	region_close(r);
	FUZZ_ASSERT(check_path(path, CHECK_RECOVERED | CHECK_NO_DATA, &again) == 0);
	if (again.status != post.status || again.problems_total != post.problems_total) {
		dump("checker after the first recovery", &post);
		dump("checker after the second recovery", &again);
	}
	FUZZ_ASSERT(again.status == post.status && again.problems_total == post.problems_total);
	check_report_free(&again);
	check_report_free(&post);
	return 0;
}
