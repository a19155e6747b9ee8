/* The library loaded with dlopen (no preload, as Python's epollfix.enable()
 * does), its API used, then a seccomp filter the library cannot see being
 * installed, then the API used again:
 *
 *   ef-dl-filter LIB pwait2|prctl|openat libseccomp|prctl|syscall|handler [N]
 *
 * N waits of 50 us through epollfix_epoll_wait_ns on an idle fd (default 20),
 * a zero-timeout poll after every fifth,
 * then a filter that kills the process on epoll_pwait2, on prctl, or on openat
 * (a program that opens nothing once it runs, pledge-like), installed
 * through libseccomp's seccomp_load or the program's own prctl or syscall
 * (libc's: the dlopen'ed library is after libc in symbol lookup), or by a
 * SIGALRM handler (SA_RESTART, through syscall) that runs 200 ms into a wait
 * of 5 s and 50 us the library makes exact, with this one thread (the wait
 * must fail with EINTR), then N more,
 * then one that must find the byte written to the fd. Prints
 * "before_exact=.. after_exact=.. found=.." (the waits the library
 * made exact: a wait whose deadline passed before it was made, as a thread
 * preempted for 50 us does, is an exact poll, which needs no epoll_pwait2);
 * a filter the library missed kills the process instead (SIGSYS). The line
 * "ef-dl-filter: the filter is in force" on stderr parts the library's debug
 * lines of the waits before it from those after, and "ef-dl-filter: the waits
 * counted are over" ends those counted in after_exact. */
#include "seccomp_filter.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "epollfix.h"

#ifdef HAVE_LIBSECCOMP
#include <seccomp.h>
#endif

static int (*wait_ns)(int, struct epoll_event *, int, int64_t);
static int (*counters)(struct epollfix_counters *, size_t);

static uint64_t exact(void)
{
	struct epollfix_counters c;
	return counters(&c, sizeof(c)) == 0 ? c.hinted : 0;
}

static void waits(int ep, int n)
{
	struct epoll_event out[4];
	/* A zero-timeout poll between runs of five: the library puts the
	 * thread's own slack back at it, and sets its own at the next run. */
	for (int i = 0; i < n; i++)
		if (wait_ns(ep, out, 4, 50000) != 0 || (i % 5 == 4 && wait_ns(ep, out, 4, 0) != 0)) {
			fprintf(stderr, "ef-dl-filter: a wait on an idle fd did not time out\n");
			exit(1);
		}
}

/* A filter that allows everything but nr, which kills the process. */
static int install(const char *via, long nr)
{
	struct ef_sock_filter f[EF_PWAIT2_FILTER_LEN];
	struct ef_sock_fprog prog = ef_pwait2_filter(EF_RET_KILL_PROCESS, f);
	f[4].k = (uint32_t)nr;

	if (!strcmp(via, "libseccomp")) {
#ifdef HAVE_LIBSECCOMP
		scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
		int r = !ctx ? -ENOMEM : seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, (int)nr, 0);
		if (!r)
			r = seccomp_load(ctx);
		seccomp_release(ctx);
		if (r)
			fprintf(stderr, "ef-dl-filter: seccomp_load: %s\n", strerror(-r));
		return r ? -1 : 0;
#else
		fprintf(stderr, "ef-dl-filter: built without libseccomp\n");
		return -1;
#endif
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("ef-dl-filter: PR_SET_NO_NEW_PRIVS");
		return -1;
	}
	if (!strcmp(via, "prctl"))
		return prctl(PR_SET_SECCOMP, 2, &prog, 0, 0);
	if (!strcmp(via, "syscall"))
		return (int)syscall(SYS_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 0, &prog);
	fprintf(stderr, "ef-dl-filter: '%s' is not libseccomp, prctl or syscall\n", via);
	return -1;
}

static long handler_nr;
static volatile sig_atomic_t handler_rc = 1;

static void on_alarm(int sig)
{
	(void)sig;
	handler_rc = install("syscall", handler_nr) ? 2 : 0;
}

/* The filter installed by a signal handler while the one thread is in an
 * upgraded wait (epoll_pwait2, with the library's slack), which it ends. */
static int install_in_wait(int ep, long nr)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_value = { .tv_usec = 200000 } };
	struct epoll_event out[4];

	handler_nr = nr;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL)) {
		perror("ef-dl-filter: SIGALRM");
		return -1;
	}
	int r = wait_ns(ep, out, 4, 5000050000LL);
	int err = errno;
	if (handler_rc || r != -1 || err != EINTR) {
		fprintf(stderr, "ef-dl-filter: the wait the handler ran in: %d (%s), handler %d\n", r,
			strerror(err), (int)handler_rc);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int fds[2];

	if (argc < 4 || argc > 5 ||
	    (strcmp(argv[2], "pwait2") && strcmp(argv[2], "prctl") && strcmp(argv[2], "openat"))) {
		fprintf(stderr, "usage: ef-dl-filter LIB pwait2|prctl|openat libseccomp|prctl|syscall|handler [N]\n");
		return 2;
	}
	int n = argc == 5 ? atoi(argv[4]) : 20;
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib || !(wait_ns = (int (*)(int, struct epoll_event *, int, int64_t))dlsym(
			      lib, "epollfix_epoll_wait_ns")) ||
	    !(counters = (int (*)(struct epollfix_counters *, size_t))dlsym(lib, "epollfix_counters"))) {
		fprintf(stderr, "ef-dl-filter: %s\n", dlerror());
		return 1;
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || pipe(fds) || epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev)) {
		perror("ef-dl-filter: setup");
		return 1;
	}
	waits(ep, n);
	long nr = !strcmp(argv[2], "pwait2") ? EF_NR_EPOLL_PWAIT2 : !strcmp(argv[2], "prctl") ? SYS_prctl : SYS_openat;
	if (!strcmp(argv[3], "handler") ? install_in_wait(ep, nr) : install(argv[3], nr))
		return 1;
	uint64_t before = exact(); /* with the wait the handler ended */
	fprintf(stderr, "ef-dl-filter: the filter is in force\n");
	waits(ep, n);
	uint64_t after = exact() - before;
	fprintf(stderr, "ef-dl-filter: the waits counted are over\n");
	struct epoll_event out[4];
	if (write(fds[1], "x", 1) != 1)
		return 1;
	int found = wait_ns(ep, out, 4, 50000);
	printf("before_exact=%llu after_exact=%llu found=%d\n", (unsigned long long)before,
	       (unsigned long long)after, found);
	return found == 1 && out[0].data.u64 == ev.data.u64 ? 0 : 1;
}
