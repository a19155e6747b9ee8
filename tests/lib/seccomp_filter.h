/* A seccomp filter that refuses epoll_pwait2, for the programs that check the
 * library's fallback under each answer a sandbox gives. Built for glibc and
 * musl, so no kernel headers: the few seccomp ABI constants are spelled out
 * (they never change). */
#ifndef EF_TEST_SECCOMP_FILTER_H
#define EF_TEST_SECCOMP_FILTER_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

struct ef_sock_filter { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct ef_sock_fprog { unsigned short len; struct ef_sock_filter *filter; };
#define EF_BPF_LD_W_ABS 0x20
#define EF_BPF_JEQ_K 0x15
#define EF_BPF_RET_K 0x06
#define EF_RET_ALLOW 0x7fff0000u
#define EF_RET_ERRNO 0x00050000u
#define EF_RET_KILL_PROCESS 0x80000000u
#define EF_NR_EPOLL_PWAIT2 441
#define EF_NR_OPENAT2 437 /* the same on every architecture, as 441 */
#if defined(__x86_64__)
#define EF_AUDIT_ARCH 0xc000003eu
#elif defined(__aarch64__)
#define EF_AUDIT_ARCH 0xc00000b7u
#else
#error "add this architecture's AUDIT_ARCH value"
#endif

/* The program of a filter that gives epoll_pwait2 `action` and allows every
 * other call: seven instructions written into f. */
#define EF_PWAIT2_FILTER_LEN 7
static inline struct ef_sock_fprog ef_pwait2_filter(uint32_t action,
						    struct ef_sock_filter f[EF_PWAIT2_FILTER_LEN])
{
	const struct ef_sock_filter prog[EF_PWAIT2_FILTER_LEN] = {
		{ EF_BPF_LD_W_ABS, 0, 0, 4 }, /* seccomp_data.arch */
		{ EF_BPF_JEQ_K, 1, 0, EF_AUDIT_ARCH },
		{ EF_BPF_RET_K, 0, 0, EF_RET_ALLOW },
		{ EF_BPF_LD_W_ABS, 0, 0, 0 }, /* seccomp_data.nr */
		{ EF_BPF_JEQ_K, 0, 1, EF_NR_EPOLL_PWAIT2 },
		{ EF_BPF_RET_K, 0, 0, action },
		{ EF_BPF_RET_K, 0, 0, EF_RET_ALLOW },
	};
	memcpy(f, prog, sizeof(prog));
	return (struct ef_sock_fprog){ EF_PWAIT2_FILTER_LEN, f };
}

/* "eperm", "enosys" or "kill": what epoll_pwait2 gets from now on, in this
 * process and everything it execs. Returns 0, or -1 with a message on stderr. */
static inline int filter_pwait2(const char *how)
{
	uint32_t action;
	if (strcmp(how, "eperm") == 0)
		action = EF_RET_ERRNO | EPERM;
	else if (strcmp(how, "enosys") == 0)
		action = EF_RET_ERRNO | ENOSYS;
	else if (strcmp(how, "kill") == 0)
		action = EF_RET_KILL_PROCESS;
	else {
		fprintf(stderr, "filter: '%s' is not eperm, enosys or kill\n", how);
		return -1;
	}
	struct ef_sock_filter f[EF_PWAIT2_FILTER_LEN];
	struct ef_sock_fprog prog = ef_pwait2_filter(action, f);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, 2, &prog, 0, 0)) {
		perror("filter: prctl");
		return -1;
	}
	return 0;
}

#endif
