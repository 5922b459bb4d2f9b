/* SPDX-License-Identifier: MIT */
/*
 * common/sigbus.c: a fault under a guard of the faulting thread, in the
 * guard's range, is -EIO; any other SIGBUS (an unguarded thread, an
 * address outside the range, one sent by raise) goes to the disposition
 * the process had before the handler: default (the process dies of it),
 * or the handler it had.  Each case runs in a child, which installs the
 * handler itself (cmocka's own SIGBUS handler is not what is tested).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sigbus.h"

#define PAGE 4096

/* Two pages of a file in /dev/shm, the second cut off: loads there fault. */
static char *cut_mapping(void)
{
	char path[] = "/dev/shm/pmemz-test-sigbus-XXXXXX";
	int fd = mkstemp(path);
	char *p;

	if (fd < 0 || ftruncate(fd, 2 * PAGE) < 0)
		_exit(90);
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	(void)unlink(path);
	if (p == MAP_FAILED || ftruncate(fd, PAGE) < 0)
		_exit(91);
	(void)close(fd);
	return p;
}

/* The child's exit status or signal of fn (default SIGBUS disposition first). */
static int in_child(void (*fn)(void), int *sig)
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		(void)signal(SIGBUS, SIG_DFL); /* not cmocka's */
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct touch {
	volatile char *p;
	char v;
};

static int load(void *arg)
{
	struct touch *t = arg;

	t->v = *t->p;
	return 0;
}

static int store(void *arg)
{
	struct touch *t = arg;

	*t->p = 1;
	return 7;
}

static void guarded(void)
{
	char *p = cut_mapping();
	char buf[16];
	struct touch t = {.p = p + PAGE};

	pmemz_sigbus_install();
	if (pmemz_sigbus_copy(buf, p + PAGE, sizeof(buf)) != -EIO)
		_exit(10);
	if (pmemz_bus.addr != (uintptr_t)(p + PAGE))
		_exit(11);
	/* again: SIGBUS is unblocked after the jump, the state put back */
	if (pmemz_sigbus_run(p, 2 * PAGE, store, &t) != -EIO || pmemz_bus.jmp)
		_exit(12);
	if (pmemz_sigbus_run(p + PAGE, 1, load, &t) != -EIO)
		_exit(13);
	t.p = p;
	if (pmemz_sigbus_run(p, 2 * PAGE, store, &t) != 7 || p[0] != 1)
		_exit(14);
	if (pmemz_sigbus_copy(buf, p, sizeof(buf)) != 0 || buf[0] != 1)
		_exit(15);
}

static void test_guarded_fault_is_eio(void **state)
{
	int sig, rc = in_child(guarded, &sig);

	(void)state;
	assert_int_equal(sig, 0);
	assert_int_equal(rc, 0);
}

static void outside_range(void)
{
	char *p = cut_mapping();
	struct touch t = {.p = p + PAGE};

	pmemz_sigbus_install();
	(void)pmemz_sigbus_run(p, PAGE, load, &t); /* guards the first page only */
	_exit(20);
}

static void unguarded(void)
{
	volatile char *p = cut_mapping();

	pmemz_sigbus_install();
	(void)p[PAGE];
	_exit(21);
}

static void test_other_faults_kill(void **state)
{
	int sig, rc;

	(void)state;
	rc = in_child(outside_range, &sig);
	assert_int_equal(rc, -1);
	assert_int_equal(sig, SIGBUS);
	rc = in_child(unguarded, &sig);
	assert_int_equal(rc, -1);
	assert_int_equal(sig, SIGBUS);
}

/* ---- a guard is its thread's alone ---- */
static char *shared;
static volatile int armed;

static int wait_forever(void *arg)
{
	(void)arg;
	armed = 1;
	for (;;)
		pause();
	return 0;
}

static void *guarding_thread(void *arg)
{
	(void)arg;
	(void)pmemz_sigbus_run(shared, 2 * PAGE, wait_forever, NULL);
	return NULL;
}

static void other_thread(void)
{
	pthread_t t;

	shared = cut_mapping();
	pmemz_sigbus_install();
	if (pthread_create(&t, NULL, guarding_thread, NULL) != 0)
		_exit(30);
	while (!armed)
		(void)usleep(1000);
	(void)((volatile char *)shared)[PAGE];
	_exit(31);
}

static void test_guard_is_per_thread(void **state)
{
	int sig, rc = in_child(other_thread, &sig);

	(void)state;
	assert_int_equal(rc, -1);
	assert_int_equal(sig, SIGBUS);
}

/* ---- the disposition before the handler ---- */
static void earlier_handler(int sig)
{
	(void)sig;
	_exit(42);
}

static void chained(void)
{
	volatile char *p = cut_mapping();

	(void)signal(SIGBUS, earlier_handler);
	pmemz_sigbus_install();
	pmemz_sigbus_install(); /* once: the earlier handler is still the fallback */
	(void)p[PAGE];
	_exit(40);
}

static int send_bus(void *arg)
{
	(void)arg;
	(void)raise(SIGBUS);
	return 0;
}

static void sent(void)
{
	char *p = cut_mapping();

	pmemz_sigbus_install();
	/* a SIGBUS sent, not a fault: not the guard's, even with the range "any" */
	(void)pmemz_sigbus_run(p, 0, send_bus, NULL);
	_exit(50);
}

static void test_fallback(void **state)
{
	int sig, rc;

	(void)state;
	rc = in_child(chained, &sig);
	assert_int_equal(sig, 0);
	assert_int_equal(rc, 42);
	rc = in_child(sent, &sig);
	assert_int_equal(rc, -1);
	assert_int_equal(sig, SIGBUS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_guarded_fault_is_eio),
	    cmocka_unit_test(test_other_faults_kill),
	    cmocka_unit_test(test_guard_is_per_thread),
	    cmocka_unit_test(test_fallback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
