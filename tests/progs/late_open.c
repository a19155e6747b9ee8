/* Loads an event loop after start-up and runs its waits:
 *
 *   ef-late-open LIBRARY FUNCTION [COUNT]
 *   ef-late-open --during LIBRARY
 *
 * dlopen()s LIBRARY once main() runs (after every constructor), then calls
 * FUNCTION(ep, COUNT) of tests/progs/late_loop.c on an idle epoll fd: COUNT
 * (default 20) epoll_wait(ep, ..., 1) calls from inside LIBRARY. Prints
 * "waits=COUNT median_us=..".
 *
 * --during: another thread dlopen()s LIBRARY (tests/progs/late_ctor.c), and
 * while its constructor runs, the main thread makes its first
 * epoll_wait(ep, ..., 1) from a call site never seen before, then lets the
 * constructor finish. Prints "first_wait_us=..": a wait that had to wait for
 * the loader would take as long as the constructor (up to 5 s). */
#include "clock.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static void *load(void *path)
{
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static int during(int ep, const char *path)
{
	int started[2], release[2];
	char fds[32], c = 'x';
	pthread_t t;
	struct epoll_event ev;
	void *lib;

	if (pipe(started) != 0 || pipe(release) != 0)
		return 1;
	snprintf(fds, sizeof(fds), "%d,%d", started[1], release[0]);
	setenv("EF_LATE_CTOR_FDS", fds, 1);
	if (pthread_create(&t, NULL, load, (void *)path) != 0 || read(started[0], &c, 1) != 1)
		return 1;
	int64_t t0 = now_ns();
	epoll_wait(ep, &ev, 1, 1);
	int64_t elapsed = now_ns() - t0;
	if (write(release[1], &c, 1) != 1 || pthread_join(t, &lib) != 0 || !lib) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return 1;
	}
	printf("first_wait_us=%lld\n", (long long)(elapsed / 1000));
	return 0;
}

int main(int argc, char **argv)
{
	int p[2], count = argc > 3 ? atoi(argv[3]) : 20;

	if (argc < 3 || count < 1) {
		fprintf(stderr, "usage: %s LIBRARY FUNCTION [COUNT] | --during LIBRARY\n", argv[0]);
		return 2;
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || pipe(p) != 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) != 0) {
		perror("epoll");
		return 1;
	}
	if (strcmp(argv[1], "--during") == 0)
		return during(ep, argv[2]);
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int64_t (*run)(int, int);
	*(void **)&run = dlsym(lib, argv[2]);
	if (!run) {
		fprintf(stderr, "dlsym %s: %s\n", argv[2], dlerror());
		return 1;
	}
	int64_t median = run(ep, count);
	printf("waits=%d median_us=%lld\n", count, (long long)(median / 1000));
	return 0;
}
