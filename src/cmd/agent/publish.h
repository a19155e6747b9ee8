/* The agent's state file (look/agentstate.h says what it holds and how it is
 * read): the counters of the processes it serves, for `epollfix status`. */
#ifndef EPOLLFIX_PUBLISH_H
#define EPOLLFIX_PUBLISH_H

#include "agent_bpf.h"
#include "agentlook.h"

/* Makes EF_AGENT_DIR when missing, opens it and removes the files of agents
 * that are gone. 0, or -1 after one line on stderr: the agent then serves
 * all the same, unseen by status. */
int ef_publish_open(void);

/* The file written anew from the kernel's counters, renamed over the last:
 * a reader never sees half of it. A round that fails leaves the last one. */
void ef_publish(struct ef_abpf *b);

/* What the file holds of one attached process (the kernel's entry), as
 * status reads it back: for the agent's own report too. */
void ef_publish_record(uint32_t tgid, const struct ef_bpf_proc *p, struct ef_agentrec *r);

/* The file removed (the agent ends: nothing it served is served now). */
void ef_publish_close(void);

#endif
