/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl tags REGION [--all]: committed allocations (the caller's, or
 * everybody's).  pmemz_admin_list reads one page (one frame) at a time, so
 * that any number of tags lists; a tag too fragmented for a frame is
 * refused (-EMSGSIZE).
 */
#include <errno.h>
#include <stdlib.h>

#include "pmemzctl.h"

static int tags_print(struct out *o, const struct pmemz_taglist *l)
{
	for (size_t i = 0; i < pmemz_taglist_count(l); i++) {
		size_t n = pmemz_taglist_runs(l, i);
		_cleanup_free_ struct ctl_run *runs = calloc(n ? n : 1, sizeof(*runs));
		uint64_t extents = 0;

		if (!runs)
			return -ENOMEM;
		for (size_t k = 0; k < n; k++) {
			(void)pmemz_taglist_run(l, i, k, &runs[k].first, &runs[k].count);
			extents += runs[k].count;
		}
		o->ops->item_begin(o);
		out_str(o, "name", "tag", pmemz_taglist_name(l, i));
		out_u64(o, "uid", "uid", pmemz_taglist_uid(l, i));
		out_u64(o, "extents", "extents", extents);
		out_size(o, "bytes", "size", pmemz_taglist_bytes(l, i));
		out_runs(o, "runs", "extent runs", runs, n);
		o->ops->item_end(o);
	}
	return 0;
}

static void taglist_freep(struct pmemz_taglist **l)
{
	pmemz_taglist_free(*l);
}

static int tags_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"all", no_argument, NULL, 'a'},
	    {},
	};
	_cleanup_(taglist_freep) struct pmemz_taglist *l = NULL;
	/* No FIRST_RUNS: a tag too fragmented for a frame is refused, not cut short. */
	unsigned flags = 0;
	const char *region;
	struct out *o;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT "a", opts, NULL)) != -1) {
		if (c == 'a') {
			flags |= PMEMZ_LIST_ALL_USERS;
			continue;
		}
		if ((r = ctl_common_opt(ctl, &cmd_tags, c)) >= 0)
			return r;
	}
	if (optind >= argc)
		return ctl_usage_error(&cmd_tags, "which region?");
	region = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(&cmd_tags, "unexpected argument '%s'", argv[optind]);

	r = ctl_connect(ctl);
	if (r)
		return r;
	/* Every page before any output: an error is printed alone, no half a table. */
	if (pmemz_admin_list(ctl->client, region, NULL, flags, &l) < 0)
		return ctl_fail();
	r = ctl_output(ctl);
	if (r)
		return r;
	o = ctl->out;

	out_str(o, "region", "region", region);
	o->ops->list_begin(o, "tags", "no tags");
	if (tags_print(o, l) < 0) {
		(void)fprintf(stderr, "pmemzctl: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	o->ops->list_end(o);
	return ctl_finish(ctl);
}

const struct ctl_cmd cmd_tags = {
    .name = "tags",
    .args = "REGION [--all]",
    .summary = "committed tags of the caller (--all: of every user, admin only)",
    .options = "  -a, --all    tags of every user (admin only)\n",
    .exec = tags_exec,
};
