/* The floor under the cost of an upgraded wait: a preload that does only what
 * any library upgrading a continuing run of 1 ms waits must do, and nothing
 * that epollfix adds (no configuration, no policy, no counting). bench/run runs
 * efb-cost under it as under the library, so the two ratios over a direct
 * epoll_pwait2 compare like with like:
 *
 *   LD_PRELOAD=libefb-forward.so efb-cost ...
 *
 * epoll_wait(..., 1) becomes epoll_pwait2(EFB_FORWARD_NS, default 50 us), the
 * thread's timer slack set to EFB_FORWARD_SLACK (ns, default 1000) once, at its
 * first such wait, as epollfix keeps it through a run. With EFB_FORWARD_CLOCKS=1
 * it also reads CLOCK_MONOTONIC before and after the wait, as a policy that
 * learns from how long waits take must. Every other call goes to libc's
 * epoll_wait. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>

typedef int (*wait_fn)(int, struct epoll_event *, int, int);

static wait_fn real_wait;
static long wait_ns = 50000, slack_ns = 1000;
static int clocks;
static __thread int slack_set;
static __thread volatile int64_t clock_sink;

static long env_long(const char *name, long fallback)
{
	const char *v = getenv(name);
	return v && *v ? atol(v) : fallback;
}

__attribute__((constructor)) static void forward_init(void)
{
	real_wait = (wait_fn)dlsym(RTLD_NEXT, "epoll_wait");
	wait_ns = env_long("EFB_FORWARD_NS", wait_ns);
	slack_ns = env_long("EFB_FORWARD_SLACK", slack_ns);
	clocks = env_long("EFB_FORWARD_CLOCKS", 0) != 0;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((visibility("default"))) int epoll_wait(int epfd, struct epoll_event *ev,
						      int maxevents, int timeout)
{
	if (timeout != 1)
		return real_wait(epfd, ev, maxevents, timeout);
	if (!slack_set) {
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack_ns, 0UL, 0UL, 0UL);
		slack_set = 1;
	}
	struct timespec ts = { wait_ns / 1000000000, wait_ns % 1000000000 };
	if (clocks)
		clock_sink = mono_ns();
	int r = epoll_pwait2(epfd, ev, maxevents, &ts, NULL);
	if (clocks)
		clock_sink = mono_ns();
	return r;
}
