/* The policy: pure functions from the configuration, one thread's state and a
 * call's timeout to a decision. No system calls, no globals, so every rule can be
 * unit-tested without preloading anything. */
#ifndef EPOLLFIX_POLICY_H
#define EPOLLFIX_POLICY_H

#include <stdint.h>

#include "config.h"

enum ef_action {
	EF_PASS,     /* the real call with the original arguments */
	EF_GENUINE,  /* the same, for a 1 ms the loop means (recognised or learned) */
	EF_UPGRADE,  /* epoll_pwait2 with wait_ns: a rounded-up sub-ms request */
	EF_CLAMP,    /* epoll_pwait2 with wait_ns: a busy zero-timeout loop slowed down */
	EF_CLAMP_MS, /* the real call with timeout_ms: a clamp without epoll_pwait2 */
};

struct ef_decision {
	enum ef_action action;
	int64_t wait_ns;
	int timeout_ms;
};

/* Where in the millisecond (CLOCK_MONOTONIC) runs of upgraded 1 ms waits
 * ended: loops that mean their 1 ms stop asking on a millisecond grid, loops
 * with sub-ms deadlines stop anywhere. */
#define EF_LEARN_BINS 8
#define EF_LEARN_SAMPLES 7 /* run ends per verdict */

struct ef_learn {
	uint8_t in_run;  /* the last call was an upgraded 1 ms wait that came back empty */
	uint8_t samples;
	uint8_t bins[EF_LEARN_BINS];
	int64_t run_return_ns; /* when that wait returned */
	uint32_t backoff_left; /* 1 ms waits to leave alone before trying again */
	uint32_t backoff_len;  /* the next back-off: doubled each time it is confirmed */
	uint32_t quiet_left;   /* run ends to let pass unsampled after a sub-ms verdict */
	uint32_t quiet_len;    /* the next quiet spell: doubled each time it is confirmed */
};

/* What the policy remembers per thread between calls. */
struct ef_thread {
	struct ef_learn learn;
	uint64_t empty_streak;  /* zero-timeout polls in a row that found nothing */
	/* Kept only while the clamp is on (they need the clock): */
	uint64_t busy_streak;   /* of the empty streak, polls that came back within clamp_gap */
	int64_t last_return_ns; /* when the last zero-timeout poll returned */
};

/* now_ns is the monotonic clock at the call's start; it is read (and used) only
 * for zero timeouts while the clamp is on. genuine: the caller is a runtime
 * whose 1 ms is real (recognize.h); asked only for timeouts that would be
 * upgraded, and ignored unless EPOLLFIX_ADAPT=auto. */
struct ef_decision ef_decide(const struct ef_config *c, const struct ef_thread *t,
			     int timeout_ms, int64_t now_ns, int genuine);

/* 1 when a timeout of timeout_ms needs to know whether its caller is genuine. */
static inline int ef_wants_caller(const struct ef_config *c, int timeout_ms)
{
	return c->adapt && timeout_ms > 0 && timeout_ms <= c->max_ms && c->subms_ns > 0;
}

/* Learning, per thread (EPOLLFIX_ADAPT=auto). Before every call while a run is
 * open (the fast path too): a request other than 1 ms ends the run. */
enum ef_learned { EF_LEARNED_NOTHING, EF_LEARNED_GENUINE, EF_LEARNED_SUBMS, EF_LEARNED_RETRY };
enum ef_learned ef_learn_before(struct ef_learn *l, int timeout_ms);
/* After a call: what was done, what it returned and when it returned. */
enum ef_learned ef_learn_after(struct ef_learn *l, enum ef_action done, int timeout_ms,
			       int result, int64_t end_ns);

/* The same decision when epoll_pwait2 cannot be used: upgrades pass through,
 * clamps round up to whole milliseconds. */
struct ef_decision ef_without_pwait2(struct ef_decision d, int timeout_ms);

/* Records a call's outcome: timeout_ms as the program asked, result as returned.
 * Inline: it runs on every pass-through call. */
static inline void ef_observe(struct ef_thread *t, int timeout_ms, int result)
{
	if (timeout_ms == 0 && result == 0) {
		t->empty_streak++;
		return;
	}
	if (!t->empty_streak) /* busy_streak <= empty_streak: nothing to end */
		return;
	t->empty_streak = 0;
	t->busy_streak = 0;
}

/* ef_observe for a zero-timeout poll while the clamp is on: an empty poll that
 * began within gap_ns of the previous one's return extends the busy loop; one
 * after more of the program's own work starts it anew. */
void ef_observe_timed(struct ef_thread *t, int result, int64_t start_ns, int64_t end_ns,
		      int64_t gap_ns);

#endif
