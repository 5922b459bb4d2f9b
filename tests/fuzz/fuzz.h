/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer harnesses: an assertion that survives NDEBUG and
 * reports where it failed (libFuzzer then saves the input as a crash).
 */
#ifndef PMEMZ_FUZZ_H
#define PMEMZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* protobuf-c and the configuration structs only read the strings we hand them. */
static inline char *fuzz_mut(const char *s)
{
	return (char *)(uintptr_t)s;
}

#define FUZZ_ASSERT(cond)                                                                        \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: %s: assertion failed: %s\n", __FILE__, __LINE__, \
				__func__, #cond);                                                \
			abort();                                                                 \
		}                                                                                \
	} while (0)

#endif
