/* A sub-millisecond timer in an event loop, three ways, on 1..N threads:
 *
 *   efb-timer [--mode loop|pwait2|fixed] [--sleep-us N] [--fixed-ms T]
 *             [--count N | --duration-ms D] [--threads N] [--slack NS] [--raw FILE]
 *
 * loop:   what CPython, libev, mio and Redis do: keep a deadline in ns, wait
 *         epoll_wait(ceil(remaining ms)), re-check the clock when the wait comes
 *         back empty, fire only once the deadline passed. LD_PRELOAD reaches it.
 * pwait2: the limit: the same deadline waited for directly with epoll_pwait2
 *         (the remaining ns), with the thread's timer slack set to --slack.
 * fixed:  each sample is one epoll_wait(T ms): a genuine T ms wait.
 *
 * A sample is the elapsed time of one sleep. --slack 0 leaves the thread's
 * slack as it is. Each thread has its own epoll fd with an idle pipe in it.
 * Prints count= waits= cpu_ns= wall_ns= nvcsw= (see tests/lib/bench_output.h); waits counts
 * epoll calls the program made. */
#include "common.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

enum mode { LOOP, PWAIT2, FIXED };
static enum mode mode = LOOP;
static long sleep_us = 50, fixed_ms = 1, count = 200, duration_ms = 0, slack_ns = 0;
static pthread_barrier_t start_line;
static int64_t end_at;

struct worker {
	pthread_t id;
	int64_t *samples;
	long n, cap, waits;
	int failed;
};

static int push(struct worker *w, int64_t v)
{
	if (w->n == w->cap) {
		long cap = w->cap ? w->cap * 2 : 1024;
		int64_t *p = realloc(w->samples, (size_t)cap * sizeof(*p));
		if (!p)
			return -1;
		w->samples = p;
		w->cap = cap;
	}
	w->samples[w->n++] = v;
	return 0;
}

static int one_sleep(int ep, struct worker *w)
{
	struct epoll_event out[8];
	int64_t start = now_ns(), deadline = start + sleep_us * 1000, now = start;
	int r;

	if (mode == FIXED) {
		r = epoll_wait(ep, out, 8, (int)fixed_ms);
		w->waits++;
	} else {
		do {
			if (mode == LOOP) {
				int timeout = (int)((deadline - now + 999999) / 1000000);
				r = epoll_wait(ep, out, 8, timeout);
			} else {
				int64_t left = deadline - now;
				struct timespec ts = { left / 1000000000, left % 1000000000 };
				r = epoll_pwait2(ep, out, 8, &ts, NULL);
			}
			w->waits++;
			if (r != 0)
				break;
		} while ((now = now_ns()) < deadline);
	}
	if (r != 0) {
		fprintf(stderr, "efb-timer: epoll returned %d (%s) on an idle fd\n", r,
			r < 0 ? strerror(errno) : "events");
		return -1;
	}
	return push(w, now_ns() - start);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	int fds[2];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || pipe(fds)) {
		perror("efb-timer: setup");
		w->failed = 1;
	} else {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[0] };
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);
	}
	if (slack_ns > 0 && prctl(PR_SET_TIMERSLACK, (unsigned long)slack_ns, 0, 0, 0)) {
		perror("efb-timer: PR_SET_TIMERSLACK");
		w->failed = 1;
	}
	pthread_barrier_wait(&start_line);
	if (w->failed)
		return NULL;
	for (long i = 0; duration_ms ? now_ns() < end_at : i < count; i++)
		if (one_sleep(ep, w)) {
			w->failed = 1;
			break;
		}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *raw = NULL, *usage =
		"efb-timer [--mode loop|pwait2|fixed] [--sleep-us N] [--fixed-ms T] "
		"[--count N | --duration-ms D] [--threads N] [--slack NS] [--raw FILE]";
	long nthreads = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			efb_usage(usage);
		i++;
		if (!strcmp(a, "--mode"))
			mode = !strcmp(v, "loop") ? LOOP : !strcmp(v, "pwait2") ? PWAIT2
			     : !strcmp(v, "fixed") ? FIXED : (efb_usage(usage), LOOP);
		else if (!strcmp(a, "--sleep-us"))
			sleep_us = atol(v);
		else if (!strcmp(a, "--fixed-ms"))
			fixed_ms = atol(v);
		else if (!strcmp(a, "--count"))
			count = atol(v);
		else if (!strcmp(a, "--duration-ms"))
			duration_ms = atol(v);
		else if (!strcmp(a, "--threads"))
			nthreads = atol(v);
		else if (!strcmp(a, "--slack"))
			slack_ns = atol(v);
		else if (!strcmp(a, "--raw"))
			raw = v;
		else
			efb_usage(usage);
	}
	if (nthreads < 1 || nthreads > 1024 || count < 1 || sleep_us < 1)
		efb_usage(usage);

	struct worker *w = calloc((size_t)nthreads, sizeof(*w));
	pthread_barrier_init(&start_line, NULL, (unsigned)nthreads + 1);
	for (long t = 0; t < nthreads; t++)
		if (pthread_create(&w[t].id, NULL, run, &w[t])) {
			perror("efb-timer: pthread_create");
			return 1;
		}
	struct efb_mark start = efb_mark();
	end_at = start.wall + duration_ms * 1000000;
	pthread_barrier_wait(&start_line);
	long n = 0, waits = 0;
	int failed = 0;
	for (long t = 0; t < nthreads; t++) {
		pthread_join(w[t].id, NULL);
		n += w[t].n;
		waits += w[t].waits;
		failed |= w[t].failed;
	}
	efb_report(start, n, waits);
	if (raw) {
		int64_t *all = malloc((size_t)(n ? n : 1) * sizeof(*all));
		long k = 0;
		for (long t = 0; t < nthreads; t++)
			for (long i = 0; i < w[t].n; i++)
				all[k++] = w[t].samples[i];
		if (efb_write_raw(raw, all, n))
			failed = 1;
	}
	return failed;
}
