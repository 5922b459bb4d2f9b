/* SPDX-License-Identifier: MIT */
/*
 * SIGBUS containment for region mappings.
 *
 * A tenant keeps the region fd it was handed and may ftruncate or punch a
 * hole in a file region; a media error does the same to a device-DAX
 * mapping.  The next load or store through the daemon's mapping then raises
 * SIGBUS, on the main loop or on a zeroer thread.  That must take the one
 * region offline, not the process.
 *
 * The handler looks the faulting address up in a fixed table of the live
 * mappings.  On a hit it marks the mapping failed and replaces the whole
 * mapping with anonymous memory (MAP_FIXED, MAP_NORESERVE), so the
 * faulting instruction, re-executed on return, completes harmlessly; the
 * owner sees pstore_failed() and stops using the region.  The whole range is
 * replaced, not one page, because a device-DAX mapping can only be split at
 * its device alignment; and since nothing written after the fault can be
 * durable, no state that depends on it may be persisted anyway.
 *
 * mmap() is not on POSIX's async-signal-safe list, but on Linux it is a
 * plain system call with no user-space state, which is what matters here.
 * A SIGBUS outside every registered mapping (a bug, or kill -BUS) gets the
 * previous disposition: by default the process dies with a core as before.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "pstore-fault.h"

struct fault_slot {
	uintptr_t base; /* 0: free */
	size_t len;
	int failed;
	uintptr_t addr; /* first faulting address */
};

static struct fault_slot slots[PSTORE_FAULT_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction old_action;

static void forward(int sig, siginfo_t *si, void *uc)
{
	if (old_action.sa_flags & SA_SIGINFO) {
		if (old_action.sa_sigaction) {
			old_action.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (old_action.sa_handler != SIG_DFL && old_action.sa_handler != SIG_IGN) {
		old_action.sa_handler(sig);
		return;
	}
	/*
	 * Default: restore it and return.  A fault re-executes the instruction
	 * and dies of SIGBUS with a core; a sent signal is raised again.
	 */
	(void)sigaction(SIGBUS, &old_action, NULL);
	if (si->si_code <= 0)
		(void)raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	uintptr_t a = (uintptr_t)si->si_addr;

	if (si->si_code > 0) { /* from the kernel: a memory fault */
		for (size_t i = 0; i < PSTORE_FAULT_SLOTS; i++) {
			uintptr_t b = __atomic_load_n(&slots[i].base, __ATOMIC_ACQUIRE);
			size_t len = __atomic_load_n(&slots[i].len, __ATOMIC_RELAXED);

			if (!b || a < b || a - b >= len)
				continue;
			if (!__atomic_exchange_n(&slots[i].failed, 1, __ATOMIC_ACQ_REL))
				__atomic_store_n(&slots[i].addr, a, __ATOMIC_RELEASE);
			/*
			 * Another thread may have replaced the mapping already;
			 * doing it again is harmless.  If it fails, the fault
			 * repeats and the handler runs again: better a busy
			 * thread than stale data, and the kernel refuses only
			 * for lack of memory.
			 */
			(void)mmap((void *)b, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
			errno = saved_errno;
			return;
		}
	}
	forward(sig, si, uc);
	errno = saved_errno;
}

/*
 * (Re)install the handler at every registration: whoever replaced it since
 * (a test framework, a library) becomes the disposition faults outside the
 * regions are forwarded to.
 */
static int install(void)
{
	struct sigaction sa, cur;

	if (sigaction(SIGBUS, NULL, &cur) < 0)
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	(void)sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &old_action) < 0)
		return -errno;
	return 0;
}

int pstore_fault_register(void *base, size_t len)
{
	int r;

	if (!base || !len)
		return -EINVAL;
	pthread_mutex_lock(&slots_lock);
	r = install();
	if (r == 0) {
		r = -ENOSPC;
		for (size_t i = 0; i < PSTORE_FAULT_SLOTS; i++) {
			if (slots[i].base)
				continue;
			slots[i].failed = 0;
			slots[i].addr = 0;
			__atomic_store_n(&slots[i].len, len, __ATOMIC_RELAXED);
			__atomic_store_n(&slots[i].base, (uintptr_t)base, __ATOMIC_RELEASE);
			r = (int)i;
			break;
		}
	}
	pthread_mutex_unlock(&slots_lock);
	return r;
}

void pstore_fault_unregister(int slot)
{
	if (slot < 0 || slot >= PSTORE_FAULT_SLOTS)
		return;
	pthread_mutex_lock(&slots_lock);
	__atomic_store_n(&slots[slot].base, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&slots_lock);
}

void pstore_fault_set(int slot, uintptr_t addr)
{
	if (slot < 0 || slot >= PSTORE_FAULT_SLOTS)
		return;
	if (!__atomic_exchange_n(&slots[slot].failed, 1, __ATOMIC_ACQ_REL))
		__atomic_store_n(&slots[slot].addr, addr, __ATOMIC_RELEASE);
}

bool pstore_fault_failed(int slot, uintptr_t *addr)
{
	if (slot < 0 || slot >= PSTORE_FAULT_SLOTS)
		return false;
	if (!__atomic_load_n(&slots[slot].failed, __ATOMIC_ACQUIRE))
		return false;
	if (addr)
		*addr = __atomic_load_n(&slots[slot].addr, __ATOMIC_ACQUIRE);
	return true;
}
