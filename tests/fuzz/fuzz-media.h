/* SPDX-License-Identifier: MIT */
/* Geometry of the fuzz-media region file (fuzz-media.c, gen-corpus.c). */
#ifndef PMEMZ_FUZZ_MEDIA_H
#define PMEMZ_FUZZ_MEDIA_H

/* 8 KiB headers, 4 KiB extent table, 4 KiB tag table, 12 extents of 4 KiB. */
#define FUZZ_MEDIA_SIZE (64u * 1024u)
#define FUZZ_MEDIA_EXTENT 4096u
#define FUZZ_MEDIA_META (16u * 1024u) /* the fuzzed prefix: metadata */

#endif
