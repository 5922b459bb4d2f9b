/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define PMEMZ_FALLBACK_DIR_FMT "/tmp/pmemzerod-%u"

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
	if (asprintf(&p, PMEMZ_FALLBACK_DIR_FMT "/pmemzerod.sock", (unsigned)geteuid()) < 0)
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

bool pmemz_is_fallback_dir(const char *dir)
{
	char own[64];

	(void)snprintf(own, sizeof(own), PMEMZ_FALLBACK_DIR_FMT, (unsigned)geteuid());
	return strcmp(dir, own) == 0;
}

int pmemz_fallback_dir_check(const char *dir, bool create, char *why, size_t len)
{
	struct stat st;

	for (;;) {
		if (lstat(dir, &st) == 0)
			break;
		if (errno != ENOENT || !create) {
			int r = -errno;

			(void)snprintf(why, len, "%s", strerror(-r));
			return r;
		}
		/* Not there: make it ours.  Someone else may win the race: look again. */
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			int r = -errno;

			(void)snprintf(why, len, "cannot create it: %s", strerror(-r));
			return r;
		}
	}
	if (S_ISLNK(st.st_mode)) {
		(void)snprintf(why, len, "it is a symbolic link");
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		(void)snprintf(why, len, "it is not a directory");
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		(void)snprintf(why, len, "it is owned by uid %u, not by uid %u",
			       (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		(void)snprintf(why, len, "it is writable by %s (mode %04o)",
			       st.st_mode & S_IWOTH ? "others" : "its group",
			       (unsigned)(st.st_mode & 07777));
		return -EACCES;
	}
	return 0;
}

int pmemz_socket_dir_prepare(const char *dir, char *why, size_t len)
{
	int r;

	if (pmemz_is_fallback_dir(dir))
		return pmemz_fallback_dir_check(dir, true, why, len);
	r = pmemz_mkdir_p(dir, 0755);
	if (r < 0)
		(void)snprintf(why, len, "%s", strerror(-r));
	return r;
}

int pmemz_private_dir(const char *path, uid_t *owner)
{
	struct stat st;
	char *slash;
	int r;

	*owner = (uid_t)-1;
	if (lstat(path, &st) < 0) {
		char parent[PATH_MAX];

		if (errno != ENOENT)
			return -errno;
		if (strlen(path) >= sizeof(parent))
			return -ENAMETOOLONG;
		/* Missing parents too (~/.local/state), private like XDG wants them. */
		memcpy(parent, path, strlen(path) + 1);
		slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = '\0';
			r = pmemz_mkdir_p(parent, 0700);
			if (r < 0)
				return r;
		}
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		if (lstat(path, &st) < 0)
			return -errno;
	}
	/*
	 * Whoever owns the directory, or can point it elsewhere, decides what
	 * the region file is: refuse anything but our own real directory.
	 */
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid()) {
		*owner = st.st_uid;
		return -EPERM;
	}
	return 0;
}
