/* SPDX-License-Identifier: MIT */
/*
 * pmemzerod configuration: the command line (conf-cmdline.c), the INI file
 * (conf-ini.c) and the embedded defaults and checks (conf-check.c), in that
 * order.  Nothing here touches the file system beyond reading the
 * configuration file and the user/group databases: regions and directories
 * are created by the daemon.
 */
#include <errno.h>
#include <string.h>
#include <syslog.h>

#include "conf-private.h"

/* After the command line: the file, then the command line's overrides, then the checks. */
static void load_sources(struct errsink *e, struct daemon_conf *c, const struct conf_cmdline *cl)
{
	if (c->config_path && conf_ini_parse_file(c, c->config_path, e->out) < 0)
		e->n++;
	if (cl->socket)
		conf_cmdline_socket(e, c, cl->socket);
	for (size_t i = 0; i < cl->n_specs; i++)
		if (conf_cmdline_region(c, cl->specs[i], e->out) < 0)
			e->n++;
	if (conf_check(c, e->out) < 0)
		e->n++;
}

int conf_load(struct daemon_conf *c, int argc, char **argv, FILE *errout)
{
	struct errsink e = {.out = errout, .where = "pmemzerod"};
	struct conf_cmdline cl = {0};
	int r;

	r = conf_cmdline_parse(&e, c, argc, argv, &cl);
	if (r == 0)
		load_sources(&e, c, &cl);
	free(cl.specs);
	if (r < 0)
		return r;
	if (e.n)
		return -EINVAL;
	c->log_level = (int)MIN((unsigned)c->log_level + cl.verbose, (unsigned)LOG_DEBUG);
	return 0;
}

struct region_conf *conf_find_region(const struct daemon_conf *c, const char *name)
{
	return conf_region_find(c, name);
}

void conf_free(struct daemon_conf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_regions; i++)
		conf_region_free(&c->regions[i]);
	free(c->regions);
	free(c->config_path);
	free(c->socket_path);
	free(c->state_dir);
	free(c->admin_group);
	conf_region_str_list_free(c->admin_cgroups, c->n_admin_cgroups);
	memset(c, 0, sizeof(*c));
}
