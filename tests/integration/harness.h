/* SPDX-License-Identifier: MIT */
/*
 * Integration-test harness: runs the real pmemzerod binary on a private
 * temporary directory under /dev/shm (socket, config, log and region files),
 * talks to it through libpmemzclient or raw protocol frames, and cleans up.
 *
 * Every test gets its own directory (mkdtemp), so tests run in parallel
 * (ctest -j) without sharing sockets or regions.  Daemons are started with
 * PR_SET_PDEATHSIG so a killed test run leaves none behind.
 *
 * Use from cmocka tests (failures call fail_msg()); code that runs in a
 * forked child must not use cmocka asserts — use CHILD_CHECK().
 */
#ifndef PMEMZ_ITEST_HARNESS_H
#define PMEMZ_ITEST_HARNESS_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <setjmp.h>
#include <cmocka.h>

#include "frame.h"

#define ITEST_SKIP 77
/* protobuf-c and argv want char *; our strings are const */
#define UNCONST(s) ((char *)(uintptr_t)(s))
#define ITEST_MIB (1024ull * 1024ull)
#define ITEST_START_TIMEOUT_MS 10000
#define ITEST_STOP_TIMEOUT_MS 8000
#define ITEST_RPC_TIMEOUT_MS 10000

#define ITEST_MAX_ARGS 32

/*
 * A libpmemzclient call must return want; else fail with the call, its
 * result and pmemz_errormsg() (the test includes libpmemzclient.h).
 */
#define CHECK_RC(call, want)                                                                       \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != (want))                                                                 \
			fail_msg("%s = %d (%s), want %d", #call, rc_, pmemz_errormsg(), (want));   \
	} while (0)

struct itest_env {
	char name[64];
	char dir[PATH_MAX];  /* /dev/shm/pmemz-itest-NAME-XXXXXX */
	char sock[PATH_MAX]; /* DIR/d.sock */
	char log[PATH_MAX];  /* DIR/daemon.log: stdout+stderr of every start */
	char conf[PATH_MAX]; /* DIR/pmemzerod.conf, used when has_conf */
	bool has_conf;
	char *args[ITEST_MAX_ARGS]; /* extra daemon arguments (owned) */
	int n_args;
	char *env[8]; /* extra NAME=VALUE for the daemon (owned) */
	int n_env;
	/* RLIMIT_NOFILE for the daemon (setrlimit before exec); 0: inherited */
	unsigned long nofile_soft, nofile_hard;
	bool pass_listen_fd; /* socket activation: listen_fd becomes fd 3, LISTEN_FDS=1 */
	int listen_fd;
	pid_t pid;     /* running daemon, 0 when none */
	long log_mark; /* log size when the daemon was last started */
};

/* Paths of the binaries under test (compile definitions, env overrides). */
const char *itest_daemon_path(void);
const char *itest_ctl_path(void);

/* cmocka setup/teardown: *state = a fresh struct itest_env named after the binary. */
int itest_setup(void **state);
int itest_teardown(void **state);
/* The same for callers that manage the struct themselves. */
void itest_env_init(struct itest_env *e, const char *name);
void itest_env_cleanup(struct itest_env *e);

/* DIR/NAME into buf (asserting it fits). */
void itest_path(const struct itest_env *e, char *buf, size_t len, const char *name);

