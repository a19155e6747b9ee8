/* Stress: every event written is read exactly once. Writer threads send
 * numbered 8-byte messages through pipes and loopback TCP connections; waiter
 * threads on several epoll fds read them, with timeouts drawn from
 * -1, 0, 1, 2 and 5 ms:
 *   LT        level-triggered, 2 threads, epoll_wait
 *   ET        edge-triggered, 2 threads, epoll_pwait (drain until EAGAIN)
 *   ONESHOT   EPOLLONESHOT, 2 threads, re-armed after each drain
 *   EXCL      the same fds in 2 epoll fds with EPOLLEXCLUSIVE, 1 thread each
 * Each message's (source, number) is marked once in a table: a second mark is a
 * duplicate, an unmarked one at the end is lost. Bounded: --messages per source
 * and a --seconds deadline after which everything stops.
 *
 *   ef-stress [--messages N] [--seconds S] [--seed N]
 * Prints "written=N read=N lost=N dup=N bad=N waits=N ..." and exits 0 only
 * when every message was read exactly once. */
#include "hard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

enum { G_LT, G_ET, G_ONESHOT, G_EXCL, NGROUPS };
#define PER_GROUP 4
#define NSRC (NGROUPS * PER_GROUP)
#define NWRITERS 2

struct source {
	int rfd, wfd, group;
};

static struct source src[NSRC];
static int epfd[NGROUPS + 1]; /* G_EXCL has two: epfd[G_EXCL] and epfd[NGROUPS] */
static int stop_pipe[2];
static long messages = 2000;
static double seconds = 20;
static unsigned seed0 = 1;
static _Atomic unsigned char *seen;
static atomic_long nread, ndup, nbad, nwritten, nwaits, nerrors;
static atomic_long by_timeout[5];
static atomic_int stopping;

static const int timeouts[5] = { -1, 0, 1, 2, 5 };

static void make_source(int i)
{
	int fds[2];
	if (i % 2 == 0) {
		if (pipe(fds))
			abort();
	} else {
		/* A loopback TCP connection: listen, connect, accept. */
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t len = sizeof(a);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
		    getsockname(l, (struct sockaddr *)&a, &len)) {
			perror("listen");
			exit(2);
		}
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a))) {
			perror("connect");
			exit(2);
		}
		int s = accept(l, NULL, NULL);
		if (s < 0) {
			perror("accept");
			exit(2);
		}
		close(l);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		fds[0] = s;
		fds[1] = c;
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	src[i].rfd = fds[0];
	src[i].wfd = fds[1];
	src[i].group = i / PER_GROUP;
}

static uint32_t events_of(int group)
{
	switch (group) {
	case G_ET:
		return EPOLLIN | EPOLLET;
	case G_ONESHOT:
		return EPOLLIN | EPOLLONESHOT;
	case G_EXCL:
		return EPOLLIN | EPOLLEXCLUSIVE;
	default:
		return EPOLLIN;
	}
}

static void record(const unsigned char *m)
{
	uint32_t s, n;
	memcpy(&s, m, 4);
	memcpy(&n, m + 4, 4);
	if (s >= NSRC || n >= (uint32_t)messages) {
		atomic_fetch_add(&nbad, 1);
		return;
	}
	if (atomic_exchange(&seen[(size_t)s * (size_t)messages + n], 1))
		atomic_fetch_add(&ndup, 1);
	else if (atomic_fetch_add(&nread, 1) + 1 == NSRC * messages) {
		/* The last one: wake every waiter for good. */
		atomic_store(&stopping, 1);
		if (write(stop_pipe[1], "x", 1) != 1)
			abort();
	}
}

/* Reads everything there is now (until EAGAIN). A stream may hand a reader
 * part of a message only if a writer's 8 bytes were split, which pipes (<=
 * PIPE_BUF) and loopback TCP with 8-byte sends do not do; a leftover counts as bad. */
static void drain(struct source *s)
{
	unsigned char buf[8 * 64];
	for (;;) {
		ssize_t n = read(s->rfd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN)
				atomic_fetch_add(&nerrors, 1);
			return;
		}
		if (n % 8)
			atomic_fetch_add(&nbad, 1);
		for (ssize_t k = 0; k + 8 <= n; k += 8)
			record(buf + k);
	}
}

struct waiter {
	int ep, group, pwait;
	unsigned seed;
};

static void *wait_loop(void *arg)
{
	struct waiter *w = arg;
	struct epoll_event out[8];
	sigset_t none;
	sigemptyset(&none);
	while (!atomic_load(&stopping)) {
		int ti = (int)(rand_r(&w->seed) % 5), t = timeouts[ti];
		int r = w->pwait ? epoll_pwait(w->ep, out, 8, t, &none) : epoll_wait(w->ep, out, 8, t);
		atomic_fetch_add(&nwaits, 1);
		atomic_fetch_add(&by_timeout[ti], 1);
		if (r < 0) {
			if (errno != EINTR)
				atomic_fetch_add(&nerrors, 1);
			continue;
		}
		for (int k = 0; k < r; k++) {
			if (out[k].data.u32 == UINT32_MAX)
				continue; /* the stop pipe */
			struct source *s = &src[out[k].data.u32];
			drain(s);
			if (w->group == G_ONESHOT) {
				struct epoll_event ev = { .events = events_of(G_ONESHOT),
							  .data.u32 = out[k].data.u32 };
				if (epoll_ctl(w->ep, EPOLL_CTL_MOD, s->rfd, &ev))
					atomic_fetch_add(&nerrors, 1);
			}
		}
	}
	return NULL;
}

