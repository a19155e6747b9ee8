/* Shared by the matrix's C programs: a clock and the one report line,
 * "fires=N lateness_p50_us=.. lateness_p90_us=.. elapsed_ms=..". */
#ifndef EF_MATRIX_H
#define EF_MATRIX_H

#include "clock.h"

#include <string.h>

/* With MX_FIRES=PATH in the environment, the fire times (CLOCK_MONOTONIC ns)
 * are written to PATH at the end, one a line: tests/matrix/pattern lines them
 * up with a COUNTWAITS_TRACE. */
static int64_t *mx_fires;
static long mx_nfires, mx_maxfires;

static inline void mx_fires_init(long count)
{
	if (getenv("MX_FIRES") && (mx_fires = calloc((size_t)count, sizeof(*mx_fires))))
		mx_maxfires = count;
}

static inline void mx_fire(int64_t t)
{
	if (mx_nfires < mx_maxfires)
		mx_fires[mx_nfires++] = t;
}

static inline void mx_fires_write(void)
{
	FILE *f;
	if (!mx_fires || !(f = fopen(getenv("MX_FIRES"), "w")))
		return;
	for (long i = 0; i < mx_nfires; i++)
		fprintf(f, "%lld\n", (long long)mx_fires[i]);
	fclose(f);
}

/* late[i]: ns past fire i's deadline. Sorts late. */
static inline void mx_report(int64_t *late, long n, int64_t started_ns)
{
	mx_fires_write();
	qsort(late, (size_t)n, sizeof(*late), cmp_i64);
	printf("fires=%ld lateness_p50_us=%lld lateness_p90_us=%lld elapsed_ms=%lld\n", n,
	       n ? (long long)(late[n / 2] / 1000) : 0, n ? (long long)(late[n * 9 / 10] / 1000) : 0,
	       (long long)((now_ns() - started_ns) / 1000000));
	fflush(stdout);
}

/* "--name value" options with integer values. */
static inline long mx_arg(int argc, char **argv, const char *name, long fallback)
{
	for (int i = 1; i + 1 < argc; i += 2)
		if (!strcmp(argv[i], name))
			return atol(argv[i + 1]);
	return fallback;
}

#endif
