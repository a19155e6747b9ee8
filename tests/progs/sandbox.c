/* Sandboxes as real programs and launchers build them: a seccomp filter made
 * of rules, installed before exec (a launcher: a container runtime, systemd)
 * or by the program itself, which then sleeps in an epoll loop.
 *
 *   ef-sandbox RULES exec COMMAND [ARGS...]
 *   ef-sandbox RULES loop COUNT [seccomp] [tsync-fail] [cancel-first] [fork]
 *
 * RULES, comma-separated: kill-prctl; kill-fork (clone without CLONE_THREAD,
 * fork and vfork killed, clone3 answered ENOSYS so libc uses clone); eperm-fork
 * (the same refused with EPERM); kill-exit (exit killed, exit_group allowed);
 * kill-pwait2; einval-pwait2; enosys-pwait2; trap-pwait2 (SIGSYS);
 * notify-pwait2 (sent to a seccomp listener that never answers: exec only, a
 * child of the launcher holds it until the program ends); kill-wait (waitid
 * and wait4 killed: a program that never makes a child); kill-kill (kill);
 * kill-open (open, openat and openat2 killed: a program that opens nothing
 * once it runs); allow (no rule). Every other call is allowed.
 * loop: installs through prctl (or syscall(SYS_seccomp) with `seccomp`), then
 * COUNT sleeps of 300 us in a loop that waits ceil(remaining) ms, as CPython
 * and libev do; prints "median_us=.. min_us=.. max_us=.. waits=..".
 * tsync-fail: another thread installs a filter of its own first, so the
 * program's install with SECCOMP_FILTER_FLAG_TSYNC fails (it returns that
 * thread's id) and nothing is installed. cancel-first: before installing, a
 * thread is cancelled at its first epoll_wait (the cancel is pending when it
 * starts the call). fork: a prefork master, which forks at once and waits for
 * its worker; the worker installs the filter and runs the loop; the master
 * exits with the worker's status, or 128+signal. Before anything, the loop
 * prints "children=N", the children the process has as main() starts. */
#include "clock.h"
#include "seccomp_filter.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define EF_BPF_JSET_K 0x45
#define EF_RET_ERRNO_ 0x00050000u
#define CLONE_THREAD_ 0x00010000u
#define FLAG_TSYNC 1u
#define FLAG_NEW_LISTENER 8u
#define EF_RET_TRAP_ 0x00030000u
#define EF_RET_USER_NOTIF_ 0x7fc00000u

static struct ef_sock_filter prog[64];
static unsigned len;

static void emit(uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	prog[len++] = (struct ef_sock_filter){ code, jt, jf, k };
}

/* nr gets action; A holds nr before and after. */
static void rule(long nr, uint32_t action)
{
	emit(EF_BPF_JEQ_K, 0, 1, (uint32_t)nr);
	emit(EF_BPF_RET_K, 0, 0, action);
}

static int notify; /* a rule sends a call to a listener */

