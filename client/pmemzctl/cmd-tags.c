/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl tags REGION [--all]: committed allocations (the caller's, or
 * everybody's).  LIST one page (one frame) at a time, so that any number
 * of tags lists; a tag too fragmented for a frame is refused (-EMSGSIZE).
 */
#include "pmemzctl.h"

static void tags_print(struct out *o, const Pmemz__ListResp *l)
{
	for (size_t i = 0; i < l->n_tags; i++) {
		const Pmemz__TagInfo *t = l->tags[i];
		uint64_t extents = 0;

		for (size_t k = 0; k < t->n_runs; k++)
			extents += t->runs[k]->count;
		o->ops->item_begin(o);
		out_str(o, "name", "tag", t->name);
		out_u64(o, "uid", "uid", t->uid);
		out_u64(o, "extents", "extents", extents);
		out_size(o, "bytes", "size", t->bytes);
		out_runs(o, "runs", "extent runs", t->runs, t->n_runs);
		o->ops->item_end(o);
	}
}

static int tags_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"all", no_argument, NULL, 'a'},
	    {},
	};
	_cleanup_response_ Pmemz__Response *resp = NULL;
	/* No more_runs_ok: a tag too fragmented for a frame is refused, not cut short. */
	struct pmemz_wire_list q = {.paged = true};
	const char *region;
	struct out *o;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT "a", opts, NULL)) != -1) {
		if (c == 'a') {
			q.all_users = true;
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
	/* The first page before any output: an error is printed alone. */
	if (pmemz_wire_list(ctl->client, region, &q, &resp) < 0)
		return ctl_fail();
	r = ctl_output(ctl);
	if (r)
		return r;
	o = ctl->out;

	out_str(o, "region", "region", region);
	o->ops->list_begin(o, "tags", "no tags");
	for (;;) {
		tags_print(o, resp->list);
		/* A daemon before paging answers with one page, without next_slot. */
		if (!resp->list->has_next_slot || resp->list->next_slot <= q.start_slot)
			break;
		q.start_slot = resp->list->next_slot;
		pmemz_response_free(resp);
		resp = NULL;
		if (pmemz_wire_list(ctl->client, region, &q, &resp) < 0)
			return ctl_fail(); /* no half a table */
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
