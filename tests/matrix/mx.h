/* Shared by the matrix's C programs: a clock and the one report line,
 * "fires=N lateness_p50_us=.. lateness_p90_us=.. lateness_p99_us=.. lateness_min_us=..
 * elapsed_ms=..", with " vcsw=.. cpu_us=.." after mx_usage_start(). */
#ifndef EF_MATRIX_H
#define EF_MATRIX_H

#include "bench_output.h" /* nvcsw */
#include "clock.h"        /* now_ns, cmp_i64, cpu_ns */

#include <string.h>

/* The process's voluntary context switches (its wake-ups) and user+system CPU
 * from mx_usage_start(), called just before the first timer, to the report:
 * start-up is left out. */
static int64_t mx_cpu0;
static long mx_csw0 = -1;

static inline void mx_usage_start(void)
{
	mx_cpu0 = cpu_ns();
	mx_csw0 = nvcsw();
}

static inline void mx_usage_print(void)
{
	if (mx_csw0 >= 0)
		printf(" vcsw=%ld cpu_us=%lld", nvcsw() - mx_csw0,
		       (long long)((cpu_ns() - mx_cpu0) / 1000));
}

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
	printf("fires=%ld lateness_p50_us=%lld lateness_p90_us=%lld lateness_p99_us=%lld "
	       "lateness_min_us=%lld elapsed_ms=%lld",
	       n, n ? (long long)(late[n / 2] / 1000) : 0, n ? (long long)(late[n * 9 / 10] / 1000) : 0,
	       n ? (long long)(late[n * 99 / 100] / 1000) : 0, n ? (long long)(late[0] / 1000) : 0,
	       (long long)((now_ns() - started_ns) / 1000000));
	mx_usage_print();
	printf("\n");
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
