/* What the benchmark driver (bench/run) reads from every program it runs, the
 * benchmarks' own and the test programs it borrows (tests/progs/libev_timer.c):
 * one line "count=.. waits=.. cpu_ns=.. wall_ns=.. nvcsw=.." on stdout, and
 * with --raw FILE one sample in ns a line in FILE. */
#ifndef EF_BENCH_OUTPUT_H
#define EF_BENCH_OUTPUT_H

#include "clock.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

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

#endif
