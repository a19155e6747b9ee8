/* The policy: pure functions from the configuration, one thread's memory and a
 * call to a decision. No system calls, no globals, so every rule can be
 * unit-tested and fuzzed without preloading anything.
 *
 * The wait path speaks to it in one fixed order, which the policy owns:
 *
 *     d = ef_before(c, t, &call);      learn from how the last call ended, decide
 *     (run d; if epoll_pwait2 is unusable or refused: d = ef_without_pwait2(d, T))
 *     ef_after(c, t, &call, d, r, end); observe the result, learn
 *
 * ef_before reads call.now_ns only when ef_wants_clock() said so, and
 * call.caller only when ef_wants_caller() said so; ef_after reads end_ns only
 * when ef_wants_end_clock() said so. ef_watching() says when the thread's next
 * call must come to ef_before even if the fast word would let it pass. */
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
	EF_BOUNDED,  /* epoll_pwait2 with wait_ns, until the thread's bound, for a chase
			given up or rationed: never later than without the library */
};

/* What a call site is, as far as the code at its return address tells
 * (recognize.h), before anything has been learned. */
enum ef_caller {
	EF_CALLER_UNKNOWN,
	EF_CALLER_GENUINE, /* a runtime whose clock or API is whole milliseconds */
	EF_CALLER_SUBMS,   /* the user said its 1 ms are rounded-up sub-ms requests */
};

/* What the policy learned at a call, for the report (one per call at most). */
enum ef_learned {
	EF_LEARNED_NOTHING,
	EF_LEARNED_GENUINE, /* a verdict: this thread's or site's 1 ms is genuine */
	EF_LEARNED_SUBMS,   /* a verdict: its runs end anywhere in the millisecond */
	EF_LEARNED_RETRY,   /* a back-off ended: upgrades are tried again */
};

struct ef_decision {
	enum ef_action action;
	int64_t wait_ns;
	int timeout_ms;
	enum ef_learned learned; /* what ef_before learned on the way */
	const void *ended;       /* the site whose run this call ended, or NULL */
	/* An upgraded wait of a run that goes on is a wake-up the library adds:
	 * ration_ns >= 0 is what it waits instead when none may be added now
	 * (ef_rationed): the time left to the thread's bound (ef_thread.bound_ns).
	 * -1: not an added wake-up. */
	int64_t ration_ns;
};

struct ef_request {
	int timeout_ms;
	const void *site;     /* the caller's return address */
	enum ef_caller caller;
	int64_t now_ns;       /* CLOCK_MONOTONIC at the call's start */
};

/* ---- Runs and call sites ---------------------------------------------------
 * A run is what a loop sends while it chases one deadline: rounded-up
 * requests from one call site, each asked again soon after the previous empty
 * return (within a few times the site's quickest re-ask). It ends when the program asks for something else
 * (0, or longer: asyncio, trio, Tornado once their deadline has passed), when
 * it comes back late (it used the wake-up: gevent ran a Python callback), or
 * when a wait finds events (nothing is learned then). The deadline lay between
 * the run's last two returns: each site keeps where its recent deadlines were,
 * and the next run's first wait goes most of the way there at once. */
#define EF_SITES 4  /* call sites remembered per thread (one per event loop is usual) */
#define EF_RING 4   /* recent deadlines per site */

enum ef_shape {
	EF_SHAPE_NEW,     /* no run has ended yet */
	EF_SHAPE_ENDS,    /* runs end: asyncio, trio, Tornado, gevent */
	EF_SHAPE_ENDLESS, /* 1 ms after 1 ms, no sign of use: libev or mio with C
			     callbacks, a plain ticker; sub-ms and genuine look alike */
};

struct ef_site {
	const void *ra;          /* NULL: free */
	uint8_t shape;           /* enum ef_shape */
	uint8_t proven;          /* a deadline was seen between two wake-ups: sub-ms */
	uint8_t ring_n, ring_i;  /* deadlines kept, and where the next goes */
	uint8_t probe_in;        /* runs until the next early first wait */
	uint8_t unproven_runs;   /* runs ended without a proof (for EPOLLFIX_ADAPT=safe) */
	uint8_t went_on;         /* of predicted runs, how many went on long after the
				    prediction: an average, 255 for all */
	uint8_t trial_in;        /* while that is most: runs until one is predicted again */
	uint8_t asks_else;       /* of runs that ended, how many by the program asking
				    something else (asyncio's zero poll): an average, 255 for all */
	uint8_t rationed;        /* its last added wake-up was refused (EPOLLFIX_MAX_EXTRA):
				    its runs' first waits count as added ones too, until one
				    is let through */
	int64_t ring[EF_RING];   /* offsets from run start by which a deadline had passed */
	int64_t probe_step;      /* how much earlier than predicted the next probe wakes */
	int64_t quick_gap_ns;    /* how soon the program asks again after a wake-up it did
				    not use: the least gap seen, drifting up slowly */
	int64_t else_gap_ns;     /* how soon it asks something else after a wake-up it
				    used: an average */
	uint32_t backoff_left;   /* waits to leave alone before trying again */
	uint32_t backoff_len;    /* the next back-off: doubled each time it is confirmed */
};

