/* A known sequence of epoll calls, so the stats report can be checked against
 * what the program did. Each thread (and, with --fork, each process) makes, in
 * order: --zero N empty zero-timeout polls, --one N waits of 1 ms on an idle fd,
 * --ready N waits of -1 ms on a ready fd, --long N waits of 5 ms on an idle fd;
 * then --zero-found N times a zero-timeout poll that finds an event and ten
 * empty ones. --one-other N makes N more 1 ms waits from a second call site,
 * each right after one of the --one waits while they last.
 *
 *   ef-calls [--api wait|pwait] [--threads T] [--fork] [--zero N] [--one N]
 *            [--one-other N] [--ready N] [--long N] [--zero-found N] */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

static int use_pwait;
static long n_zero = 100, n_one = 20, n_other = 0, n_ready = 10, n_long = 5, n_found = 0;

static int call(int ep, struct epoll_event *out, int timeout)
{
	sigset_t none;
	sigemptyset(&none);
	return use_pwait ? epoll_pwait(ep, out, 4, timeout, &none) : epoll_wait(ep, out, 4, timeout);
}

static int call_other(int ep, struct epoll_event *out, int timeout);

/* A call that returned what the pattern does not expect: which one, with what
 * timeout, what it returned and errno, in which process, then abort(). */
static __attribute__((noreturn)) void unexpected(const char *what, long i, int timeout, int r, int expect)
{
	int e = errno;
	fprintf(stderr, "ef-calls[%d]: %s #%ld, timeout %d: returned %d (expected %d), errno %d (%s)\n",
		(int)getpid(), what, i, timeout, r, expect, e, strerror(e));
	abort();
}

/* Makes one call of the pattern and checks what it returned. */
static void expect_call(const char *what, long i, int ep, struct epoll_event *out, int timeout,
			int expect, int other)
{
	errno = 0;
	int r = other ? call_other(ep, out, timeout) : call(ep, out, timeout);
	if (r != expect)
		unexpected(what, i, timeout, r, expect);
}

/* The same call from a return address of its own: not inlined, and not a tail
 * call (the barrier after it), so the library sees a second call site. */
static __attribute__((noinline)) int call_other(int ep, struct epoll_event *out, int timeout)
{
	int r = call(ep, out, timeout);
	__asm__ volatile("" ::: "memory");
	return r;
}

static void *pattern(void *arg)
{
	(void)arg;
	int idle = epoll_create1(0), ready = epoll_create1(0), p[2], q[2];
	if (idle < 0 || ready < 0 || pipe(p) || pipe(q) || write(q[1], "x", 1) != 1) {
		perror("ef-calls: setup");
		abort();
	}
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	epoll_ctl(idle, EPOLL_CTL_ADD, p[0], &ev);
	epoll_ctl(ready, EPOLL_CTL_ADD, q[0], &ev);
	for (long i = 0; i < n_zero; i++)
		expect_call("zero", i, idle, out, 0, 0, 0);
	for (long i = 0; i < n_one || i < n_other; i++) {
		if (i < n_one)
			expect_call("one", i, idle, out, 1, 0, 0);
		if (i < n_other)
			expect_call("one-other", i, idle, out, 1, 0, 1);
	}
	for (long i = 0; i < n_ready; i++)
		expect_call("ready", i, ready, out, -1, 1, 0);
	for (long i = 0; i < n_long; i++)
		expect_call("long", i, idle, out, 5, 0, 0);
	for (long i = 0; i < n_found; i++) {
		expect_call("zero-found", i, ready, out, 0, 1, 0);
		for (int j = 0; j < 10; j++)
			expect_call("zero-found empty", i * 10 + j, idle, out, 0, 0, 0);
	}
	close(idle), close(ready), close(p[0]), close(p[1]), close(q[0]), close(q[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = 1;
	int do_fork = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--api") && i + 1 < argc)
			use_pwait = !strcmp(argv[++i], "pwait");
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atol(argv[++i]);
		else if (!strcmp(argv[i], "--fork"))
			do_fork = 1;
		else if (!strcmp(argv[i], "--zero") && i + 1 < argc)
			n_zero = atol(argv[++i]);
		else if (!strcmp(argv[i], "--one") && i + 1 < argc)
			n_one = atol(argv[++i]);
		else if (!strcmp(argv[i], "--one-other") && i + 1 < argc)
			n_other = atol(argv[++i]);
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			n_ready = atol(argv[++i]);
		else if (!strcmp(argv[i], "--long") && i + 1 < argc)
			n_long = atol(argv[++i]);
		else if (!strcmp(argv[i], "--zero-found") && i + 1 < argc)
			n_found = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: see the comment at the top of call_pattern.c\n");
			return 2;
		}
	}
	pid_t child = do_fork ? fork() : -1;
	pthread_t t[64];
	for (long i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], NULL, pattern, NULL);
	for (long i = 0; i < threads && i < 64; i++)
		pthread_join(t[i], NULL);
	if (child > 0) {
		int st;
		waitpid(child, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	return 0;
}
