/* CPU per upgraded wait against a direct epoll_pwait2 of the same length, in
 * one process (run it under LD_PRELOAD=libepollfix.so, or libefb-forward.so
 * for the floor: forward.c), blocks alternating ABBA so drift hits both:
 *
 *   efb-cost [--sleep-us S] [--slack NS] [--block N] [--blocks B] [--upgraded-slack NS]
 *
 * upgraded: epoll_wait(1 ms) with the thread's timer slack as it is (the
 *           library switches it to EPOLLFIX_SLACK around its epoll_pwait2:
 *           three system calls a wait), or with --upgraded-slack set to NS
 *           around the block (NS = EPOLLFIX_SLACK: a thread that keeps the
 *           library's slack, which needs no switch: one system call a wait);
 * direct:   epoll_pwait2(S us) with the slack set to NS around the block.
 * CPU is CLOCK_THREAD_CPUTIME_ID per block / N. Prints
 * "upgraded_ns=.. direct_ns=.. ratio=.. ratio_min=.. ratio_max=..
 *  upgraded_elapsed_ns=.. direct_elapsed_ns=.." (medians over blocks; ratio is
 * the median of the pairs' ratios), then the summary line of tests/lib/bench_output.h. */
#include "common.h"

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* --upgraded-slack: 0, the upgraded blocks run with the thread's slack as it is. */
static long upgraded_slack_ns;

/* one block; returns CPU ns per wait, stores elapsed ns per wait */
static double block(int ep, int direct, long n, long sleep_us, long slack_ns, double *elapsed)
{
	struct epoll_event out[8];
	struct timespec ts = { 0, sleep_us * 1000 };
	int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	int64_t w0 = now_ns(), c0 = thread_cpu_ns();
	long set = direct ? slack_ns : upgraded_slack_ns;
	if (set)
		prctl(PR_SET_TIMERSLACK, (unsigned long)set, 0, 0, 0);
	for (long i = 0; i < n; i++) {
		int r = direct ? epoll_pwait2(ep, out, 8, &ts, NULL) : epoll_wait(ep, out, 8, 1);
		if (r != 0) {
			fprintf(stderr, "efb-cost: epoll returned %d (%s)\n", r,
				r < 0 ? strerror(errno) : "events");
			exit(1);
		}
	}
	if (set)
		prctl(PR_SET_TIMERSLACK, (unsigned long)old, 0, 0, 0);
	int64_t c = thread_cpu_ns() - c0, w = now_ns() - w0;
	*elapsed = (double)w / (double)n;
	return (double)c / (double)n;
}

int main(int argc, char **argv)
{
	const char *usage =
		"efb-cost [--sleep-us S] [--slack NS] [--block N] [--blocks B] [--upgraded-slack NS]";
	long sleep_us = 50, slack_ns = 1000, n = 250, blocks = 20;

	for (int i = 1; i + 1 < argc; i += 2) {
		long v = atol(argv[i + 1]);
		if (!strcmp(argv[i], "--sleep-us"))
			sleep_us = v;
		else if (!strcmp(argv[i], "--slack"))
			slack_ns = v;
		else if (!strcmp(argv[i], "--block"))
			n = v;
		else if (!strcmp(argv[i], "--blocks"))
			blocks = v;
		else if (!strcmp(argv[i], "--upgraded-slack"))
			upgraded_slack_ns = v;
		else
			efb_usage(usage);
	}
	if (argc % 2 == 0 || n < 1 || blocks < 2 || sleep_us < 1 || sleep_us >= 1000000 || slack_ns < 1 ||
	    upgraded_slack_ns < 0)
		efb_usage(usage);
	blocks += blocks % 2;
	int fds[2], ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || pipe(fds)) {
		perror("efb-cost: setup");
		return 1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[0] };
	epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);

	long pairs = blocks / 2;
	double *up = calloc((size_t)pairs, sizeof(double)), *di = calloc((size_t)pairs, sizeof(double));
	double *ratio = calloc((size_t)pairs, sizeof(double));
	double *upe = calloc((size_t)pairs, sizeof(double)), *die = calloc((size_t)pairs, sizeof(double));
	struct efb_mark start = efb_mark();
	double scratch;
	block(ep, 0, n / 4 + 1, sleep_us, slack_ns, &scratch); /* warm-up both */
	block(ep, 1, n / 4 + 1, sleep_us, slack_ns, &scratch);
	for (long p = 0; p < pairs; p++) {
		if (p % 2) {
			di[p] = block(ep, 1, n, sleep_us, slack_ns, &die[p]);
			up[p] = block(ep, 0, n, sleep_us, slack_ns, &upe[p]);
		} else {
			up[p] = block(ep, 0, n, sleep_us, slack_ns, &upe[p]);
			di[p] = block(ep, 1, n, sleep_us, slack_ns, &die[p]);
		}
		ratio[p] = up[p] / di[p];
	}
	double rmed = median(ratio, pairs), rmin = ratio[0], rmax = ratio[pairs - 1];
	printf("upgraded_ns=%.0f direct_ns=%.0f ratio=%.4f ratio_min=%.4f ratio_max=%.4f "
	       "upgraded_elapsed_ns=%.0f direct_elapsed_ns=%.0f\n",
	       median(up, pairs), median(di, pairs), rmed, rmin, rmax, median(upe, pairs),
	       median(die, pairs));
	efb_report(start, blocks * n, blocks * n);
	return 0;
}
