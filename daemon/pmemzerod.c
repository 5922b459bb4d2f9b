/* SPDX-License-Identifier: MIT */
/*
 * pmemzerod: hands out pre-zeroed, durable extents of persistent memory.
 * Start-up: configuration, regions (recovery, zeroers), socket, READY=1;
 * then the event loop until SIGTERM/SIGINT.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "conf.h"
#include "dax.h"
#include "log.h"
#include "manager.h"

/*
 * Every connection costs a descriptor: take all the hard limit allows
 * (systemd's default soft limit is 1024; select() is not used here).
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		(void)log_warning_errno(errno, "getrlimit(RLIMIT_NOFILE): %m");
		return;
	}
	if (rl.rlim_cur == rl.rlim_max)
		return;
	log_debug("Raising the descriptor limit from %llu to %llu", (unsigned long long)rl.rlim_cur,
		  (unsigned long long)rl.rlim_max);
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		(void)log_warning_errno(errno, "Cannot raise the descriptor limit to %llu: %m",
					(unsigned long long)rl.rlim_max);
}

static void conf_done(struct daemon_conf *c)
{
	conf_free(c);
}

static int run(int argc, char **argv)
{
	_cleanup_(conf_done) struct daemon_conf conf = {0};
	_cleanup_(manager_freep) struct manager *m = NULL;
	int r;

	log_open(false);
	r = conf_load(&conf, argc, argv, stderr);
	if (r == -EAGAIN)
		return 0; /* --help / --version */
	if (r < 0)
		return r; /* conf_load printed every error */
	if (conf.check_only) {
		conf_print(&conf, stdout);
		printf("configuration OK\n");
		return fflush(stdout) == 0 ? 0 : -EIO;
	}
	if (conf.foreground) {
		/* Plain stderr lines, even when started under systemd. */
		(void)unsetenv("JOURNAL_STREAM");
		log_open(false);
	}
	if (conf.log_level >= LOG_ERR && conf.log_level <= LOG_DEBUG)
		log_set_max_level(conf.log_level);
	/* Peers that vanish must not kill us; sends use MSG_NOSIGNAL too. */
	(void)signal(SIGPIPE, SIG_IGN);
	raise_nofile();

	/* What the machine offers, for whoever reads the log after an incident. */
	dax_log_devices();
	r = manager_new(&conf, &m);
	if (r < 0)
		return r;
	r = manager_start(m);
	if (r < 0)
		return r;
	r = manager_run(m);
	if (r == 0)
		log_info("Stopped");
	return r;
}

int main(int argc, char **argv)
{
	return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
