/* What a seccomp sandbox lets the library do. The library makes three calls a
 * filter may refuse or kill on: epoll_pwait2, and prctl to set and read timer
 * slack. It makes none of them unless it knows they are allowed:
 *  - a filter in force when the process started (installed by its launcher) is
 *    of unknown content: then none of the three is made, unless the operator
 *    trusts it (EPOLLFIX_SECCOMP=trust);
 *  - a filter the program installs through prctl() or syscall() (interposed,
 *    lib/interpose.c) is read before it is passed on: a small classic-BPF
 *    interpreter runs it on each of the library's calls, and any verdict but
 *    ALLOW or LOG denies that call for the process from then on.
 * No child process, no probe that a filter could kill, no waiting. */
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

/* The library's calls, as bits of a denied mask. */
enum {
	EF_DENY_PWAIT2 = 1, /* epoll_pwait2 */
	EF_DENY_SLACK = 2,  /* prctl(PR_SET_TIMERSLACK) and prctl(PR_GET_TIMERSLACK) */
	EF_DENY_ALL = 3,
};

/* Why epoll_pwait2 is not used, beside the errno values a kernel or filter
 * answers (ef_pwait2_state's why; report.c names them). */
#define EF_WHY_UNKNOWN_FILTER 10001 /* a filter was in force at start */
#define EF_WHY_FILTER_DENIES 10002  /* a filter the program installed would kill or trap it */
#define EF_WHY_FILTER_UNSEEN 10003  /* one was installed where the library could not read it */
/* Loaded with dlopen, the library could not read its thread's filter count
 * (/proc/thread-self/status) for a reason that lasts, errno e (1-999): it
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
