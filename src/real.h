/* The real functions behind the interposed ones, and whether epoll_pwait2 works.
 * Everything here is usable before the library's constructor has run and from any
 * number of threads: pointers are resolved on first use and stored atomically. */
#ifndef EPOLLFIX_REAL_H
#define EPOLLFIX_REAL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>

typedef int (*ef_epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*ef_epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*ef_epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *,
				  const sigset_t *);

/* Every function the library looks up: X(name, type). A name libc lacks (musl has
 * no epoll_pwait2, glibc before 2.35 neither) resolves to a raw system call. */
#define EF_REAL_FUNCS(X)                        \
	X(epoll_wait, ef_epoll_wait_fn)         \
	X(epoll_pwait, ef_epoll_pwait_fn)       \
	X(epoll_pwait2, ef_epoll_pwait2_fn)

#define EF_REAL_ENUM(name, type) EF_REAL_##name,
enum ef_real_id { EF_REAL_FUNCS(EF_REAL_ENUM) EF_REAL_COUNT };
#undef EF_REAL_ENUM

extern _Atomic(void *) ef_real_table[EF_REAL_COUNT];
void *ef_real_resolve(enum ef_real_id id);

/* ef_real_epoll_wait() and friends: the pointer, resolved on first use. */
#define EF_REAL_GETTER(name, type)                                                          \
	static inline type ef_real_##name(void)                                             \
	{                                                                                   \
		void *p = atomic_load_explicit(&ef_real_table[EF_REAL_##name],              \
					       memory_order_acquire);                       \
		return (type)(__builtin_expect(p != NULL, 1) ? p : ef_real_resolve(EF_REAL_##name)); \
	}
EF_REAL_FUNCS(EF_REAL_GETTER)
#undef EF_REAL_GETTER

enum ef_pwait2_state { EF_PW2_UNKNOWN, EF_PW2_PROBING, EF_PW2_OK, EF_PW2_NO };

/* Probes once, on the first call that needs it; 1 when epoll_pwait2 may be used.
 * While another thread is probing it answers 0: that call simply passes through. */
int ef_pwait2_usable(void);
/* In a fork child: a probe another thread had under way starts again. */
void ef_pwait2_after_fork(void);
/* epoll_pwait2 failed for good at run time (a seccomp filter installed later). */
void ef_pwait2_refused(int err);
/* For the report: state, and the errno (or -signal) that made it unusable. */
enum ef_pwait2_state ef_pwait2_state(int *why);

/* Resolves everything now, so the wait path never calls dlsym (constructor). */
void ef_real_init(void);

/* For the status block (live.h): where the state and its errno live. */
void ef_pwait2_live(uint64_t *state_addr, uint64_t *why_addr);

#endif
