/* An event loop's timer, as CPython, libev, mio and Redis write it: keep a
 * deadline in nanoseconds, wait ceil(remaining) milliseconds, re-check the
 * clock when the wait comes back empty, and fire only once the deadline passed.
 *
 *   ef-sleep [--api wait|pwait] [--sleep-us N] [--count N] [--fixed-ms T]
 *            [--filter-after K eperm|enosys|kill]
 *
 * Prints "median_us=.. min_us=.. max_us=.. waits=..": the elapsed time of each
 * sleep and the number of epoll calls made. --fixed-ms T instead makes each
 * sleep one epoll call with timeout T. --filter-after installs a seccomp filter
 * on epoll_pwait2 after K sleeps (a filter that arrives after start-up). */
#include "clock.h"
#include "seccomp_filter.h"

#include <signal.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *api = "wait", *filter = NULL;
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
		} else {
			fprintf(stderr, "usage: %s [--api wait|pwait] [--sleep-us N] [--count N] "
					"[--fixed-ms T] [--filter-after K eperm|enosys|kill]\n", argv[0]);
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

	int64_t *samples = calloc((size_t)count, sizeof(*samples));
	long waits = 0;
	for (long n = 0; n < count; n++) {
		if (n == filter_after && filter_pwait2(filter))
			return 1;
		int64_t start = now_ns(), deadline = start + sleep_us * 1000, now = start;
		do {
			int timeout = fixed_ms >= 0 ? (int)fixed_ms
						    : (int)((deadline - now + 999999) / 1000000);
			int r = use_pwait ? epoll_pwait(ep, out, 8, timeout, &mask)
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
	print_summary(samples, (size_t)count);
	printf(" waits=%ld\n", waits);
	return 0;
}
