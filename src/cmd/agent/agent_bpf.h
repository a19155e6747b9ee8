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

/* Loads and attaches the program: NULL with why in *why when it cannot. */
struct ef_abpf *ef_abpf_open(struct ef_buf *why);
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

/* The counters, summed over the CPUs (netpoll.h's enum ef_bpf_counter). */
void ef_abpf_counters(struct ef_abpf *b, uint64_t *count, size_t n);

/* Every attached process with its counters (netpoll.h's struct
 * ef_bpf_proc): fn called for each; the number seen. */
struct ef_bpf_proc;
size_t ef_abpf_each(struct ef_abpf *b, void (*fn)(uint32_t tgid, const struct ef_bpf_proc *p, void *arg),
		    void *arg);

/* Execs: a file descriptor to poll, and the events read from it. */
int ef_abpf_events_fd(struct ef_abpf *b);
int ef_abpf_events(struct ef_abpf *b, void (*fn)(uint32_t tgid, void *arg), void *arg);

/* Whether this kernel has what the program needs, for --check: 1, or 0 with
 * why. Reads the kernel's BTF; loads nothing. */
int ef_abpf_kernel_has(const char *name, int kind_func);

#endif
