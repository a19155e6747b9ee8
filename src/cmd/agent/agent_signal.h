/* The agent's side of the signal mechanism (doc/agent.md), for kernels
 * without the task-work kfunc: the deadlines the kernel sends, a timerfd at
 * the earliest, and at each a SIGURG (Go's own preemption signal) to a
 * thread still in the wait that deadline belongs to. In no program's path:
 * stopped or gone, the waits keep the runtime's own 1 ms. */
#ifndef EPOLLFIX_AGENT_SIGNAL_H
#define EPOLLFIX_AGENT_SIGNAL_H

#include <stdint.h>

struct ef_abpf;
struct ef_bpf_deadline;
struct ef_asig;

/* The agent's own counters, beside the kernel's. */
enum ef_asig_counter {
	EF_ASIG_SENT,     /* SIGURGs sent at a deadline: waits ended */
	EF_ASIG_STALE,    /* the thread had run since (or was gone): nothing sent */
	EF_ASIG_DETACHED, /* the process was detached meanwhile */
	EF_ASIG_LATE,     /* read more than 1 ms after its deadline (agent stopped, starved) */
	EF_ASIG_FULL,     /* too many pending: dropped */
	EF_ASIG_REFUSED,  /* tgkill refused (EPERM: another user's program, no CAP_KILL) */
	EF_ASIG_COUNT
};

/* Takes the deadlines `b` reads (ef_abpf_on_deadline). NULL with errno. */
struct ef_asig *ef_asig_new(struct ef_abpf *b);
void ef_asig_free(struct ef_asig *s);
/* The timerfd to poll; ef_asig_due when it is readable. */
int ef_asig_fd(const struct ef_asig *s);
void ef_asig_due(struct ef_asig *s);
/* A deadline from the kernel (the ring buffer's callback). */
void ef_asig_add(const struct ef_bpf_deadline *d, void *arg);
void ef_asig_counters(const struct ef_asig *s, uint64_t count[EF_ASIG_COUNT]);
/* The monotonic offset of the agent's own time namespace, from
 * /proc/self/timens_offsets ("monotonic SECONDS NANOSECONDS"); 0 without
 * time namespaces. The kernel's deadlines are the host's clock: a timer of
 * the agent's is armed at deadline + offset. */
int64_t ef_asig_own_offset(void);

#endif
