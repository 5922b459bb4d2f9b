/* SPDX-License-Identifier: MIT */
/*
 * Which libpmemzclient this is, for a program that was built against
 * another one: the shared object a program loads is whatever the system has
 * (a newer package, an older one left behind), and a flag or a behaviour
 * added in a minor release shows in no symbol version.
 */
#include <errno.h>

#include "client-private.h"

PMEMZ_EXPORT const char *pmemz_library_version(void)
{
	return PMEMZ_CLIENT_VERSION;
}

/*
 * Compatible: the same major (another one would be another soname, loaded
 * only by a program that asked for it by path) and at least the minor.
 */
PMEMZ_EXPORT const char *pmemz_check_version(unsigned major_required, unsigned minor_required)
{
	if (major_required != PMEMZ_CLIENT_MAJOR) {
		(void)pmemz_err(-ENOTSUP,
				"libpmemzclient major version mismatch: %u.x is needed, %s is loaded",
				major_required, PMEMZ_CLIENT_VERSION);
		return pmemz_errormsg();
	}
	if (minor_required > PMEMZ_CLIENT_MINOR) {
		(void)pmemz_err(-ENOTSUP,
				"libpmemzclient %u.%u or a later %u.x is needed, %s is loaded",
				major_required, minor_required, major_required, PMEMZ_CLIENT_VERSION);
		return pmemz_errormsg();
	}
	return NULL;
}
