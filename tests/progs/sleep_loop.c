/* An event loop's timer, as CPython, libev, mio and Redis write it: keep a
 * deadline in nanoseconds, wait ceil(remaining) milliseconds, re-check the
 * clock when the wait comes back empty, and fire only once the deadline passed.
 *
 *   ef-sleep [--api wait|pwait] [--sleep-us N] [--count N] [--fixed-ms T]
 *            [--filter-after K eperm|enosys|kill]
 *            [--hint exact|stale|other-thread|preempted]
 *            [--dlopen LIB]
 *
 * Prints "median_us=.. min_us=.. max_us=.. waits=.. wakeups=..": the elapsed
 * time of each sleep, the number of epoll calls made and the voluntary context
 * switches of the whole run. --fixed-ms T instead makes each sleep one epoll
 * call with timeout T. --filter-after installs a seccomp filter on
 * epoll_pwait2 after K sleeps (a filter that arrives after start-up).
 * --hint says each wait's exact timeout first, through epollfix_hint_ns looked
 * up with dlsym (a program that runs without the library too): `exact` the
 * time left, `stale` 5 ms more than the call asks, `other-thread` the exact
 * time but from another thread, which this thread's waits must not take,
 * `preempted` the exact time, then a sleep past the deadline before the wait
 * (as a preemption between the two would), which asks the timeout computed
 * with the hint.
 * --dlopen LIB loads the library with dlopen, as a program started without
 * LD_PRELOAD would, and waits through its epollfix_epoll_wait_ns. */
#include "clock.h"
#include "seccomp_filter.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

typedef int (*hint_fn)(int64_t);
typedef int (*wait_ns_fn)(int, struct epoll_event *, int, int64_t);

struct other_hint {
	hint_fn hint;
	int64_t ns;
};

static void *hint_elsewhere(void *arg)
{
	struct other_hint *h = arg;
	h->hint(h->ns);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *api = "wait", *filter = NULL, *hint_how = NULL, *lib = NULL;
	long sleep_us = 50, count = 200, fixed_ms = -1, filter_after = -1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--api") && i + 1 < argc)
			api = argv[++i];
		else if (!strcmp(argv[i], "--sleep-us") && i + 1 < argc)
			sleep_us = atol(argv[++i]);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atol(argv[++i]);
		else if (!strcmp(argv[i], "--fixed-ms") && i + 1 < argc)
			fixed_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--filter-after") && i + 2 < argc) {
			filter_after = atol(argv[++i]);
			filter = argv[++i];
		} else if (!strcmp(argv[i], "--hint") && i + 1 < argc) {
			hint_how = argv[++i];
		} else if (!strcmp(argv[i], "--dlopen") && i + 1 < argc) {
			lib = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--api wait|pwait] [--sleep-us N] [--count N] "
					"[--fixed-ms T] [--filter-after K eperm|enosys|kill] "
					"[--hint exact|stale|other-thread|preempted] [--dlopen LIB]\n", argv[0]);
			return 2;
		}
	}
	int use_pwait = !strcmp(api, "pwait");
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int fds[2];
	if (ep < 0 || pipe(fds)) {
		perror("setup");
		return 1;
	}
	/* An idle fd, so the waits are real waits on a non-empty interest list. */
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[0] }, out[8];
	epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);
	sigset_t mask;
	sigemptyset(&mask);

	hint_fn hint = hint_how ? (hint_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "epollfix_hint_ns") : NULL;
	wait_ns_fn wait_ns = NULL;
	if (lib) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		wait_ns = h ? (wait_ns_fn)(uintptr_t)dlsym(h, "epollfix_epoll_wait_ns") : NULL;
		if (!wait_ns) {
			fprintf(stderr, "no epollfix_epoll_wait_ns in %s: %s\n", lib, dlerror());
			return 1;
		}
	}
	int64_t stale = hint_how && !strcmp(hint_how, "stale") ? 5000000 : 0;
	int other = hint_how && !strcmp(hint_how, "other-thread");
	int preempted = hint_how && !strcmp(hint_how, "preempted");

	int64_t *samples = calloc((size_t)count, sizeof(*samples));
	long waits = 0;
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	for (long n = 0; n < count; n++) {
		if (n == filter_after && filter_pwait2(filter))
			return 1;
		int64_t start = now_ns(), deadline = start + sleep_us * 1000, now = start;
		do {
			int timeout = fixed_ms >= 0 ? (int)fixed_ms
						    : (int)((deadline - now + 999999) / 1000000);
			if (hint && other) {
				struct other_hint h = { hint, deadline - now };
				pthread_t th;
				if (pthread_create(&th, NULL, hint_elsewhere, &h) == 0)
					pthread_join(th, NULL);
			} else if (hint) {
				hint(deadline - now + stale);
				if (preempted) {
					struct timespec past = { 0, deadline - now + 200000 };
					while (past.tv_nsec >= 1000000000) {
						past.tv_sec++;
						past.tv_nsec -= 1000000000;
					}
					nanosleep(&past, NULL);
				}
			}
			int r = wait_ns    ? wait_ns(ep, out, 8, deadline - now)
				: use_pwait ? epoll_pwait(ep, out, 8, timeout, &mask)
					    : epoll_wait(ep, out, 8, timeout);
			waits++;
			if (r != 0) {
				fprintf(stderr, "epoll_%s returned %d (%s) on an idle fd\n", api, r,
					r < 0 ? strerror(errno) : "events");
				return 1;
			}
		} while (fixed_ms < 0 && (now = now_ns()) < deadline);
		samples[n] = now_ns() - start;
	}
	getrusage(RUSAGE_SELF, &ru1);
	print_summary(samples, (size_t)count);
	printf(" waits=%ld wakeups=%ld\n", waits, ru1.ru_nvcsw - ru0.ru_nvcsw);
	return 0;
}
