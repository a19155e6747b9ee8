/* Shared by the benchmark programs: the output every program gives the driver
 * (bench/run, from tests/lib/bench_output.h) and the usage message. */
#ifndef EFB_COMMON_H
#define EFB_COMMON_H

#include "bench_output.h"

static inline void efb_usage(const char *text)
{
	fprintf(stderr, "usage: %s\n", text);
	exit(2);
}

#endif
