/* A libevent evtimer of US microseconds, re-armed from its callback COUNT
 * times, on the epoll backend. Without EVENT_PRECISE_TIMER=1 in the environment
 * libevent's clock is CLOCK_MONOTONIC_COARSE and its epoll_wait timeout is the
 * remaining time rounded up to whole ms; with it, a timerfd carries the
 * deadline and epoll_wait blocks with -1.
 *
 *   ef-m-libevent [--us 1000] [--count 300]
 * Prints the report line and " method=epoll precise=0|1". */
#include "mx.h"

#include <event2/event.h>

static int64_t started, deadline, *late;
static long fired, count = 300, us = 1000;
static struct event *ev;

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { us / 1000000, us % 1000000 };
	(void)fd, (void)what, (void)arg;
	int64_t fire_ns = now_ns();
	mx_fire(fire_ns);
	late[fired++] = fire_ns - deadline;
	if (fired == count)
		return;
	deadline = now_ns() + us * 1000;
	evtimer_add(ev, &tv);
}

int main(int argc, char **argv)
{
	us = mx_arg(argc, argv, "--us", us);
	count = mx_arg(argc, argv, "--count", count);
	late = calloc((size_t)count, sizeof(*late));
	mx_fires_init(count);
	struct event_base *base = event_base_new();
	if (!base || strcmp(event_base_get_method(base), "epoll")) {
		fprintf(stderr, "no epoll backend\n");
		return 1;
	}
	/* libevent switches to its precise timer when the variable is set at all. */
	int precise = getenv("EVENT_PRECISE_TIMER") != NULL;
	ev = evtimer_new(base, on_timer, NULL);
	struct timeval tv = { us / 1000000, us % 1000000 };
	started = now_ns();
	deadline = started + us * 1000;
	evtimer_add(ev, &tv);
	event_base_dispatch(base);
	mx_fires_write();
	qsort(late, (size_t)fired, sizeof(*late), cmp_i64);
	printf("fires=%ld lateness_p50_us=%lld lateness_p90_us=%lld lateness_p99_us=%lld "
	       "elapsed_ms=%lld method=%s precise=%d\n",
	       fired, fired ? (long long)(late[fired / 2] / 1000) : 0,
	       fired ? (long long)(late[fired * 9 / 10] / 1000) : 0,
	       fired ? (long long)(late[fired * 99 / 100] / 1000) : 0,
	       (long long)((now_ns() - started) / 1000000), event_base_get_method(base), precise);
	event_free(ev);
	event_base_free(base);
	return fired == count ? 0 : 1;
}
