/* Zero-timeout polling, the busy loops EPOLLFIX_CLAMP is for.
 *
 *   efb-busy --mode idle [--duration-ms D]
 *   efb-busy --mode latency --reader busy|block [--duration-ms D]
 *            [--interval-us I] [--raw FILE]
 *
 * idle:    epoll_wait(timeout 0) on an idle pipe, over and over, for D ms.
 *          The summary line's waits= is the number of polls.
 * latency: a writer thread writes its clock into a pipe every I us (jittered
 *          by +-50%); the reader, polling with timeout 0 (busy; under
 *          EPOLLFIX_CLAMP it becomes the clamped reader) or blocking with -1
 *          (block), reads it and records now - written: one sample. */
#include "common.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

static int fds[2];
static long interval_us = 1000;
static int64_t end_at;

static void *writer(void *arg)
{
	unsigned seed = 12345;
	(void)arg;
	for (;;) {
		long us = interval_us / 2 + (long)(rand_r(&seed) % (unsigned)(interval_us + 1));
		struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
		nanosleep(&ts, NULL);
		int64_t t = now_ns();
		int stop = t >= end_at;
		if (stop)
			t = -1; /* tells the reader to finish */
		if (write(fds[1], &t, sizeof(t)) != sizeof(t)) {
			perror("efb-busy: write");
			exit(1);
		}
		if (stop)
			return NULL;
	}
}

int main(int argc, char **argv)
{
	const char *usage = "efb-busy --mode idle|latency [--reader busy|block] "
			    "[--duration-ms D] [--interval-us I] [--raw FILE]";
	const char *mode = "idle", *reader = "busy", *raw = NULL;
	long duration_ms = 1000;

	for (int i = 1; i + 1 < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		if (!strcmp(a, "--mode"))
			mode = v;
		else if (!strcmp(a, "--reader"))
			reader = v;
		else if (!strcmp(a, "--duration-ms"))
			duration_ms = atol(v);
		else if (!strcmp(a, "--interval-us"))
			interval_us = atol(v);
		else if (!strcmp(a, "--raw"))
			raw = v;
		else
			efb_usage(usage);
	}
	if (argc % 2 == 0 || interval_us < 1 || (strcmp(mode, "idle") && strcmp(mode, "latency")))
		efb_usage(usage);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || pipe(fds)) {
		perror("efb-busy: setup");
		return 1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[0] }, out[8];
	epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);

	struct efb_mark start = efb_mark();
	end_at = start.wall + duration_ms * 1000000;
	long polls = 0;
	if (!strcmp(mode, "idle")) {
		while (now_ns() < end_at)
			for (int i = 0; i < 64; i++, polls++)
				if (epoll_wait(ep, out, 8, 0) != 0) {
					fprintf(stderr, "efb-busy: events on an idle pipe\n");
					return 1;
				}
		efb_report(start, polls, polls);
		return 0;
	}

	int timeout = !strcmp(reader, "block") ? -1 : 0;
	long cap = duration_ms * 4000 / interval_us + 16, n = 0;
	int64_t *samples = malloc((size_t)cap * sizeof(*samples));
	pthread_t w;
	if (!samples || pthread_create(&w, NULL, writer, NULL)) {
		perror("efb-busy: start");
		return 1;
	}
	for (;;) {
		int r = epoll_wait(ep, out, 8, timeout);
		polls++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			perror("efb-busy: epoll_wait");
			return 1;
		}
		if (r == 0)
			continue;
		int64_t t;
		if (read(fds[0], &t, sizeof(t)) != sizeof(t)) {
			perror("efb-busy: read");
			return 1;
		}
		if (t < 0)
			break;
		if (n < cap)
			samples[n++] = now_ns() - t;
	}
	pthread_join(w, NULL);
	efb_report(start, n, polls);
	return efb_write_raw(raw, samples, n) ? 1 : 0;
}
