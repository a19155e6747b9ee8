/* A libev timer (epoll backend) of US microseconds, re-armed from its callback
 * COUNT times. libev rounds the remaining time up to whole ms (at least 1) and
 * fires only when due, so its 1 ms hides the sub-ms deadline.
 *
 *   ef-m-libev [--us 50] [--count 300] */
#include "mx.h"

#include <ev.h>

static int64_t started, deadline, *late;
static long fired, count = 300, us = 50;

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	int64_t fire_ns = now_ns();
	mx_fire(fire_ns);
	late[fired++] = fire_ns - deadline;
	if (fired == count) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	ev_now_update(loop);
	deadline = now_ns() + us * 1000;
	ev_timer_set(w, us * 1e-6, 0.);
	ev_timer_start(loop, w);
}

int main(int argc, char **argv)
{
	us = mx_arg(argc, argv, "--us", us);
	count = mx_arg(argc, argv, "--count", count);
	late = calloc((size_t)count, sizeof(*late));
	mx_fires_init(count);
	struct ev_loop *loop = ev_default_loop(EVBACKEND_EPOLL);
	if (!loop || ev_backend(loop) != EVBACKEND_EPOLL) {
		fprintf(stderr, "no epoll backend\n");
		return 1;
	}
	ev_timer t;
	ev_timer_init(&t, on_timer, us * 1e-6, 0.);
	ev_now_update(loop);
	started = now_ns();
	deadline = started + us * 1000;
	ev_timer_start(loop, &t);
	mx_usage_start();
	ev_run(loop, 0);
	mx_report(late, fired, started);
	return fired == count ? 0 : 1;
}
