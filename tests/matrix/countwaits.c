/* A test preload that counts epoll waits: put it first in LD_PRELOAD
 * (LD_PRELOAD=libcountwaits.so:libepollfix.so) and it sees the program's own
 * calls, each of which epollfix turns into exactly one kernel wait.
 *
 * At exit each process appends one line to the file named by COUNTWAITS_OUT:
 *   waits=N pid=P t_neg=.. t0=.. t1=.. t2_9=.. t10up=.. pwait2=.. empty=..
 * (calls by the timeout the program asked for; pwait2 counts the program's own
 * epoll_pwait2 calls; empty counts calls with a timeout that returned 0).
 * With COUNTWAITS_TRACE=PATH it also records the first TRACE_MAX calls and
 * appends them to PATH at exit, one line each:
 *   pid tid start_ns(CLOCK_MONOTONIC) duration_ns timeout_ms result api
 * (timeout_ms of an epoll_pwait2 call rounded up; -1 is infinite).
 * Nothing in the interposed functions uses stdio or locks: only relaxed atomic
 * increments and clock_gettime, so it is safe in any thread and in signal
 * handlers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/epoll.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum { C_ALL, C_NEG, C_0, C_1, C_2_9, C_10UP, C_PWAIT2, C_EMPTY, C_N };
static atomic_ulong counts[C_N];

typedef int (*wait_fn)(int, struct epoll_event *, int, int);
typedef int (*pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*pwait2_fn)(int, struct epoll_event *, int, const struct timespec *,
			 const sigset_t *);
static _Atomic(void *) next_wait, next_pwait, next_pwait2;

#define TRACE_MAX 20000
struct trace {
	long long start_ns, dur_ns;
	int tid, timeout, result;
	char api;
};
static struct trace *trace_buf; /* set once by the constructor */
static atomic_ulong trace_n;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct trace *trace_begin(int timeout, char api)
{
	if (!trace_buf)
		return NULL;
	unsigned long i = atomic_fetch_add_explicit(&trace_n, 1, memory_order_relaxed);
	if (i >= TRACE_MAX)
		return NULL;
	struct trace *t = &trace_buf[i];
	t->timeout = timeout;
	t->api = api;
	t->tid = (int)syscall(SYS_gettid);
	t->start_ns = now_ns();
	return t;
}

static int trace_end(struct trace *t, int r)
{
	if (t) {
		t->dur_ns = now_ns() - t->start_ns;
		t->result = r < 0 ? -errno : r;
	}
	return r;
}

static void *next(_Atomic(void *) *slot, const char *name)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);
	if (!p) {
		int saved = errno;
		p = dlsym(RTLD_NEXT, name);
		errno = saved;
		atomic_store_explicit(slot, p, memory_order_release);
	}
	return p;
}

static void bump(int which)
{
	atomic_fetch_add_explicit(&counts[which], 1, memory_order_relaxed);
}

static void count(int timeout_ms)
{
	bump(C_ALL);
	bump(timeout_ms < 0 ? C_NEG : timeout_ms == 0 ? C_0 : timeout_ms == 1 ? C_1
		: timeout_ms < 10 ? C_2_9 : C_10UP);
}

static int done(int r, int timeout_ms)
{
	if (r == 0 && timeout_ms != 0)
		bump(C_EMPTY);
	return r;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout)
{
	wait_fn fn = (wait_fn)next(&next_wait, "epoll_wait");
	count(timeout);
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	struct trace *t = trace_begin(timeout, 'w');
	return done(trace_end(t, fn(epfd, ev, maxevents, timeout)), timeout);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
		       const sigset_t *mask)
{
	pwait_fn fn = (pwait_fn)next(&next_pwait, "epoll_pwait");
	count(timeout);
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	struct trace *t = trace_begin(timeout, 'p');
	return done(trace_end(t, fn(epfd, ev, maxevents, timeout, mask)), timeout);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int maxevents,
			const struct timespec *timeout, const sigset_t *mask)
{
	pwait2_fn fn = (pwait2_fn)next(&next_pwait2, "epoll_pwait2");
	int ms = !timeout ? -1
		 : (timeout->tv_sec == 0 && timeout->tv_nsec == 0) ? 0
		 : (int)(timeout->tv_sec * 1000 + (timeout->tv_nsec + 999999) / 1000000);
	count(ms);
	bump(C_PWAIT2);
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	struct trace *t = trace_begin(ms, '2');
	return done(trace_end(t, fn(epfd, ev, maxevents, timeout, mask)), ms);
}

/* Read at load time: some programs (nginx) replace their environment later. */
static char out_path[4096], trace_path[4096];

__attribute__((constructor)) static void read_env(void)
{
	const char *path = getenv("COUNTWAITS_OUT");
	if (path && strlen(path) < sizeof(out_path))
		strcpy(out_path, path);
	path = getenv("COUNTWAITS_TRACE");
	if (path && *path && strlen(path) < sizeof(trace_path)) {
		strcpy(trace_path, path);
		trace_buf = calloc(TRACE_MAX, sizeof(*trace_buf));
	}
}

static void write_trace(void)
{
	unsigned long n = atomic_load_explicit(&trace_n, memory_order_relaxed);
	FILE *f;

	if (!trace_buf || !(f = fopen(trace_path, "a")))
		return;
	for (unsigned long i = 0; i < n && i < TRACE_MAX; i++) {
		const struct trace *t = &trace_buf[i];
		fprintf(f, "%ld %d %lld %lld %d %d %c\n", (long)getpid(), t->tid, t->start_ns,
			t->dur_ns, t->timeout, t->result, t->api);
	}
	fclose(f);
}

/* Runs at exit() and at dlclose; a process ended by _exit or a signal writes
 * nothing, which the harness reports as a missing count. */
__attribute__((destructor)) static void write_counts(void)
{
	const char *path = out_path;
	char line[256];
	unsigned long c[C_N];

	write_trace();
	if (!*path)
		return;
	for (int i = 0; i < C_N; i++)
		c[i] = atomic_load_explicit(&counts[i], memory_order_relaxed);
	int len = snprintf(line, sizeof(line),
			   "waits=%lu pid=%ld t_neg=%lu t0=%lu t1=%lu t2_9=%lu t10up=%lu "
			   "pwait2=%lu empty=%lu\n",
			   c[C_ALL], (long)getpid(), c[C_NEG], c[C_0], c[C_1], c[C_2_9],
			   c[C_10UP], c[C_PWAIT2], c[C_EMPTY]);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || len <= 0)
		return;
	/* One write with O_APPEND: lines from several processes never interleave. */
	if (write(fd, line, (size_t)len) < 0) {
		/* nothing more to do at exit */
	}
	close(fd);
}
