/* Loads an event loop after start-up and runs its waits:
 *
 *   ef-late-open LIBRARY FUNCTION [COUNT]
 *
 * dlopen()s LIBRARY once main() runs (after every constructor), then calls
 * FUNCTION(ep, COUNT) of tests/progs/late_loop.c on an idle epoll fd: COUNT
 * (default 20) epoll_wait(ep, ..., 1) calls from inside LIBRARY. Prints
 * "waits=COUNT median_us=..". */
#include "clock.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int p[2], count = argc > 3 ? atoi(argv[3]) : 20;

	if (argc < 3 || count < 1) {
		fprintf(stderr, "usage: %s LIBRARY FUNCTION [COUNT]\n", argv[0]);
		return 2;
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || pipe(p) != 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) != 0) {
		perror("epoll");
		return 1;
	}
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
