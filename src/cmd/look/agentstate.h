/* The agent's state file: what `epollfix agent` publishes of the processes
 * it serves, for `epollfix status` (agentlook.h) to show them as it shows the
 * supervised ones (doc/agent.md). The agent replaces the file whole (a new
 * file renamed over it) about every second, and removes it when it ends; a
 * file whose writer is gone is stale and not read. A reader takes it as
 * hostile input: a file of root's that no one else may write, bounded, every
 * line checked, and a process shown only while its start time is the one
 * the file gives (the pid not reused).
 *
 * EF_AGENT_DIR/agent.PID, one line a record, numbers in decimal:
 *   epollfix-agent 1 PID START NAME,NAME,... NBUCKETS
 *   TGID START COUNTER... BUCKET... LATE_NS
 * PID and START the agent's (START: /proc/PID/stat's start time); the names
 * of the counters in the order of the lines' columns (a reader takes those
 * it knows, by name: an agent of another version is read as far as the two
 * agree); then one line for each process attached: its counters, its
 * lateness histogram (NBUCKETS, the library's buckets) and the lateness
 * summed in ns. The counters are the kernel's (src/bpf/netpoll.h), which
 * the agent names with this table. */
#ifndef EPOLLFIX_AGENTSTATE_H
#define EPOLLFIX_AGENTSTATE_H

#define EF_AGENT_DIR "/run/epollfix"
#define EF_AGENT_FILE_PREFIX "agent."
#define EF_AGENT_MAGIC "epollfix-agent"
#define EF_AGENT_FORMAT 1
#define EF_AGENT_NBUCKETS 16 /* live.h's EF_LATE_BUCKETS */

/* A process's counters, as the file names them. */
#define EF_AGENT_COUNTERS(X)                                                                  \
	X(WAITS, "waits")               /* threads asleep in the runtime's 1 ms netpoll wait */ \
	X(ARMED, "timers")              /* timers set at the runtime's deadline */              \
	X(ENDED, "ended")               /* waits ended at the deadline */                        \
	X(OTHER_FD, "other_fd")         /* fell back: the wait was not on runtime.epfd */       \
	X(NOT_POLLING, "not_polling")   /* fell back: not the netpoller's blocking wait */      \
	X(OUT_OF_RANGE, "out_of_range") /* fell back: the deadline not within the 1 ms */       \
	X(REPEATED, "repeated")         /* fell back: that deadline already ended once */       \
	X(UNREADABLE, "unreadable")     /* fell back: the addresses could not be read */        \
	X(FULL, "full")                 /* fell back: no room for the thread, or the timer */   \
	X(STALE, "stale")               /* the timer found the wait over */                      \
	X(AWAKE, "awake")               /* the timer found the thread awake */                   \
	X(DETACHED, "detached")         /* the timer found the process detached */               \
	X(BUSY, "busy")                 /* the task work was refused */

enum ef_agent_counter {
#define EF_AGENT_ENUM(id, name) EF_AC_##id,
	EF_AGENT_COUNTERS(EF_AGENT_ENUM)
#undef EF_AGENT_ENUM
	EF_AC_COUNT
};

/* A counter's name in the file, and in the metrics' reason label. */
static inline const char *ef_agent_counter_name(int i)
{
	static const char *const names[EF_AC_COUNT] = {
#define EF_AGENT_NAME(id, name) name,
		EF_AGENT_COUNTERS(EF_AGENT_NAME)
#undef EF_AGENT_NAME
	};
	return i >= 0 && i < EF_AC_COUNT ? names[i] : "";
}

#endif
