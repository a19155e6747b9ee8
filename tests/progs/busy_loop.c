/* A busy loop: epoll_wait(fd, ev, n, 0) on one thread for --seconds, handling
 * whatever arrives. With --writer-us N a second thread writes an 8-byte
 * timestamp into a pipe every N us, and the loop reports how long each one took
 * to be read.
 *
 *   ef-busy [--seconds S] [--api wait|pwait] [--writer-us N] [--set-after-ms MS WORD]
 *
 * With --set-after-ms, a second thread applies WORD (like clamp=1ms) through
 * the library's epollfix_set() after MS ms, while the loop polls; the loop's
 * CPU is then also given over the time after it, as cpu_pct_after.
 *
 * Prints "cpu_pct=.. polls=.. written=.. read=.. missed=.. latency_p50_us=..
 * latency_max_us=..": cpu_pct is the process's user+system time over wall
 * time; missed (with --writer-us) counts the events found right after a wait
 * of 10 ms or more that returned nothing, with no preemption of the thread
 * during it, stamped 5 ms or more before its end: readiness the wait did not
 * return. Unlike a latency, one stall of the machine does not make one: the
 * write would have to land between the wait's end and the read after it,
 * its writer stalled 5 ms between its stamp and its write, or the loop
 * between its wake-up and its clock. */
#include "clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

static int fds[2];
static long writer_us;
static atomic_int stop;
static atomic_long written;
static long set_after_ms;
static const char *set_word;
static _Atomic int64_t set_at_ns, set_at_cpu_ns;

/* Applies set_word after set_after_ms, as a program's own thread would. */
static void *setter(void *arg)
{
	int (*set)(const char *, char *, size_t);
	char err[256] = "";
	struct timespec d = { set_after_ms / 1000, (set_after_ms % 1000) * 1000000 };

	(void)arg;
	nanosleep(&d, NULL);
	*(void **)&set = dlsym(RTLD_DEFAULT, "epollfix_set");
	if (!set || set(set_word, err, sizeof(err)) != 0) {
		fprintf(stderr, "ef-busy: epollfix_set(%s): %s\n", set_word,
			set ? err : "no libepollfix loaded");
		exit(1);
	}
	atomic_store(&set_at_cpu_ns, cpu_ns());
	atomic_store(&set_at_ns, now_ns());
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct timespec d = { writer_us / 1000000, (writer_us % 1000000) * 1000 };
		nanosleep(&d, NULL);
		int64_t t = now_ns();
		if (write(fds[1], &t, sizeof(t)) != sizeof(t))
			abort();
		atomic_fetch_add(&written, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 1.0;
	int use_pwait = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--api") && i + 1 < argc)
			use_pwait = !strcmp(argv[++i], "pwait");
		else if (!strcmp(argv[i], "--writer-us") && i + 1 < argc)
			writer_us = atol(argv[++i]);
		else if (!strcmp(argv[i], "--set-after-ms") && i + 2 < argc) {
			set_after_ms = atol(argv[++i]);
			set_word = argv[++i];
		} else {
			fprintf(stderr,
				"usage: %s [--seconds S] [--api wait|pwait] [--writer-us N] "
				"[--set-after-ms MS WORD]\n",
				argv[0]);
			return 2;
		}
	}
	int ep = epoll_create1(0);
	if (ep < 0 || pipe(fds) || fcntl(fds[0], F_SETFL, O_NONBLOCK))
		return 1;
	struct epoll_event ev = { .events = EPOLLIN }, out[8];
	epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);
	sigset_t none;
	sigemptyset(&none);

	pthread_t t, st;
	if (writer_us > 0)
		pthread_create(&t, NULL, writer, NULL);
	if (set_word)
		pthread_create(&st, NULL, setter, NULL);
	size_t cap = 1 << 20, nread = 0;
	int64_t *lat = calloc(cap, sizeof(*lat));
	long polls = 0, missed = 0;
	int64_t start = now_ns(), cpu0 = cpu_ns(), end = start + (int64_t)(seconds * 1e9);
	struct rusage ru0 = { 0 }, ru1 = { 0 };
	for (int64_t began; (began = now_ns()) < end;) {
		if (writer_us > 0)
			getrusage(RUSAGE_THREAD, &ru0);
		int r = use_pwait ? epoll_pwait(ep, out, 8, 0, &none) : epoll_wait(ep, out, 8, 0);
		int64_t ended = now_ns();
		if (writer_us > 0)
			getrusage(RUSAGE_THREAD, &ru1);
		polls++;
		if (r < 0 && errno != EINTR)
			return 1;
		int64_t stamp;
		/* Not preempted: its length was the wait's own, not a stall. */
		int looked = r > 0 || (r == 0 && writer_us > 0 && ended - began >= 10000000 &&
				       ru1.ru_nivcsw == ru0.ru_nivcsw);
		while (looked && read(fds[0], &stamp, sizeof(stamp)) == sizeof(stamp)) {
			missed += r == 0 && stamp < ended - 5000000;
			if (nread < cap)
				lat[nread++] = now_ns() - stamp;
		}
	}
	int64_t stop_ns = now_ns(), stop_cpu = cpu_ns();
	int64_t wall = stop_ns - start, cpu = stop_cpu - cpu0;
	atomic_store(&stop, 1);
	if (set_word)
		pthread_join(st, NULL);
	if (writer_us > 0) {
		pthread_join(t, NULL);
		/* What the writer sent after the loop stopped is not the loop's to read. */
		int64_t stamp;
		while (read(fds[0], &stamp, sizeof(stamp)) == sizeof(stamp))
			atomic_fetch_sub(&written, 1);
	}
	printf("cpu_pct=%lld polls=%ld written=%ld read=%zu missed=%ld", (long long)(cpu * 100 / wall), polls,
	       atomic_load(&written), nread, missed);
	int64_t at = atomic_load(&set_at_ns);
	if (set_word && at > 0 && stop_ns > at)
		printf(" cpu_pct_after=%lld",
		       (long long)((stop_cpu - atomic_load(&set_at_cpu_ns)) * 100 / (stop_ns - at)));
	if (nread) {
		printf(" latency_");
		print_summary(lat, nread);
	}
	printf("\n");
	return 0;
}
