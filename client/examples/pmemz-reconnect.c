/* SPDX-License-Identifier: MIT */
/*
 * pmemz-reconnect: an application that outlives a daemon restart.
 *
 *   pmemz-reconnect SOCKET REGION TAG [SECONDS]
 *       commit TAG, deep-flush it, then wait up to SECONDS (default 120)
 *       for the connection to break (the daemon was killed), reconnect,
 *       check TAG kept its data and go on (a second allocation).
 *   pmemz-reconnect --churn SOCKET REGION TAG
 *       allocate, write, commit and release TAG in a loop until a call
 *       fails (the daemon stops); exit 0 when the failure is the connection.
 *
 * Progress lines on stdout name each step, so that a test driving it (the
 * systemd VM test, tests/vm/workload-systemd.sh) can wait for "waiting"
 * before it kills the daemon.
 *
 * Build it against an installed library with
 *   cc -o pmemz-reconnect pmemz-reconnect.c $(pkg-config --cflags --libs libpmemzclient)
 */
#include <errno.h>
#include <libpmemzclient.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "pmemz-reconnect: %s failed (%s): %s\n", what, strerror(-err),
		pmemz_errormsg());
	return 1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

static int connection_error(int err)
{
	return err == -ECONNRESET || err == -ENOTCONN || err == -EPIPE;
}

/* Lease one extent, write msg at its start, persist it and commit it as tag. */
static int commit_message(struct pmemz_region *region, const char *tag, const char *msg,
			  char **where)
{
	struct pmemz_alloc *alloc;
	size_t len;
	char *p;
	int r;

	r = pmemz_alloc_new(region, pmemz_region_extent_size(region), 0, &alloc);
	if (r < 0)
		return r;
	p = pmemz_alloc_range(alloc, 0, &len);
	memcpy(p, msg, strlen(msg) + 1);
	r = pmemz_persist(region, p, strlen(msg) + 1);
	if (r == 0)
		r = pmemz_alloc_commit(alloc, tag, 0);
	pmemz_alloc_close(alloc);
	if (r == 0 && where)
		*where = p;
	return r;
}

/* tag must hold msg, at the address it had before (the mapping stayed). */
static int verify_message(struct pmemz_region *region, const char *tag, const char *msg,
			  const char *old)
{
	struct pmemz_alloc *alloc;
	size_t len;
	char *p;
	int r;

	r = pmemz_alloc_open(region, tag, &alloc);
	if (r < 0)
		return fail("pmemz_alloc_open after the reconnect", r);
	p = pmemz_alloc_range(alloc, 0, &len);
	pmemz_alloc_close(alloc);
	if (p != old) {
		fprintf(stderr, "pmemz-reconnect: tag '%s' moved from %p to %p\n", tag,
			(const void *)old, (void *)p);
		return 1;
	}
	if (strcmp(p, msg) != 0) {
		fprintf(stderr, "pmemz-reconnect: tag '%s' holds \"%.64s\", not \"%s\"\n", tag, p,
			msg);
		return 1;
	}
	printf("verified: tag '%s' still holds \"%s\" at the same address\n", tag, msg);
	return 0;
}

static void release_tag(struct pmemz_region *region, const char *tag)
{
	struct pmemz_alloc *alloc;

	if (pmemz_alloc_open(region, tag, &alloc) == 0)
		(void)pmemz_alloc_release(alloc);
}

static int churn(struct pmemz_region *region, const char *tag)
{
	unsigned long n = 0;
	struct pmemz_alloc *alloc;
	char msg[64];
	int r;

	for (;;) {
		(void)snprintf(msg, sizeof(msg), "churn %lu", n);
		r = commit_message(region, tag, msg, NULL);
		if (r == 0) {
			r = pmemz_alloc_open(region, tag, &alloc);
			if (r == 0)
				r = pmemz_alloc_release(alloc);
		}
		if (r < 0)
			break;
		if (++n == 1)
			printf("churning\n");
		(void)fflush(stdout);
	}
	printf("stopped after %lu commits: %s (%s)\n", n, strerror(-r), pmemz_errormsg());
	if (!connection_error(r))
		return fail("the churn loop", r);
	return 0;
}

int main(int argc, char **argv)
{
	int churn_mode = argc > 1 && strcmp(argv[1], "--churn") == 0;
	const char *socket_path, *region_name, *tag;
	char msg[128], tag2[80];
	struct pmemz_client *client;
	struct pmemz_region *region;
	struct pmemz_alloc *alloc;
	long wait_s = 120;
	char *p = NULL;
	int r, tries;

	argv += churn_mode;
	argc -= churn_mode;
	if (argc < 4 || argc > 5 || (churn_mode && argc != 4)) {
		fprintf(stderr, "usage: pmemz-reconnect SOCKET REGION TAG [SECONDS]\n"
				"       pmemz-reconnect --churn SOCKET REGION TAG\n");
		return 2;
	}
	socket_path = argv[1];
	region_name = argv[2];
	tag = argv[3];
	if (argc == 5)
		wait_s = strtol(argv[4], NULL, 10);
	setvbuf(stdout, NULL, _IOLBF, 0);

	r = pmemz_client_new(socket_path, &client);
	if (r < 0)
		return fail("pmemz_client_new", r);
	r = pmemz_region_open(client, region_name, &region);
	if (r < 0)
		return fail("pmemz_region_open", r);
	release_tag(region, tag); /* left over by an interrupted run */
	if (churn_mode)
		return churn(region, tag);

	(void)snprintf(msg, sizeof(msg), "pmemz-reconnect %s pid %ld", tag, (long)getpid());
	r = commit_message(region, tag, msg, &p);
	if (r < 0)
		return fail("the commit", r);
	printf("committed: tag '%s' holds \"%s\"\n", tag, msg);
	r = pmemz_flush(region, p, strlen(msg) + 1, PMEMZ_FLUSH_DEEP);
	if (r < 0)
		return fail("pmemz_flush(PMEMZ_FLUSH_DEEP)", r);
	printf("deep flush: ok\n");

	/* An idle application notices the restart at its next call. */
	printf("waiting for the connection to break\n");
	for (tries = 0;; tries++) {
		if (tries > wait_s * 5) {
			fprintf(stderr, "pmemz-reconnect: the connection did not break\n");
			return 1;
		}
		sleep_ms(200);
		r = pmemz_alloc_open(region, tag, &alloc);
		if (r < 0)
			break;
		pmemz_alloc_close(alloc);
	}
	printf("error: %s (%d): %s\n", strerror(-r), r, pmemz_errormsg());
	if (!connection_error(r))
		return fail("pmemz_alloc_open", r);

	/* Until the daemon is back (a socket unit queues the connection). */
	for (tries = 0;; tries++) {
		r = pmemz_client_reconnect(client);
		if (r == 0)
			break;
		if (tries > wait_s * 5 || r == -ESTALE)
			return fail("pmemz_client_reconnect", r);
		sleep_ms(200);
	}
	printf("reconnected after %d attempt(s)\n", tries + 1);
	if (verify_message(region, tag, msg, p) != 0)
		return 1;

	(void)snprintf(tag2, sizeof(tag2), "%s-after", tag);
	release_tag(region, tag2);
	r = commit_message(region, tag2, "after the restart", NULL);
	if (r < 0)
		return fail("a commit after the reconnect", r);
	printf("goes on: committed tag '%s'\n", tag2);
	release_tag(region, tag2);
	release_tag(region, tag);
	pmemz_region_close(region);
	pmemz_client_free(client);
	printf("done\n");
	return 0;
}
