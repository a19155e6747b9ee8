/* Shared by the benchmark programs: clocks, CPU time, wake-up counts and the
 * output every program gives the driver (bench/run):
 *   one summary line "count=.. waits=.. cpu_ns=.. wall_ns=.. nvcsw=.." on stdout,
 *   and with --raw FILE one sample in ns a line in FILE. */
#ifndef EFB_COMMON_H
#define EFB_COMMON_H

#include "../tests/progs/common.h" /* now_ns, cpu_ns, efb_mark, efb_report, efb_write_raw */

static inline void efb_usage(const char *text)
{
	fprintf(stderr, "usage: %s\n", text);
	exit(2);
}

#endif
