/* SPDX-License-Identifier: MIT */
/* The SIGBUS guard of sigbus.h. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "sigbus.h"

/* volatile: the compiler must not drop stores that only the handler reads */
__thread struct pmemz_bus pmemz_bus;

/* the disposition before ours, what a SIGBUS that is not a guard's gets */
static struct sigaction prev;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct pmemz_bus *b = &pmemz_bus;
	uintptr_t a = (uintptr_t)si->si_addr;

	/* si_code > 0: raised by the kernel for a fault, not sent by someone */
	if (b->jmp && si->si_code > 0 && (b->len == 0 || a - b->lo < b->len)) {
		b->addr = a;
		siglongjmp(*b->jmp, 1);
	}
	if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
		prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler != SIG_DFL &&
	    prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
		return;
	}
	/* pending until the handler returns; a fault re-executed dies of it too */
	(void)signal(sig, SIG_DFL);
	(void)raise(sig);
}

void pmemz_sigbus_install(void)
{
	struct sigaction sa = {0}, cur;

	pthread_mutex_lock(&install_lock);
	/* ours already, unless someone put another one since (a test harness does) */
	if (sigaction(SIGBUS, NULL, &cur) == 0 &&
	    !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)) {
		prev = cur;
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		(void)sigemptyset(&sa.sa_mask);
		(void)sigaction(SIGBUS, &sa, NULL);
	}
	pthread_mutex_unlock(&install_lock);
}

/* After a jump out of the handler without a saved mask: SIGBUS is still blocked. */
static void unblock_sigbus(void)
{
	sigset_t s;

	(void)sigemptyset(&s);
	(void)sigaddset(&s, SIGBUS);
	(void)pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

int pmemz_sigbus_run(const void *lo, size_t len, int (*fn)(void *arg), void *arg)
{
	/* b and the outer values are not changed after sigsetjmp: still valid after the jump */
	struct pmemz_bus *b = &pmemz_bus;
	sigjmp_buf *outer = b->jmp;
	uintptr_t outer_lo = b->lo, outer_len = b->len;
	sigjmp_buf jb;
	int r;

	if (sigsetjmp(jb, 0)) {
		b->jmp = outer;
		b->lo = outer_lo;
		b->len = outer_len;
		unblock_sigbus();
		return -EIO;
	}
	b->lo = (uintptr_t)lo;
	b->len = len;
	b->jmp = &jb;
	r = fn(arg);
	b->jmp = outer;
	b->lo = outer_lo;
	b->len = outer_len;
	return r;
}

struct copy {
	void *dst;
	const void *src;
	size_t n;
};

static int do_copy(void *arg)
{
	struct copy *c = arg;

	memcpy(c->dst, c->src, c->n);
	return 0;
}

int pmemz_sigbus_copy(void *dst, const void *src, size_t n)
{
	struct copy c = {.dst = dst, .src = src, .n = n};

	return pmemz_sigbus_run(src, n, do_copy, &c);
}
