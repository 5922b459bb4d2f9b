/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl pause REGION|--all, pmemzctl resume REGION|--all: stop and
 * restart background zeroing (admin only).  ctl_zeroer() is the ZEROER
 * call that set-rate shares.
 */
#include <string.h>

#include "pmemzctl.h"

int ctl_zeroer(struct ctl *ctl, const char *region, int pause, const uint64_t *rate)
{
	struct out *o;
	int r;

	r = ctl_connect(ctl);
	if (r)
		return r;
	r = pause >= 0 ? pmemz_admin_zeroer_pause(ctl->client, region, pause > 0) : 0;
	if (r == 0 && rate)
		r = pmemz_admin_zeroer_rate(ctl->client, region, *rate);
	if (r < 0)
		return ctl_fail();
	r = ctl_output(ctl);
	if (r)
		return r;
	o = ctl->out;
	if (region)
		out_str(o, "region", "region", region);
	else
		out_bool(o, "all", "all regions", true);
	if (pause >= 0)
		out_str(o, "zeroing", "zeroing", pause ? "paused" : "running");
	if (rate) {
		if (*rate)
			out_rate(o, "zero_rate_limit", "zero rate limit", (double)*rate);
		else
			out_str(o, "zero_rate_limit", "zero rate limit", "unlimited");
	}
	return ctl_finish(ctl);
}

/* REGION or --all; the region name, NULL for all, or a usage error in *status. */
static bool parse_target(struct ctl *ctl, const struct ctl_cmd *cmd, int argc, char **argv,
			 const char **region, int *status)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"all", no_argument, NULL, 'a'},
	    {},
	};
	bool all = false;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT "a", opts, NULL)) != -1) {
		if (c == 'a') {
			all = true;
			continue;
		}
		if ((r = ctl_common_opt(ctl, cmd, c)) >= 0) {
			*status = r;
			return false;
		}
	}
	*region = optind < argc ? argv[optind++] : NULL;
	if (optind < argc) {
		*status = ctl_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
		return false;
	}
	if (all == !!*region) {
		*status = ctl_usage_error(cmd, all ? "give a region or --all, not both"
						   : "which region (or --all)?");
		return false;
	}
	if (*region && !**region) {
		*status = ctl_usage_error(cmd, "empty region name");
		return false;
	}
	return true;
}

static int pause_exec(struct ctl *ctl, int argc, char **argv)
{
	const char *region;
	int status;

	if (!parse_target(ctl, &cmd_pause, argc, argv, &region, &status))
		return status;
	return ctl_zeroer(ctl, region, 1, NULL);
}

static int resume_exec(struct ctl *ctl, int argc, char **argv)
{
	const char *region;
	int status;

	if (!parse_target(ctl, &cmd_resume, argc, argv, &region, &status))
		return status;
	return ctl_zeroer(ctl, region, 0, NULL);
}

const struct ctl_cmd cmd_pause = {
    .name = "pause",
    .args = "REGION|--all",
    .summary = "pause background zeroing (admin; until resume or a daemon restart)",
    .options = "  -a, --all    every region\n",
    .exec = pause_exec,
};

const struct ctl_cmd cmd_resume = {
    .name = "resume",
    .args = "REGION|--all",
    .summary = "resume background zeroing (admin)",
    .options = "  -a, --all    every region\n",
    .exec = resume_exec,
};
