/* Calls the library's policy leaves alone, in a tight loop:
 *
 *   efb-pass --case zero|ready|long [--count N] [--rounds R]
 *
 * zero:  epoll_wait(timeout 0) on an idle pipe (returns 0)
 * ready: epoll_wait(timeout -1) with a byte waiting in the pipe (returns 1)
 * long:  epoll_wait(timeout 5 ms, above EPOLLFIX_MAX_MS) with the byte waiting
 * Runs R rounds of N calls after a warm-up round and prints the fastest round
 * as "ns_per_call=.." (the fastest is the one least disturbed by the machine),
 * then the usual summary line for all rounds.
 *
 * --paired 1: in one process (run it under LD_PRELOAD), rounds alternate (ABBA)
 * between epoll_wait as the program sees it (the library's, if preloaded) and
 * libc's own epoll_wait found with dlsym in libc.so.6 (never the library's),
 * both called through a pointer. Prints "ns_libc=.. ns_program=.. ns_added=.."
 * (fastest round of each; ns_added is the median of the pairs' differences).
 *
 * The calls the library watches but leaves alone, paired the same way (the
 * program's function against libc's own), with no epoll fd:
 *   syscall:  syscall(SYS_getppid)
 *   prctl:    prctl(PR_GET_DUMPABLE)
 *   slack:    prctl(PR_GET_TIMERSLACK) (answered by libc: no run is open) */
#include "common.h"

#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int (*wait_fn)(int, struct epoll_event *, int, int);
typedef long (*syscall_fn)(long, ...);
typedef int (*prctl_fn)(int, ...);

/* For the watched calls: which one, and each side's function. */
static int watched; /* 0: epoll_wait; 1 syscall; 2 prctl; 3 slack */
static syscall_fn sys_prog, sys_libc;
static prctl_fn prctl_prog, prctl_libc;

static int64_t round_watched(int libc, long count)
{
	int64_t t0 = now_ns();
	for (long i = 0; i < count; i++) {
		long r = watched == 1 ? (libc ? sys_libc : sys_prog)(SYS_getppid)
						  : (libc ? prctl_libc : prctl_prog)(watched == 2 ? PR_GET_DUMPABLE
											  : PR_GET_TIMERSLACK,
										     0UL, 0UL, 0UL, 0UL);
		if (r < 0) {
			fprintf(stderr, "efb-pass: the watched call failed\n");
			exit(1);
		}
	}
	return now_ns() - t0;
}

static int64_t round_ns(wait_fn fn, int ep, struct epoll_event *out, int timeout, int expect,
			long count)
{
	if (watched) /* fn is the program's, or libc's own */
		return round_watched(fn != epoll_wait, count);
	int64_t t0 = now_ns();
	for (long i = 0; i < count; i++)
		if (fn(ep, out, 8, timeout) != expect) {
			fprintf(stderr, "efb-pass: epoll_wait did not return %d\n", expect);
			exit(1);
		}
	return now_ns() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int paired(int ep, struct epoll_event *out, int timeout, int expect, long count,
		  long rounds)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	wait_fn own = libc ? (wait_fn)dlsym(libc, "epoll_wait") : NULL;
	wait_fn volatile program = epoll_wait;
	if (watched) {
		sys_prog = syscall;
		prctl_prog = prctl;
		sys_libc = libc ? (syscall_fn)dlsym(libc, "syscall") : NULL;
		prctl_libc = libc ? (prctl_fn)dlsym(libc, "prctl") : NULL;
		if (!sys_libc || !prctl_libc)
			own = NULL;
	}
	if (!own) {
		fprintf(stderr, "efb-pass: libc's epoll_wait not found: %s\n", dlerror());
		return 1;
	}
	struct efb_mark start = efb_mark();
	double *diff = calloc((size_t)rounds, sizeof(*diff));
	int64_t best_own = INT64_MAX, best_prog = INT64_MAX;
	round_ns(own, ep, out, timeout, expect, count); /* warm-up */
	round_ns(program, ep, out, timeout, expect, count);
	for (long r = 0; r < rounds; r++) {
		int64_t a, b;
		if (r % 2) {
			b = round_ns(program, ep, out, timeout, expect, count);
			a = round_ns(own, ep, out, timeout, expect, count);
		} else {
			a = round_ns(own, ep, out, timeout, expect, count);
			b = round_ns(program, ep, out, timeout, expect, count);
		}
		best_own = a < best_own ? a : best_own;
		best_prog = b < best_prog ? b : best_prog;
		diff[r] = (double)(b - a) / (double)count;
	}
	qsort(diff, (size_t)rounds, sizeof(*diff), cmp_double);
	printf("ns_libc=%.2f ns_program=%.2f ns_added=%.2f\n", (double)best_own / (double)count,
	       (double)best_prog / (double)count, diff[rounds / 2]);
	efb_report(start, (2 * rounds + 2) * count, (2 * rounds + 2) * count);
	return 0;
}

int main(int argc, char **argv)
{
	const char *usage = "efb-pass --case zero|ready|long|syscall|prctl|slack [--count N] [--rounds R] "
			    "[--paired 1]";
	const char *which = NULL;
	long count = 200000, rounds = 5, pair = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--paired"))
			pair = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--case"))
			which = argv[i + 1];
		else if (!strcmp(argv[i], "--count"))
			count = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atol(argv[i + 1]);
		else
			efb_usage(usage);
	}
	if (!which || count < 1 || rounds < 1 || argc % 2 == 0)
		efb_usage(usage);
	watched = !strcmp(which, "syscall") ? 1 : !strcmp(which, "prctl") ? 2
		: !strcmp(which, "slack") ? 3 : 0;
	if (watched && !pair)
		efb_usage(usage); /* compared with libc's own only */
	int timeout = watched ? 0 : !strcmp(which, "zero") ? 0 : !strcmp(which, "ready") ? -1
		    : !strcmp(which, "long") ? 5 : (efb_usage(usage), 0);
	int expect = timeout == 0 ? 0 : 1;

	int fds[2], ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || pipe(fds)) {
		perror("efb-pass: setup");
		return 1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[0] }, out[8];
	epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);
	if (expect && write(fds[1], "x", 1) != 1) {
		perror("efb-pass: write");
		return 1;
	}

	if (pair)
		return paired(ep, out, timeout, expect, count, rounds);

	struct efb_mark start = efb_mark();
	int64_t best = INT64_MAX;
	for (long r = 0; r <= rounds; r++) {
		int64_t t0 = now_ns();
		for (long i = 0; i < count; i++)
			if (epoll_wait(ep, out, 8, timeout) != expect) {
				fprintf(stderr, "efb-pass: epoll_wait did not return %d\n", expect);
				return 1;
			}
		int64_t t = now_ns() - t0;
		if (r > 0 && t < best) /* round 0 warms up */
			best = t;
	}
	printf("ns_per_call=%.2f\n", (double)best / (double)count);
	efb_report(start, (rounds + 1) * count, (rounds + 1) * count);
	return 0;
}
