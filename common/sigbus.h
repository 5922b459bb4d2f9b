/* SPDX-License-Identifier: MIT */
/*
 * Loads from a mapping that may fault: a file truncated or hole-punched
 * under it (any tenant of a region can), or a media error.  A SIGBUS while
 * a reader has armed pmemz_bus_jmp jumps back to that reader, innermost
 * first, with the faulting address; without one, the process dies of it as
 * it would have.  Shared by the offline checker and pmemzctl.
 */
#ifndef PMEMZ_SIGBUS_H
#define PMEMZ_SIGBUS_H

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* The innermost reader's jump (NULL: none) and the faulting address. */
extern __thread sigjmp_buf *volatile pmemz_bus_jmp;
extern __thread volatile uintptr_t pmemz_bus_addr;

/* Install the handler (the previous one in *old) / put the previous one back. */
void pmemz_sigbus_catch(struct sigaction *old);
void pmemz_sigbus_restore(const struct sigaction *old);

/*
 * memcpy(dst, src, n), or -EIO when a load from src faults (dst is then
 * partly written).  The handler must be installed (pmemz_sigbus_catch).
 */
int pmemz_sigbus_copy(void *dst, const void *src, size_t n);

#endif
