/* Zero-timeout polls that always find an event: an eventfd that stays
 * readable (never read), polled with epoll_wait and epoll_pwait in turn for
 * --seconds. What `epollfix status` reads of it must only ever grow.
 *
 *   ef-full-poll [--seconds S] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>

int main(int argc, char **argv)
{
	double seconds = 10;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else {
			fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
			return 2;
		}
	}
	int efd = eventfd(1, EFD_CLOEXEC), ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (efd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) != 0) {
		perror("ef-full-poll");
		return 1;
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long polls = 0, empty = 0;
	sigset_t none;
	sigemptyset(&none);
	do {
		for (int i = 0; i < 1000; i++, polls++) {
			int r = i & 1 ? epoll_pwait(ep, &ev, 1, 0, &none) : epoll_wait(ep, &ev, 1, 0);
			empty += r == 0;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("polls=%ld empty=%ld\n", polls, empty);
	return 0;
}
