/* SPDX-License-Identifier: MIT */
#ifndef PMEMZ_FEATURE_MASK_H
#define PMEMZ_FEATURE_MASK_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/*
 * A feature mask's bits as text, for a message that names the ones this
 * build does not know: "0x0000000000000030 (bits 4, 5)", "0" for none;
 * cut (still a string) when buf is short.  The region header and the disk
 * superblock both carry such masks.  Returns buf.
 */
const char *pmemz_mask_str(uint64_t mask, char *buf, size_t len);

/*
 * Append a formatted text to buf at *o, never past len: a text that does
 * not fit is cut and stays NUL-terminated, and *o stops at len.
 */
void pmemz_append(char *buf, size_t len, size_t *o, const char *fmt, ...) _printf_(4, 5);

#endif
