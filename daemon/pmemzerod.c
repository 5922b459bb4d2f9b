/* SPDX-License-Identifier: MIT */
/*
 * pmemzerod: hands out pre-zeroed, durable extents of persistent memory.
 * Start-up: configuration, regions (recovery, zeroers), socket, READY=1;
 * then the event loop until SIGTERM/SIGINT (SIGHUP reloads the configuration).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "conf.h"
#include "dax.h"
#include "log.h"
#include "manager.h"
#include "util.h"

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

/*
 * The embedded default region lives in the state directory, which nothing
 * but systemd's StateDirectory= would create: make it, private to the
 * daemon's user, and refuse one that another user controls.
 */
static int state_dir_prepare(const struct daemon_conf *c)
{
	uid_t owner;
	int r;

	if (!c->default_region)
		return 0;
	r = pmemz_private_dir(c->state_dir, &owner);
	if (r == -ELOOP)
		return log_error_errno(
		    r, "State directory %s is a symbolic link, refusing to use it", c->state_dir);
	if (r == -ENOTDIR)
		return log_error_errno(r, "State directory %s exists and is not a directory",
				       c->state_dir);
	if (r == -EPERM && owner != (uid_t)-1)
		return log_error_errno(r,
				       "State directory %s is owned by uid %u, not by the daemon's "
				       "user (uid %u), refusing to use it",
				       c->state_dir, (unsigned)owner, (unsigned)geteuid());
	if (r < 0)
		return log_error_errno(r, "Cannot create the state directory %s: %m", c->state_dir);
	return 0;
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
	r = state_dir_prepare(&conf);
	if (r < 0)
		return r;
	r = manager_new(&conf, &m);
	if (r < 0)
		return r;
	manager_set_args(m, argc, argv); /* SIGHUP parses them again */
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
