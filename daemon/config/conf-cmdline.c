/* SPDX-License-Identifier: MIT */
/* The command line: getopt_long, and --region NAME=PATH[,size=SIZE][,extent=SIZE]. */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "conf-private.h"
#include "pmemz-version.h"
#include "vector.h"

/* A --region's size= and extent= options. */
struct region_spec_opts {
	uint64_t size, extent;
	bool have_size, have_extent;
};

static void region_spec_option(struct errsink *e, struct region_spec_opts *o, char *opt)
{
	char *value = strchr(opt, '=');

	if (value)
		*value++ = '\0';
	if (!value || !*opt) {
		conf_report(e, "expected KEY=VALUE instead of '%s' (size= or extent=)", opt);
	} else if (strcmp(opt, "size") == 0) {
		if (o->have_size)
			conf_report(e, "size is given twice");
		else if (conf_value_region_size(e, "size", value, &o->size))
			o->have_size = true;
	} else if (strcmp(opt, "extent") == 0 || strcmp(opt, "extent_size") == 0) {
		if (o->have_extent)
			conf_report(e, "extent is given twice");
		else if (conf_value_extent_size(e, "extent", value, &o->extent))
			o->have_extent = true;
	} else {
		conf_report(e, "unknown option '%s' (size= or extent=)", opt);
	}
}

/* The region named by a --region: a new one, or the file's [region NAME] it overrides. */
static int region_spec_target(struct errsink *e, struct daemon_conf *c, const char *name,
			      const char *where, struct region_conf **out)
{
	struct region_conf *rc = conf_region_find(c, name);
	char *src;

	if (rc && rc->from_cmdline) {
		conf_report(e, "region '%s' is given twice on the command line", name);
		return -EINVAL;
	}
	if (!rc) {
		rc = conf_region_new(c, name, where);
		if (!rc)
			goto oom;
	} else {
		/* Overrides a [region NAME] of the file: its other keys stay. */
		src = strdup(where);
		if (!src)
			goto oom;
		conf_replace_str(&rc->source, src);
	}
	*out = rc;
	return 0;
oom:
	conf_report(e, "out of memory");
	return -ENOMEM;
}

int conf_cmdline_region(struct daemon_conf *c, const char *spec, FILE *errout)
{
	_cleanup_free_ char *where = NULL, *copy = NULL, *path = NULL;
	struct errsink e = {.out = errout, .where = "pmemzerod"};
	struct region_spec_opts o = {0};
	struct region_conf *rc;
	char *name, *rest, *opt;
	int r;

	if (asprintf(&where, "--region '%s'", spec) < 0 || !(copy = strdup(spec))) {
		conf_report(&e, "out of memory");
		return -ENOMEM;
	}
	e.where = where;
	rest = strchr(copy, '=');
	if (!rest) {
		conf_report(&e, "expected NAME=PATH[,size=SIZE][,extent=SIZE]");
		return -EINVAL;
	}
	*rest++ = '\0';
	name = copy;
	(void)conf_value_region_name(&e, name);
	opt = strsep(&rest, ",");
	if (!*opt)
		conf_report(&e, "the path is empty");
	else if (!(path = conf_value_absolute(opt)))
		conf_report(&e, "cannot make '%s' absolute: %s", opt, strerror(errno));
	while ((opt = strsep(&rest, ",")))
		region_spec_option(&e, &o, opt);
	if (e.n)
		return -EINVAL;

	r = region_spec_target(&e, c, name, where, &rc);
	if (r < 0)
		return r;
	rc->from_cmdline = true;
	conf_replace_str(&rc->path, TAKE_PTR(path));
	if (o.have_size)
		rc->size = o.size;
	if (o.have_extent)
		rc->extent_size = o.extent;
	return 0;
}
static void usage(FILE *out)
{
	fprintf(out,
		"Usage: pmemzerod [OPTIONS]\n"
		"Hands out pre-zeroed, durable persistent-memory extents.\n"
		"\n"
		"  -d, --foreground        plain log lines on stderr (no journald <N> prefixes)\n"
		"  -c, --config FILE       read the configuration FILE\n"
		"  -n, --check-config      check the configuration, print it and exit\n"
		"      --socket PATH       listen on PATH (overrides [daemon] socket)\n"
		"      --region NAME=PATH[,size=SIZE][,extent=SIZE]\n"
		"                          add (or override) a region; repeatable\n"
		"  -v, --verbose           log more (repeatable: info -> debug)\n"
		"  -h, --help              show this help\n"
		"      --version           show the version\n"
		"\n"
		"Sizes take K, M, G or T suffixes (binary).  See pmemzerod(8) and\n"
		"pmemzerod.conf(5).\n");
}

