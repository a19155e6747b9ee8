/* What the agent's reader child reads of one process (agent_reader.h): its
 * executable's file, whether it is a Go program to serve and where its
 * runtime's variables are (look), and its epoll set, which a ring or timerfd
 * of the agent's joins (wake). Runs only in the reader child: anything here
 * may block on what the process controls. */
#ifndef EPOLLFIX_AGENT_LOOK_H
#define EPOLLFIX_AGENT_LOOK_H

#include <limits.h>
#include <stdint.h>

#include "agentsel.h"

/* What the agent asks its reader child, and what the child answers (one
 * message each on their socket). */
enum ef_rq_kind {
	EF_RQ_LOOK, /* is the process a Go program to serve, and where its runtime's variables are */
	EF_RQ_WAKE, /* add the ring (sent with it) to its runtime's epoll set, beside its wake-up */
};

struct ef_rq {
	uint32_t kind, tgid;
	uint64_t gen;   /* the process's generation when asked (agent_bpf.h) */
	uint64_t start; /* its start time when asked: a reused pid is another process */
	/* WAKE: where runtime.epfd and the wake-up's variable are (load bias
	 * applied), and the data of the wake-up item. */
	uint64_t epfd, wake, tag;
};

/* LOOK's answers (r). */
#define EF_LOOK_SERVE 1  /* a Go program of a known layout: attach it */
#define EF_LOOK_NO 0     /* not for us: a verdict for this image, until `until` */
#define EF_LOOK_AGAIN -1 /* looked at again later (mid-exec, a back-off) */

struct ef_ra {
	uint32_t kind, tgid;
	uint64_t gen, start;
	/* LOOK: EF_LOOK_*; WAKE: 0 done, else enum ef_go_wake_why or -1 (the
	 * process changed). A request whose child was left blocked: -2. */
	int32_t r;
	int32_t fork;       /* LOOK, NO: it runs its parent's executable, not exec'd yet */
	int32_t refused_go; /* LOOK, NO: a Go program that cannot be served (said when verbose) */
	int32_t pad;
	uint64_t until;     /* LOOK, NO: the verdict holds until (s, CLOCK_MONOTONIC + 1); 0: for good */
	uint64_t sched, epfd, wake, tag; /* LOOK, SERVE: load bias applied */
	char version[80];
	char why[4 * PATH_MAX + 512]; /* LOOK: the verdict's words; WAKE: why not */
};


/* The child's choice of processes (agentsel.h; only: attach's one process,
 * or 0) and its progress word, counted at each read. */
void ef_alook_init(const struct ef_sel *sel, long only, volatile uint64_t *progress);
/* LOOK: a->r EF_LOOK_*, the verdict's words in a->why. */
void ef_alook_look(uint32_t pid, struct ef_ra *a);
/* WAKE: the item ring (a ring buffer or a timerfd of the agent's) added to
 * the process's epoll set beside its runtime's wake-up: a->r 0, or why not. */
void ef_alook_wake(const struct ef_rq *q, int ring, struct ef_ra *a);

#endif
