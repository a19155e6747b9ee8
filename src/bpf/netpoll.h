/* What crosses between the kernel program (netpoll.bpf.c) and the agent
 * that loads it (cmd/agent*.c): the maps' keys and values, and the counters.
 * Both sides are built from the same tree: no layout number. Included by the
 * BPF side after vmlinux.h, by the command after <linux/types.h>. */
#ifndef EPOLLFIX_BPF_NETPOLL_H
#define EPOLLFIX_BPF_NETPOLL_H

#define EF_BPF_MAX_PROCS 4096
#define EF_BPF_MAX_THREADS 16384
/* The exec events' ring buffer, and how full it wakes the agent: below, the
 * agent reads it on its own each second (16 bytes an event). */
#define EF_BPF_EVENTS_SIZE (64 * 1024)
#define EF_BPF_WAKE_AT (EF_BPF_EVENTS_SIZE / 4)
/* The shortest gap between two execs that wake the agent. */
#define EF_BPF_WAKE_GAP_NS (100 * 1000 * 1000ull)

/* events' records: what the agent is told of a process. */
enum ef_bpf_event_kind {
	EF_BPF_EV_EXEC,  /* it exec'd (whatever it runs now) */
	EF_BPF_EV_WAKER, /* wake-up mechanism: its netpoller waits, and has no waker yet */
	EF_BPF_EV_DRAIN, /* wake-up mechanism: its waker is a quarter full */
};
struct ef_bpf_event {
	__u32 tgid;
	__u32 kind; /* enum ef_bpf_event_kind */
};

/* The wake-up mechanism (kernels without the task-work kfunc): each attached
 * process's waker, a ring buffer of the agent's that the agent put into the
 * runtime's epoll set tagged as the runtime's own wake-up. A record (of no
 * data: 8 bytes) written with a wake-up at the deadline ends the wait; the
 * agent empties it when told it is a quarter full (EF_BPF_EV_DRAIN). */
#define EF_BPF_WAKER_SIZE (4 * 4096)
#define EF_BPF_WAKER_DRAIN (EF_BPF_WAKER_SIZE / 4)

/* The signal mechanism (kernels without the task-work kfunc): deadlines'
 * records, one per netpoll wait the kernel saw begin. The agent arms a
 * timer at `deadline` (host CLOCK_MONOTONIC) and, when it expires, sends
 * SIGURG to the thread only if its sigwaits entry still says `waiting ==
 * seq`: the same wait, never since run. */
struct ef_bpf_deadline {
	__u32 tgid, tid;
	__u64 deadline;
	__u64 seq;
};

/* sigwaits' value, keyed by thread id: written by the kernel only. */
struct ef_bpf_sigwait {
	__u64 seq;       /* waits seen, this thread's sequence word */
	__u64 waiting;   /* the seq of the wait it sleeps in; 0 once it runs again */
	__u64 deadline;  /* host CLOCK_MONOTONIC of that wait's deadline */
	__u64 pollUntil; /* the runtime's deadline (its clock) */
	__u64 fired;     /* a runtime deadline that passed in a wait: never sent again */
	__u64 slept;     /* host CLOCK_MONOTONIC when the thread went to sleep in it */
	__u32 tgid;
	__u32 pad;
};

/* counters' keys (a per-CPU array: the agent sums the CPUs). */
enum ef_bpf_counter {
	EF_BC_WAITS,        /* attached threads asleep in epoll_pwait(..., 1, NULL) */
	EF_BC_ARMED,        /* timers set (signal: deadlines sent) at the runtime's deadline */
	EF_BC_ENDED,        /* waits ended at the deadline (task work scheduled; signal: the
			     * thread back after the deadline, before its own 1 ms) */
	EF_BC_OTHER_FD,     /* the wait was not on runtime.epfd */
	EF_BC_NOT_POLLING,  /* sched.lastpoll not 0, or no pollUntil */
	EF_BC_OUT_OF_RANGE, /* pollUntil not within the 1 ms wait (or long past) */
	EF_BC_REPEATED,     /* the deadline already interrupted for once */
	EF_BC_UNREADABLE,   /* the addresses could not be read */
	EF_BC_FULL,         /* no room in the threads' map or ring buffer, or the timer refused */
	EF_BC_STALE,        /* the timer fired for a wait that was over */
	EF_BC_AWAKE,        /* the thread was no longer in that wait */
	EF_BC_DETACHED,     /* the process was detached meanwhile */
	EF_BC_BUSY,         /* the task work was refused (still pending) */
	EF_BC_DROPPED,      /* attached processes that exec'd or ended */
	EF_BC_COUNT
};

/* How late a wait the program ended came back to the program (the task
 * work's run, on its way back to user space) after the runtime's deadline:
 * bucket b counts those at most 2^b us late, the last all later ones; the
 * library's own buckets (live.h's EF_LATE_BUCKETS), so one histogram reads
 * both. */
#define EF_BPF_LATE_BUCKETS 16

/* procs' value, keyed by tgid: where the runtime's variables are in the
 * process (load bias applied), which the kernel only reads, and the
 * process's own counters, which only the kernel writes (atomically: its
 * threads run on every CPU). The agent publishes them (doc/agent.md); they
 * go with the entry, at the process's exec or end. */
struct ef_bpf_proc {
	__u64 sched_addr; /* runtime.sched: lastpoll at +8, pollUntil at +16 */
	__u64 epfd_addr;  /* runtime.epfd, an int32 */
	__u64 start;      /* its start time (/proc/PID/stat), the agent's, to tell a reused pid */
	__u64 asked;      /* the kernel asked the agent for its waker (wake-up mechanism) */
	__u64 count[EF_BC_COUNT];
	__u64 late[EF_BPF_LATE_BUCKETS];
	__u64 late_ns;
};

#endif
