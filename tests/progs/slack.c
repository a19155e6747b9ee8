/* The thread's timer slack around upgraded waits, as the program sees it:
 *
 *   ef-slack own       ten epoll_wait(1) from one call site (a run of upgraded
 *                      waits); after the fifth the program sets its own slack
 *                      (200 us); after the seventh it reads it back with
 *                      PR_GET_TIMERSLACK and /proc/self/timerslack_ns (the value
 *                      in force); after an epoll_wait(0) it reads both again
 *   ef-slack restore   five epoll_wait(1), then /proc/self/timerslack_ns; an
 *                      epoll_wait(0), then again
 *   ef-slack fork      one epoll_wait(1), then fork(): the child reads the slack
 *                      it got, resets it to its default (PR_SET_TIMERSLACK 0)
 *                      and reads that
 *
 * Prints name=value pairs (slack in ns) and median_us of the 1 ms waits.
 * Runs in the main thread: /proc/self/timerslack_ns is the main thread's. */
#include "clock.h"

#include <string.h>
#include <sys/prctl.h>

#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

static long proc_slack(void)
{
	long v = -1;
	FILE *f = fopen("/proc/self/timerslack_ns", "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int ep;

/* One call site for every 1 ms wait, so they form one run. */
static __attribute__((noinline)) int64_t wait_1ms(void)
{
	struct epoll_event out[4];
	int64_t t0 = now_ns();
	if (epoll_wait(ep, out, 4, 1) != 0) {
		fprintf(stderr, "ef-slack: epoll_wait(1) did not time out\n");
		exit(1);
	}
	return now_ns() - t0;
}

static void poll_0(void)
{
	struct epoll_event out[4];
	if (epoll_wait(ep, out, 4, 0) != 0) {
		fprintf(stderr, "ef-slack: epoll_wait(0) found an event\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	int fds[2];
	int64_t ns[10];
	size_t n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: ef-slack own|restore|fork\n");
		return 2;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || pipe(fds) || epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev)) {
		perror("ef-slack: setup");
		return 1;
	}
	if (!strcmp(argv[1], "own")) {
		for (int i = 0; i < 10; i++) {
			ns[n++] = wait_1ms();
			if (i == 4 && prctl(PR_SET_TIMERSLACK, 200000UL, 0UL, 0UL, 0UL)) {
				perror("ef-slack: PR_SET_TIMERSLACK");
				return 1;
			}
			if (i == 6)
				printf("get_in_run=%d real_in_run=%ld ",
				       prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL), proc_slack());
		}
		poll_0();
		printf("get_after=%d real_after=%ld ", prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL),
		       proc_slack());
	} else if (!strcmp(argv[1], "restore")) {
		while (n < 5)
			ns[n++] = wait_1ms();
		printf("real_after_wait=%ld ", proc_slack());
		poll_0();
		printf("real_after_poll=%ld ", proc_slack());
	} else if (!strcmp(argv[1], "fork")) {
		ns[n++] = wait_1ms();
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			long got = proc_slack();
			prctl(PR_SET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
			printf("child_got=%ld child_default=%ld ", got, proc_slack());
			fflush(stdout);
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) {
			fprintf(stderr, "ef-slack: the child failed\n");
			return 1;
		}
	} else {
		fprintf(stderr, "ef-slack: '%s' is not own, restore or fork\n", argv[1]);
		return 2;
	}
	print_summary(ns, n);
	printf("\n");
	return 0;
}
