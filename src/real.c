#define _GNU_SOURCE
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441 /* the same number on every architecture */
#endif
#define KERNEL_SIGSET_BYTES (_NSIG / 8)

typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *,
			       const sigset_t *);

/* NULL: not looked up yet. A lookup that finds nothing stores a sentinel, so the
 * raw-syscall fallbacks below are chosen once, not on every call. */
#define NOT_FOUND ((void *)-1)
static _Atomic(void *) real_wait, real_pwait, real_pwait2;

/* The function, looked up on first use; racing threads store the same value. */
static void *resolve(_Atomic(void *) *slot, const char *name)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);
	if (__builtin_expect(!p, 0)) {
		int saved = errno;
		p = dlsym(RTLD_NEXT, name);
		errno = saved;
		p = p ? p : NOT_FOUND;
		atomic_store_explicit(slot, p, memory_order_release);
	}
	return p == NOT_FOUND ? NULL : p;
}

static int raw_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
		     const sigset_t *mask)
{
	return (int)syscall(SYS_epoll_pwait, epfd, ev, maxevents, timeout, mask,
			    KERNEL_SIGSET_BYTES);
}

int ef_real_epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout)
{
	epoll_wait_fn fn = (epoll_wait_fn)resolve(&real_wait, "epoll_wait");
	return fn ? fn(epfd, ev, maxevents, timeout) : raw_pwait(epfd, ev, maxevents, timeout, NULL);
}

int ef_real_epoll_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
			const sigset_t *mask)
{
	epoll_pwait_fn fn = (epoll_pwait_fn)resolve(&real_pwait, "epoll_pwait");
	return fn ? fn(epfd, ev, maxevents, timeout, mask)
		  : raw_pwait(epfd, ev, maxevents, timeout, mask);
}

int ef_real_epoll_pwait2(int epfd, struct epoll_event *ev, int maxevents,
			 const struct timespec *timeout, const sigset_t *mask)
{
	epoll_pwait2_fn fn = (epoll_pwait2_fn)resolve(&real_pwait2, "epoll_pwait2");
	if (fn)
		return fn(epfd, ev, maxevents, timeout, mask);
	int r = (int)syscall(SYS_epoll_pwait2, epfd, ev, maxevents, timeout, mask,
			     KERNEL_SIGSET_BYTES);
	/* A raw syscall is no cancellation point; a cancel that interrupted the
	 * wait must still end the thread, as the real epoll_wait would have. */
	if (r < 0 && errno == EINTR)
		pthread_testcancel();
	return r;
}

void ef_real_init(void)
{
	resolve(&real_wait, "epoll_wait");
	resolve(&real_pwait, "epoll_pwait");
	resolve(&real_pwait2, "epoll_pwait2");
}

/* ---- Is epoll_pwait2 usable? ---------------------------------------------- */

static _Atomic int pw2_state = EF_PW2_UNKNOWN;
static _Atomic int pw2_why;

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
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
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
