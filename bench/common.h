/* Shared by the benchmark programs: clocks, CPU time, wake-up counts and the
 * output every program gives the driver (bench/run):
 *   one summary line "count=.. waits=.. cpu_ns=.. wall_ns=.. nvcsw=.." on stdout,
 *   and with --raw FILE one sample in ns a line in FILE. */
#ifndef EFB_COMMON_H
#define EFB_COMMON_H

#include "../tests/progs/common.h" /* now_ns, and the test programs' other helpers */

#include <sys/resource.h>

/* user+sys of the whole process (all threads), precise to the scheduler clock */
static inline int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* voluntary context switches of the whole process: each is a thread going to sleep */
static inline long nvcsw(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw;
}

struct efb_mark { int64_t wall, cpu; long csw; };

static inline struct efb_mark efb_mark(void)
{
	struct efb_mark m = { now_ns(), cpu_ns(), nvcsw() };
	return m;
}

static inline void efb_report(struct efb_mark start, long count, long waits)
{
	struct efb_mark end = efb_mark();
	printf("count=%ld waits=%ld cpu_ns=%lld wall_ns=%lld nvcsw=%ld\n", count, waits,
	       (long long)(end.cpu - start.cpu), (long long)(end.wall - start.wall),
	       end.csw - start.csw);
}

static inline int efb_write_raw(const char *path, const int64_t *ns, long n)
{
	if (!path)
		return 0;
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	for (long i = 0; i < n; i++)
		fprintf(f, "%lld\n", (long long)ns[i]);
	return fclose(f);
}

static inline void efb_usage(const char *text)
{
	fprintf(stderr, "usage: %s\n", text);
	exit(2);
}

#endif
