/* What a seccomp sandbox lets the library do. The library makes three calls a
 * filter may refuse or kill on: epoll_pwait2, and prctl to set and read timer
 * slack. It makes none of them in the process unless it knows they are allowed:
 *  - a filter in force when the process started (installed by its launcher: a
 *    container runtime's default profile, systemd's SystemCallFilter=) is of
 *    unknown content. The library asks a probe: a child that shares nothing the
 *    host could lose makes the three calls under the same filters and says by
 *    its exit what happened (ef_probe_*), in the library's constructor only,
 *    which reaps it before it returns. Killed, trapped, refused or silent,
 *    the host passes every wait through. Where
 *    no probe is wanted (EPOLLFIX_SECCOMP=safe, or `auto` outside a container)
 *    none of the three is made, unless the operator trusts the filter
 *    (EPOLLFIX_SECCOMP=trust);
 *  - a filter the program installs through prctl() or syscall() (interposed,
 *    lib/interpose.c) is read before it is passed on: a small classic-BPF
 *    interpreter runs it on each of the library's calls, and any verdict but
 *    ALLOW or LOG denies that call for the process from then on. */
#ifndef EPOLLFIX_SANDBOX_H
#define EPOLLFIX_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "proc.h"

/* A classic-BPF program as prctl(PR_SET_SECCOMP) and seccomp(2) take it
 * (struct sock_filter and struct sock_fprog, spelled out: musl's headers bring
 * neither). */
struct ef_bpf_insn {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};
struct ef_bpf_prog {
	unsigned short len;
	const struct ef_bpf_insn *filter;
};

/* The architecture a seccomp filter sees in the calls of a process of the
 * machine this is built for (AUDIT_ARCH_*, seccomp_data.arch; spelled out:
 * musl brings no <linux/audit.h>), 0 where unknown here. */
#if defined(__x86_64__) /* x32 too: its numbers have bit 30 set */
#define EF_SECCOMP_ARCH 0xc000003eu
#elif defined(__i386__)
#define EF_SECCOMP_ARCH 0x40000003u
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#define EF_SECCOMP_ARCH 0xc00000b7u
#elif defined(__arm__) && !defined(__ARMEB__)
#define EF_SECCOMP_ARCH 0x40000028u
#elif defined(__riscv) && __riscv_xlen == 64
#define EF_SECCOMP_ARCH 0xc00000f3u
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define EF_SECCOMP_ARCH 0xc0000015u
#elif defined(__s390x__)
#define EF_SECCOMP_ARCH 0x80000016u
#else
#define EF_SECCOMP_ARCH 0u
#endif

/* The library's calls, as bits of a denied mask. */
enum {
	EF_DENY_PWAIT2 = 1, /* epoll_pwait2 */
	EF_DENY_SLACK = 2,  /* prctl(PR_SET_TIMERSLACK) and prctl(PR_GET_TIMERSLACK) */
	EF_DENY_CALLS = 3,  /* the waits' calls, the ones a probe tries */
	/* The exit report's (EPOLLFIX_STATS): opening, reading, checking and
	 * closing /proc/self/comm and the report's file; */
	EF_DENY_OPEN = 4,
	/* and getpid and write, to stderr or that file. */
	EF_DENY_WRITE = 8,
	EF_DENY_ALL = 15,
};

/* Why epoll_pwait2 is not used, beside the errno values a kernel or filter
 * answers (ef_pwait2_state's why; report.c names them). */
#define EF_WHY_UNKNOWN_FILTER 10001 /* a filter was in force at start */
#define EF_WHY_FILTER_DENIES 10002  /* a filter the program installed would kill or trap it */
#define EF_WHY_FILTER_UNSEEN 10003  /* one was installed where the library could not read it */
#define EF_WHY_PROBE_SILENT 10004   /* the probe gave no answer in EF_PROBE_PATIENCE_NS */
#define EF_WHY_PROBE_NO_CHILD 10005 /* the probe could not be started (clone refused) */
#define EF_WHY_PROBE_LOST 10006     /* the probe's exit was taken by another waiter */
#define EF_WHY_NO_CONTAINER 10007   /* `auto` outside a container: no probe, as `safe` */
#define EF_WHY_PROBE_NOT_AT_START 10008 /* a probe was called for after the constructor */
#define EF_WHY_DLOPEN_FILTER 10009  /* loaded with dlopen under a filter maybe the program's */
/* Loaded with dlopen, the library could not read its thread's filter count
 * (/proc/self/status) for a reason that lasts, errno e (1-999): it
 * cannot see a filter installed later, so it makes none of its calls. */
