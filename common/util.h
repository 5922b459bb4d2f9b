/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the daemon, the client library and pmemzctl. */
#ifndef PMEMZ_UTIL_H
#define PMEMZ_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))
#define ALIGN_UP(n, a) (DIV_ROUND_UP((n), (a)) * (a))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

static inline void freep(void *p)
{
	free(*(void **)p);
}
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		(void)close(*fd);
		errno = saved;
	}
}
static inline void fclosep(FILE **f)
{
	if (*f)
		(void)fclose(*f);
}
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Defines type##_freep(type **p) calling func(*p) when non-NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
	static inline void func##p(type *p)                                                        \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}

/* Hand ownership out of a cleanup variable. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _tp = (p);                                                           \
		(p) = NULL;                                                                        \
		_tp;                                                                               \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _tf = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_tf;                                                                               \
	})

/*
 * "4096", "64K", "2M", "1G", "1T" (binary multiples; an optional trailing
 * "B"/"iB" is accepted).  -EINVAL for garbage, -ERANGE on overflow.
 */
int pmemz_parse_size(const char *s, uint64_t *out);

/*
 * A rate in bytes per second, the one syntax of zero_rate, zero_pace_rate
 * and pmemzctl set-rate: a size as above with an optional "/s", units and
 * suffixes in any case ("512M", "2g/S", "300KiB/s"); "unlimited" (any case)
 * is 0, as is "0".  -EINVAL, -ERANGE, or -ENOMEM.
 */
int pmemz_parse_rate(const char *s, uint64_t *out);

/* "1.5 GiB" style; returns buf. */
const char *pmemz_format_size(uint64_t bytes, char *buf, size_t len);

/* Monotonic clock in nanoseconds. */
uint64_t pmemz_now_ns(void);

/*
 * Default paths, shared so the daemon and its clients agree.
 * Socket: $RUNTIME_DIRECTORY/pmemzerod.sock (systemd), else for root
 * /run/pmemzerod/pmemzerod.sock, else $XDG_RUNTIME_DIR/pmemzerod/pmemzerod.sock,
 * else /tmp/pmemzerod-UID/pmemzerod.sock.
 * A client (daemon == false) prefers the system socket when it exists.
 * State: $STATE_DIRECTORY, else /var/lib/pmemzerod for root, else
 * $XDG_STATE_HOME/pmemzerod, else ~/.local/state/pmemzerod.
 * Results are malloc'ed.
 */
#define PMEMZ_SYSTEM_SOCKET "/run/pmemzerod/pmemzerod.sock"
int pmemz_default_socket_path(bool daemon, char **out);
int pmemz_default_state_dir(char **out);
/* mkdir -p with mode for the missing components. */
int pmemz_mkdir_p(const char *path, mode_t mode);
/*
 * A directory only the caller's euid controls: created (mode 0700, missing
 * parents 0700 too) when absent.  -ELOOP when it is a symlink, -ENOTDIR when
 * not a directory, -EPERM when another user owns it (*owner = that uid,
 * else (uid_t)-1), or mkdir's -errno.
 */
int pmemz_private_dir(const char *path, uid_t *owner);

/*
 * The socket directory of last resort, /tmp/pmemzerod-EUID: anyone may
 * create that name first in /tmp, so it is trusted only as a directory
 * (not a symlink) owned by the effective uid and writable by it alone.
 * pmemz_fallback_dir_check: 0, or -ENOTDIR / -ELOOP / -EPERM / -EACCES
 * with why set ("a symbolic link", "owned by uid 1001", ...); -ENOENT when
 * missing (then, with create, it is made 0700 and checked again).
 * pmemz_socket_dir_prepare: for a daemon about to bind in dir: the checks
 * and creation for the fallback directory, mkdir -p 0755 for any other.
 */
bool pmemz_is_fallback_dir(const char *dir);
int pmemz_fallback_dir_check(const char *dir, bool create, char *why, size_t len);
int pmemz_socket_dir_prepare(const char *dir, char *why, size_t len);

#endif