enum { ARG_SOCKET = 0x100, ARG_REGION, ARG_VERSION };

static void add_spec(struct errsink *e, struct conf_cmdline *cl, const char *spec)
{
	if (PMEMZ_GROW(cl->specs, NULL, cl->n_specs + 1) < 0) {
		conf_report(e, "out of memory");
		return;
	}
	cl->specs[cl->n_specs++] = spec;
}

static void bad_option(struct errsink *e, int opt, const char *arg)
{
	if (opt == ':')
		conf_report(e, "option '%s' needs an argument", arg);
	else if (strncmp(arg, "--", 2) == 0 || optopt <= 0 || optopt >= 0x100)
		conf_report(e, "unknown option '%s' (see --help)", arg);
	else
		conf_report(e, "unknown option '-%c' (see --help)", optopt);
}

/* One option: 0, or -EAGAIN when --help or --version was printed. */
static int cmdline_option(struct errsink *e, struct daemon_conf *c, struct conf_cmdline *cl,
			  int opt, const char *arg)
{
	switch (opt) {
	case 'd':
		c->foreground = true;
		break;
	case 'c':
		if (c->config_path)
			conf_report(e, "-c/--config is given more than once");
		else
			c->config_path = conf_report_strdup(e, optarg);
		break;
	case 'n':
		c->check_only = true;
		break;
	case 'v':
		cl->verbose++;
		break;
	case 'h':
		usage(stdout);
		return -EAGAIN;
	case ARG_VERSION:
		printf("pmemzerod %s\n", PMEMZ_VERSION);
		return -EAGAIN;
	case ARG_SOCKET:
		cl->socket = optarg;
		break;
	case ARG_REGION:
		add_spec(e, cl, optarg);
		break;
	default:
		bad_option(e, opt, arg);
		break;
	}
	return 0;
}

int conf_cmdline_parse(struct errsink *e, struct daemon_conf *c, int argc, char **argv,
		       struct conf_cmdline *cl)
{
	static const struct option options[] = {
	    {"foreground", no_argument, NULL, 'd'},
	    {"config", required_argument, NULL, 'c'},
	    {"check-config", no_argument, NULL, 'n'},
	    {"socket", required_argument, NULL, ARG_SOCKET},
	    {"region", required_argument, NULL, ARG_REGION},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, ARG_VERSION},
	    {NULL, 0, NULL, 0},
	};
	int opt;

	optind = 0; /* GNU: full reinitialisation, conf_load may run more than once */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:dc:nvh", options, NULL)) != -1)
		if (cmdline_option(e, c, cl, opt, argv[optind - 1]) < 0)
			return -EAGAIN;
	if (optind < argc)
		conf_report(e, "unexpected argument '%s'", argv[optind]);
	return 0;
}

void conf_cmdline_socket(struct errsink *e, struct daemon_conf *c, const char *socket)
{
	_cleanup_free_ char *abs = conf_value_absolute(socket);

	if (!abs)
		conf_report(e, "--socket: cannot make '%s' absolute: %s", socket, strerror(errno));
	else if (conf_value_socket_path(e, "--socket", abs))
		conf_replace_str(&c->socket_path, TAKE_PTR(abs));
}