#define EF_WHY_COUNT_UNREAD 11000
#define EF_WHY_COUNT_UNREAD_ERRNO(e) (EF_WHY_COUNT_UNREAD + ((e) > 0 && (e) < 1000 ? (e) : 0))

/* The seccomp mode of a process from its status file (proc.h's reader,
 * fields "Seccomp" and "Seccomp_filters"): 0 none, 1 strict, 2 filter; -1
 * when it cannot tell. whole: the file was read to its end, so a field not
 * found is not there: a kernel without CONFIG_SECCOMP has no "Seccomp:" line,
 * and then no filter can be in force. */
int ef_seccomp_mode_of(const struct ef_proc_field *seccomp, int whole);

/* epoll_pwait2 asked here and now, with maxevents 0: 0 when the kernel has it,
 * else the errno it gave. The library asks once (real.c); the command asks in
 * a child, which a filter may kill. */
int ef_pwait2_probe_via(ef_syscall_fn sys);

/* ---- The probe: a child asked, under the filters in force ------------------
 * A child made by a raw clone (no atfork handler of the program runs), with no
 * signal at its exit (the program's SIGCHLD handler and its wait(-1) never see
 * it), sharing the fd table (it holds no extra reference to any file) and
 * nothing else: its memory is a copy. It blocks every signal, puts SIGSYS back
 * to its default (a trapping filter ends it, never runs the program's handler),
 * makes itself undumpable (a killing filter leaves no core of the program's
 * memory), asks for SIGKILL when the thread that made it ends, then makes the
 * library's three calls and exits with what they gave. */

/* How long the probe may take to answer before it is killed: a child trapped
 * to a listener that never answers, or not scheduled on a loaded machine. The
 * library's constructor waits for it (about 0.2 ms here when idle), so this is
 * also the most a program's start can be delayed by it. */
#define EF_PROBE_PATIENCE_NS 200000000LL

/* Starts the probe: its pid, or -errno when no child could be made; *pidfd
 * a pidfd of it (CLONE_PIDFD, Linux 5.2), or -1 where the kernel made none. */
long ef_probe_start(ef_syscall_fn sys, int64_t slack_ns, int *pidfd);

/* The probe's answer, without waiting (wait: block until it ends, for the
 * command and after a SIGKILL): 1 while it runs; else 0, with *denied the
 * EF_DENY_* bits and *why 0 when epoll_pwait2 works, else its errno, -signal
 * when the probe was killed, or an EF_WHY_PROBE_* code. */
int ef_probe_collect(ef_syscall_fn sys, long pid, int wait, unsigned *denied, int *why);

/* Ends a probe that did not answer in time: SIGKILL, reaped. */
void ef_probe_abandon(ef_syscall_fn sys, long pid);

/* Waits up to patience_ns for the probe's answer (ef_probe_collect's): in
 * ppoll on its pidfd, which is readable as soon as the child has exited, so
 * the answer is seen when it exists; without a pidfd (pidfd -1), or where
 * ppoll is refused, polling with sleeps that start at 20 us and double up to
 * 2 ms. 0 answered, 1 still running (then it is the caller's to abandon). */
int ef_probe_wait(ef_syscall_fn sys, long pid, int pidfd, int64_t patience_ns, unsigned *denied,
		  int *why);

/* The probe from start to answer, for the command (which is no host): the
 * why of ef_probe_collect, waiting at most EF_PROBE_PATIENCE_NS. */
int ef_probe_run(ef_syscall_fn sys, int64_t slack_ns, unsigned *denied);

/* ---- The probe's answer, handed across exec ---------------------------------
 * A process that made the probe (or took an answer this way) says its answer
 * in the environment, EF_PROBED_ENV, for the programs its children exec; one
 * of them takes it instead of probing again only where its filter stack is
 * provably the one the answer was made under: the answer names the process
 * that made it (pid and start time, so a pid used again is another
 * process), its PID namespace and its filter count, and the taker must be
 * that process after an exec, or its child, in that namespace, under as many
 * filters. Filters are only ever added, and a task's stack is the one it was
 * made with and its own additions: a descendant with the same count has the
 * same stack. The slack the answer tried must be the taker's too. A variable
 * copied anywhere else (another namespace, a process its pid names now
 * that is not the maker, a count that grew) is no answer, and the probe is
 * made. Only answers that say what the calls do are handed on (they work,
 * an errno, a signal), never a probe that was silent, lost or not made. */
