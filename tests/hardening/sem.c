/* Semantics that must be the same with and without the library. Each mode
 * prints lines that bats compares between the two runs, and exits 0 when what
 * it saw matches the kernel's documented behaviour.
 *
 *   ef-sem badargs    EBADF, EINVAL, EFAULT for both calls and every timeout
 *   ef-sem eintr      a signal with SA_RESTART ends the wait with EINTR
 *   ef-sem long       timeouts INT_MAX, INT_MIN, -2 and 1000 still return the event
 *   ef-sem cancel N   threads cancelled N times during (upgraded) waits go
 *   ef-sem pwait2     the program's own epoll_pwait2 (libc and raw) is untouched
 *   ef-sem late K HOW K pass-through waits, then a seccomp filter (eperm, enosys
 *                     or kill) on epoll_pwait2, then 1 ms waits: all return 0 */
#include "hard.h"
#include "seccomp_filter.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

static const char *errname(int e)
{
	switch (e) {
	case 0: return "0";
	case EBADF: return "EBADF";
	case EINVAL: return "EINVAL";
	case EFAULT: return "EFAULT";
	case EINTR: return "EINTR";
	case EXDEV: return "EXDEV(unchanged)";
	case EPERM: return "EPERM";
	case ENOSYS: return "ENOSYS";
	default: return strerror(e);
	}
}

static int call(int pwait, int ep, struct epoll_event *ev, int max, int t, const sigset_t *m)
{
	return pwait ? epoll_pwait(ep, ev, max, t, m) : epoll_wait(ep, ev, max, t);
}

/* ---- badargs ---- */
static int bad;

static void one(const char *what, int pwait, int ep, struct epoll_event *ev, int max, int t,
		const sigset_t *m, int want_r, int want_errno)
{
	errno = EXDEV; /* a success must leave errno alone */
	int r = call(pwait, ep, ev, max, t, m);
	int e = errno;
	printf("%-28s %-11s t=%-2d r=%d errno=%s\n", what, pwait ? "epoll_pwait" : "epoll_wait",
	       t, r, errname(e));
	if (r != want_r || e != want_errno) {
		printf("  ^ expected r=%d errno=%s\n", want_r, errname(want_errno));
		bad++;
	}
}

static int badargs(void)
{
	static const int ts[] = { -1, 0, 1, 2, 5 };
	int idle = idle_epoll(), ready = epoll_create1(0), fds[2], p[2];
	if (idle < 0 || ready < 0 || pipe(fds) || pipe(p))
		return 2;
	/* ready: a pipe with one byte in it, level-triggered: always one event. */
	if (write(fds[1], "x", 1) != 1)
		return 2;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 42 }, out[4];
	epoll_ctl(ready, EPOLL_CTL_ADD, fds[0], &ev);
	long pg = sysconf(_SC_PAGESIZE);
	void *none = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (none == MAP_FAILED)
		return 2;
	struct epoll_event *kernel = (struct epoll_event *)(uintptr_t)-4096;
	sigset_t mask;
	sigemptyset(&mask);
	int closed = dup(0);
	close(closed);

	for (int pw = 0; pw < 2; pw++)
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
			int t = ts[i];
			one("epfd -1", pw, -1, out, 4, t, &mask, -1, EBADF);
			one("epfd closed", pw, closed, out, 4, t, &mask, -1, EBADF);
			one("epfd is a pipe", pw, p[0], out, 4, t, &mask, -1, EINVAL);
			one("maxevents 0", pw, ready, out, 0, t, &mask, -1, EINVAL);
			one("maxevents -1", pw, ready, out, -1, t, &mask, -1, EINVAL);
			one("maxevents INT_MIN", pw, ready, out, INT_MIN, t, &mask, -1, EINVAL);
			one("maxevents INT_MAX", pw, ready, out, INT_MAX, t, &mask, -1, EINVAL);
			one("events in kernel space", pw, idle, kernel, 4, t, &mask, -1, EFAULT);
			one("events NULL, one ready", pw, ready, NULL, 4, t, &mask, -1, EFAULT);
			one("events PROT_NONE, one ready", pw, ready, none, 4, t, &mask, -1, EFAULT);
			/* The event that could not be copied is still there. */
			one("then the event is still there", pw, ready, out, 4, t, &mask, 1, EXDEV);
			if (t >= 0)
				one("idle, valid", pw, idle, out, 4, t, &mask, 0, EXDEV);
			if (pw)
				one("sigmask pointer bad", pw, ready, out, 4, t,
				    (const sigset_t *)(uintptr_t)-4096, -1, EFAULT);
		}
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

