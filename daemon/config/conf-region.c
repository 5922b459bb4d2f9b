/* SPDX-License-Identifier: MIT */
/* The configuration's list of regions: find, append, free. */
#include <string.h>

#include "conf-private.h"
#include "vector.h"

struct region_conf *conf_region_find(const struct daemon_conf *c, const char *name)
{
	for (size_t i = 0; i < c->n_regions; i++)
		if (strcmp(c->regions[i].name, name) == 0)
			return &c->regions[i];
	return NULL;
}

struct region_conf *conf_region_new(struct daemon_conf *c, const char *name, const char *source)
{
	struct region_conf *rc;

	if (PMEMZ_GROW(c->regions, NULL, c->n_regions + 1) < 0)
		return NULL;
	rc = &c->regions[c->n_regions];
	memset(rc, 0, sizeof(*rc));
	rc->name = strdup(name);
	rc->source = strdup(source);
	if (!rc->name || !rc->source) {
		free(rc->name);
		free(rc->source);
		return NULL;
	}
	c->n_regions++;
	return rc;
}

void conf_region_str_list_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void conf_region_free(struct region_conf *rc)
{
	free(rc->name);
	free(rc->path);
	free(rc->metadata);
	free(rc->allow_uids);
	free(rc->allow_gids);
	conf_region_str_list_free(rc->allow_cgroups, rc->n_allow_cgroups);
	free(rc->source);
}
