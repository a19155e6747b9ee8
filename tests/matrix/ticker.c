/* A plain loop that means its 1 ms: epoll_wait(ep, ev, n, 1) on an idle
 * epoll set, again and again, with a little work after each return (about
 * WORK_US of arithmetic: a tick that looks at some state), for MS
 * milliseconds. Its stream of 1 ms requests never ends and never finds an
 * event: nothing in the stream tells it from a loop whose 1 ms hides a
 * sub-millisecond deadline.
 *
 *   ef-m-ticker [--ms 1000] [--work-us 5] [--threads 1]
 *
 * With --threads N, N-1 more threads run the same loop on epoll sets of their
 * own (a service with many loops); ticks, vcsw and cpu are the whole process's.
 *
 * Prints "ticks=N elapsed_ms=.. vcsw=.. cpu_us=.. after_ms=.. after_ticks=..
 * after_vcsw=.. after_cpu_us=..": the whole run, then from 100 ms on
 * (getrusage and the process CPU clock in the process itself). A tick is a
 * return of epoll_wait: on an idle set a 1 ms wait never returns sooner, so
 * a thread ticks at most 1,000 times a second without the library, however
 * loaded the machine. */
#include "mx.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <unistd.h>

static volatile uint64_t sink;

/* Spins about work_ns of CPU. */
static void work(int64_t work_ns)
{
	int64_t end = now_ns() + work_ns;
	uint64_t x = sink;
	while (now_ns() < end)
		for (int i = 0; i < 64; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

static long work_us_all;
static atomic_long ticks; /* every thread's */

/* Another thread's loop, until the main one's end. */
static void *other_loop(void *arg)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev[8];
	int64_t end = *(const int64_t *)arg;
	while (ep >= 0 && now_ns() < end) {
		epoll_wait(ep, ev, 8, 1);
		atomic_fetch_add_explicit(&ticks, 1, memory_order_relaxed);
		work(work_us_all * 1000);
	}
	if (ep >= 0)
		close(ep);
	return NULL;
}

int main(int argc, char **argv)
{
	long ms = mx_arg(argc, argv, "--ms", 1000);
	long work_us = mx_arg(argc, argv, "--work-us", 5);
	long threads = mx_arg(argc, argv, "--threads", 1);
	work_us_all = work_us;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || ms <= 100) {
		fprintf(stderr, ep < 0 ? "epoll_create1 failed\n" : "--ms must be over 100\n");
		return 1;
	}
	struct epoll_event ev[8];
	int64_t start = now_ns(), end = start + ms * 1000000, mark_at = start + 100000000;
	int64_t cpu0 = cpu_ns(), cpu_mark = 0, t_mark = 0;
	long csw0 = nvcsw(), csw_mark = -1, ticks_mark = 0;
	pthread_t others[256];
	long started = 0;
	for (; started < threads - 1 && started < 256; started++)
		if (pthread_create(&others[started], NULL, other_loop, &end) != 0)
			break;
	for (int64_t t = start; t < end; t = now_ns()) {
		if (csw_mark < 0 && t >= mark_at) {
			t_mark = t;
			cpu_mark = cpu_ns();
			csw_mark = nvcsw();
			ticks_mark = atomic_load(&ticks);
		}
		if (epoll_wait(ep, ev, 8, 1) < 0) {
			perror("epoll_wait");
			return 1;
		}
		atomic_fetch_add_explicit(&ticks, 1, memory_order_relaxed);
		work(work_us * 1000);
	}
	int64_t t = now_ns(), cpu = cpu_ns();
	long csw = nvcsw(), n = atomic_load(&ticks);
	for (long i = 0; i < started; i++)
		pthread_join(others[i], NULL);
	printf("ticks=%ld elapsed_ms=%lld vcsw=%ld cpu_us=%lld after_ms=%lld after_ticks=%ld "
	       "after_vcsw=%ld after_cpu_us=%lld\n",
	       n, (long long)((t - start) / 1000000), csw - csw0, (long long)((cpu - cpu0) / 1000),
	       (long long)((t - t_mark) / 1000000), n - ticks_mark, csw - csw_mark,
	       (long long)((cpu - cpu_mark) / 1000));
	close(ep);
	return 0;
}
