/* A child made with a raw system call, which runs no atfork handler:
 *
 *   ef-raw-clone clone|clone3|fork|libc-clone [N]
 *
 * N epoll_wait(1) on an idle fd (default 20), then a child made by
 * syscall(SYS_clone, SIGCHLD, 0, ...), syscall(SYS_clone3, ...), fork(), or
 * libc's clone(fn, stack, SIGCHLD, ...); the child makes 3 zero-timeout polls
 * and reports what the library (preloaded) counted in it, with
 * epollfix_counters: "child_calls=..", as a fork child's
 * counts start again. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "epollfix.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

static int ep;

static int child(void *unused)
{
	(void)unused;
	struct epoll_event out[4];
	struct epollfix_counters c;
	int (*counters)(struct epollfix_counters *, size_t) =
		(int (*)(struct epollfix_counters *, size_t))dlsym(RTLD_DEFAULT, "epollfix_counters");
	for (int i = 0; i < 3; i++)
		epoll_wait(ep, out, 4, 0);
	if (!counters || counters(&c, sizeof(c))) {
		printf("no library\n");
		_exit(1);
	}
	printf("child_calls=%llu\n",
	       (unsigned long long)(c.epoll_wait + c.epoll_pwait));
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	int fds[2];
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: ef-raw-clone clone|clone3|fork|libc-clone [N]\n");
		return 2;
	}
	int n = argc == 3 ? atoi(argv[2]) : 20;
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	if (ep < 0 || pipe(fds) || epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev)) {
		perror("ef-raw-clone: setup");
		return 1;
	}
	for (int i = 0; i < n; i++)
		epoll_wait(ep, out, 4, 1);
	fflush(stdout);
	long pid;
	if (!strcmp(argv[1], "clone")) {
		pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	} else if (!strcmp(argv[1], "clone3")) {
		uint64_t args[11] = { 0 }; /* struct clone_args, version 2 */
		args[4] = SIGCHLD;         /* exit_signal */
		pid = syscall(SYS_clone3, args, sizeof(args));
	} else if (!strcmp(argv[1], "fork")) {
		pid = fork();
	} else if (!strcmp(argv[1], "libc-clone")) {
		static char stack[65536] __attribute__((aligned(16)));
		pid = clone(child, stack + sizeof(stack), SIGCHLD, NULL);
	} else {
		fprintf(stderr, "ef-raw-clone: '%s' is not clone, clone3, fork or libc-clone\n", argv[1]);
		return 2;
	}
	if (pid == 0)
		child(NULL);
	int status;
	if (pid < 0 || waitpid((pid_t)pid, &status, 0) != pid || status != 0) {
		fprintf(stderr, "ef-raw-clone: the child failed\n");
		return 1;
	}
	return 0;
}
