/* SPDX-License-Identifier: MIT */
/* The SIGBUS guard of sigbus.h. */
#include <errno.h>
#include <string.h>

#include "sigbus.h"

/* volatile: the compiler must not drop stores that only the handler reads */
__thread sigjmp_buf *volatile pmemz_bus_jmp;
__thread volatile uintptr_t pmemz_bus_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (pmemz_bus_jmp) {
		pmemz_bus_addr = (uintptr_t)si->si_addr;
		siglongjmp(*pmemz_bus_jmp, 1);
	}
	(void)signal(sig, SIG_DFL);
	(void)raise(sig);
}

void pmemz_sigbus_catch(struct sigaction *old)
{
	struct sigaction sa = {0};

	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	(void)sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, old);
}

void pmemz_sigbus_restore(const struct sigaction *old)
{
	(void)sigaction(SIGBUS, old, NULL);
}

int pmemz_sigbus_copy(void *dst, const void *src, size_t n)
{
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = pmemz_bus_jmp;

	if (sigsetjmp(jb, 1)) {
		pmemz_bus_jmp = outer;
		return -EIO;
	}
	pmemz_bus_jmp = &jb;
	memcpy(dst, src, n);
	pmemz_bus_jmp = outer;
	return 0;
}
