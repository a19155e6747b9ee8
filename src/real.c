#define _GNU_SOURCE
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441 /* the same number on every architecture */
#endif
#define KERNEL_SIGSET_BYTES (_NSIG / 8)

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
	int r = (int)syscall(SYS_epoll_pwait, epfd, ev, maxevents, timeout, mask,
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
	int r = (int)syscall(SYS_epoll_pwait2, epfd, ev, maxevents, timeout, mask,
			     KERNEL_SIGSET_BYTES);
	if (r < 0 && errno == EINTR)
		pthread_testcancel();
	return r;
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
/* The probe ran with no seccomp filter in force. A filter installed since
 * could kill the process on epoll_pwait2, so each use first asks whether one
 * has appeared (one prctl on a wait of 50 us or more), and probes again in a
 * child if so. */
static _Atomic int pw2_unfiltered;

/* With maxevents 0 a kernel that has the call answers EINVAL (or EBADF) before
 * touching anything; ENOSYS means too old, anything else a filter said no. */
static int probe_answer(void)
{
	errno = 0;
	long r = syscall(SYS_epoll_pwait2, -1, NULL, 0, NULL, NULL, KERNEL_SIGSET_BYTES);
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

static int probe_child(void *arg)
{
	(void)arg;
	_exit(probe_answer());
}

/* Under a seccomp filter the probe runs in a short-lived child that shares our
 * memory (CLONE_VM | CLONE_VFORK) and sends no SIGCHLD, so a filter that kills
 * on unknown system calls kills only the child. Returns 0 or the reason. */
static int probe_in_child(void)
{
	static char stack[16384] __attribute__((aligned(16)));
	int status;

	pid_t pid = clone(probe_child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK, NULL);
	if (pid < 0)
		return errno;
	while (waitpid(pid, &status, __WALL) < 0)
		if (errno != EINTR)
			return ECHILD;
	if (WIFSIGNALED(status))
		return -WTERMSIG(status);
	return WEXITSTATUS(status);
}

int ef_pwait2_usable(void)
{
	int s = atomic_load_explicit(&pw2_state, memory_order_acquire);
	if (s == EF_PW2_OK) {
		if (!atomic_load_explicit(&pw2_unfiltered, memory_order_relaxed) ||
		    prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0)
			return 1;
		/* A filter arrived after the probe: whoever notices first probes again. */
		int ok = EF_PW2_OK;
		if (!atomic_compare_exchange_strong(&pw2_state, &ok, EF_PW2_PROBING))
			return 0;
		int saved = errno;
		int why = probe_in_child();
		errno = saved;
		atomic_store_explicit(&pw2_unfiltered, 0, memory_order_relaxed);
		atomic_store_explicit(&pw2_why, why, memory_order_relaxed);
		atomic_store_explicit(&pw2_state, why ? EF_PW2_NO : EF_PW2_OK, memory_order_release);
		return why == 0;
	}
	if (s != EF_PW2_UNKNOWN)
		return 0;
	int expected = EF_PW2_UNKNOWN;
	if (!atomic_compare_exchange_strong(&pw2_state, &expected, EF_PW2_PROBING))
		return 0;

	int saved = errno;
	int unfiltered = seccomp_mode() == 0;
	int why = unfiltered ? probe_answer() : probe_in_child();
	errno = saved;
	atomic_store_explicit(&pw2_unfiltered, unfiltered, memory_order_relaxed);
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