struct ef_run {
	uint8_t open;       /* the last call was an upgraded wait of this run that came back empty */
	uint8_t site;       /* index into ef_thread.sites */
	uint8_t probing;    /* this run's first wait was a probe (earlier than predicted) */
	uint8_t predicted;  /* this run's first wait went to the predicted deadline */
	uint8_t held;       /* its first wait was held to the thread's bound (ef_before):
			       it teaches nothing */
	uint16_t wakes;     /* empty waits so far */
	int32_t first_ms;   /* the run's first request */
	int64_t start_ns;   /* when its first request began */
	int64_t last_end_ns;
	int64_t asked_ns;   /* the waits asked so far: a stalled machine does not add to it */
};

/* Where in the millisecond runs that ended in an event ended: a loop with a
 * whole-millisecond clock (tokio) is woken on a grid, sub-ms deadlines
 * anywhere. Per thread. */
#define EF_LEARN_BINS 8
#define EF_LEARN_SAMPLES 7 /* run ends per verdict */

struct ef_learn {
	uint8_t samples;
	uint8_t bins[EF_LEARN_BINS];
	uint32_t backoff_left; /* 1 ms waits to leave alone before trying again */
	uint32_t backoff_len;  /* the next back-off: doubled each time it is confirmed */
};

/* What the policy remembers per thread between calls. The sites come last: a
 * wait reads the words before them and one site, in as few lines as can be. */
struct ef_thread {
	struct ef_run run;
	struct ef_learn learn;
	uint8_t victim;          /* the site slot to reuse next */
	int64_t overshoot_ns;    /* how much later than asked a fine wait returns (average) */
	int64_t asked_end_ns;    /* when the wait under way was asked to end */
	int64_t bound_ns;        /* the program's deadline lies no later: the earliest bound
				    (request time + its timeout) of the rounded-up requests
				    since one asked past it (the tail guarantee) */
	uint64_t empty_streak;  /* zero-timeout polls in a row that found nothing */
	/* Kept only while the clamp is on (they need the clock): */
	uint64_t busy_streak;   /* of the empty streak, polls that came back within clamp_gap */
	int64_t last_return_ns; /* when the last zero-timeout poll returned */
	struct ef_site sites[EF_SITES];
};

static inline int ef_rounded_up(const struct ef_config *c, int timeout_ms)
{
	return timeout_ms > 0 && timeout_ms <= c->max_ms && c->subms_ns > 0;
}

/* 1 when ef_before needs call.caller for this timeout. */
static inline int ef_wants_caller(const struct ef_config *c, int timeout_ms)
{
	return c->adapt && ef_rounded_up(c, timeout_ms);
}

/* The thread has a run open: its next call must reach ef_before. */
static inline int ef_watching(const struct ef_thread *t)
{
	return t->run.open;
}

/* 1 when ef_before needs call.now_ns. */
static inline int ef_wants_clock(const struct ef_config *c, const struct ef_thread *t,
				 int timeout_ms)
{
	return t->run.open || (timeout_ms == 0 && c->clamp_ns > 0) ||
	       (c->adapt && ef_rounded_up(c, timeout_ms));
}

/* 1 when ef_after needs the clock at the call's return. */
static inline int ef_wants_end_clock(const struct ef_config *c, const struct ef_request *call,
				     struct ef_decision done)
{
	return (call->timeout_ms == 0 && c->clamp_ns > 0) || (c->adapt && done.action == EF_UPGRADE);
}

struct ef_decision ef_before(const struct ef_config *c, struct ef_thread *t,
			     const struct ef_request *call);

/* The same decision when epoll_pwait2 cannot be used: upgrades pass through,
 * clamps round up to whole milliseconds. */
struct ef_decision ef_without_pwait2(struct ef_decision d, int timeout_ms);

/* The same decision when no wake-up may be added now (EPOLLFIX_MAX_EXTRA): the
 * wait ends at the thread's bound, or passes unchanged when that is a whole
 * request away. The run is over for the learner. */
struct ef_decision ef_rationed(struct ef_thread *t, struct ef_decision d, int timeout_ms);

/* done: what was really run (after ef_without_pwait2); result: its return. */
enum ef_learned ef_after(const struct ef_config *c, struct ef_thread *t, const struct ef_request *call,
			 struct ef_decision done, int result, int64_t end_ns);

/* The site slot the thread keeps for ra, or NULL (for the report). */
const struct ef_site *ef_site_of(const struct ef_thread *t, const void *ra);

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

#endif