static int build(char *rules)
{
	uint32_t fork_action = 0;

	emit(EF_BPF_LD_W_ABS, 0, 0, 4); /* arch */
	emit(EF_BPF_JEQ_K, 1, 0, EF_AUDIT_ARCH);
	emit(EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	emit(EF_BPF_LD_W_ABS, 0, 0, 0); /* nr */
	for (char *save = NULL, *r = strtok_r(rules, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
		if (!strcmp(r, "kill-prctl"))
			rule(SYS_prctl, EF_RET_KILL_PROCESS);
		else if (!strcmp(r, "kill-exit"))
			rule(SYS_exit, EF_RET_KILL_PROCESS);
		else if (!strcmp(r, "kill-pwait2"))
			rule(EF_NR_EPOLL_PWAIT2, EF_RET_KILL_PROCESS);
		else if (!strcmp(r, "einval-pwait2"))
			rule(EF_NR_EPOLL_PWAIT2, EF_RET_ERRNO_ | EINVAL);
		else if (!strcmp(r, "enosys-pwait2"))
			rule(EF_NR_EPOLL_PWAIT2, EF_RET_ERRNO_ | ENOSYS);
		else if (!strcmp(r, "trap-pwait2"))
			rule(EF_NR_EPOLL_PWAIT2, EF_RET_TRAP_);
		else if (!strcmp(r, "notify-pwait2")) {
			rule(EF_NR_EPOLL_PWAIT2, EF_RET_USER_NOTIF_);
			notify = 1;
		} else if (!strcmp(r, "kill-wait")) {
			rule(SYS_waitid, EF_RET_KILL_PROCESS);
			rule(SYS_wait4, EF_RET_KILL_PROCESS);
		} else if (!strcmp(r, "kill-kill"))
			rule(SYS_kill, EF_RET_KILL_PROCESS);
		else if (!strcmp(r, "kill-open")) {
#ifdef SYS_open
			rule(SYS_open, EF_RET_KILL_PROCESS);
#endif
			rule(SYS_openat, EF_RET_KILL_PROCESS);
			rule(EF_NR_OPENAT2, EF_RET_KILL_PROCESS);
		} else if (!strcmp(r, "kill-fork"))
			fork_action = EF_RET_KILL_PROCESS;
		else if (!strcmp(r, "eperm-fork"))
			fork_action = EF_RET_ERRNO_ | EPERM;
		else if (strcmp(r, "allow")) {
			fprintf(stderr, "ef-sandbox: unknown rule %s\n", r);
			return -1;
		}
	}
	if (fork_action) {
#ifdef SYS_fork
		rule(SYS_fork, fork_action);
		rule(SYS_vfork, fork_action);
#endif
		rule(SYS_clone3, EF_RET_ERRNO_ | ENOSYS);
		/* clone: a new thread is allowed, a new process killed. Last, since
		 * it loads its flags over the number. */
		emit(EF_BPF_JEQ_K, 0, 4, SYS_clone);
		emit(EF_BPF_LD_W_ABS, 0, 0, 16); /* args[0], low word */
		emit(EF_BPF_JSET_K, 0, 1, CLONE_THREAD_);
		emit(EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
		emit(EF_BPF_RET_K, 0, 0, fork_action);
	}
	emit(EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	return 0;
}

static long install(int via_seccomp, unsigned flags, struct ef_sock_filter *p, unsigned n)
{
	struct ef_sock_fprog fp = { (unsigned short)n, p };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return via_seccomp ? syscall(SYS_seccomp, 1 /* SET_MODE_FILTER */, flags, &fp)
			   : prctl(PR_SET_SECCOMP, 2, &fp, 0, 0);
}

static atomic_int go, installed_other;

static void *own_filter(void *arg)
{
	(void)arg;
	struct ef_sock_filter allow[1] = { { EF_BPF_RET_K, 0, 0, EF_RET_ALLOW } };
	atomic_store(&installed_other, install(1, 0, allow, 1) == 0 ? 1 : -1);
	while (atomic_load(&installed_other) != 2) /* stays, with its own filter */
		sched_yield();
	return NULL;
}

static void *first_wait(void *arg)
{
	int ep = *(int *)arg;
	struct epoll_event ev;
	while (!atomic_load(&go))
		; /* no cancellation point before the wait */
	for (;;)
		epoll_wait(ep, &ev, 1, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3 || build(argv[1]))
		goto usage;
	if (!strcmp(argv[2], "exec") && argc > 3) {
		long listener = install(notify, notify ? FLAG_NEW_LISTENER : 0, prog, len);
		if (listener < 0) {
			perror("ef-sandbox: install");
			return 2;
		}
		if (notify) {
			/* The listener lives in a child that never reads it, until the
			 * program (this thread, after exec) ends. */
			pid_t holder = fork();
			if (holder == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				for (;;)
					pause();
			}
			close((int)listener);
			if (holder < 0) {
				perror("ef-sandbox: fork");
				return 2;
			}
		}
		execvp(argv[3], argv + 3);
		perror(argv[3]);
		return 127;
	}
	if (strcmp(argv[2], "loop") || argc < 4)
		goto usage;
	long count = atol(argv[3]);
	int via_seccomp = 0, tsync_fail = 0, cancel_first = 0, prefork = 0;
	for (int i = 4; i < argc; i++) {
		via_seccomp |= !strcmp(argv[i], "seccomp");
		tsync_fail |= !strcmp(argv[i], "tsync-fail");
		cancel_first |= !strcmp(argv[i], "cancel-first");
		prefork |= !strcmp(argv[i], "fork");
	}
	char path[64], kids[256] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(kids, sizeof(kids), f))
			kids[0] = '\0';
		fclose(f);
	}
	int children = 0;
	for (char *save = NULL, *k = strtok_r(kids, " \n", &save); k; k = strtok_r(NULL, " \n", &save))
		children++;
	printf("children=%d ", children);
	fflush(stdout);
	if (prefork) {
		pid_t worker = fork();
		if (worker < 0) {
			perror("ef-sandbox: fork");
			return 2;
		}
		if (worker > 0) {
			int st;
			if (waitpid(worker, &st, 0) != worker) {
				perror("ef-sandbox: waitpid");
				return 2;
			}
			if (WIFSIGNALED(st))
				printf("worker killed by signal %d\n", WTERMSIG(st));
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return 1;
	pthread_t t;
	if (cancel_first) {
		pthread_create(&t, NULL, first_wait, &ep);
		pthread_cancel(t); /* pending: acted on at the thread's first cancellation point */
		atomic_store(&go, 1);
		pthread_join(t, NULL);
	}
	unsigned flags = 0;
	if (tsync_fail) {
		pthread_create(&t, NULL, own_filter, NULL);
		while (!atomic_load(&installed_other))
			sched_yield();
		flags = FLAG_TSYNC;
		via_seccomp = 1;
	}
	long r = install(via_seccomp, flags, prog, len);
	if (tsync_fail) {
		printf("tsync_result=%ld ", r);
		if (r <= 0) {
			fprintf(stderr, "ef-sandbox: the TSYNC install was expected to fail: %ld\n", r);
			return 1;
		}
		atomic_store(&installed_other, 2);
		pthread_join(t, NULL);
	} else if (r) {
		perror("ef-sandbox: install");
		return 2;
	}
	int64_t *samples = calloc((size_t)count, sizeof(*samples));
	long waits = 0;
	struct epoll_event ev;
	for (long n = 0; n < count; n++) {
		int64_t start = now_ns(), deadline = start + 300000, now = start;
		do {
			epoll_wait(ep, &ev, 1, (int)((deadline - now + 999999) / 1000000));
			waits++;
		} while ((now = now_ns()) < deadline);
		samples[n] = now_ns() - start;
	}
	print_summary(samples, (size_t)count);
	printf(" waits=%ld\n", waits);
	return 0;
usage:
	fprintf(stderr, "usage: %s RULES exec COMMAND [ARGS...]\n"
			"       %s RULES loop COUNT [seccomp] [tsync-fail] [cancel-first] [fork]\n",
		argv[0], argv[0]);
	return 2;
}
