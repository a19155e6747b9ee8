/* A libev timer (epoll backend) re-armed for --sleep-us each time it fires,
 * for the bats suite and for bench/run alike.
 *
 *   ef-libev [--sleep-us N] [--count N] [--raw FILE]
 *
 * A sample is the time from arming the timer to its callback. Prints the
 * benchmark's summary line (waits= is 0: libev's epoll calls are not seen),
 * then "median_us=.. min_us=.. max_us=..". --raw FILE gets every sample. */
#include "bench_output.h"

#include <ev.h>

#define USAGE "usage: ef-libev [--sleep-us N] [--count N] [--raw FILE]\n"

static int64_t started, *samples;
static long fired, count = 200;
static double sleep_s = 50e-6;

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	samples[fired++] = now_ns() - started;
	if (fired == count) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	ev_now_update(loop);
	started = now_ns();
	ev_timer_set(w, sleep_s, 0.);
	ev_timer_start(loop, w);
}

int main(int argc, char **argv)
{
	const char *raw = NULL;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sleep-us"))
			sleep_s = (double)atol(argv[i + 1]) * 1e-6;
		else if (!strcmp(argv[i], "--count"))
			count = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--raw"))
			raw = argv[i + 1];
		else
			count = 0;
	}
	if (count < 1 || argc % 2 == 0) {
		fputs(USAGE, stderr);
		return 2;
	}
	struct ev_loop *loop = ev_default_loop(EVBACKEND_EPOLL);
	if (!loop || ev_backend(loop) != EVBACKEND_EPOLL) {
		fprintf(stderr, "ef-libev: no epoll backend\n");
		return 1;
	}
	samples = calloc((size_t)count, sizeof(*samples));
	ev_timer t;
	ev_timer_init(&t, on_timer, sleep_s, 0.);
	struct efb_mark start = efb_mark();
	ev_now_update(loop);
	started = now_ns();
	ev_timer_start(loop, &t);
	ev_run(loop, 0);
	efb_report(start, fired, 0);
	if (efb_write_raw(raw, samples, fired))
		return 1;
	print_summary(samples, (size_t)fired); /* sorts: after the raw file */
	printf("\n");
	return 0;
}
