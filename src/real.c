#define _GNU_SOURCE
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "wait_path.h"

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441 /* the same number on every architecture */
#endif
#ifndef SYS_seccomp
#define SYS_seccomp __NR_seccomp
#endif
#define KERNEL_SIGSET_BYTES (_NSIG / 8)
/* <linux/seccomp.h>, which musl's headers do not bring. */
#define SECCOMP_MODE_STRICT_ 1
#define SECCOMP_MODE_FILTER_ 2
#define SECCOMP_SET_MODE_STRICT_ 0
#define SECCOMP_SET_MODE_FILTER_ 1
/* Flags that make sense only for the program's own install: a listener (the
 * child would wait on itself), waiting for one, and syncing other threads. */
#define FLAGS_NOT_IN_CHILD ((1UL << 0) | (1UL << 3) | (1UL << 4) | (1UL << 5))

_Atomic(void *) ef_real_table[EF_REAL_COUNT];

/* Stand-ins for what libc lacks. They behave as the libc functions would,
 * cancellation included: a raw syscall is no cancellation point. A cancel that
 * arrived before it is acted on first (musl then holds SIGCANCEL blocked, so
 * the wait itself would never see it), and one that interrupted the wait right
 * after it. */
static int raw_epoll_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
			   const sigset_t *mask)
{
	pthread_testcancel();
	int r = (int)ef_real_syscall()(SYS_epoll_pwait, epfd, ev, maxevents, timeout, mask,
				       KERNEL_SIGSET_BYTES);
	if (r < 0 && errno == EINTR)
		pthread_testcancel();
	return r;
}

static int raw_epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout)
{
	return raw_epoll_pwait(epfd, ev, maxevents, timeout, NULL);
}

static int raw_epoll_pwait2(int epfd, struct epoll_event *ev, int maxevents,
			    const struct timespec *timeout, const sigset_t *mask)
{
	pthread_testcancel();
	int r = (int)ef_real_syscall()(SYS_epoll_pwait2, epfd, ev, maxevents, timeout, mask,
				       KERNEL_SIGSET_BYTES);
	if (r < 0 && errno == EINTR)
		pthread_testcancel();
	return r;
}

static int raw_prctl(int option, ...)
{
	unsigned long a[4];

	EF_PRCTL_ARGS(option, a);
	return (int)ef_real_syscall()(SYS_prctl, option, a[0], a[1], a[2], a[3]);
}

/* libc always has syscall(); were it missing, this is what a kernel without the
 * call would answer. */
static long raw_syscall(long number, ...)
{
	(void)number;
	errno = ENOSYS;
	return -1;
}

#define EF_REAL_NAME(name, type) #name,
static const char *const real_names[] = { EF_REAL_FUNCS(EF_REAL_NAME) };
#define EF_REAL_RAW(name, type) (void *)raw_##name,
static void *const real_raw[] = { EF_REAL_FUNCS(EF_REAL_RAW) };

/* Racing threads store the same value; dlsym's errno never leaks out. */
void *ef_real_resolve(enum ef_real_id id)
{
	int saved = errno;
	void *p = dlsym(RTLD_NEXT, real_names[id]);
	errno = saved;
	if (!p)
		p = real_raw[id];
	atomic_store_explicit(&ef_real_table[id], p, memory_order_release);
	return p;
}

void ef_real_init(void)
{
	for (int id = 0; id < EF_REAL_COUNT; id++)
		if (!atomic_load_explicit(&ef_real_table[id], memory_order_acquire))
			ef_real_resolve((enum ef_real_id)id);
}

/* ---- Is epoll_pwait2 usable? ---------------------------------------------- */

static _Atomic int pw2_state = EF_PW2_UNKNOWN;
static _Atomic int pw2_why;

/* With maxevents 0 a kernel that has the call answers EINVAL (or EBADF) before
 * touching anything; ENOSYS means too old, anything else a filter said no. */
static int probe_answer(void)
{
	errno = 0;
	long r = ef_real_syscall()(SYS_epoll_pwait2, -1, NULL, 0, NULL, NULL, KERNEL_SIGSET_BYTES);
	if (r < 0 && (errno == EINVAL || errno == EBADF))
		return 0;
	return r < 0 ? errno : EINVAL;
}

/* Reads "Seccomp:\t<mode>" from /proc/self/status without stdio. Returns the
 * mode, or -1 when it cannot tell (no /proc): then assume a filter. */
static int seccomp_mode(void)
{
	char buf[4096];
	if (ef_proc_read("status", buf, sizeof(buf)) < 0)
		return -1;
	char *p = strstr(buf, "Seccomp:");
	if (!p)
		return -1;
	for (p += 8; *p == ' ' || *p == '\t'; p++)
		;
	return *p >= '0' && *p <= '9' ? *p - '0' : -1;
}

/* A filter the child installs before it probes (ef_seccomp_set); NULL: none. */
struct new_filter {
	int via_prctl;
	unsigned long flags;
	void *prog;
};

#define CHILD_NOT_INSTALLED 255 /* the child's own install failed: so will the program's */

/* The child ends with a plain exit system call: _exit() is noreturn, before
 * which AddressSanitizer checks the stack, and warns about this one. */
static int child_exit(int code)
{
	ef_real_syscall()(SYS_exit, code);
	return code;
}