#define EF_PROBED_ENV "EPOLLFIX_PROBED"

/* What a process knows of itself to make or take an answer, from /proc with
 * the calls the loader itself needed (openat, read, close, readlinkat). */
struct ef_probe_facts {
	long pid, ppid, filters;
	unsigned long long start, parent_start; /* start times (clock ticks after boot) */
	unsigned long long pidns;		 /* the inode of /proc/self/ns/pid */
};
/* 0 when every fact was read (parent_start 0 where the parent's is hidden:
 * another namespace, ppid 0); -1 otherwise. */
int ef_probe_facts_via(ef_syscall_fn sys, struct ef_probe_facts *f);

/* The answer as EF_PROBED_ENV holds it, into buf (NUL-terminated, at most
 * size - 1 bytes); 0, or -1 where this answer is not one to hand on. */
int ef_probe_answer_fmt(char *buf, size_t size, const struct ef_probe_facts *f, int64_t slack_ns,
			unsigned denied, int why);

/* 1 when text is an answer this process may take (above), with *denied and
 * *why as ef_probe_collect gives them; 0 otherwise. text is hostile input. */
int ef_probe_answer_take(const char *text, const struct ef_probe_facts *f, int64_t slack_ns,
			 unsigned *denied, int *why);

/* What to do at the first use of epoll_pwait2, from EPOLLFIX_SECCOMP's mode and
 * whether a filter of unknown content was in force at start (in a container
 * is asked only for `auto` under such a filter): EF_PLAN_ASK, ask the kernel
 * here (no such filter, or `trust`); EF_PLAN_PROBE, ask a child; else the
 * EF_WHY_* code for not using it. */
enum { EF_PLAN_ASK = 0, EF_PLAN_PROBE = -1 };
int ef_seccomp_plan(int mode /* enum ef_seccomp */, int inherited, ef_syscall_fn sys);

/* 1 when this process is in a PID namespace of its own (a container: Docker,
 * podman, a Kubernetes pod), 0 in the host's (or when /proc cannot tell). */
int ef_in_container_via(ef_syscall_fn sys);

/* 1 when a seccomp filter is in force in this process (Seccomp: in
 * /proc/self/status is not 0), or /proc cannot tell; 0 when it is 0 or the
 * kernel has no seccomp. */
int ef_seccomp_status_via(ef_syscall_fn sys);

/* The number of seccomp filters in force in this process (Seccomp_filters:
 * in /proc/self/status, Linux 5.9), or -1 when it cannot tell. */
long ef_seccomp_filters_via(ef_syscall_fn sys);
/* The count a Seccomp_filters: field read from a status file gives, or -1
 * when the field is missing or not a count. */
long ef_seccomp_filters_of(const struct ef_proc_field *count);

/* The variable `epollfix` sets for a Go program it supervises when the filter
 * it installed was the only one in force (doc/go.md): that filter sends only
 * epoll_wait and epoll_pwait with a 1 ms timeout to its supervisor, who lets
 * them run, and allows everything else, epoll_pwait2 and prctl included. */
#define EF_GO_FILTER_ENV "EPOLLFIX_GO_FILTER"

/* The bits of the library's calls that the classic-BPF program prog (a
 * struct sock_fprog *, as prctl and seccomp take it) would not allow, and in
 * *why the reason for epoll_pwait2 (its ERRNO value, or EF_WHY_FILTER_DENIES).
 * A program it cannot read whole or run to a verdict denies everything.
 * slack_ns: the value the library sets. Pure but for reading prog. */
unsigned ef_sandbox_verdict(const void *prog, int64_t slack_ns, int *why);

/* The denied bits so far, and adding some (never removed, but by
 * ef_sandbox_undeny when the program's own install failed). */
unsigned ef_sandbox_denied(void);
unsigned ef_sandbox_deny(unsigned bits);
void ef_sandbox_undeny(unsigned before);

#endif
