/* Two periodic libev timers in one loop (epoll backend), FAST and SLOW
 * microseconds, each re-armed from its own callback (deadline = fire time +
 * period), until SLOW has fired COUNT times. libev asks epoll for 1 ms
 * whenever its next timer is under 1 ms away (backend_mintime), so from
 * outside this loop's stream of 1 ms requests never ends; a fast timer's
 * fires are what makes some of them sub-millisecond.
 *
 *   ef-m-libev-mix [--fast 100] [--slow 1000] [--count 300]
 *
 * Prints the matrix line for the slow timer, then fast_fires= fast_p50_us=
 * fast_p90_us= slow_fires= slow_p50_us= slow_p90_us= and vcsw= cpu_us=. */
#include "mx.h"

#include <ev.h>

struct periodic {
	ev_timer w;
	long us, fired, max;
	int64_t deadline, *late;
};

static long count = 300;
static struct periodic fast, slow;

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	struct periodic *p = w->data;
	int64_t fire_ns = now_ns();
	if (p->fired < p->max)
		p->late[p->fired++] = fire_ns - p->deadline;
	if (p == &slow && slow.fired == count) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	ev_now_update(loop);
	p->deadline = now_ns() + p->us * 1000;
	ev_timer_set(w, p->us * 1e-6, 0.);
	ev_timer_start(loop, w);
}

static void arm(struct ev_loop *loop, struct periodic *p, long max)
{
	p->max = max;
	p->late = calloc((size_t)max, sizeof(*p->late));
	ev_timer_init(&p->w, on_timer, p->us * 1e-6, 0.);
	p->w.data = p;
	p->deadline = now_ns() + p->us * 1000;
	ev_timer_start(loop, &p->w);
}

static int64_t pct(int64_t *v, long n, int q)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	return n ? v[n * q / 100] / 1000 : 0;
}

int main(int argc, char **argv)
{
	fast.us = mx_arg(argc, argv, "--fast", 100);
	slow.us = mx_arg(argc, argv, "--slow", 1000);
	count = mx_arg(argc, argv, "--count", count);
	if (fast.us <= 0 || slow.us < fast.us || count <= 0) {
		fprintf(stderr, "usage: ef-m-libev-mix [--fast US] [--slow US] [--count N]\n");
		return 2;
	}
	struct ev_loop *loop = ev_default_loop(EVBACKEND_EPOLL);
	if (!loop || ev_backend(loop) != EVBACKEND_EPOLL) {
		fprintf(stderr, "no epoll backend\n");
		return 1;
	}
	ev_now_update(loop);
	int64_t started = now_ns();
	arm(loop, &slow, count);
	/* the fast timer fires at most slow/fast times per slow period, plus slack */
	arm(loop, &fast, count * (slow.us / fast.us + 1) + 16);
	mx_usage_start();
	ev_run(loop, 0);
	int64_t cpu = cpu_ns() - mx_cpu0;
	long csw = nvcsw() - mx_csw0;
	mx_csw0 = -1; /* printed below, measured before the sorting */
	long fast_fires = fast.fired;
	int64_t f50 = pct(fast.late, fast_fires, 50), f90 = pct(fast.late, fast_fires, 90);
	int64_t s50 = pct(slow.late, slow.fired, 50), s90 = pct(slow.late, slow.fired, 90);
	int64_t s99 = pct(slow.late, slow.fired, 99);
	printf("fires=%ld lateness_p50_us=%lld lateness_p90_us=%lld lateness_p99_us=%lld "
	       "elapsed_ms=%lld vcsw=%ld "
	       "cpu_us=%lld fast_fires=%ld fast_p50_us=%lld fast_p90_us=%lld slow_fires=%ld "
	       "slow_p50_us=%lld slow_p90_us=%lld\n",
	       slow.fired, (long long)s50, (long long)s90, (long long)s99,
	       (long long)((now_ns() - started) / 1000000), csw, (long long)(cpu / 1000),
	       fast_fires, (long long)f50, (long long)f90, slow.fired, (long long)s50,
	       (long long)s90);
	return slow.fired == count ? 0 : 1;
}
