/* The real functions behind the interposed ones, and whether epoll_pwait2 works.
 * Everything here is usable before the library's constructor has run and from any
 * number of threads: pointers are resolved on first use and stored atomically. */
#ifndef EPOLLFIX_REAL_H
#define EPOLLFIX_REAL_H

#include "live.h"    /* enum ef_pwait2_state */
#include "sandbox.h" /* ef_syscall_fn */

#include <stdarg.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>

typedef int (*ef_epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*ef_epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*ef_epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *,
				  const sigset_t *);
/* Both are variadic in libc; every caller passes (and the interposers forward)
 * the fixed number of arguments the kernel takes. */
typedef int (*ef_prctl_fn)(int, ...);

/* prctl's four arguments after the option, as its callers pass them: every
 * option is read as four unsigned longs, which the kernel ignores where unused. */
#define EF_PRCTL_ARGS(option, a)                                        \
	do {                                                           \
		va_list ap_;                                           \
		va_start(ap_, option);                                 \
		for (int i_ = 0; i_ < 4; i_++)                         \
			(a)[i_] = va_arg(ap_, unsigned long);          \
		va_end(ap_);                                           \
	} while (0)

/* Every function the library looks up: X(name, type). A name libc lacks (musl has
 * no epoll_pwait2, glibc before 2.35 neither) resolves to a raw system call, or
 * to a stand-in that fails with ENOSYS. prctl and syscall are interposed to
 * watch timer slack and seccomp filters (interpose.c); the library's own uses
 * go to libc's through here. */
#define EF_REAL_FUNCS(X)                    \
	X(epoll_wait, ef_epoll_wait_fn)     \
	X(epoll_pwait, ef_epoll_pwait_fn)   \
	X(epoll_pwait2, ef_epoll_pwait2_fn) \
	X(prctl, ef_prctl_fn)               \
	X(syscall, ef_syscall_fn)

#define EF_REAL_ENUM(name, type) EF_REAL_##name,
enum ef_real_id { EF_REAL_FUNCS(EF_REAL_ENUM) EF_REAL_COUNT };
#undef EF_REAL_ENUM

extern _Atomic(void *) ef_real_table[EF_REAL_COUNT] __attribute__((visibility("hidden")));
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

/* ef_real_epoll_wait_ready() and friends: the pointer, for a thread that has seen
 * ef_real_init() return (pointers are stored once and never change), read with
 * a plain load so the call goes through memory (ThreadSanitizer: atomic). */
#if defined(__SANITIZE_THREAD__)
#define EF_REAL_LOAD(id) atomic_load_explicit(&ef_real_table[id], memory_order_relaxed)
#else
#define EF_REAL_LOAD(id) (*(void *const *)&ef_real_table[id])
#endif
#define EF_REAL_READY(name, type)                                                            \
	static inline type ef_real_##name##_ready(void)                                      \
	{                                                                                    \
		return (type)EF_REAL_LOAD(EF_REAL_##name);                                   \
	}
EF_REAL_FUNCS(EF_REAL_READY)
#undef EF_REAL_READY

/* 1 when epoll_pwait2 may be used. Decided once, at the first call that needs
 * it: by the kernel, or under a filter that was in force at start (its content
 * unknown) as mode (EPOLLFIX_SECCOMP) says, by the constructor's child probe
 * (sandbox.h). Until then it answers 0: that call passes through. *alone
 * as ef_filters_seen_alone says, for the wait this answer is for. */
int ef_pwait2_usable(int mode, int *alone);
/* In the constructor, and nowhere else: when wanted (the library is on) and
 * the plan calls for it, the probe (which also tries slack_ns) is made now,
 * while the program's own code has not run, and is reaped before this
 * returns: answered, or killed after EF_PROBE_PATIENCE_NS. Preloaded, an
 * answer handed across exec (handed: EF_PROBED_ENV's value, or NULL) that
 * this process may take (sandbox.h) is taken instead, and the answer this
 * process hands on is put in answer (size bytes; empty: none). Returns 1
 * when the plan was a probe here (answered either way), so that the
 * environment is this process's to say. */
int ef_pwait2_early(int wanted, int mode, int64_t slack_ns, const char *handed, char *answer,
		    size_t size);
/* 1 when a seccomp filter was in force before the program could install one
 * (its launcher's), or /proc cannot tell; read once (sandbox.h). */
int ef_seccomp_inherited(void);
/* The value of EF_GO_FILTER_ENV (sandbox.h), given by the constructor before
 * anything probes: "1" makes a single filter in force epollfix's own. */
void ef_seccomp_go_filter(const char *marker);
/* Whether the library reads every filter before it is in force (preloaded),
 * read in the constructor; when not (loaded with dlopen), the filter count at
 * that time. */
void ef_filters_init(void);
/* 1 when no filter is in force that the library has not read: always when
 * preloaded; loaded with dlopen, when the process's filter count is what it
 * was at start (read with pread from /proc/self/status, held open since the
 * constructor). 0 when the count could not be read for a moment (EMFILE
 * where the file had to be opened again): that use does without, and the
 * next checks again. Otherwise it denies the library's calls for good
 * (sandbox.h) and answers 0. */
int ef_filters_seen(void);
/* The same; *alone is 1 when the count was read (loaded with dlopen) along
 * with a thread count of 1, else 0. A wait made right after, by the one
 * thread, that does not fail with EINTR, ran with no filter installed
 * meanwhile (real.c): the slack is put back without a second read. */
int ef_filters_seen_alone(int *alone);
/* In a child: loaded with dlopen, the held /proc/self/status is the parent's
 * file; it is closed, and opened anew when before_child_code (the atfork
 * handler), else at the next check (a raw clone, noticed later). */
void ef_filters_after_fork(int before_child_code);
/* In a fork child: a probe another thread of the parent had under way
 * gives no answer here. */
void ef_pwait2_after_fork(void);
/* epoll_pwait2 failed for good at run time (a seccomp filter installed later). */
void ef_pwait2_refused(int err);
/* The program asks for a seccomp mode, through prctl(PR_SET_SECCOMP, mode, prog)
 * (via_prctl) or seccomp(2) (op, flags, prog as seccomp(2) takes them); the
 * interposed prctl() and syscall() send it here. A new filter is read first
 * (ef_sandbox_verdict, with the slack the library sets), and the calls it
 * would not allow are given up before it is in force. Returns the request's
 * result, errno as the request left it. */
long ef_seccomp_set(int via_prctl, unsigned long op, unsigned long flags, void *prog,
		    int64_t slack_ns);
/* For the report: state, and the errno (or -signal) that made it unusable. */
enum ef_pwait2_state ef_pwait2_state(int *why);

/* Resolves everything now, so the wait path never calls dlsym (constructor, and
 * each thread before its first call on the fast path). */
void ef_real_init(void);

/* For the status block (live.h): where the state and its errno live. */
void ef_pwait2_live(uint64_t *state_addr, uint64_t *why_addr);

#endif
