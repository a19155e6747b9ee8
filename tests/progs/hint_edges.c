/* The edges of the exact-timeout API (epollfix_hint_ns, epollfix_epoll_wait_ns),
 * each as a program would meet it. Looks the library up with dlsym, so it runs
 * with the library preloaded; prints key=value lines from the library's own
 * counters (epollfix_counters), each the change over the case.
 *
 *   ef-hint-edges eintr    a hint of 25.5 ms, its epoll_wait(26 ms) interrupted
 *                          by a signal whose handler outlives the deadline, and
 *                          the program, as CPython does then, gives up: the
 *                          thread's next epoll_wait(1 ms) must not take the
 *                          hint. after_eintr_hinted= (0: it did not)
 *   ef-hint-edges tiny     hints of 0 and 1 ns, each then epoll_wait(1 ms):
 *                          tiny_hinted= (2) and tiny_max_us= (a poll, not 1 ms;
 *                          for the record, not for a test to compare)
 *   ef-hint-edges huge     epollfix_epoll_wait_ns near INT64_MAX on a ready
 *                          eventfd: huge_result= (1 each), huge_longer= and
 *                          huge_negative= (the timeout counted as the longest
 *                          one, never as a negative one) */
#include "clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/time.h>

#include "epollfix.h"

typedef int (*hint_fn)(int64_t);
typedef int (*wait_ns_fn)(int, struct epoll_event *, int, int64_t);
typedef int (*counters_fn)(struct epollfix_counters *, size_t);

static counters_fn counters;
static int64_t handler_until;

static struct epollfix_counters now_counters(void)
{
	struct epollfix_counters c;
	memset(&c, 0, sizeof c);
	counters(&c, sizeof c);
	return c;
}

static void slow_handler(int sig)
{
	(void)sig;
	while (now_ns() < handler_until) /* a handler that outlives the deadline */
		;
}

static int eintr_case(hint_fn hint, int ep)
{
	struct epoll_event ev;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = slow_handler; /* no SA_RESTART; epoll_wait never restarts anyway */
	sigaction(SIGALRM, &sa, NULL);

	epoll_wait(ep, &ev, 1, 0); /* the library's first call, before the clock starts */
	int r = 0, err = 0;
	/* A machine so loaded that the signal comes before the wait began: again. */
	for (int tries = 0; tries < 3 && !(r == -1 && err == EINTR); tries++) {
		handler_until = now_ns() + 40000000; /* well past the hint's deadline */
		struct itimerval it = { .it_value = { .tv_usec = 5000 } };
		setitimer(ITIMER_REAL, &it, NULL);
		hint(25500000);
		r = epoll_wait(ep, &ev, 1, 26);
		err = errno;
	}
	if (!(r == -1 && err == EINTR)) {
		printf("eintr=not interrupted r=%d\n", r);
		return 1;
	}
	/* The program's deadline has passed: it does not retry (PEP 475's rule). */
	struct epollfix_counters before = now_counters();
	r = epoll_wait(ep, &ev, 1, 1);
	struct epollfix_counters after = now_counters();
	printf("after_eintr_hinted=%llu\n", (unsigned long long)(after.hinted - before.hinted));
	return r == 0 ? 0 : 1;
}

static int tiny_case(hint_fn hint, int ep)
{
	struct epoll_event ev;
	struct epollfix_counters before = now_counters();
	int64_t worst = 0;
	for (int64_t ns = 0; ns <= 1; ns++) {
		int64_t t = now_ns();
		hint(ns);
		if (epoll_wait(ep, &ev, 1, 1) != 0)
			return 1;
		t = now_ns() - t;
		worst = t > worst ? t : worst;
	}
	struct epollfix_counters after = now_counters();
	printf("tiny_hinted=%llu\ntiny_max_us=%lld\n",
	       (unsigned long long)(after.hinted - before.hinted), (long long)(worst / 1000));
	return 0;
}

static int huge_case(wait_ns_fn wait_ns, int ep)
{
	struct epoll_event ev;
	int efd = eventfd(1, EFD_NONBLOCK); /* readable: every wait returns at once */
	struct epoll_event in = { .events = EPOLLIN, .data.fd = efd };
	if (efd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &in) != 0)
		return 1;
	static const int64_t ns[] = { INT64_MAX, INT64_MAX - 1, INT64_MAX - 999999,
				      INT64_MAX - 1000000, (int64_t)INT32_MAX * 1000000 + 1 };
	struct epollfix_counters before = now_counters();
	int results = 0;
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
		results += wait_ns(ep, &ev, 1, ns[i]);
	struct epollfix_counters after = now_counters();
	printf("huge_result=%d\nhuge_longer=%llu\nhuge_negative=%llu\n", results,
	       (unsigned long long)(after.timeout_longer - before.timeout_longer),
	       (unsigned long long)(after.timeout_negative - before.timeout_negative));
	return 0;
}

int main(int argc, char **argv)
{
	hint_fn hint = (hint_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "epollfix_hint_ns");
	wait_ns_fn wait_ns = (wait_ns_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "epollfix_epoll_wait_ns");
	counters = (counters_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "epollfix_counters");
	if (argc != 2 || !hint || !wait_ns || !counters) {
		fprintf(stderr, "usage: LD_PRELOAD=libepollfix.so ef-hint-edges eintr|tiny|huge\n");
		return 2;
	}
	int ep = epoll_create1(0);
	if (!strcmp(argv[1], "eintr"))
		return eintr_case(hint, ep);
	if (!strcmp(argv[1], "tiny"))
		return tiny_case(hint, ep);
	if (!strcmp(argv[1], "huge"))
		return huge_case(wait_ns, ep);
	return 2;
}