/* ---- eintr ---- */
static volatile sig_atomic_t handled;
static atomic_int interrupted;
static pthread_t waiter;
static void on_usr1(int s) { (void)s; handled++; }

static void *pester(void *arg)
{
	(void)arg;
	/* Until the waiter reports EINTR: one signal might land between two waits. */
	while (!atomic_load(&interrupted)) {
		struct timespec d = { 0, 2 * 1000 * 1000 };
		nanosleep(&d, NULL);
		pthread_kill(waiter, SIGUSR1);
	}
	return NULL;
}

static int eintr(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	sigaction(SIGUSR1, &sa, NULL);
	int ep = idle_epoll();
	static const int ts[] = { 1, 2, 5, -1 };
	sigset_t none;
	sigemptyset(&none);
	waiter = pthread_self();
	for (int pw = 0; pw < 2; pw++)
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
			struct epoll_event out[2];
			pthread_t t;
			int r, waits = 0;
			handled = 0;
			atomic_store(&interrupted, 0);
			pthread_create(&t, NULL, pester, NULL);
			while ((r = call(pw, ep, out, 2, ts[i], &none)) == 0)
				waits++;
			int e = errno;
			atomic_store(&interrupted, 1);
			pthread_join(t, NULL);
			printf("%-11s t=%-2d r=%d errno=%s handler=%s\n", pw ? "epoll_pwait" : "epoll_wait",
			       ts[i], r, errname(e), handled ? "ran" : "did not run");
			if (r != -1 || e != EINTR || !handled)
				bad++;
		}
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

/* ---- long timeouts ---- */
static int wfd;
static void *write_later(void *arg)
{
	struct timespec d = { 0, (long)(intptr_t)arg * 1000 * 1000 };
	nanosleep(&d, NULL);
	if (write(wfd, "x", 1) != 1)
		abort();
	return NULL;
}

static int long_timeouts(void)
{
	static const int ts[] = { INT_MAX, INT_MIN, -2, 1000, 999, 3 };
	int fds[2], ep = epoll_create1(0);
	if (ep < 0 || pipe(fds))
		return 2;
	wfd = fds[1];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 }, out[2];
	epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);
	for (int pw = 0; pw < 2; pw++)
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
			sigset_t none;
			sigemptyset(&none);
			pthread_t t;
			/* 20 ms later; for the 3 ms timeout it arrives first only when
			 * written before the wait ends: write it after 1 ms. */
			intptr_t after = ts[i] == 3 ? 1 : 20;
			pthread_create(&t, NULL, write_later, (void *)after);
			int64_t t0 = now_ns();
			int r;
			/* A short timeout may end before the event (a loaded machine):
			 * wait again, as a loop would, until it comes. */
			while ((r = call(pw, ep, out, 2, ts[i], &none)) == 0 && now_ns() - t0 < 900000000)
				;
			long ms = (long)((now_ns() - t0) / 1000000);
			pthread_join(t, NULL);
			char c;
			if (read(fds[0], &c, 1) != 1)
				return 2;
			int ok = r == 1 && out[0].data.u64 == 7 && ms < 900;
			printf("%-11s t=%-11d r=%d data=%llu %s\n", pw ? "epoll_pwait" : "epoll_wait",
			       ts[i], r, (unsigned long long)out[0].data.u64,
			       ok ? "returned with the event" : "WRONG");
			bad += !ok;
		}
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

/* ---- cancel ---- */
static atomic_long cancel_waits;
static void *wait_forever(void *arg)
{
	int ep = (int)(intptr_t)arg & 0xffff, pw = (int)(intptr_t)arg >> 16;
	struct epoll_event out[2];
	sigset_t none;
	sigemptyset(&none);
	for (;;) {
		call(pw, ep, out, 2, 1, &none);
		atomic_fetch_add(&cancel_waits, 1);
	}
	return NULL;
}

