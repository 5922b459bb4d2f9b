/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static int path_join(char **out, const char *a, const char *b)
{
	if (asprintf(out, "%s%s", a, b) < 0)
		return -ENOMEM;
	return 0;
}

int pmemz_default_socket_path(bool daemon, char **out)
{
	const char *d;
	char *p;

	d = secure_getenv("RUNTIME_DIRECTORY");
	if (daemon && d && *d) {
		/* systemd may list several, colon separated: take the first. */
		size_t n = strcspn(d, ":");
		if (asprintf(&p, "%.*s/pmemzerod.sock", (int)n, d) < 0)
			return -ENOMEM;
		*out = p;
		return 0;
	}
	if (geteuid() == 0 || (!daemon && access(PMEMZ_SYSTEM_SOCKET, F_OK) == 0)) {
		p = strdup(PMEMZ_SYSTEM_SOCKET);
		if (!p)
			return -ENOMEM;
		*out = p;
		return 0;
	}
	d = secure_getenv("XDG_RUNTIME_DIR");
	if (d && *d)
		return path_join(out, d, "/pmemzerod/pmemzerod.sock");
	if (asprintf(&p, "/tmp/pmemzerod-%u/pmemzerod.sock", (unsigned)geteuid()) < 0)
		return -ENOMEM;
	*out = p;
	return 0;
}

int pmemz_default_state_dir(char **out)
{
	const char *d = secure_getenv("STATE_DIRECTORY");
	char *p;

	if (d && *d) {
		size_t n = strcspn(d, ":");
		p = strndup(d, n);
		if (!p)
			return -ENOMEM;
		*out = p;
		return 0;
	}
	if (geteuid() == 0) {
		p = strdup("/var/lib/pmemzerod");
		if (!p)
			return -ENOMEM;
		*out = p;
		return 0;
	}
	d = secure_getenv("XDG_STATE_HOME");
	if (d && *d)
		return path_join(out, d, "/pmemzerod");
	d = secure_getenv("HOME");
	if (!d || !*d)
		return -ENOENT;
	return path_join(out, d, "/.local/state/pmemzerod");
}

int pmemz_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}
