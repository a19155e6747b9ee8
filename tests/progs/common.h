/* Helpers shared by the test programs: a clock, a summary of samples, and a
 * seccomp filter for epoll_pwait2. Built for glibc and musl, so no kernel
 * headers: the few seccomp ABI constants are spelled out (they never change). */
#ifndef EF_TEST_COMMON_H
#define EF_TEST_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
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

/* ---- what the benchmark driver (bench/run) reads: one line
 * "count=.. waits=.. cpu_ns=.. wall_ns=.. nvcsw=..", and with --raw FILE one
 * sample in ns a line ---- */

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

/* ---- seccomp ---- */
struct ef_sock_filter { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct ef_sock_fprog { unsigned short len; struct ef_sock_filter *filter; };
#define EF_BPF_LD_W_ABS 0x20
#define EF_BPF_JEQ_K 0x15
#define EF_BPF_RET_K 0x06
#define EF_RET_ALLOW 0x7fff0000u
#define EF_RET_ERRNO 0x00050000u
#define EF_RET_KILL_PROCESS 0x80000000u
#define EF_NR_EPOLL_PWAIT2 441
#if defined(__x86_64__)
#define EF_AUDIT_ARCH 0xc000003eu
#elif defined(__aarch64__)
#define EF_AUDIT_ARCH 0xc00000b7u
#else
#error "add this architecture's AUDIT_ARCH value"
#endif

/* "eperm", "enosys" or "kill": what epoll_pwait2 gets from now on, in this
 * process and everything it execs. Returns 0, or -1 with a message on stderr. */
static inline int filter_pwait2(const char *how)
{
	uint32_t action;
	if (strcmp(how, "eperm") == 0)
		action = EF_RET_ERRNO | EPERM;
	else if (strcmp(how, "enosys") == 0)
		action = EF_RET_ERRNO | ENOSYS;
	else if (strcmp(how, "kill") == 0)
		action = EF_RET_KILL_PROCESS;
	else {
		fprintf(stderr, "filter: '%s' is not eperm, enosys or kill\n", how);
		return -1;
	}
	struct ef_sock_filter f[] = {
		{ EF_BPF_LD_W_ABS, 0, 0, 4 }, /* seccomp_data.arch */
		{ EF_BPF_JEQ_K, 1, 0, EF_AUDIT_ARCH },
		{ EF_BPF_RET_K, 0, 0, EF_RET_ALLOW },
		{ EF_BPF_LD_W_ABS, 0, 0, 0 }, /* seccomp_data.nr */
		{ EF_BPF_JEQ_K, 0, 1, EF_NR_EPOLL_PWAIT2 },
		{ EF_BPF_RET_K, 0, 0, action },
		{ EF_BPF_RET_K, 0, 0, EF_RET_ALLOW },
	};
	struct ef_sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, 2, &prog, 0, 0)) {
		perror("filter: prctl");
		return -1;
	}
	return 0;
}

#endif
