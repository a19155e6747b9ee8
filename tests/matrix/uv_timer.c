/* A libuv timer of MS milliseconds, re-armed from its callback COUNT times: the
 * way Node.js chains setTimeout(cb, 1). libuv's timers are whole milliseconds
 * on a clock floored to the millisecond, so its 1 ms wait is genuine.
 *
 *   ef-m-uv [--ms 1] [--count 300] */
#include "mx.h"

#include <uv.h>

static int64_t started, deadline, *late;
static long fired, count = 300, ms = 1;

static void on_timer(uv_timer_t *t)
{
	int64_t fire_ns = now_ns();
	mx_fire(fire_ns);
	late[fired++] = fire_ns - deadline;
	if (fired == count) {
		uv_timer_stop(t);
		uv_close((uv_handle_t *)t, NULL);
		return;
	}
	deadline = now_ns() + ms * 1000000;
	uv_timer_start(t, on_timer, (uint64_t)ms, 0);
}

int main(int argc, char **argv)
{
	uv_timer_t t;

	ms = mx_arg(argc, argv, "--ms", ms);
	count = mx_arg(argc, argv, "--count", count);
	late = calloc((size_t)count, sizeof(*late));
	mx_fires_init(count);
	uv_loop_t *loop = uv_default_loop();
	uv_timer_init(loop, &t);
	uv_update_time(loop);
	started = now_ns();
	deadline = started + ms * 1000000;
	uv_timer_start(&t, on_timer, (uint64_t)ms, 0);
	uv_run(loop, UV_RUN_DEFAULT);
	mx_report(late, fired, started);
	uv_loop_close(loop);
	return fired == count ? 0 : 1;
}
