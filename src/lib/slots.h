/* The counting itself: each thread owns a slot it alone writes (plain loads
 * and stores, no locked instructions on the wait path); the last slot is the
 * one threads share when there are no more. A call costs one increment, of the
 * counter keyed by (function, timeout class, outcome), but for an empty
 * zero-timeout poll passed through: that one increments the slot's count of
 * such polls, which is the key (function, empty zero, passed) (ef_slot_read);
 * their run since the streak mark is the thread's busy-loop streak. Apart from
 * stats.c (which hands out slots and reports) so that the unit tests link it
 * without the library. */
#ifndef EPOLLFIX_SLOTS_H
#define EPOLLFIX_SLOTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "live.h"
#include "policy.h"
#include "totals.h"

/* The EF_SLOTS slots: set once, before the first slot is handed out (stats.c
 * keeps them where a new process finds them zeroed), and never changed. */
extern _Atomic(struct ef_slot *) ef_stats_slots __attribute__((visibility("hidden")));

/* s was handed out, so ef_stats_slots is set. */
static inline int ef_stats_shared(const struct ef_slot *s)
{
	return s == atomic_load_explicit(&ef_stats_slots, memory_order_relaxed) + (EF_SLOTS - 1);
}

static inline enum ef_tclass ef_tclass_of(int timeout_ms, int max_ms, int result)
{
	return timeout_ms < 0 ? EF_T_NEGATIVE
	       : timeout_ms == 0 ? (result == 0 ? EF_T_ZERO_EMPTY : EF_T_ZERO)
	       : timeout_ms == 1 ? EF_T_ONE_MS
	       : timeout_ms <= max_ms ? EF_T_UP_TO_MAX
				     : EF_T_LONGER;
}

/* One increment by the slot's owner, the only writer: a plain add, atomic only
 * for readers. gcc makes three instructions of a relaxed load and store; one
 * incq (x86-64) is the same single store to a reader. ThreadSanitizer is shown
 * the atomics. */
static inline void ef_slot_bump(struct ef_slot *s, unsigned k)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(EF_TSAN)
	__asm__("incq %0" : "+m"(*(uint64_t *)&s->c[k]));
#else
	atomic_store_explicit(&s->c[k], atomic_load_explicit(&s->c[k], memory_order_relaxed) + 1,
			      memory_order_relaxed);
#endif
}

static inline void ef_stats_add(struct ef_slot *s, unsigned k)
{
	if (__builtin_expect(ef_stats_shared(s), 0))
		atomic_fetch_add_explicit(&s->c[k], 1, memory_order_relaxed);
	else
		ef_slot_bump(s, k);
}

/* Adds n: for a counter that is not a count. */
static inline void ef_stats_add_n(struct ef_slot *s, unsigned k, uint64_t n)
{
	if (__builtin_expect(ef_stats_shared(s), 0))
		atomic_fetch_add_explicit(&s->c[k], n, memory_order_relaxed);
	else
		atomic_store_explicit(&s->c[k], atomic_load_explicit(&s->c[k], memory_order_relaxed) + n,
				      memory_order_relaxed);
}

static inline uint64_t ef_slot_empty_polls(const struct ef_slot *s)
{
	return atomic_load_explicit(&s->c[EF_K_EMPTY + EF_CALL_WAIT], memory_order_relaxed) +
	       atomic_load_explicit(&s->c[EF_K_EMPTY + EF_CALL_PWAIT], memory_order_relaxed);
}

/* By the slot's owner: empty zero-timeout polls came since its last other call.
 * The owner is the only writer, so its plain reads race with nothing (and let
 * the compiler compare in memory). */
static inline int ef_slot_streak_open(const struct ef_slot *s)
{
	const uint64_t *c = (const uint64_t *)s->c;
	return c[EF_K_EMPTY + EF_CALL_WAIT] + c[EF_K_EMPTY + EF_CALL_PWAIT] != c[EF_K_STREAK_MARK];
}

/* By the slot's owner: a timed wait came back late_ns after its timeout. */
static inline void ef_stats_late(struct ef_slot *s, int64_t late_ns)
{
	if (late_ns < 0) /* the clock was read before the wait began: on time */
		late_ns = 0;
	ef_stats_add(s, EF_K_LATE + ef_late_bucket(late_ns));
	ef_stats_add_n(s, EF_K_LATE_NS, (uint64_t)late_ns);
}

/* By the owner of a slot, at a call that is not an empty zero-timeout poll:
 * the streak of empty polls before it ends (the shared slot keeps none). */
void ef_stats_streak_end(struct ef_slot *s);

/* Wait path: one call's outcome. For a non-zero timeout the result does not
 * matter, so it may be counted first. An empty zero-timeout poll is one
 * store of one counter, whatever its outcome, so that no reader ever sees a
 * count that a later look finds smaller: passed through, the slot's count of
 * empty polls; otherwise its outcome's key, and the streak's mark moves back
 * one (modulo 2^64), so the streak counts it too. */
static inline void ef_stats_count(struct ef_slot *s, enum ef_call call, int timeout_ms,
				  int max_ms, enum ef_outcome o, int result)
{
	if (timeout_ms == 0 && result == 0) {
		if (o == EF_O_PASSED) {
			ef_stats_add(s, EF_K_EMPTY + call);
			return;
		}
		ef_stats_add(s, ef_key(call, EF_T_ZERO_EMPTY, o));
		if (!ef_stats_shared(s))
			atomic_store_explicit(&s->c[EF_K_STREAK_MARK],
					      atomic_load_explicit(&s->c[EF_K_STREAK_MARK],
								   memory_order_relaxed) - 1,
					      memory_order_relaxed);
		return;
	}
	ef_stats_add(s, ef_key(call, ef_tclass_of(timeout_ms, max_ms, result), o));
	if (ef_slot_streak_open(s))
		ef_stats_streak_end(s);
}

#endif
