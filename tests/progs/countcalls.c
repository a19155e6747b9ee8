/* Another preload library that interposes epoll_wait, as a user's own tooling
 * might: it counts the calls that reach it and says so at exit
 * ("countcalls: epoll_wait N"). Used to check that epollfix and a second
 * interposer coexist in LD_PRELOAD, in either order. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

static atomic_long calls;

__attribute__((visibility("default"))) int epoll_wait(int epfd, struct epoll_event *ev,
						      int maxevents, int timeout)
{
	static int (*real)(int, struct epoll_event *, int, int);
	if (!real)
		real = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
	atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	return real(epfd, ev, maxevents, timeout);
}

__attribute__((destructor)) static void report(void)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "countcalls: epoll_wait %ld\n", atomic_load(&calls));
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
