/* The policy: pure functions from the configuration, one thread's state and a
 * call's timeout to a decision. No system calls, no globals, so every rule can be
 * unit-tested without preloading anything. */
#ifndef EPOLLFIX_POLICY_H
#define EPOLLFIX_POLICY_H

#include <stdint.h>

#include "config.h"

enum ef_action {
	EF_PASS,     /* the real call with the original arguments */
	EF_UPGRADE,  /* epoll_pwait2 with wait_ns: a rounded-up sub-ms request */
	EF_CLAMP,    /* epoll_pwait2 with wait_ns: a busy zero-timeout loop slowed down */
	EF_CLAMP_MS, /* the real call with timeout_ms: a clamp without epoll_pwait2 */
};

struct ef_decision {
	enum ef_action action;
	int64_t wait_ns;
	int timeout_ms;
};

/* What the policy remembers per thread between calls. */
struct ef_thread {
	uint64_t empty_streak;  /* zero-timeout polls in a row that found nothing */
	uint64_t longest_streak;
	/* Kept only while the clamp is on (they need the clock): */
	uint64_t busy_streak;   /* of the empty streak, polls that came back within clamp_gap */
	int64_t last_return_ns; /* when the last zero-timeout poll returned */
};

/* now_ns is the monotonic clock at the call's start; it is read (and used) only
 * for zero timeouts while the clamp is on. */
struct ef_decision ef_decide(const struct ef_config *c, const struct ef_thread *t,
			     int timeout_ms, int64_t now_ns);

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
	if (t->empty_streak > t->longest_streak)
		t->longest_streak = t->empty_streak;
	t->empty_streak = 0;
	t->busy_streak = 0;
}

/* ef_observe for a zero-timeout poll while the clamp is on: an empty poll that
 * began within gap_ns of the previous one's return extends the busy loop; one
 * after more of the program's own work starts it anew. */
void ef_observe_timed(struct ef_thread *t, int result, int64_t start_ns, int64_t end_ns,
		      int64_t gap_ns);

#endif
