/* The runtime API of include/epollfix.h, on real epoll fds from several
 * threads. The library is dlopen'ed RTLD_LOCAL: its epoll_wait is called
 * through the handle, and the runner's own calls stay libc's. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "epollfix.h"

static void *lib;
static int (*lib_epoll_wait)(int, struct epoll_event *, int, int);
static int (*set)(const char *, char *, size_t);
static int (*counters)(struct epollfix_counters *, size_t);
static const char *(*version)(void);

static void load(void)
{
	lib = dlopen(EF_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(lib, "dlopen: %s", dlerror());
	*(void **)&lib_epoll_wait = dlsym(lib, "epoll_wait");
	*(void **)&set = dlsym(lib, "epollfix_set");
	*(void **)&counters = dlsym(lib, "epollfix_counters");
	*(void **)&version = dlsym(lib, "epollfix_version");
	cr_assert(lib_epoll_wait && set && counters && version);
}

TestSuite(api, .init = load);

static int idle_epoll(void)
{
	int ep = epoll_create1(0), p[2];
	cr_assert(ep >= 0 && pipe(p) == 0);
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	return ep;
}

/* n 1 ms waits through the library: their median, and in *shortest the
 * shortest. A wait was upgraded when the shortest is under 900 us, which no
 * load can fake; load only lengthens waits, so a median can pass 1 ms under
 * load although every wait was upgraded, and a median over 900 us says that
 * none was. */
static long wait_us(int ep, int n, long *shortest)
{
	long us[64];
	struct epoll_event out[1];
	for (int i = 0; i < n; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		cr_assert_eq(lib_epoll_wait(ep, out, 1, 1), 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		us[i] = (b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
	}
	for (int i = 1; i < n; i++) /* insertion sort: n is small */
		for (int j = i; j > 0 && us[j - 1] > us[j]; j--) {
			long t = us[j];
			us[j] = us[j - 1];
			us[j - 1] = t;
		}
	if (shortest)
		*shortest = us[0];
	return us[n / 2];
}

static long median_wait_us(int ep, int n)
{
	return wait_us(ep, n, NULL);
}

static long shortest_wait_us(int ep, int n)
{
	long shortest;
	wait_us(ep, n, &shortest);
	return shortest;
}

Test(api, version)
{
	cr_assert_str_eq(version(), EPOLLFIX_VERSION);
}

Test(api, set_changes_the_policy_now)
{
	int ep = idle_epoll();
	cr_assert_eq(set("subms=off", NULL, 0), 0);
	cr_assert_gt(median_wait_us(ep, 15), 900, "subms=off: real 1 ms waits");
	cr_assert_eq(set("EPOLLFIX_SUBMS=50us", NULL, 0), 0);
	cr_assert_lt(shortest_wait_us(ep, 31), 900, "subms=50us: upgraded");
	cr_assert_eq(set("disable=1", NULL, 0), 0);
	cr_assert_gt(median_wait_us(ep, 15), 900, "disable=1");
	cr_assert_eq(set("disable=0", NULL, 0), 0);
	close(ep);
}

Test(api, refused_words_leave_the_policy_and_say_why)
{
	char err[256];
	int ep = idle_epoll();
	errno = 0;
	cr_assert_eq(set("subms=abc", err, sizeof(err)), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_str_eq(err, "EPOLLFIX_SUBMS='abc' is not a duration (like 50us)");
	cr_assert_eq(set("nonsense=1", err, sizeof(err)), -1);
	cr_assert_str_eq(err, "'nonsense' is not a setting of epollfix");
	cr_assert_eq(set("subms", err, sizeof(err)), -1);
	cr_assert_str_eq(err, "'subms' is not key=value");
	cr_assert_eq(set(NULL, err, 4), -1);
	cr_assert_eq(strlen(err), 3, "cut to the caller's buffer");
	cr_assert_lt(shortest_wait_us(ep, 31), 900, "the default policy still holds");
	close(ep);
}

static atomic_int stop;
static atomic_long waits_done;

static void *waiter(void *arg)
{
	(void)arg;
	int ep = idle_epoll();
	struct epoll_event out[1];
	while (!atomic_load(&stop)) {
		int timeouts[] = { 1, 0, 1, 2 };
		for (int i = 0; i < 4; i++)
			if (lib_epoll_wait(ep, out, 1, timeouts[i]) != 0)
				abort();
		atomic_fetch_add(&waits_done, 4);
	}
	close(ep);
	return NULL;
}

Test(api, changing_the_policy_while_threads_wait)
{
	pthread_t t[4];
	struct epollfix_counters before, after;
	cr_assert_eq(counters(&before, sizeof(before)), 0);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, waiter, NULL);
	static const char *const words[] = { "subms=20us", "max-ms=2", "slack=keep", "clamp=100us",
					      "subms=off", "log=quiet", "subms=50us", "max-ms=1",
					      "slack=1us", "clamp=off" };
	for (int round = 0; round < 200; round++) {
		cr_assert_eq(set(words[round % 10], NULL, 0), 0);
		usleep(500);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(counters(&after, sizeof(after)), 0);
	long calls = (long)(after.epoll_wait - before.epoll_wait);
	cr_assert_eq(calls, atomic_load(&waits_done), "every call counted once: %ld counted of %ld",
		     calls, atomic_load(&waits_done));
	cr_assert_eq(after.upgraded + after.passed + after.clamped,
		     after.epoll_wait + after.epoll_pwait);
	cr_assert_gt(after.upgraded - before.upgraded, 0);
}

Test(api, counters_respect_the_callers_size)
{
	struct epollfix_counters c;
	memset(&c, 0xab, sizeof(c));
	cr_assert_eq(counters(&c, sizeof(uint64_t)), 0);
	cr_assert_eq(c.epoll_pwait, 0xababababababababull, "only the first member written");
	errno = 0;
	cr_assert_eq(counters(NULL, sizeof(c)), -1);
	cr_assert_eq(errno, EINVAL);
}
