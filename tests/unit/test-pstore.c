/* SPDX-License-Identifier: MIT */
/*
 * pstore fault containment (daemon/storage/pstore-fault.c): a file region
 * truncated under the daemon, as a tenant holding the region fd can do,
 * fails that mapping and nothing else; stores the daemon must never make
 * are refused in release builds too.  Files in /dev/shm, real libpmem2.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h> /* cmocka */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pstore-fault.h"
#include "pstore.h"

/*
 * cmocka installs its own SIGBUS handler around every test function; a
 * registration puts pstore's back (chaining to cmocka's), as it would after
 * any library that replaced it.
 */
static void rearm(void)
{
	static char b[1];

	pstore_fault_unregister(pstore_fault_register(b, sizeof(b)));
}

#define MAP_SIZE (8u << 20)

struct fixture {
	char path[64];
	int fd;
	struct pstore *ps;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->path, sizeof(f->path), "/dev/shm/pmemz-test-pstore-XXXXXX");
	f->fd = mkstemp(f->path);
	assert_true(f->fd >= 0);
	assert_int_equal(ftruncate(f->fd, MAP_SIZE), 0);
	assert_int_equal(pstore_open(f->fd, MAP_SIZE, "t", &f->ps), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	pstore_close(f->ps);
	(void)close(f->fd);
	(void)unlink(f->path);
	free(f);
	return 0;
}

static void test_truncate_fails_only_the_mapping(void **state)
{
	struct fixture *f = *state;
	uint8_t *base = pstore_base(f->ps);
	uint64_t off = 0;

	pstore_store64(f->ps, (uint64_t *)(base + 4096), 42);
	pstore_flush(f->ps, base + 4096, 8);
	pstore_drain(f->ps);
	assert_false(pstore_failed(f->ps, NULL));

	rearm();
	/* What a tenant with the region fd can do. */
	assert_int_equal(ftruncate(f->fd, 4096), 0);
	/* Was SIGBUS, killing the daemon. */
	pstore_store64(f->ps, (uint64_t *)(base + (4u << 20)), 7);
	assert_true(pstore_failed(f->ps, &off));
	assert_int_equal(off, 4u << 20);
	/* Later stores, NT zeroing and loads anywhere in the mapping go on harmlessly. */
	pstore_zero_nt(f->ps, base + (1u << 20), 1u << 20);
	pstore_drain(f->ps);
	assert_int_equal(*(volatile uint64_t *)(base + (6u << 20)), 0);
	/* The first fault's offset is kept. */
	assert_true(pstore_failed(f->ps, &off));
	assert_int_equal(off, 4u << 20);
}

static void *zero_thread(void *arg)
{
	struct pstore *ps = arg;

	pstore_zero_nt(ps, (uint8_t *)pstore_base(ps) + (2u << 20), 4u << 20);
	pstore_drain(ps);
	return NULL;
}

static void test_fault_on_another_thread(void **state)
{
	struct fixture *f = *state;
	pthread_t t;

	rearm();
	assert_int_equal(ftruncate(f->fd, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, zero_thread, f->ps), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(pstore_failed(f->ps, NULL));
}

static void test_other_mapping_unaffected(void **state)
{
	struct fixture *f = *state;
	struct fixture *g = NULL;
	uint8_t *gbase;

	assert_int_equal(setup((void **)&g), 0);
	gbase = pstore_base(g->ps);
	rearm();
	assert_int_equal(ftruncate(f->fd, 0), 0);
	pstore_store64(f->ps, pstore_base(f->ps), 1);
	assert_true(pstore_failed(f->ps, NULL));

	pstore_store64(g->ps, (uint64_t *)(gbase + (5u << 20)), 99);
	pstore_flush(g->ps, gbase + (5u << 20), 8);
	pstore_drain(g->ps);
	assert_false(pstore_failed(g->ps, NULL));
	/* The store reached the file, not anonymous memory. */
	{
		uint64_t v = 0;
		assert_int_equal(pread(g->fd, &v, 8, 5u << 20), 8);
		assert_int_equal(v, 99);
	}
	teardown((void **)&g);
}

static void test_refused_stores(void **state)
{
	struct fixture *f = *state;
	uint8_t *base = pstore_base(f->ps);
	uint64_t off = 0;
	uint64_t outside = 0;

	/* Misaligned: refused, the region fails, memory is untouched. */
	pstore_store64(f->ps, (uint64_t *)(base + 4), 0xffffffffffffffffull);
	assert_true(pstore_failed(f->ps, &off));
	assert_int_equal(off, 4);
	assert_int_equal(*(volatile uint32_t *)(base + 4), 0);
	assert_int_equal(*(volatile uint32_t *)(base + 8), 0);

	teardown(state);
	setup(state);
	f = *state;
	base = pstore_base(f->ps);
	/* Past the end: refused, nothing written. */
	pstore_memcpy(f->ps, base + MAP_SIZE - 8, "0123456789abcdef", 16);
	assert_true(pstore_failed(f->ps, NULL));
	assert_int_equal(*(volatile uint64_t *)(base + MAP_SIZE - 8), 0);

	teardown(state);
	setup(state);
	f = *state;
	/* Outside the mapping altogether (a pointer into the daemon's own memory). */
	pstore_store64(f->ps, &outside, 5);
	assert_int_equal(outside, 0);
	assert_true(pstore_failed(f->ps, &off));
	assert_int_equal(off, UINT64_MAX);
	assert_int_equal(pstore_deep_flush(f->ps, &outside, 8), -EIO);
}

/* A SIGBUS that no region explains still kills the process, as before. */
static void test_foreign_sigbus_kills(void **state)
{
	struct fixture *f = *state;
	pid_t pid;
	int status = 0;

	(void)f; /* a registered mapping: the handler is installed */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[] = "/dev/shm/pmemz-test-pstore-fXXXXXX";
		int fd = mkstemp(path);
		volatile uint8_t *p;

		(void)signal(SIGBUS, SIG_DFL); /* as in the daemon, not cmocka's */
		rearm();
		if (fd < 0 || ftruncate(fd, 8192) < 0)
			_exit(2);
		p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		(void)unlink(path);
		if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
			_exit(3);
		p[4096] = 1;
		_exit(4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_truncate_fails_only_the_mapping, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fault_on_another_thread, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_other_mapping_unaffected, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused_stores, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_sigbus_kills, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
