/* What the Go supervisor's parts share (doc/go.md): the kernel's seccomp
 * listener ABI, spelled out, and the page the supervisor and its heir share,
 * which `epollfix status` reads too (golook.h). */
#ifndef EPOLLFIX_GOABI_H
#define EPOLLFIX_GOABI_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

/* System calls newer than some libc headers (musl 1.2.3): kcmp's number is
 * each architecture's own, the pidfd calls' and close_range's the same on
 * every architecture (the table unified from 424 on). */
#ifndef SYS_kcmp
#if defined(__x86_64__) && !defined(__ILP32__)
#define SYS_kcmp 312
#elif defined(__aarch64__)
#define SYS_kcmp 272
#endif
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/* ---- The kernel's seccomp listener ABI, spelled out (musl has no
 * <linux/seccomp.h>) ------------------------------------------------------ */

#define EF_SECCOMP_SET_MODE_FILTER 1
#define EF_SECCOMP_GET_ACTION_AVAIL 2
#define EF_SECCOMP_FLAG_NEW_LISTENER (1UL << 3)
#define EF_SECCOMP_RET_ALLOW 0x7fff0000U
#define EF_SECCOMP_RET_USER_NOTIF 0x7fc00000U
#define EF_NOTIF_FLAG_CONTINUE 1U
#define EF_NOTIF_FD_SYNC_WAKE_UP 1UL /* Linux 6.6 */

struct ef_seccomp_data {
	int32_t nr;
	uint32_t arch;
	uint64_t ip;
	uint64_t args[6];
};
struct ef_notif {
	uint64_t id;
	uint32_t pid; /* the thread, in the listener's pid namespace */
	uint32_t flags;
	struct ef_seccomp_data data;
};
struct ef_notif_resp {
	uint64_t id;
	int64_t val;
	int32_t error;
	uint32_t flags;
};
#define EF_NOTIF_RECV _IOWR('!', 0, struct ef_notif)
#define EF_NOTIF_SEND _IOWR('!', 1, struct ef_notif_resp)
#define EF_NOTIF_ID_VALID _IOW('!', 2, uint64_t)
#define EF_NOTIF_SET_FLAGS _IOW('!', 4, uint64_t)

/* The system call numbers the filter traps (golaunch.c), and the supervisor
 * takes from a notification, of the machine the command is built for
 * (under its architecture, sandbox.h's EF_SECCOMP_ARCH): it supervises only
 * programs of its own machine (goarch.h), whose calls reach the filter with
 * that architecture. EF_GO_SUP_MACHINE names the machine whose numbers are
 * here; where it is EM_NONE goarch.c refuses every program, and the filter
 * is compiled but never installed. Little-endian only: the filter reads an
 * argument's low word at the lower offset. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define EF_GO_SUP_MACHINE 62 /* EM_X86_64 */
#define EF_NR_EPOLL_WAIT 232
#define EF_NR_EPOLL_PWAIT 281
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#define EF_GO_SUP_MACHINE 183 /* EM_AARCH64 */
/* No epoll_wait system call on arm64 (the generic table has none): libc's
 * epoll_wait and Go's runtime both make epoll_pwait. */
#define EF_NR_EPOLL_PWAIT 22
#else
#define EF_GO_SUP_MACHINE 0 /* EM_NONE */
#define EF_NR_EPOLL_PWAIT SYS_epoll_pwait
#endif
/* The fd of the launcher's first trapped call, epoll_pwait(-1, ev, 1, 1, NULL):
 * its id tells the pair where the filter's numbering starts (gosup.c). */
#define EF_GO_PRIME_FD (-1)

/* ---- What the supervisor and its heir share: one MAP_SHARED page --------- */

enum ef_go_counter {
	EF_GC_NOTIFIED,    /* notifications received */
	EF_GC_ARMED,       /* timers set at the runtime's deadline */
	EF_GC_PASSED,      /* calls of processes passed through (not Go, stripped...) */
	EF_GC_NOT_POLLING, /* sched.lastpoll was not 0: not the netpoller's blocking wait */
	EF_GC_OTHER_FD,    /* the fd was not runtime.epfd (a program's own epoll) */
	EF_GC_GONE,        /* the call was over before the answer (signal, exit) */
	EF_GC_UNREADABLE,  /* process_vm_readv or pidfd_getfd refused */
	EF_GC_NO_TAG,      /* the epoll instance had no item tagged as the runtime's wake-up */
	EF_GC_PROCS_GO,    /* processes supervised */
	EF_GC_PROCS_PASS,  /* processes passed through */
	EF_GC_TAKEOVERS,   /* heirs that took over */
	EF_GC_INSTANCES,   /* timers added to an epoll instance (one per answerer, anew after an exec) */
	EF_GC_NO_FD,       /* no fd left to read the instance with (EMFILE, ENFILE) */
	EF_GC_STALE,       /* the deadline read was one already armed and past: never armed twice */
	EF_GC_RESCUED,     /* notifications the other answerer held too long, answered for it */
	EF_GC_REPLACED,    /* answerers found stopped (SIGSTOP), killed and replaced */
	EF_GC_OVERLOAD,    /* answered at once, unread: the answerer was behind (a backlog) */
	EF_GC_COUNT
};

#define EF_GO_SHARED_MAGIC "epollfix go sup"

/* A notification an answerer took and has not answered yet, and when (the
 * CLOCK_MONOTONIC ns): the other answers it when it is held too long. One
 * received but not yet published here is found by its id (gosup.c rescue):
 * the kernel numbers a filter's notifications in sequence, and `after`, the
 * highest id received when the claim began, bounds it from below. */
struct ef_go_slot {
	_Atomic uint64_t id;
	_Atomic int64_t taken_ns;
	_Atomic uint64_t after;
};

#define EF_GO_SEEN 256 /* processes counted once, whichever answerer saw them */

struct ef_go_shared {
	char magic[16];
	struct ef_go_slot slot[2]; /* one per answerer: the supervisor and its heir */
	_Atomic int64_t awake_ns[2]; /* when each answerer last woke (CLOCK_MONOTONIC) */
	_Atomic int64_t claim;       /* when an answerer began a RECV (0: none does) */
	_Atomic uint64_t last_id;    /* the highest notification id either received */
	_Atomic int supervisor;    /* the pid of the supervisor now */
	_Atomic int reported;      /* the report is written once, by whoever ends */
	_Atomic int test_stopped;  /* EPOLLFIX_GO_TEST_STOP's stop happened (tests only) */
	int program;               /* the pid of the program epollfix started */
	_Atomic uint64_t count[EF_GC_COUNT];
	_Atomic uint64_t seen[EF_GO_SEEN];
};

#endif
