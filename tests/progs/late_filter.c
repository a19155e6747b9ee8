/* A seccomp filter installed after start-up, between upgraded waits:
 *
 *   ef-late-filter prctl|syscall|libseccomp kill|allow [N]
 *
 * N epoll_wait(1) on an idle fd (default 20), then a filter that kills the
 * process on epoll_pwait2 (kill) or allows everything (allow), installed
 * through prctl(PR_SET_SECCOMP), syscall(SYS_seccomp) or libseccomp's
 * seccomp_load, then N more. Prints "before_median_us=.. before_min_us=..
 * after_median_us=.. after_min_us=.." (the shortest proves an upgrade: load
 * never shortens a wait); a kill filter the library missed kills the process
 * instead. */
#include "clock.h"
#include "seccomp_filter.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_LIBSECCOMP
#include <seccomp.h>
#endif

/* The median in us of n 1 ms waits on ep; *min_us the shortest. */
static int64_t waits(int ep, int n, int64_t *min_us)
{
	struct epoll_event out[4];
	int64_t ns[1000];
	for (int i = 0; i < n; i++) {
		int64_t t0 = now_ns();
		if (epoll_wait(ep, out, 4, 1) != 0) {
			fprintf(stderr, "ef-late-filter: epoll_wait(1) did not time out\n");
			exit(1);
		}
		ns[i] = now_ns() - t0;
	}
	qsort(ns, (size_t)n, sizeof(ns[0]), cmp_i64);
	*min_us = ns[0] / 1000;
	return ns[n / 2] / 1000;
}

static int install(const char *via, int kill)
{
	struct ef_sock_filter f[EF_PWAIT2_FILTER_LEN];
	struct ef_sock_fprog prog = ef_pwait2_filter(kill ? EF_RET_KILL_PROCESS : EF_RET_ALLOW, f);

	if (!strcmp(via, "libseccomp")) {
#ifdef HAVE_LIBSECCOMP
		scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
		/* allow: a filter all the same, refusing only a call nobody makes here
		 * (libseccomp refuses a rule that does what the default does). */
		int r = !ctx ? -ENOMEM
		       : kill ? seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, EF_NR_EPOLL_PWAIT2, 0)
			      : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(acct), 0);
		if (!r)
			r = seccomp_load(ctx);
		seccomp_release(ctx);
		if (r) {
			fprintf(stderr, "ef-late-filter: seccomp_load: %s\n", strerror(-r));
			return -1;
		}
		return 0;
#else
		fprintf(stderr, "ef-late-filter: built without libseccomp\n");
		return -1;
#endif
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("ef-late-filter: PR_SET_NO_NEW_PRIVS");
		return -1;
	}
	if (!strcmp(via, "prctl"))
		return prctl(PR_SET_SECCOMP, 2, &prog, 0, 0);
	if (!strcmp(via, "syscall"))
		return (int)syscall(SYS_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 0, &prog);
	fprintf(stderr, "ef-late-filter: '%s' is not prctl, syscall or libseccomp\n", via);
	return -1;
}

int main(int argc, char **argv)
{
	int fds[2];

	if (argc < 3 || argc > 4 || (strcmp(argv[2], "kill") && strcmp(argv[2], "allow"))) {
		fprintf(stderr, "usage: ef-late-filter prctl|syscall|libseccomp kill|allow [N]\n");
		return 2;
	}
	int n = argc == 4 ? atoi(argv[3]) : 20;
	if (n < 1 || n > 1000)
		n = 20;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || pipe(fds) || epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev)) {
		perror("ef-late-filter: setup");
		return 1;
	}
	int64_t before_min, before = waits(ep, n, &before_min);
	if (install(argv[1], !strcmp(argv[2], "kill"))) {
		perror("ef-late-filter: install");
		return 1;
	}
	int64_t after_min, after = waits(ep, n, &after_min);
	printf("before_median_us=%lld before_min_us=%lld after_median_us=%lld after_min_us=%lld\n",
	       (long long)before, (long long)before_min, (long long)after, (long long)after_min);
	return 0;
}
