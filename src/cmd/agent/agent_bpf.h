/* The agent's hold on its kernel side (src/bpf/netpoll.bpf.c): loading and
 * attaching it, the processes it serves, its counters and its exec events.
 * The only file that knows libbpf and the skeleton. Everything it holds is
 * the kernel's through file descriptors: the process exiting, however it
 * exits, detaches all of it. */
#ifndef EPOLLFIX_AGENT_BPF_H
#define EPOLLFIX_AGENT_BPF_H

#include <stddef.h>
#include <stdint.h>

#include "fmt.h"

struct ef_abpf;
struct ef_bpf_deadline;
struct ef_bpf_sigwait;

/* How a wait is ended at its deadline: by the kernel's task work (no
 * signal, Linux 6.18), by the kernel's write of a waker the runtime's epoll
 * set holds as its own wake-up (no signal, Linux 5.15, agent_wake.c), by the
 * agent's SIGURG (agent_signal.c), or by a timerfd of the agent's that the
 * runtime's epoll set holds as its own wake-up, armed by the agent at each
 * deadline the kernel sends (no signal, no bpf_timer: PREEMPT_RT kernels,
 * agent_served.c). */
enum ef_mechanism {
	EF_MECH_AUTO,
	EF_MECH_TASKWORK,
	EF_MECH_WAKEUP,
	EF_MECH_SIGNAL,
	EF_MECH_TIMERFD,
	EF_MECH_COUNT
};
extern const char *const ef_mechanism_name[EF_MECH_COUNT]; /* auto, taskwork, wakeup, signal, timerfd */

/* What the kernel offers, read from its BTF (loads nothing). */
enum ef_kfeature {
	EF_KF_RINGBUF,   /* BPF_MAP_TYPE_RINGBUF, 5.8: exec events, the signal's deadlines */
	EF_KF_PT_REGS,   /* bpf_task_pt_regs, 5.15: the system call a thread sleeps in */
	EF_KF_TIMER,     /* bpf_timer, 5.15 */
	EF_KF_TIMER_ABS, /* BPF_F_TIMER_ABS, 6.7 */
	EF_KF_TASKWORK,  /* the bpf_task_work_schedule_signal kfunc: 6.18 (_impl), 7.0 */
	EF_KF_COUNT
};
struct ef_kfeature_info {
	const char *label; /* --check's line */
	const char *yes, *no;
	unsigned needs;    /* the mechanisms that need it: 1 << enum ef_mechanism */
};
extern const struct ef_kfeature_info ef_kfeatures[EF_KF_COUNT];
/* has[i]: 1 when the kernel has feature i. 0, or -1 when it has no BTF. */
int ef_abpf_probe(int has[EF_KF_COUNT]);
/* The mechanism `want` resolves to with what the kernel has: AUTO when it
 * has too little for it. AUTO is task work where the kernel has the kfunc,
 * else wake-up, never the signal: it sends SIGURG, which a program may see
 * (signal.Notify) and which ends a system call its cgo code sleeps in, so it
 * runs only when asked for. A kernel that names bpf_timer and refuses it
 * (PREEMPT_RT) is known only at the load: auto then takes timerfd
 * (agent.c's open_mechanism). */
enum ef_mechanism ef_abpf_choose(enum ef_mechanism want, const int has[EF_KF_COUNT]);

/* Loads and attaches the program of mechanism `m` (not AUTO):
 * NULL with why in *why when it cannot. */
struct ef_abpf *ef_abpf_open(enum ef_mechanism m, struct ef_buf *why);
void ef_abpf_close(struct ef_abpf *b);

/* How often tgid exec'd or ended since the program was loaded: read before
 * reading the process, then again after ef_abpf_attach, which undoes the
 * attach when the two differ (the process changed meanwhile). */
uint64_t ef_abpf_generation(struct ef_abpf *b, uint32_t tgid);
/* 0: attached; 1: changed meanwhile, not attached; -1 with errno. start:
 * the process's start time, kept beside it for whoever reads its counters. */
int ef_abpf_attach(struct ef_abpf *b, uint32_t tgid, uint64_t gen, uint64_t start,
		   uint64_t sched_addr, uint64_t epfd_addr);
int ef_abpf_detach(struct ef_abpf *b, uint32_t tgid);
int ef_abpf_attached(struct ef_abpf *b, uint32_t tgid);
/* Whether the kernel asked for tgid's waker (wake-up mechanism): 1, 0, or -1
 * when tgid is not attached. */
int ef_abpf_asked(struct ef_abpf *b, uint32_t tgid);

/* The counters, summed over the CPUs (netpoll.h's enum ef_bpf_counter). */
void ef_abpf_counters(struct ef_abpf *b, uint64_t *count, size_t n);

/* Every attached process with its counters (netpoll.h's struct
 * ef_bpf_proc): fn called for each; the number seen. */
struct ef_bpf_proc;
size_t ef_abpf_each(struct ef_abpf *b, void (*fn)(uint32_t tgid, const struct ef_bpf_proc *p, void *arg),
		    void *arg);

/* Execs: a file descriptor to poll, and the events read from it. */
int ef_abpf_events_fd(struct ef_abpf *b);
int ef_abpf_events(struct ef_abpf *b, void (*fn)(uint32_t tgid, uint32_t kind, void *arg), void *arg);

/* The signal mechanism: each deadline the kernel sends is given to fn,
 * read with the exec events (ef_abpf_events); and a thread's entry, whose
 * `waiting` says whether it is still in the wait a deadline named. */
void ef_abpf_on_deadline(struct ef_abpf *b, void (*fn)(const struct ef_bpf_deadline *, void *),
			 void *arg);
int ef_abpf_sigwait(struct ef_abpf *b, uint32_t tid, struct ef_bpf_sigwait *s);

/* The wake-up mechanism: a new waker (a ring buffer the size the kernel's
 * wakers map takes), its fd or -1; n of them put as tgids' (replacing any:
 * -1 when any failed), or dropped. */
int ef_abpf_waker_new(void);
int ef_abpf_set_wakers(struct ef_abpf *b, const uint32_t *tgids, const int *fds, size_t n);
void ef_abpf_drop_wakers(struct ef_abpf *b, const uint32_t *tgids, size_t n);

#endif
