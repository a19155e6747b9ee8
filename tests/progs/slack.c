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
 *   ef-slack spawn WAY one epoll_wait(1), then a child made another way (system,
 *                      popen, posix_spawn, posix_spawnp, vfork, clone,
 *                      syscall-clone, thread), none of which runs atfork
 *                      handlers, or a thread libc makes itself (timer: a
 *                      SIGEV_THREAD timer's, aio: aio_read's SIGEV_THREAD
 *                      notification): it reports the slack it got (child=)
 *
 * Prints name=value pairs (slack in ns) and median_us of the 1 ms waits.
 * Runs in the main thread: /proc/self/timerslack_ns is the main thread's. */
#include "clock.h"

#include <aio.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

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

extern char **environ;

/* A number read from fd, to its end. */
static long read_number(int fd)
{
	char buf[32];
	ssize_t n = 0, r;
	while ((r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? atol(buf) : -1;
}

static int report_fd;

static int write_own_slack(void *arg)
{
	(void)arg;
	dprintf(report_fd, "%ld", proc_slack());
	return 0;
}

/* A new thread's slack (no /proc file of its own): the library's prctl
 * answers the kernel's value in a thread that has made no wait. */
static void *thread_slack(void *arg)
{
	*(long *)arg = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
	return NULL;
}

/* A thread libc made runs this: the slack it has, as the kernel says. */
static void notified(union sigval sv)
{
	(void)sv;
	dprintf(report_fd, "%d", prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL));
}

/* What notified() wrote in p, once it ran (report_fd stays open till then). */
static long notified_slack(int p[2])
{
	char buf[32];
	ssize_t r = read(p[0], buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = '\0';
	close(p[0]);
	close(p[1]);
	return r > 0 ? atol(buf) : -1;
}

/* The slack a child made by `way` starts with, or -1. */
static long child_slack(const char *way)
{
	static char *cat[] = { "cat", "/proc/self/timerslack_ns", NULL };
	int p[2];
	long v = -1;
	pid_t pid = -1;

	if (pipe(p))
		return -1;
	report_fd = p[1];
	fflush(stdout);
	if (!strcmp(way, "system")) {
		/* The pipe becomes cat's standard output: dash reads a
		 * redirection's fd as one digit, and the pipe's number depends on
		 * the fds the program was given and its libraries hold. */
		int out = dup(1);
		if (out < 0 || dup2(p[1], 1) < 0)
			return -1;
		int r = system("cat /proc/self/timerslack_ns");
		if (dup2(out, 1) < 0 || r != 0)
			return -1;
		close(out);
	} else if (!strcmp(way, "popen")) {
		FILE *f = popen("cat /proc/self/timerslack_ns", "r");
		if (!f || fscanf(f, "%ld", &v) != 1)
			v = -1;
		if (f)
			pclose(f);
		close(p[0]);
		close(p[1]);
		return v;
	} else if (!strncmp(way, "posix_spawn", 11)) {
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, p[1], 1);
		int r = !strcmp(way, "posix_spawnp")
				? posix_spawnp(&pid, "cat", &fa, NULL, cat, environ)
				: posix_spawn(&pid, "/bin/cat", &fa, NULL, cat, environ);
		posix_spawn_file_actions_destroy(&fa);
		if (r)
			return -1;
	} else if (!strcmp(way, "vfork")) {
		pid = vfork();
		if (pid == 0) {
			char *args[] = { "sh", "-c", "cat /proc/self/timerslack_ns", NULL };
			/* The child's fd table is its own (vfork shares memory only). */
			if (dup2(p[1], 1) == 1)
				execv("/bin/sh", args);
			_exit(127);
		}
	} else if (!strcmp(way, "clone")) {
		static char stack[65536] __attribute__((aligned(16)));
		pid = clone(write_own_slack, stack + sizeof(stack), SIGCHLD, NULL);
	} else if (!strcmp(way, "syscall-clone")) {
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0L, 0L, 0L, 0L);
		if (pid == 0) {
			write_own_slack(NULL);
			_exit(0);
		}
	} else if (!strcmp(way, "timer")) {
		timer_t t;
		struct sigevent sev = { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = notified };
		struct itimerspec its = { .it_value = { 0, 1000000 } };
		if (timer_create(CLOCK_MONOTONIC, &sev, &t) || timer_settime(t, 0, &its, NULL))
			return -1;
		return notified_slack(p);
	} else if (!strcmp(way, "aio")) {
		static int q[2];
		static char byte;
		static struct aiocb cb;
		if (pipe(q))
			return -1;
		cb = (struct aiocb){ .aio_fildes = q[0], .aio_buf = &byte, .aio_nbytes = 1 };
		cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
		cb.aio_sigevent.sigev_notify_function = notified;
		if (aio_read(&cb) || write(q[1], "x", 1) != 1)
			return -1;
		return notified_slack(p);
	} else if (!strcmp(way, "thread")) {
		pthread_t t;
		if (pthread_create(&t, NULL, thread_slack, &v) == 0)
			pthread_join(t, NULL);
		close(p[0]);
		close(p[1]);
		return v;
	} else {
		fprintf(stderr, "ef-slack: '%s' is not a way to make a child\n", way);
		exit(2);
	}
	close(p[1]);
	v = read_number(p[0]);
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return v;
}

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

	if (argc != 2 && !(argc == 3 && !strcmp(argv[1], "spawn"))) {
		fprintf(stderr, "usage: ef-slack own|restore|fork|spawn WAY\n");
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
	} else if (!strcmp(argv[1], "spawn")) {
		/* The children run the system's sh and cat, which a musl build's
		 * preload would not load into: the library is this program's alone. */
		unsetenv("LD_PRELOAD");
		ns[n++] = wait_1ms();
		printf("child=%ld ", child_slack(argv[2]));
	} else {
		fprintf(stderr, "ef-slack: '%s' is not own, restore, fork or spawn\n", argv[1]);
		return 2;
	}
	print_summary(ns, n);
	printf("\n");
	return 0;
}
