/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl metrics [--output FILE]: the daemon's counters in the Prometheus
 * text format (metrics.c), on stdout or, for node_exporter's textfile
 * collector, into FILE.  The collector may read FILE at any moment, so it
 * is replaced atomically: the exposition goes to a temporary file in the
 * same directory, which is synced and then renamed over FILE (and the
 * directory synced, so a crash leaves the old file or the new one).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmemzctl.h"
#include "sigbus.h"

static void unlink_tmp(char **path)
{
	if (*path) {
		(void)unlink(*path);
		free(*path);
	}
}

/* Directory of path (malloc'ed). */
static char *dir_of(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);
	const char *d;

	if (!copy)
		return NULL;
	d = dirname(copy);
	return strdup(d);
}

static int sync_dir(const char *dir)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync(fd) < 0)
		return -errno;
	return 0;
}

/* Write the exposition to path atomically; prints the reason on failure. */
static int metrics_write_file(const char *path, const struct ctl_metrics_in *in)
{
	_cleanup_free_ char *dir = dir_of(path);
	_cleanup_(unlink_tmp) char *tmp = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	int fd, r;

	if (!dir || asprintf(&tmp, "%s/.pmemzctl-metrics.XXXXXX", dir) < 0) {
		tmp = NULL;
		(void)fprintf(stderr, "pmemzctl: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(TAKE_PTR(tmp));
		(void)fprintf(stderr, "pmemzctl: cannot create a file in %s: %s\n", dir,
			      strerror(-r));
		return CTL_EXIT_FAIL;
	}
	/* mkostemp makes it 0600; the collector may run as another user. */
	if (fchmod(fd, 0644) < 0 || !(f = fdopen(fd, "w"))) {
		r = -errno;
		(void)close(fd);
		(void)fprintf(stderr, "pmemzctl: cannot write %s: %s\n", tmp, strerror(-r));
		return CTL_EXIT_FAIL;
	}
	r = ctl_metrics_write_in(f, in);
	if (r == 0 && fsync(fileno(f)) < 0)
		r = -errno;
	if (r == 0 && fclose(TAKE_PTR(f)) == EOF)
		r = -errno;
	if (r < 0) {
		(void)fprintf(stderr, "pmemzctl: cannot write %s: %s\n", tmp, strerror(-r));
		return CTL_EXIT_FAIL;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		(void)fprintf(stderr, "pmemzctl: cannot rename %s to %s: %s\n", tmp, path,
			      strerror(-r));
		return CTL_EXIT_FAIL;
	}
	free(TAKE_PTR(tmp));
	r = sync_dir(dir);
	if (r < 0) {
		(void)fprintf(stderr, "pmemzctl: cannot sync directory %s: %s\n", dir,
			      strerror(-r));
		return CTL_EXIT_FAIL;
	}
	return CTL_EXIT_OK;
}

/* Per region of the STAT answer: its USAGE answer and its disks, each NULL when none. */
struct usage_set {
	struct pmemz_usage **usage;
	struct ctl_disk_set **disks;
	size_t n;
};

static void usage_set_free(struct usage_set *u)
{
	for (size_t i = 0; i < u->n; i++) {
		pmemz_usage_free(u->usage[i]);
		if (u->disks[i])
			ctl_disk_set_done(u->disks[i]);
		free(u->disks[i]);
	}
	free(u->usage);
	free(u->disks);
}

static void disk_read_one(struct ctl_disk *d, void *arg)
{
	/* A disk that cannot be read keeps its tags' figures (its whole pool ahead). */
	(void)ctl_disk_read(arg, d);
}

/*
 * Region i's nbd disks, as pmemzctl disks counts them, the journal read
 * through the region's mapping; none when the mapping or LIST fails (not
 * figures that would count every chunk the journal maps as ahead).
 */
static int disks_get(struct ctl *ctl, const char *region, struct usage_set *u, size_t i)
{
	struct ctl_disk_set *set = calloc(1, sizeof(*set));
	struct pmemz_region *reg = NULL;

	if (!set)
		return -ENOMEM;
	if (pmemz_region_open_readonly(ctl->client, region, &reg) < 0 ||
	    ctl_disk_set_list(ctl->client, reg, region, pmemz_client_is_admin(ctl->client), set) <
		0) {
		if (reg)
			pmemz_region_close(reg);
		ctl_disk_set_done(set);
		free(set);
		return 0;
	}
	pmemz_sigbus_install();
	ctl_disk_set_foreach(set, disk_read_one, reg);
	pmemz_region_close(reg);
	u->disks[i] = set;
	return 0;
}

/*
 * The per-uid usage and the nbd disks of every region that serves and that
 * the caller may open (an admin gets every uid, others their own).  A
 * region whose USAGE or LIST fails has no samples of those families; the
 * rest of the exposition stands.
 */
static int usage_collect(struct ctl *ctl, const struct pmemz_stat *s, struct usage_set *u)
{
	size_t n = pmemz_stat_regions(s);

	u->usage = calloc(n ? n : 1, sizeof(*u->usage));
	u->disks = calloc(n ? n : 1, sizeof(*u->disks));
	if (!u->usage || !u->disks)
		return -ENOMEM;
	u->n = n;
	for (size_t i = 0; i < n; i++) {
		const char *name = pmemz_stat_region_str(s, i, PMEMZ_RS_NAME);

		if (ctl_stat_u64(s, i, PMEMZ_RS_NAME_ONLY) || strcmp(ctl_region_state(s, i), "online"))
			continue;
		if (pmemz_admin_usage(ctl->client, name, &u->usage[i]) < 0)
			u->usage[i] = NULL;
		if (disks_get(ctl, name, u, i) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int metrics_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"output", required_argument, NULL, 'o'},
	    {},
	};
	_cleanup_(pmemz_stat_freep) struct pmemz_stat *s = NULL;
	_cleanup_(usage_set_free) struct usage_set usage = {0};
	struct ctl_metrics_in in;
	const char *output = NULL;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT "o:", opts, NULL)) != -1) {
		if (c == 'o') {
			if (!*optarg)
				return ctl_usage_error(&cmd_metrics, "--output needs a file name");
			output = optarg;
			continue;
		}
		if ((r = ctl_common_opt(ctl, &cmd_metrics, c)) >= 0)
			return r;
	}
	if (optind < argc)
		return ctl_usage_error(&cmd_metrics, "unexpected argument '%s'", argv[optind]);
	if (ctl->json)
		return ctl_usage_error(&cmd_metrics,
				       "metrics prints the Prometheus text format, not JSON");

	/* Every region in one answer (the output vtable it sets up stays unused). */
	r = ctl_stat(ctl, NULL, &s);
	if (r)
		return r;
	if (usage_collect(ctl, s, &usage) < 0) {
		(void)fprintf(stderr, "pmemzctl: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	in = (struct ctl_metrics_in){.stat = s,
				     .usage = (const struct pmemz_usage *const *)usage.usage,
				     .disks = (const struct ctl_disk_set *const *)usage.disks};
	if (output)
		return metrics_write_file(output, &in);
	r = ctl_metrics_write_in(stdout, &in);
	if (r < 0) {
		(void)fprintf(stderr, "pmemzctl: cannot write the output: %s\n", strerror(-r));
		return CTL_EXIT_FAIL;
	}
	return CTL_EXIT_OK;
}

const struct ctl_cmd cmd_metrics = {
    .name = "metrics",
    .args = "[--output FILE]",
    .summary = "counters and gauges in the Prometheus text format",
    .options = "  -o, --output FILE  replace FILE atomically (node_exporter's textfile\n"
	       "                     collector) instead of printing\n",
    .no_json = true,
    .exec = metrics_exec,
};