static int cancel(int rounds)
{
	int ep = idle_epoll();
	unsigned seed = 99;
	int cancelled = 0;
	alarm(20); /* a thread that never goes: killed by SIGALRM, the test fails */
	for (int i = 0; i < rounds; i++) {
		pthread_t t;
		int pw = i % 2;
		atomic_store(&cancel_waits, 0);
		pthread_create(&t, NULL, wait_forever, (void *)(intptr_t)(ep | pw << 16));
		/* Let it wait a few times, then cancel at a random moment. */
		while (atomic_load(&cancel_waits) < 3)
			sched_yield();
		struct timespec d = { 0, (long)(rand_r(&seed) % 2000) * 1000 };
		nanosleep(&d, NULL);
		pthread_cancel(t);
		void *res;
		pthread_join(t, &res);
		cancelled += res == PTHREAD_CANCELED;
	}
	printf("rounds=%d cancelled=%d\n", rounds, cancelled);
	return cancelled == rounds ? 0 : 1;
}

/* ---- the program's own epoll_pwait2 ---- */
static int pwait2(void)
{
	int (*libc_pw2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
	*(void **)&libc_pw2 = dlsym(RTLD_DEFAULT, "epoll_pwait2");
	int idle = idle_epoll(), ready = epoll_create1(0), fds[2];
	if (idle < 0 || ready < 0 || pipe(fds) || write(fds[1], "x", 1) != 1)
		return 2;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 5 }, out[2];
	epoll_ctl(ready, EPOLL_CTL_ADD, fds[0], &ev);
	struct timespec zero = { 0, 0 }, us50 = { 0, 50000 };
	for (int how = 0; how < 2; how++) {
		const char *name = how ? "libc epoll_pwait2" : "raw epoll_pwait2";
		if (how && !libc_pw2) {
			printf("%s: absent\n", name); /* musl; printed the same both ways */
			continue;
		}
		struct {
			const char *what;
			int ep;
			const struct timespec *t;
		} cs[] = { { "idle 0", idle, &zero }, { "idle 50us", idle, &us50 },
			   { "ready 50us", ready, &us50 }, { "ready NULL", ready, NULL },
			   { "epfd -1", -1, &us50 } };
		for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
			errno = EXDEV;
			int r = how ? libc_pw2(cs[i].ep, out, 2, cs[i].t, NULL)
				    : (int)syscall(SYS_epoll_pwait2, cs[i].ep, out, 2, cs[i].t, NULL, 8);
			printf("%s %-10s r=%d errno=%s\n", name, cs[i].what, r, errname(errno));
		}
	}
	return 0;
}

/* ---- a seccomp filter after start-up ---- */
static int late(int k, const char *how)
{
	int ep = idle_epoll();
	struct epoll_event out[2];
	/* Waits the library passes through: nothing probed epoll_pwait2 yet. */
	for (int i = 0; i < k; i++)
		if (epoll_wait(ep, out, 2, i % 2 ? 0 : 2) != 0)
			return 1;
	if (filter_pwait2(how))
		return 2;
	long m = median_wait_us(ep, 0, 1, 40, NULL), mp = median_wait_us(ep, 1, 1, 40, NULL);
	printf("after the filter: epoll_wait median_us=%ld epoll_pwait median_us=%ld ", m, mp);
	print_counters();
	printf("\n");
	return m < 0 || mp < 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "badargs"))
		return badargs();
	if (!strcmp(mode, "eintr"))
		return eintr();
	if (!strcmp(mode, "long"))
		return long_timeouts();
	if (!strcmp(mode, "cancel"))
		return cancel(argc > 2 ? atoi(argv[2]) : 50);
	if (!strcmp(mode, "pwait2"))
		return pwait2();
	if (!strcmp(mode, "late") && argc > 3)
		return late(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: %s badargs|eintr|long|cancel [N]|pwait2|late K eperm|enosys|kill\n",
		argv[0]);
	return 2;
}
