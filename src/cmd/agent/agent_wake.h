/* The agent's side of the wake-up mechanism (doc/agent.md), for kernels
 * without the task-work kfunc: each attached process gets a waker, a ring
 * buffer of the agent's put into the runtime's epoll instance beside the
 * runtime's own wake-up and registered as it is (look/gowake.h, by the
 * agent's reader: agent_reader.h), and handed to the kernel, whose timer
 * writes it at the deadline. The agent is in no wait's path: it makes a
 * waker once per process and empties it now and then; killed, its files
 * close and the kernel takes the wakers out of the epoll sets; stopped, the
 * kernel goes on until a waker is full. Whose waker it is, and when it is
 * made, given or dropped, is the process's record's (agent_served.h). */
#ifndef EPOLLFIX_AGENT_WAKE_H
#define EPOLLFIX_AGENT_WAKE_H

#include <stdint.h>

struct ef_waker {
	int ring;             /* the ring buffer's fd, -1: none */
	uint64_t *cons;       /* its consumer position (ours to write) */
	const uint64_t *prod; /* its producer position (the kernel's) */
};

#define EF_WAKER_NONE ((struct ef_waker){ .ring = -1 })

/* A new ring buffer, its positions mapped: 0, or -1 with why. */
int ef_waker_open(struct ef_waker *w, const char **why);
/* Unmapped and closed: the last reference to the file, which the kernel then
 * takes out of the epoll set it was added to (the kernel's map, which holds
 * the ring buffer and not the file, is the caller's to change). */
void ef_waker_close(struct ef_waker *w);
/* Emptied: what the kernel wrote is read. */
void ef_waker_drain(struct ef_waker *w);

#endif
