/* SPDX-License-Identifier: MIT */
/*
 * Loads and stores into a mapping that may fault: a file truncated or
 * hole-punched under it (any tenant of a region can), or a media error.
 * A SIGBUS on a thread that has armed a guard (pmemz_bus.jmp, and the
 * range it covers) jumps back to that guard, innermost first, with the
 * faulting address.  Any other SIGBUS -- another thread, another address,
 * sent by kill -- goes to the disposition the process had before the
 * handler was installed: a real bug still crashes.  Shared by the offline
 * checker, pmemzctl and nbdkit-pmemz-plugin (many threads: the guards are
 * per thread, the handler is the process's, installed once).
 */
#ifndef PMEMZ_SIGBUS_H
#define PMEMZ_SIGBUS_H

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The calling thread's guard state (one thread-local object, so that a
 * guard finds it with one TLS look-up): the innermost guard's jump (NULL:
 * none armed) and the range of addresses it covers (len 0: any), and the
 * faulting address after a jump.  A guard saves the outer jmp, lo and len
 * and puts them back.
 */
struct pmemz_bus {
	sigjmp_buf *volatile jmp;
	volatile uintptr_t lo, len;
	volatile uintptr_t addr;
};
extern __thread struct pmemz_bus pmemz_bus;

/*
 * Install the handler for the process, unless it is in place already
 * (then nothing: a thread arms a guard without a system call); the
 * disposition it replaces is what a SIGBUS that is not a guard's gets.
 * Thread-safe.
 */
void pmemz_sigbus_install(void);

/*
 * memcpy(dst, src, n), or -EIO when a load from src faults (dst is then
 * partly written).  The handler must be installed.
 */
int pmemz_sigbus_copy(void *dst, const void *src, size_t n);

/*
 * fn(arg) under a guard of [lo, lo + len): its result, or -EIO when it
 * faults there (whatever fn held or half did is abandoned: fn must take
 * no lock and own no resource across its accesses to the range).  The
 * signal mask is not saved (no system call): only SIGBUS is unblocked
 * again after a fault.  The handler must be installed.
 */
int pmemz_sigbus_run(const void *lo, size_t len, int (*fn)(void *arg), void *arg);

#endif