static int probe_child(void *arg)
{
	const struct new_filter *f = arg;

	/* The child has its own copy of the signal handlers: a filter that traps
	 * (SIGSYS) must end the child, not run the program's handler in memory
	 * the child shares with it. */
	signal(SIGSYS, SIG_DFL);
	if (f) {
		long r = f->via_prctl
				 ? ef_real_prctl()(PR_SET_SECCOMP, SECCOMP_MODE_FILTER_, f->prog, 0, 0)
				 : ef_real_syscall()(SYS_seccomp, SECCOMP_SET_MODE_FILTER_, f->flags, f->prog);
		if (r < 0)
			return child_exit(CHILD_NOT_INSTALLED);
	}
	return child_exit(probe_answer());
}

/* The probe runs in a short-lived child that shares our memory (CLONE_VM |
 * CLONE_VFORK) and sends no SIGCHLD, so a filter that kills on unknown system
 * calls kills only the child. Returns 0 or the reason. The caller holds
 * pw2_state at EF_PW2_PROBING: one child at a time uses the stack. */
static int probe_in_child_with(struct new_filter *f)
{
	static char stack[16384] __attribute__((aligned(16)));
	int status;

	pid_t pid = clone(probe_child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK, f);
	if (pid < 0)
		return errno;
	while (waitpid(pid, &status, __WALL) < 0)
		if (errno != EINTR)
			return ECHILD;
	if (WIFSIGNALED(status))
		return -WTERMSIG(status);
	return WEXITSTATUS(status);
}

static int probe_in_child(void)
{
	return probe_in_child_with(NULL);
}

/* A filter installed later is learned of where it is installed
 * (ef_seccomp_set), so a use asks the kernel nothing. */
EF_WAIT_PATH int ef_pwait2_usable(void)
{
	int s = atomic_load_explicit(&pw2_state, memory_order_acquire);
	if (s == EF_PW2_OK)
		return 1;
	if (s != EF_PW2_UNKNOWN)
		return 0;
	int expected = EF_PW2_UNKNOWN;
	if (!atomic_compare_exchange_strong(&pw2_state, &expected, EF_PW2_PROBING))
		return 0;

	int saved = errno;
	int why = seccomp_mode() == 0 ? probe_answer() : probe_in_child();
	errno = saved;
	atomic_store_explicit(&pw2_why, why, memory_order_relaxed);
	atomic_store_explicit(&pw2_state, why ? EF_PW2_NO : EF_PW2_OK, memory_order_release);
	return why == 0;
}

void ef_pwait2_after_fork(void)
{
	/* The prober was another thread, which the child does not have. */
	int probing = EF_PW2_PROBING;
	atomic_compare_exchange_strong(&pw2_state, &probing, EF_PW2_UNKNOWN);
}

void ef_pwait2_refused(int err)
{
	atomic_store_explicit(&pw2_why, err, memory_order_relaxed);
	atomic_store_explicit(&pw2_state, EF_PW2_NO, memory_order_release);
}

enum ef_pwait2_state ef_pwait2_state(int *why)
{
	if (why)
		*why = atomic_load_explicit(&pw2_why, memory_order_relaxed);
	return atomic_load_explicit(&pw2_state, memory_order_acquire);
}

void ef_pwait2_live(uint64_t *state_addr, uint64_t *why_addr)
{
	*state_addr = (uint64_t)(uintptr_t)&pw2_state;
	*why_addr = (uint64_t)(uintptr_t)&pw2_why;
}

long ef_seccomp_set(int via_prctl, unsigned long op, unsigned long flags, void *prog)
{
	int filter = via_prctl ? op == SECCOMP_MODE_FILTER_ : op == SECCOMP_SET_MODE_FILTER_;
	int strict = via_prctl ? op == SECCOMP_MODE_STRICT_ : op == SECCOMP_SET_MODE_STRICT_;
	long r;

	/* Not a request to filter, or one the kernel refuses (libseccomp asks
	 * with no program, to learn what the kernel supports): it answers. */
	if ((!filter && !strict) || (filter && !prog))
		return via_prctl ? ef_real_prctl()(PR_SET_SECCOMP, op, prog, 0, 0)
				 : ef_real_syscall()(SYS_seccomp, op, flags, prog);
	/* Take the probe for this thread: others pass through meanwhile. */
	int s;
	for (;;) {
		s = atomic_load_explicit(&pw2_state, memory_order_acquire);
		if (s != EF_PW2_PROBING &&
		    atomic_compare_exchange_weak(&pw2_state, &s, EF_PW2_PROBING))
			break;
		sched_yield();
	}
	int saved = errno;
	int why = 0;
	if (s != EF_PW2_NO && filter) {
		struct new_filter f = { via_prctl, flags & ~FLAGS_NOT_IN_CHILD, prog };
		why = probe_in_child_with(&f);
		if (why == CHILD_NOT_INSTALLED) /* the program's request fails alike */
			why = 0;
	} else if (strict) {
		why = EPERM; /* strict mode allows read, write, exit and sigreturn */
	}
	errno = saved;
	r = via_prctl ? ef_real_prctl()(PR_SET_SECCOMP, op, prog, 0, 0)
		      : ef_real_syscall()(SYS_seccomp, op, flags, prog);
	saved = errno;
	if (r >= 0 && why) { /* in force now: epoll_pwait2 is not ours to use */
		atomic_store_explicit(&pw2_why, why, memory_order_relaxed);
		s = EF_PW2_NO;
	}
	atomic_store_explicit(&pw2_state, s, memory_order_release);
	errno = saved;
	return r;
}
