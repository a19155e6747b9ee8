/* The agent seen from outside (`epollfix status`, --metrics): the processes
 * a running agent serves, with their counters, read from its state file
 * (agentstate.h) as hostile input; and their report line. */
#ifndef EPOLLFIX_AGENTLOOK_H
#define EPOLLFIX_AGENTLOOK_H

#include <stdint.h>

#include "agentstate.h"
#include "fmt.h"

struct ef_agentrec {
	long pid;   /* the process served */
	long agent; /* the agent's pid */
	unsigned long long start; /* the process's start time, as the agent read it */
	uint64_t count[EF_AC_COUNT];
	uint64_t late[EF_AGENT_NBUCKETS], late_ns;
};

/* Calls fn for each process a running agent serves now, as that agent last
 * wrote it, and still the process it attached (not a reused pid): only PID
 * and those of the agent that is PID when only is not 0. The number found. */
int ef_agentlook_each(long only, void (*fn)(const struct ef_agentrec *r, void *arg), void *arg);

/* Its report line, as `epollfix status` shows it. */
void ef_agent_report(const struct ef_agentrec *r, struct ef_buf *b);

#endif
