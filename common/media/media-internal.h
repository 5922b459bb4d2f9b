/* SPDX-License-Identifier: MIT */
/* Shared by the media module's own files. */
#ifndef PMEMZ_MEDIA_INTERNAL_H
#define PMEMZ_MEDIA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "media.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the on-media format is little-endian; add byte swapping before porting"
#endif

bool layout_all_zero(const void *p, size_t len);

#endif
