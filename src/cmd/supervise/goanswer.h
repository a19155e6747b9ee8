/* One trapped wait's answer, the work of each answerer of the Go supervisor's
 * pair (gosup.c, doc/go.md): whose process the trapped thread is, what its
 * runtime waits for (read from its memory), and a timer armed at that
 * deadline in the runtime's epoll instance. Each answerer keeps its own
 * processes, instances and timers. */
#ifndef EPOLLFIX_GOANSWER_H
#define EPOLLFIX_GOANSWER_H

#include <stdint.h>

#include "goabi.h"

/* What the answer works with: the listener (ID_VALID), the answerer's epoll
 * loop, where each process's pidfd is added with the data proc_tag | index
 * (ef_go_proc_gone when it fires), and the pair's page (the counters). */
struct ef_go_answerer {
	int listener, loop;
	uint64_t proc_tag;
	struct ef_go_shared *shared;
};

/* Starts an answerer with a, forgetting the processes of the one it was
 * forked from (a new heir: their fds closed, its loop is new). */
void ef_go_answer_setup(const struct ef_go_answerer *a);

/* A timer to arm once the call is answered: none when instance is NULL. */
struct ef_go_arming {
	void *instance;
	int64_t deadline; /* CLOCK_MONOTONIC ns, the runtime's pollUntil */
};

/* Reads what the trapped call n waits for, counting the outcome; the caller
 * then answers CONTINUE, then arms (ef_go_arm): the call runs at once, and
 * a timer armed an instant late still ends it at the deadline. */
void ef_go_read(const struct ef_notif *n, struct ef_go_arming *arm);
void ef_go_arm(const struct ef_go_arming *arm);

/* The process of index i (the data of its pidfd's event) has exited. */
void ef_go_proc_gone(uint32_t i);

void ef_go_count(struct ef_go_shared *page, enum ef_go_counter c);
int64_t ef_go_now_ns(void);

#endif
