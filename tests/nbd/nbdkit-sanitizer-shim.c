/* SPDX-License-Identifier: MIT */
/*
 * Preloaded into the distribution's nbdkit after a sanitizer's runtime
 * (tests/nbd/nbdkit-sanitized.in), so that a sanitizer build's plugin runs
 * in it and every report names the plugin's code.  Not instrumented: it
 * runs before the runtime has initialized.
 *
 * newlocale: a preloaded runtime initializes at its first intercepted call,
 * and in nbdkit that is the malloc inside newlocale() in p11-kit's
 * constructor (gnutls's dependency, initialized before the runtime), with
 * glibc's locale lock held for writing.  The initialization calls dlerror(),
 * whose gettext takes the same lock for reading: refused (EDEADLK, ignored),
 * but its unlock releases the writer's hold, and newlocale's own unlock
 * then takes the reader count below zero.  The next writer, p11-kit's
 * freelocale() at exit, waits forever.  Initializing the runtime first,
 * with no lock held, keeps the lock whole.
 *
 * dlclose: nbdkit unloads the plugin before LeakSanitizer looks for leaks
 * at exit, which could then not say where in the plugin a leak was made.
 * The plugin stays mapped.
 */
#include <dlfcn.h>
#include <locale.h>

/* The runtime's entry points: the preloaded one is defined, the other not. */
extern void __asan_init(void) __attribute__((weak));
extern void __tsan_init(void) __attribute__((weak));

typedef locale_t (*newlocale_fn)(int, const char *, locale_t);

locale_t newlocale(int mask, const char *locale, locale_t base)
{
	static newlocale_fn real;
	newlocale_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (__asan_init)
		__asan_init();
	if (__tsan_init)
		__tsan_init();
	if (!fn) {
		fn = (newlocale_fn)dlsym(RTLD_NEXT, "newlocale");
		__atomic_store_n(&real, fn, __ATOMIC_RELEASE);
	}
	return fn(mask, locale, base);
}

int dlclose(void *handle)
{
	(void)handle;
	return 0;
}
