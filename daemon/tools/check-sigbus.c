/* SPDX-License-Identifier: MIT */
/*
 * A SIGBUS while the checker reads (a media error, or a file truncated
 * under the mapping) jumps back to the innermost reader that armed
 * check_bus_jmp, with the faulting address.
 */
#include <signal.h>

#include "check-internal.h"

/* volatile: the compiler must not drop stores that only the handler reads */
__thread sigjmp_buf *volatile check_bus_jmp;
__thread volatile uintptr_t check_bus_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (check_bus_jmp) {
		check_bus_addr = (uintptr_t)si->si_addr;
		siglongjmp(*check_bus_jmp, 1);
	}
	(void)signal(sig, SIG_DFL);
	(void)raise(sig);
}

void check_sigbus_catch(struct sigaction *old)
{
	struct sigaction sa = {0};

	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	(void)sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, old);
}

void check_sigbus_restore(const struct sigaction *old)
{
	(void)sigaction(SIGBUS, old, NULL);
}
