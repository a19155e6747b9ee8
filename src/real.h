/* The real functions behind the interposed ones, and whether epoll_pwait2 works.
 * Everything here is usable before the library's constructor has run and from any
 * number of threads: pointers are resolved on first use and stored atomically. */
#ifndef EPOLLFIX_REAL_H
#define EPOLLFIX_REAL_H

#include <signal.h>
#include <sys/epoll.h>
#include <time.h>

int ef_real_epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout);
int ef_real_epoll_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
			const sigset_t *mask);
/* libc's epoll_pwait2 where it has one (glibc >= 2.35: a cancellation point),
 * else the raw system call followed by a cancellation check. */
int ef_real_epoll_pwait2(int epfd, struct epoll_event *ev, int maxevents,
			 const struct timespec *timeout, const sigset_t *mask);

enum ef_pwait2_state { EF_PW2_UNKNOWN, EF_PW2_PROBING, EF_PW2_OK, EF_PW2_NO };

/* Probes once, on the first call that needs it; 1 when epoll_pwait2 may be used.
 * While another thread is probing it answers 0: that call simply passes through. */
int ef_pwait2_usable(void);
/* epoll_pwait2 failed for good at run time (a seccomp filter installed later). */
void ef_pwait2_refused(int err);
/* For the report: state, and the errno (or -signal) that made it unusable. */
enum ef_pwait2_state ef_pwait2_state(int *why);

/* Resolves everything now, so the wait path never calls dlsym (constructor). */
void ef_real_init(void);

#endif
