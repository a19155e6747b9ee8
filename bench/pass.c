/* Calls the library's policy leaves alone, in a tight loop:
 *
 *   efb-pass --case zero|ready|long [--count N] [--rounds R]
 *
 * zero:  epoll_wait(timeout 0) on an idle pipe (returns 0)
 * ready: epoll_wait(timeout -1) with a byte waiting in the pipe (returns 1)
 * long:  epoll_wait(timeout 5 ms, above EPOLLFIX_MAX_MS) with the byte waiting
 * Runs R rounds of N calls after a warm-up round and prints the fastest round
 * as "ns_per_call=.." (the fastest is the one least disturbed by the machine),
 * then the usual summary line for all rounds. */
#include "common.h"

#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *usage = "efb-pass --case zero|ready|long [--count N] [--rounds R]";
	const char *which = NULL;
	long count = 200000, rounds = 5;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--case"))
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
	int timeout = !strcmp(which, "zero") ? 0 : !strcmp(which, "ready") ? -1
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
