/* ef-netpoll-regs: whether the agent's kernel side reads, on this machine's
 * architecture, the system call a thread sleeps in and its arguments as
 * they are (netpoll.bpf.c's SYSCALL_NR and SYSCALL_ARGn), with no Go program:
 * a child shaped like Go's netpoller (an int32 "runtime.epfd", a
 * "runtime.sched" whose lastpoll is 0 and pollUntil half a millisecond
 * ahead) is attached by hand to the signal mechanism's object, and sleeps
 * in rounds of raw epoll_pwait calls of four kinds; the process's counters
 * say which the program took for a netpoll wait.
 *
 *   ef-netpoll-regs [ROUNDS]
 *
 * Prints one line per kind: "KIND: waits W armed A other_fd O"; exit 0
 * when each kind was judged as it should be (below), 1 when not, 2 when the
 * object could not be loaded or attached (needs root and BTF). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/types.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "netpoll.h"
#include "netpollrt.skel.h"

/* What the program reads of the child, as of Go's runtime: its addresses are
 * the same in the child (fork). */
static int32_t epfd;
static int64_t sched[3]; /* goidgen, lastpoll, pollUntil */

enum kind { NETPOLL, OTHER_FD, TIMEOUT_2, SIGMASK, KINDS };
static const char *const kind_name[KINDS] = {
	[NETPOLL] = "epoll_pwait(epfd, ..., 1, NULL)",
	[OTHER_FD] = "epoll_pwait(another fd, ..., 1, NULL)",
	[TIMEOUT_2] = "epoll_pwait(epfd, ..., 2, NULL)",
	[SIGMASK] = "epoll_pwait(epfd, ..., 1, mask)",
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The child's rounds of kind k: raw system calls, as Go's runtime makes
 * them (no libc wrapper chooses the call). */
static void child_rounds(enum kind k, int rounds, int other)
{
	struct epoll_event ev[128];
	sigset_t mask;
	sigemptyset(&mask);
	for (int i = 0; i < rounds; i++) {
		sched[1] = 0;
		sched[2] = now_ns() + 500 * 1000;
		syscall(SYS_epoll_pwait, k == OTHER_FD ? other : epfd, ev, 128, k == TIMEOUT_2 ? 2 : 1,
			k == SIGMASK ? &mask : NULL, sizeof(uint64_t));
	}
}

static void counts(struct ef_netpollrt *s, __u32 tgid, __u64 *c)
{
	struct ef_bpf_proc p;
	memset(c, 0, sizeof(__u64) * EF_BC_COUNT);
	if (bpf_map__lookup_elem(s->maps.procs, &tgid, sizeof(tgid), &p, sizeof(p), 0) == 0)
		memcpy(c, p.count, sizeof(p.count));
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 50;
	int go[2], done[2];
	char b = 0;

	struct ef_netpollrt *s = ef_netpollrt__open_and_load();
	if (!s || ef_netpollrt__attach(s) != 0) {
		fprintf(stderr, "ef-netpoll-regs: the signal mechanism's object: %s\n", strerror(errno));
		return 2;
	}
	if (pipe(go) != 0 || pipe(done) != 0)
		return 2;
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		int other = epoll_create1(0);
		epfd = epoll_create1(0);
		for (int k = 0; k < KINDS; k++) {
			if (read(go[0], &b, 1) != 1)
				_exit(1);
			child_rounds(k, rounds, other);
			if (write(done[1], &b, 1) != 1)
				_exit(1);
		}
		/* Until the last counters are read: its end drops its entry. */
		_exit(read(go[0], &b, 1) == 1 ? 0 : 1);
	}

	__u32 tgid = (__u32)pid;
	struct ef_bpf_proc p = { .sched_addr = (__u64)(uintptr_t)sched, .epfd_addr = (__u64)(uintptr_t)&epfd };
	if (bpf_map__update_elem(s->maps.procs, &tgid, sizeof(tgid), &p, sizeof(p), BPF_ANY) != 0) {
		fprintf(stderr, "ef-netpoll-regs: attach %d: %s\n", pid, strerror(errno));
		kill(pid, SIGKILL);
		return 2;
	}
	int bad = 0;
	__u64 before[EF_BC_COUNT], after[EF_BC_COUNT];
	for (int k = 0; k < KINDS; k++) {
		counts(s, tgid, before);
		if (write(go[1], &b, 1) != 1 || read(done[0], &b, 1) != 1) {
			fprintf(stderr, "ef-netpoll-regs: the child ended early\n");
			bad = 1;
			break;
		}
		counts(s, tgid, after);
		__u64 waits = after[EF_BC_WAITS] - before[EF_BC_WAITS];
		__u64 armed = after[EF_BC_ARMED] - before[EF_BC_ARMED];
		__u64 other = after[EF_BC_OTHER_FD] - before[EF_BC_OTHER_FD];
		/* Half at least: an emulated machine may preempt a thread on its
		 * way to sleep, or let a deadline pass before it sleeps. */
		int ok = k == NETPOLL    ? armed >= (__u64)rounds / 2 && other == 0
			 : k == OTHER_FD ? other >= (__u64)rounds / 2 && armed == 0
					 : waits == 0;
		printf("%s %s: waits %llu armed %llu other_fd %llu of %d\n", ok ? "ok" : "WRONG",
		       kind_name[k], (unsigned long long)waits, (unsigned long long)armed,
		       (unsigned long long)other, rounds);
		bad |= !ok;
	}
	int status;
	if (write(go[1], &b, 1) != 1)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ef_netpollrt__destroy(s);
	return bad;
}
