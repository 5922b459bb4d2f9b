/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl set-rate REGION|--all RATE: the background zeroing byte rate
 * (admin only), e.g. 512M, 2G/s, 0 or "unlimited"; until a daemon restart.
 * The syntax is zero_rate's (pmemz_parse_rate).
 */
#include <errno.h>

#include "pmemzctl.h"

static int set_rate_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    CTL_COMMON_OPTS,
	    {"all", no_argument, NULL, 'a'},
	    {},
	};
	const char *region = NULL, *rate_s;
	bool all = false;
	uint64_t rate;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_SHORT "a", opts, NULL)) != -1) {
		if (c == 'a') {
			all = true;
			continue;
		}
		if ((r = ctl_common_opt(ctl, &cmd_set_rate, c)) >= 0)
			return r;
	}
	if (!all) {
		if (optind >= argc)
			return ctl_usage_error(&cmd_set_rate, "which region (or --all)?");
		region = argv[optind++];
		if (!*region)
			return ctl_usage_error(&cmd_set_rate, "empty region name");
	}
	if (optind >= argc)
		return ctl_usage_error(&cmd_set_rate, "which rate?");
	rate_s = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(&cmd_set_rate, "unexpected argument '%s'", argv[optind]);
	r = pmemz_parse_rate(rate_s, &rate);
	if (r == -ERANGE)
		return ctl_usage_error(&cmd_set_rate, "rate '%s' is too large", rate_s);
	if (r < 0)
		return ctl_usage_error(&cmd_set_rate,
				       "invalid rate '%s': expected bytes per second with an "
				       "optional K, M, G or T suffix (e.g. 512M), 0 or 'unlimited'",
				       rate_s);
	return ctl_zeroer(ctl, region, -1, &rate);
}

const struct ctl_cmd cmd_set_rate = {
    .name = "set-rate",
    .args = "REGION|--all RATE",
    .summary = "background zeroing rate per second: 512M, 2G, 0 or unlimited (admin)",
    .options = "  -a, --all    every region\n",
    .exec = set_rate_exec,
};
