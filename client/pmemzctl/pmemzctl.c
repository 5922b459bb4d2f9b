/* SPDX-License-Identifier: MIT */
/*
 * pmemzctl [--socket PATH] [--json] [-u|--human|--bytes] COMMAND [ARGS]
 *
 * The command table maps a verb to a struct ctl_cmd (one file per command);
 * global options come before the command, each command parses its own.
 */
#include <stdarg.h>
#include <string.h>

#include "pmemz-version.h"
#include "pmemzctl.h"

extern const struct ctl_cmd cmd_check; /* cmd-check.c: offline, no daemon */
extern const struct ctl_cmd cmd_discover; /* cmd-discover.c: no daemon */

static const struct ctl_cmd *const commands[] = {
    &cmd_status,
    &cmd_regions,
    &cmd_tags,
    &cmd_disks,
    &cmd_usage,
    &cmd_clients,
    &cmd_map,
    &cmd_pause,
    &cmd_resume,
    &cmd_set_rate,
    &cmd_metrics,
    &cmd_check,
    &cmd_discover,
};

static void usage(FILE *f)
{
	(void)fprintf(f, "Usage: pmemzctl [OPTIONS] COMMAND [ARGS]\n"
			 "Query and control pmemzerod; check regions and find devices offline.\n\n"
			 "Options:\n"
			 "  -s, --socket PATH  daemon socket (default: $" PMEMZ_SOCKET_ENV
			 ", then the system\n"
			 "                     socket, then the per-user one)\n"
			 "  -j, --json         JSON output (sizes in bytes)\n"
			 "  -u, --human        human-readable sizes (default)\n"
			 "      --bytes        sizes in bytes\n"
			 "  -h, --help         this help\n"
			 "  -V, --version      print the version\n\n"
			 "Commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		char head[64];

		(void)snprintf(head, sizeof(head), "%s %s", commands[i]->name, commands[i]->args);
		(void)fprintf(f, "  %-22s %s\n", head, commands[i]->summary);
	}
	(void)fprintf(f,
		      "\n'pmemzctl help COMMAND' (or 'pmemzctl COMMAND --help') shows the options\n"
		      "of a command.\n");
}

void ctl_cmd_usage(const struct ctl_cmd *cmd, FILE *f)
{
	(void)fprintf(f,
		      "Usage: pmemzctl [OPTIONS] %s %s\n%s\n\n"
		      "Options:\n"
		      "%s"
		      "  -u, --human  human-readable sizes (default)\n"
		      "      --bytes  sizes in bytes\n"
		      "  -h, --help   this help\n"
		      "%s",
		      cmd->name, cmd->args, cmd->summary,
		      cmd->no_json ? "" : "  -j, --json   JSON output\n",
		      cmd->options ? cmd->options : "");
}

int ctl_usage_error(const struct ctl_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	(void)fputs("pmemzctl: ", stderr);
	va_start(ap, fmt);
	(void)vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		(void)fprintf(stderr, "\nUsage: pmemzctl %s %s (see pmemzctl %s --help)\n",
			      cmd->name, cmd->args, cmd->name);
	else
		(void)fputs(" (see pmemzctl --help)\n", stderr);
	return CTL_EXIT_USAGE;
}

int ctl_common_opt(struct ctl *ctl, const struct ctl_cmd *cmd, int c)
{
	switch (c) {
	case 'j':
		ctl->json = true;
		return -1;
	case 'u':
		ctl->human = true;
		return -1;
	case 'B':
		ctl->human = false;
		return -1;
	case 'h':
		ctl_cmd_usage(cmd, stdout);
		return CTL_EXIT_OK;
	default: /* getopt printed the reason */
		(void)fprintf(stderr, "Usage: pmemzctl %s %s (see pmemzctl %s --help)\n", cmd->name,
			      cmd->args, cmd->name);
		return CTL_EXIT_USAGE;
	}
}

int ctl_connect(struct ctl *ctl)
{
	if (ctl->client)
		return 0;
	if (pmemz_client_new(ctl->socket_path, &ctl->client) < 0)
		return ctl_fail();
	return 0;
}

int ctl_stat(struct ctl *ctl, const char *region, struct pmemz_stat **stat)
{
	int r;

	r = ctl_connect(ctl);
	if (r)
		return r;
	if (pmemz_admin_stat(ctl->client, region, stat) < 0)
		return ctl_fail();
	return ctl_output(ctl);
}

int ctl_output(struct ctl *ctl)
{
	int r;

	if (ctl->out)
		return 0;
	r = out_new(ctl->json ? &out_json_ops : &out_text_ops, stdout, ctl->human, &ctl->out);
	if (r < 0) {
		(void)fprintf(stderr, "pmemzctl: %s\n", strerror(-r));
		return CTL_EXIT_FAIL;
	}
	return 0;
}

int ctl_finish(struct ctl *ctl)
{
	int r = ctl->out->ops->finish(ctl->out);

	if (r < 0) {
		(void)fprintf(stderr, "pmemzctl: cannot write the output: %s\n", strerror(-r));
		return CTL_EXIT_FAIL;
	}
	return CTL_EXIT_OK;
}

static const struct ctl_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

/* pmemzctl help [COMMAND]: the command list, or the usage of one command. */
static int help(int argc, char **argv)
{
	const struct ctl_cmd *cmd;

	if (argc == 0) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	if (argc > 1)
		return ctl_usage_error(NULL, "help takes one command, not %d arguments", argc);
	cmd = find_command(argv[0]);
	if (!cmd)
		return ctl_usage_error(NULL, "help: unknown command '%s'", argv[0]);
	ctl_cmd_usage(cmd, stdout);
	return CTL_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"version", no_argument, NULL, 'V'},
	    CTL_COMMON_OPTS,
	    {},
	};
	struct ctl ctl = {.human = true};
	const struct ctl_cmd *cmd;
	const char *why;
	int c, r;

	argv[0] = (char *)"pmemzctl"; /* getopt's messages name the program, not its path */
	while ((c = getopt_long(argc, argv, "+s:V" CTL_COMMON_SHORT, opts, NULL)) != -1) {
		switch (c) {
		case 's':
			ctl.socket_path = optarg;
			break;
		case 'V':
			/* the library loaded, which need not be the one pmemzctl was built with */
			(void)printf("pmemzctl %s (libpmemzclient %s)\n", PMEMZ_VERSION,
				     pmemz_library_version());
			return CTL_EXIT_OK;
		case 'h':
			usage(stdout);
			return CTL_EXIT_OK;
		case 'j':
		case 'u':
		case 'B':
			(void)ctl_common_opt(&ctl, NULL, c);
			break;
		default:
			(void)fputs("Try 'pmemzctl --help'.\n", stderr);
			return CTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	why = pmemz_check_version(PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR);
	if (why) {
		(void)fprintf(stderr, "pmemzctl %s: %s\n", PMEMZ_VERSION, why);
		return CTL_EXIT_FAIL;
	}
	if (strcmp(argv[optind], "help") == 0)
		return help(argc - optind - 1, argv + optind + 1);
	cmd = find_command(argv[optind]);
	if (!cmd)
		return ctl_usage_error(NULL, "unknown command '%s'", argv[optind]);

	/* The command sees argv[0] = its name; getopt restarts with optind = 0. */
	argc -= optind;
	argv += optind;
	optind = 0;
	r = cmd->exec(&ctl, argc, argv);
	out_free(ctl.out);
	pmemz_client_free(ctl.client);
	return r;
}
