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
	uint64_t empty_zero_streak; /* zero-timeout polls in a row that found nothing */
};

struct ef_decision ef_decide(const struct ef_config *c, const struct ef_thread *t,
			     int timeout_ms);

/* The same decision when epoll_pwait2 cannot be used: upgrades pass through,
 * clamps round up to whole milliseconds. */
struct ef_decision ef_without_pwait2(struct ef_decision d, int timeout_ms);

/* Records a call's outcome: timeout_ms as the program asked, result as returned. */
void ef_observe(struct ef_thread *t, int timeout_ms, int result);

#endif
