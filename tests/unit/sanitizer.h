/* SPDX-License-Identifier: MIT */
/*
 * PMEMZ_TEST_ASAN: built with AddressSanitizer (gcc or clang), whose
 * allocator replaces glibc's malloc -- mallinfo2 then sees an empty glibc
 * heap, and malloc_trim has nothing to give back.
 */
#ifndef PMEMZ_TEST_SANITIZER_H
#define PMEMZ_TEST_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define PMEMZ_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PMEMZ_TEST_ASAN 1
#endif
#endif
#ifndef PMEMZ_TEST_ASAN
#define PMEMZ_TEST_ASAN 0
#endif

#endif
