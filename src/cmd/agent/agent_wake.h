/* The agent's side of the wake-up mechanism (doc/agent.md), for kernels
 * without the task-work kfunc: each attached process gets a waker, a ring
 * buffer of the agent's put into the runtime's epoll instance beside the
 * runtime's own wake-up and registered as it is (look/gowake.h), and handed
 * to the kernel, whose timer writes it at the deadline. The agent is in no
 * wait's path: it makes a waker once per process and empties it now and
 * then; killed, its files close and the kernel takes the wakers out of the
 * epoll sets; stopped, the kernel goes on until a waker is full. */
#ifndef EPOLLFIX_AGENT_WAKE_H
#define EPOLLFIX_AGENT_WAKE_H

#include <stdint.h>

struct ef_abpf;
struct ef_awake;

/* NULL with errno. */
struct ef_awake *ef_awake_new(struct ef_abpf *b, int verbose);
/* Every waker closed: out of every epoll set. */
void ef_awake_free(struct ef_awake *w);
/* What tgid's waker needs, noted when it is attached: its start time and
 * the addresses of runtime.epfd and of the wake-up's variable (load bias
 * applied), and the wake-up item's data. */
void ef_awake_note(struct ef_awake *w, uint32_t tgid, uint64_t start, uint64_t epfd_addr,
		   uint64_t wake_addr, uint64_t tag);
/* The kernel asked for tgid's waker (its netpoller waits): made, and given
 * to the kernel with the others made since by ef_awake_commit (a change of
 * the kernel's map of wakers waits for its programs: one wait for many). */
void ef_awake_make(struct ef_awake *w, uint32_t tgid);
void ef_awake_commit(struct ef_awake *w);
/* The kernel says tgid's waker is a quarter full: emptied. */
void ef_awake_drain(struct ef_awake *w, uint32_t tgid);
/* tgid exec'd: its waker (in the old image's epoll set) goes. */
void ef_awake_drop(struct ef_awake *w, uint32_t tgid);
/* Each second: every waker emptied; those of processes no longer attached go. */
void ef_awake_tick(struct ef_awake *w);

#endif
