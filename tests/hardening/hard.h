/* Helpers for the hardening programs: an idle epoll fd, the median of a run of
 * epoll waits, and the library's counters when it is loaded. Built for glibc
 * and musl (no kernel headers). */
#ifndef EF_HARD_H
#define EF_HARD_H

#include "clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* An epoll fd watching the read end of a pipe nobody writes to. */
static inline int idle_epoll(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), fds[2];
	if (ep < 0 || pipe(fds))
		return -1;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[0] };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev))
		return -1;
	return ep;
}

/* The median in us of count waits of timeout ms on ep (epoll_wait or, with
 * pwait, epoll_pwait with the current mask); -1 if a wait did not return 0.
 * With min_us, also the shortest: a wait of 1 ms never ends sooner, and load
 * only ever lengthens a wait, so "the shortest under 1 ms" proves an upgrade
 * where a median can be pushed past 1 ms by preemption alone. */
static inline long median_wait_us(int ep, int pwait, int timeout, int count, long *min_us)
{
	int64_t s[256];
	struct epoll_event out[4];
	sigset_t cur;

	if (min_us)
		*min_us = -1;
	if (count > 256)
		count = 256;
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	for (int i = 0; i < count; i++) {
		int64_t t0 = now_ns();
		int r = pwait ? epoll_pwait(ep, out, 4, timeout, &cur) : epoll_wait(ep, out, 4, timeout);
		if (r != 0)
			return -1;
		s[i] = now_ns() - t0;
	}
	qsort(s, (size_t)count, sizeof(s[0]), cmp_i64);
	if (min_us)
		*min_us = (long)(s[0] / 1000);
	return (long)(s[count / 2] / 1000);
}

/* The library's counters, through its public API if it is loaded. */
struct hard_counters {
	uint64_t c[13];
};
static inline int hard_counters(struct hard_counters *out)
{
	int (*fn)(void *, size_t);
	*(void **)&fn = dlsym(RTLD_DEFAULT, "epollfix_counters");
	memset(out, 0, sizeof(*out));
	return fn && fn(out, sizeof(*out)) == 0;
}
#define HC_UPGRADED 7
#define HC_CLAMPED 8
#define HC_PASSED 9
#define HC_FELL_BACK 10

/* "library=absent" or "upgraded=N clamped=N passed=N fell_back=N". */
static inline void print_counters(void)
{
	struct hard_counters c;
	if (!hard_counters(&c)) {
		printf("library=absent");
		return;
	}
	printf("upgraded=%llu clamped=%llu passed=%llu fell_back=%llu",
	       (unsigned long long)c.c[HC_UPGRADED], (unsigned long long)c.c[HC_CLAMPED],
	       (unsigned long long)c.c[HC_PASSED], (unsigned long long)c.c[HC_FELL_BACK]);
}

#endif
