/* The calls that make a process or a thread without running atfork handlers.
 * The kernel copies the thread's timer slack in force into a new task, as its
 * default too; between the waits of a run that is the library's own (1 us),
 * which a child would then keep for its whole life and pass on to its own
 * children. fork() restores the program's slack first through the atfork
 * handler (lifecycle.c); each call below does the same before it goes on to
 * libc's (those with which libc makes threads of its own too), and
 * syscall(SYS_clone...) does in interpose.c. Nothing else changes:
 * arguments, results and errno are libc's. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "real.h"
#include "state.h"

#define EXPORT __attribute__((visibility("default")))

/* <spawn.h> and <pthread.h> are not included: their types are only passed on. */
int posix_spawn(pid_t *, const char *, const void *, const void *, char *const[], char *const[]);
int posix_spawnp(pid_t *, const char *, const void *, const void *, char *const[], char *const[]);
int pthread_create(void *, const void *, void *(*)(void *), void *);

EXPORT int posix_spawn(pid_t *pid, const char *path, const void *fa, const void *attr,
		       char *const argv[], char *const envp[])
{
	ef_interpose_before_fork();
	return ef_real_posix_spawn()(pid, path, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const void *fa, const void *attr,
			char *const argv[], char *const envp[])
{
	ef_interpose_before_fork();
	return ef_real_posix_spawnp()(pid, file, fa, attr, argv, envp);
}

EXPORT int system(const char *command)
{
	ef_interpose_before_fork();
	return ef_real_system()(command);
}

EXPORT FILE *popen(const char *command, const char *mode)
{
	ef_interpose_before_fork();
	return ef_real_popen()(command, mode);
}

/* A child of its own memory starts in child_start, which does what the fork
 * handler would and then runs the program's function. The function is found
 * in the child's copy of this thread's memory; a child that shares it
 * (CLONE_VM) starts in the program's function itself. */
static __thread int (*child_fn)(void *);

static int child_start(void *arg)
{
	ef_interpose_child();
	return child_fn(arg);
}

/* The three optional arguments are passed on whatever the flags: libc's
 * clone reads only those its flags name. */
EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	void *parent_tid = va_arg(ap, void *), *tls = va_arg(ap, void *),
	     *child_tid = va_arg(ap, void *);
	va_end(ap);
	ef_interpose_before_fork();
	if (!(flags & CLONE_VM) && fn) {
		child_fn = fn;
		fn = child_start;
	}
	return ef_real_clone()(fn, stack, flags, arg, parent_tid, tls, child_tid);
}

/* A new thread starts with the slack in force too, and would take the
 * library's for its own. */
EXPORT int pthread_create(void *thread, const void *attr, void *(*start)(void *), void *arg)
{
	ef_interpose_before_fork();
	return ef_real_pthread_create()(thread, attr, start, arg);
}

/* The calls with which libc makes threads of its own: a SIGEV_THREAD
 * timer's or message queue's notification, asynchronous I/O's workers, an
 * asynchronous name lookup's. libc creates them through its internal
 * pthread_create, which the one above never sees, and from the calling
 * thread (or from a helper that thread made), so they would inherit the
 * library's slack for life. */
EXPORT int timer_create(clockid_t clock, struct sigevent *restrict sev, timer_t *restrict timer)
{
	ef_interpose_before_fork();
	return ef_real_timer_create()(clock, sev, timer);
}

/* <mqueue.h>, <aio.h> and <netdb.h> are not included: their types are only
 * passed on (and <aio.h> renames aio_read to aio_read64 for large files). */
int mq_notify(int, const void *);
EXPORT int mq_notify(int mq, const void *sev)
{
	ef_interpose_before_fork();
	return ef_real_mq_notify()(mq, sev);
}

#define EF_AIO(name)                                      \
	EXPORT int name(void *cb)                         \
	{                                                 \
		ef_interpose_before_fork();               \
		return ef_real_##name()(cb);              \
	}
#define EF_AIO_FSYNC(name)                                \
	EXPORT int name(int op, void *cb)                 \
	{                                                 \
		ef_interpose_before_fork();               \
		return ef_real_##name()(op, cb);          \
	}
#define EF_LIO_LISTIO(name)                                            \
	EXPORT int name(int mode, void *const *list, int n, void *sev) \
	{                                                              \
		ef_interpose_before_fork();                            \
		return ef_real_##name()(mode, list, n, sev);           \
	}
int aio_read(void *), aio_write(void *), aio_fsync(int, void *);
int lio_listio(int, void *const *, int, void *);
EF_AIO(aio_read)
EF_AIO(aio_write)
EF_AIO_FSYNC(aio_fsync)
EF_LIO_LISTIO(lio_listio)
#ifdef __GLIBC__
int aio_read64(void *), aio_write64(void *), aio_fsync64(int, void *);
int lio_listio64(int, void *const *, int, void *);
int getaddrinfo_a(int, void **, int, void *);
EF_AIO(aio_read64)
EF_AIO(aio_write64)
EF_AIO_FSYNC(aio_fsync64)
EF_LIO_LISTIO(lio_listio64)

EXPORT int getaddrinfo_a(int mode, void **list, int n, void *sev)
{
	ef_interpose_before_fork();
	return ef_real_getaddrinfo_a()(mode, list, n, sev);
}
#endif

/* vfork's child runs on its parent's stack until it execs or exits: a C
 * wrapper's frame would be popped by the child and reused under the waiting
 * parent. So vfork is a trampoline that calls ef_vfork_prepare and jumps to
 * libc's vfork with the stack as the program left it. Elsewhere than x86-64
 * and AArch64 vfork is not interposed (doc/limits.md). */
__attribute__((visibility("hidden"), used)) void *ef_vfork_prepare(void);
void *ef_vfork_prepare(void)
{
	ef_interpose_before_fork();
	return (void *)ef_real_vfork();
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"\t.cfi_startproc\n"
	"\tsubq $8, %rsp\n" /* 16-byte aligned for the call */
	"\t.cfi_adjust_cfa_offset 8\n"
	"\tcall ef_vfork_prepare\n"
	"\taddq $8, %rsp\n"
	"\t.cfi_adjust_cfa_offset -8\n"
	"\tjmp *%rax\n"
	"\t.cfi_endproc\n"
	".size vfork, .-vfork\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, %function\n"
	"vfork:\n"
	"\t.cfi_startproc\n"
	"\tstp x29, x30, [sp, #-16]!\n"
	"\t.cfi_def_cfa_offset 16\n"
	"\t.cfi_offset 29, -16\n"
	"\t.cfi_offset 30, -8\n"
	"\tbl ef_vfork_prepare\n"
	"\tldp x29, x30, [sp], #16\n"
	"\t.cfi_def_cfa_offset 0\n"
	"\tbr x0\n"
	"\t.cfi_endproc\n"
	".size vfork, .-vfork\n");
#endif