/* Write e->conf from a printf format ("%1$s" style is not needed: use itest_path). */
void itest_write_conf(struct itest_env *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Extra daemon argument(s), e.g. itest_daemon_arg(e, "--region"), itest_daemon_arg(e, "r=...") */
void itest_daemon_arg(struct itest_env *e, const char *arg);
/* Extra environment for the daemon ("NAME=VALUE"). */
void itest_daemon_env(struct itest_env *e, const char *kv);
/* Standard small file region on the command line: NAME=DIR/NAME.img,size=SIZE,extent=1M. */
void itest_cli_region(struct itest_env *e, const char *name, const char *size);

/*
 * Start the daemon (-d --socket SOCK [-c CONF] ARGS...) and wait until its
 * socket accepts connections; on timeout or early exit the log is dumped and
 * the test fails.
 */
void itest_daemon_start(struct itest_env *e);
/* Fork/exec the daemon and return at once (e->pid set). */
void itest_daemon_spawn(struct itest_env *e);
/*
 * Start the daemon expecting it to refuse to run: waits up to timeout_ms for
 * it to exit and returns the wait status (fails the test, with the log, if
 * it is still running then).
 */
int itest_daemon_expect_exit(struct itest_env *e, int timeout_ms);
/*
 * Start the daemon and see whether it comes up: true when its socket accepts
 * connections, false when it exited first (*status set).  Fails on timeout.
 */
bool itest_daemon_try_start(struct itest_env *e, int timeout_ms, int *status);
/* SIGTERM; asserts a clean exit with status 0 within ITEST_STOP_TIMEOUT_MS. */
void itest_daemon_stop(struct itest_env *e);
/* SIGKILL and reap (a crash). */
void itest_daemon_kill(struct itest_env *e);
/* Print the daemon log (from the last start when since_start) to stderr. */
void itest_dump_log(const struct itest_env *e, bool since_start);
/* The log since the last start (malloc'ed, NUL-terminated). */
char *itest_read_log(const struct itest_env *e);

/*
 * Run a program to completion (timeout_ms, then SIGKILL and fail).
 * Captures stdout / stderr into malloc'ed strings when out/err are given.
 * Returns the wait status.
 */
int itest_run(char *const argv[], int timeout_ms, char **out, char **err);

/* Read a whole file (malloc'ed); size in *len. */
void *itest_read_file(const char *path, size_t *len);
void itest_write_file(const char *path, const void *buf, size_t len);

/* Offset of the first non-zero byte, or (size_t)-1 when all zero. */
size_t itest_first_nonzero(const void *p, size_t len);
/* Deterministic pattern; seed distinguishes allocations. */
void itest_fill_pattern(void *p, size_t len, uint64_t seed);
/* Offset of the first byte that differs from the pattern, or (size_t)-1. */
size_t itest_check_pattern(const void *p, size_t len, uint64_t seed);

/* Fail the test unless every byte of every range of the allocation is zero. */
struct pmemz_alloc;
struct pmemz_region;
void itest_assert_alloc_zero(const struct pmemz_region *r, const struct pmemz_alloc *a);
void itest_assert_alloc_in_region(const struct pmemz_region *r, const struct pmemz_alloc *a);
/*
 * Fill every extent of the allocation with a pattern derived from seed and
 * the extent's region offset (independent of how ranges are split), and
 * check it; itest_check_alloc fails the test on the first mismatch.
 */
void itest_fill_alloc(const struct pmemz_region *r, const struct pmemz_alloc *a, uint64_t seed);
void itest_check_alloc(const struct pmemz_region *r, const struct pmemz_alloc *a, uint64_t seed);
/* pmemz_persist every range (asserting 0). */
void itest_persist_alloc(struct pmemz_region *r, const struct pmemz_alloc *a);
/*
 * Extent bitmap of an allocation: bits[i] = 1 when extent i (counted from
 * the region's first extent-aligned offset 0) is in it.  nbits = region
 * size / extent size.  Malloc'ed.
 */
uint8_t *itest_alloc_bitmap(const struct pmemz_region *r, const struct pmemz_alloc *a);

/* ---- raw protocol client -------------------------------------------- */

/* Connected fd, or -errno. */
int itest_raw_connect(const char *sock);
/* Write all bytes.  0 or -errno (-EPIPE when the peer closed). */
int itest_raw_write(int fd, const void *buf, size_t len);
/* Pack and send (version/id as set by the caller).  0 or -errno. */
int itest_raw_send(int fd, const Pmemz__Request *req);
/*
 * Receive one response frame.  0; -ETIMEDOUT; -ECONNRESET on EOF or reset;
 * -EMSGSIZE / -EBADMSG for a bad frame.  File descriptors passed with it are
 * closed (or returned in *fd_out when non-NULL, -1 when none).
 */
int itest_raw_recv(int fd, int timeout_ms, Pmemz__Response **resp, int *fd_out);
/*
 * Send req (version = PMEMZ_PROTO_VERSION and a fresh id unless already
 * set) and wait for the response with that id.  Returns the response status
 * (0 or -errno) and *resp (caller frees with pmemz__response__free_unpacked)
 * when resp is non-NULL; a transport failure fails the test.
 */
int itest_raw_call(int fd, Pmemz__Request *req, Pmemz__Response **resp);
/*
 * ALLOCATE bytes on fd (waiting for zeroing), asserting one run: the byte
 * offset of the run in the region (st: the region's STAT), and the lease.
 */
struct itest_stat;
uint64_t itest_raw_lease_one_run(int fd, const char *region, uint64_t bytes,
				 const struct itest_stat *st, uint64_t *lease);
/* Wait for EOF (the daemon closed the connection): true, or false on timeout.
 * Any responses received before EOF are counted in *n_resp. */
bool itest_raw_wait_closed(int fd, int timeout_ms, int *n_resp, int *first_status);
void itest_resp_free(Pmemz__Response *resp);
/*
 * One raw request and its status, for forked children (no cmocka): fills
 * version and id, skips replies to other ids, logs the outcome to stderr.
 */
int itest_child_call(int fd, Pmemz__Request *req);

/* Convenience RPCs over a raw connection. */
int itest_raw_hello(int fd, Pmemz__Response **resp);
int itest_raw_open(int fd, const char *region);
int itest_raw_alloc(int fd, const char *region, uint64_t bytes, bool nowait, uint64_t *lease);
int itest_raw_commit(int fd, const char *region, uint64_t lease, const char *tag, bool flush);
int itest_raw_free_lease(int fd, const char *region, uint64_t lease);
int itest_raw_free_tag(int fd, const char *region, const char *tag);
/* ZEROER pause (true) or resume (false) over a fresh connection; needs an admin peer. */
void itest_zeroer_pause(const char *sock, const char *region, bool pause);

struct itest_stat {
	uint64_t zeroed, dirty, leased, committed, bad;
	uint64_t zeroing, bytes_zeroed, zero_batches, drains;
	uint64_t zero_fences; /* zero_batches when the daemon does not say */
	uint64_t allocations, commits, frees, waiters, tags;
	uint64_t zero_rate_limit;
	uint32_t zeroer_threads;
	uint64_t size, extent_size, extent_count, data_offset;
	char granularity[16];
};
/* STAT of one region over a fresh connection; fails the test on error. */
void itest_stat(const char *sock, const char *region, struct itest_stat *st);
/* Fails unless zeroed+dirty+leased+committed+bad == extent_count (I3). */
void itest_assert_accounting(const struct itest_stat *st, const char *when);
/*
 * Poll STAT until all free extents are ZEROED (dirty == 0, zeroing == 0) or
 * timeout; checks the accounting on every poll.  Fails on timeout.
 */
void itest_wait_zeroed(const char *sock, const char *region, int timeout_ms, struct itest_stat *st);

/* ---- forked children ------------------------------------------------- */

/* In a forked child: print and _exit(1) when cond is false. */
#define CHILD_CHECK(cond, ...)                                                                     \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "CHILD FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
			fprintf(stderr, __VA_ARGS__);                                              \
			fprintf(stderr, "\n");                                                     \
			fflush(stderr);                                                            \
			_exit(1);                                                                  \
		}                                                                                  \
	} while (0)

/* Reap a child; fail unless it exits with status 0 within timeout_ms. */
void itest_wait_child_ok(pid_t pid, int timeout_ms, const char *what);

/* Sleep milliseconds. */
void itest_msleep(unsigned ms);
uint64_t itest_now_ms(void);

/* Anonymous memory of a process in KiB (RssAnon of /proc/PID/status); fails the test if absent. */
uint64_t itest_rss_anon_kib(pid_t pid);
/* The soft RLIMIT_NOFILE of a running process (/proc/PID/limits); fails the test if absent. */
uint64_t itest_nofile_soft(pid_t pid);

/* Print a loud skip banner and return ITEST_SKIP (use from main). */
int itest_skip(const char *why);

#endif