static void *write_loop(void *arg)
{
	long id = (long)arg;
	unsigned seed = seed0 * 7919u + (unsigned)id;
	for (long n = 0; n < messages && !atomic_load(&stopping); n++) {
		for (int i = (int)id; i < NSRC; i += NWRITERS) {
			unsigned char m[8];
			uint32_t s = (uint32_t)i, k = (uint32_t)n;
			memcpy(m, &s, 4);
			memcpy(m + 4, &k, 4);
			if (write(src[i].wfd, m, 8) != 8) {
				perror("write");
				atomic_fetch_add(&nerrors, 1);
				continue;
			}
			atomic_fetch_add(&nwritten, 1);
		}
		/* Irregular gaps, 0 to 1.5 ms; sometimes none, for bursts. */
		unsigned r = (unsigned)rand_r(&seed);
		if (r % 4) {
			struct timespec d = { 0, (long)(r % 1500) * 1000 };
			nanosleep(&d, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--messages") && i + 1 < argc)
			messages = atol(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed0 = (unsigned)atol(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--messages N] [--seconds S] [--seed N]\n", argv[0]);
			return 2;
		}
	}
	if (messages < 1 || messages > 1000000)
		messages = 2000;
	seen = calloc((size_t)NSRC * (size_t)messages, 1);
	if (!seen || pipe(stop_pipe))
		return 2;
	for (int g = 0; g <= NGROUPS; g++)
		if ((epfd[g] = epoll_create1(EPOLL_CLOEXEC)) < 0)
			return 2;
	for (int i = 0; i < NSRC; i++) {
		make_source(i);
		struct epoll_event ev = { .events = events_of(src[i].group), .data.u32 = (uint32_t)i };
		if (epoll_ctl(epfd[src[i].group], EPOLL_CTL_ADD, src[i].rfd, &ev) ||
		    (src[i].group == G_EXCL && epoll_ctl(epfd[NGROUPS], EPOLL_CTL_ADD, src[i].rfd, &ev))) {
			perror("epoll_ctl");
			return 2;
		}
	}
	/* The stop pipe, level-triggered in every epoll fd, is never read. */
	for (int g = 0; g <= NGROUPS; g++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
		epoll_ctl(epfd[g], EPOLL_CTL_ADD, stop_pipe[0], &ev);
	}

	struct waiter w[] = {
		{ epfd[G_LT], G_LT, 0, 0 },	     { epfd[G_LT], G_LT, 1, 0 },
		{ epfd[G_ET], G_ET, 1, 0 },	     { epfd[G_ET], G_ET, 0, 0 },
		{ epfd[G_ONESHOT], G_ONESHOT, 0, 0 }, { epfd[G_ONESHOT], G_ONESHOT, 1, 0 },
		{ epfd[G_EXCL], G_EXCL, 0, 0 },      { epfd[NGROUPS], G_EXCL, 1, 0 },
	};
	enum { NW = sizeof(w) / sizeof(w[0]) };
	pthread_t wt[NW], tw[NWRITERS];
	for (int i = 0; i < NW; i++) {
		w[i].seed = seed0 * 31u + (unsigned)i;
		pthread_create(&wt[i], NULL, wait_loop, &w[i]);
	}
	int64_t t0 = now_ns();
	for (long i = 0; i < NWRITERS; i++)
		pthread_create(&tw[i], NULL, write_loop, (void *)i);

	int64_t deadline = t0 + (int64_t)(seconds * 1e9);
	while (!atomic_load(&stopping) && now_ns() < deadline) {
		struct timespec d = { 0, 10 * 1000 * 1000 };
		nanosleep(&d, NULL);
	}
	int timed_out = !atomic_load(&stopping);
	if (timed_out) {
		atomic_store(&stopping, 1);
		if (write(stop_pipe[1], "x", 1) != 1)
			return 2;
	}
	for (int i = 0; i < NWRITERS; i++)
		pthread_join(tw[i], NULL);
	for (int i = 0; i < NW; i++)
		pthread_join(wt[i], NULL);
	/* Anything still buffered after the deadline is read now, so "lost" means
	 * written and never reported, not merely late. */
	for (int i = 0; i < NSRC; i++)
		drain(&src[i]);

	long total = NSRC * messages, lost = 0;
	for (long k = 0; k < total; k++)
		lost += !seen[k];
	printf("written=%ld read=%ld lost=%ld dup=%ld bad=%ld errors=%ld waits=%ld "
	       "t-1=%ld t0=%ld t1=%ld t2=%ld t5=%ld timed_out=%d ms=%lld ",
	       atomic_load(&nwritten), atomic_load(&nread), lost, atomic_load(&ndup),
	       atomic_load(&nbad), atomic_load(&nerrors), atomic_load(&nwaits),
	       atomic_load(&by_timeout[0]), atomic_load(&by_timeout[1]), atomic_load(&by_timeout[2]),
	       atomic_load(&by_timeout[3]), atomic_load(&by_timeout[4]), timed_out,
	       (long long)((now_ns() - t0) / 1000000));
	print_counters();
	printf("\n");
	free((void *)seen);
	int ok = !timed_out && atomic_load(&nwritten) == total && atomic_load(&nread) == total &&
		 lost == 0 && atomic_load(&ndup) == 0 && atomic_load(&nbad) == 0 &&
		 atomic_load(&nerrors) == 0;
	return ok ? 0 : 1;
}
