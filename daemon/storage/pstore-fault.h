/* SPDX-License-Identifier: MIT */
/*
 * SIGBUS containment for region mappings (pstore-fault.c): a fault inside a
 * registered mapping fails that mapping, not the process.  Used by pstore.c
 * only; the rest of the daemon asks pstore_failed().
 */
#ifndef PMEMZ_PSTORE_FAULT_H
#define PMEMZ_PSTORE_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many mappings are watched at once (regions per daemon). */
#define PSTORE_FAULT_SLOTS 256

/* Watch [base, base+len); installs the SIGBUS handler once.  A slot, or -errno. */
int pstore_fault_register(void *base, size_t len);
/* Stop watching (before the mapping is unmapped). */
void pstore_fault_unregister(int slot);
/* Fail the mapping without a fault (a store the daemon refused to make). */
void pstore_fault_set(int slot, uintptr_t addr);
/* Has the mapping failed?  addr: the first faulting address. */
bool pstore_fault_failed(int slot, uintptr_t *addr);

#endif
