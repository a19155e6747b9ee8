/* What the libFuzzer targets of a decoder share: the bytes, a program's code
 * as hostile input, copied at their exact size, and a check that aborts. */
#ifndef EPOLLFIX_FUZZ_HOSTILE_H
#define EPOLLFIX_FUZZ_HOSTILE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A failed check aborts: libFuzzer reports it as a crash. */
static inline void check(int ok)
{
	if (!ok)
		abort();
}

/* The first *size bytes of data, at most 4096 (*size cut to them), in an
 * allocation of exactly that size, so that AddressSanitizer sees any read
 * past the end; free() it. */
static inline uint8_t *hostile_copy(const uint8_t *data, size_t *size)
{
	if (*size > 4096)
		*size = 4096;
	uint8_t *p = malloc(*size ? *size : 1);
	check(p != NULL);
	memcpy(p, data, *size);
	return p;
}

#endif
