/* Clocks and the summary of timed samples, for the test programs, the
 * hardening programs, the matrix and the benchmarks. Built for glibc and musl. */
#ifndef EF_TEST_CLOCK_H
#define EF_TEST_CLOCK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* user+sys of the whole process (all threads), precise to the scheduler clock */
static inline int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Prints "median_us=.. min_us=.. max_us=.." for n samples in ns (sorts them). */
static inline void print_summary(int64_t *ns, size_t n)
{
	qsort(ns, n, sizeof(*ns), cmp_i64);
	printf("median_us=%lld min_us=%lld max_us=%lld", (long long)(ns[n / 2] / 1000),
	       (long long)(ns[0] / 1000), (long long)(ns[n - 1] / 1000));
}

#endif
