/* Counters of what the library did, and the report a user reads at exit.
 * Each thread owns a slot it alone writes (plain loads and stores, no locked
 * instructions on the wait path); the report sums the slots. A call costs one
 * increment, of the counter keyed by (function, timeout class, outcome), but
 * for an empty zero-timeout poll: that one increments the slot's count of
 * empty polls, whose run since the streak mark is the thread's busy-loop
 * streak, and the count by outcome is derived (ef_slot_read). */
#ifndef EPOLLFIX_STATS_H
#define EPOLLFIX_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "fmt.h"
#include "policy.h"

enum ef_call { EF_CALL_WAIT, EF_CALL_PWAIT, EF_CALL_COUNT };

/* Zero timeouts are split by result, so an empty poll costs one increment too. */
enum ef_tclass {
	EF_T_NEGATIVE,
	EF_T_ZERO,       /* found events, or failed */
	EF_T_ZERO_EMPTY, /* found nothing */
	EF_T_ONE_MS,
	EF_T_UP_TO_MAX,
	EF_T_LONGER,
	EF_T_COUNT
};

enum ef_outcome {
	EF_O_PASSED,
	EF_O_UPGRADED,
	EF_O_CLAMPED,
	EF_O_UPGRADE_FELL_BACK, /* meant to upgrade; epoll_pwait2 unusable: passed */
	EF_O_CLAMP_FELL_BACK,   /* meant to clamp; epoll_pwait2 unusable: whole ms */
	EF_O_GENUINE,           /* a 1 ms the loop means: passed (EPOLLFIX_ADAPT) */
	EF_O_HINTED,            /* the program said the deadline (epollfix_hint_ns): waited
				   until it exactly, or passed when it was whole ms */
	EF_O_COUNT
};

/* How late the library's timed waits came back after the timeout they asked
 * (upgraded waits, and hinted ones, which end at the program's own deadline):
 * bucket b counts those at most 2^b us late, the last bucket all later ones.
 * Log-scale and fixed, so per-thread counts add up to one histogram. */
#define EF_LATE_BUCKETS 16 /* up to 1, 2, 4, ... 16384 us, and later */

static inline unsigned ef_late_bucket(int64_t late_ns)
{
	uint64_t us = late_ns > 0 ? ((uint64_t)late_ns + 999) / 1000 : 0;
	if (us <= 1)
		return 0;
	unsigned b = 64 - (unsigned)__builtin_clzll(us - 1);
	return b < EF_LATE_BUCKETS - 1 ? b : EF_LATE_BUCKETS - 1;
}

/* Call sites with a row in the report (below); more are counted in totals only. */
#define EF_SITE_ROWS 16

/* A call site's counters, kept per thread like the others (EF_K_SITES). */
enum ef_site_counter {
	EF_SC_UPGRADED, /* waits upgraded */
	EF_SC_RUNS,     /* runs ended: deadlines reached */
	EF_SC_ALONE,    /* 1 ms waits left alone */
	EF_SC_WAIT_NS,  /* time asked of the upgraded waits */
	EF_SC_COUNT
};

enum {
	EF_K_LONGEST_STREAK = EF_CALL_COUNT * EF_T_COUNT * EF_O_COUNT, /* a maximum */
	EF_K_LEARNED_GENUINE, /* verdicts of the learner (policy.h) */
	EF_K_LEARNED_SUBMS,
	EF_K_RETRIES,
	EF_K_HINT_STALE, /* hints dropped: the call's timeout did not fit them */
	EF_K_THREADS,    /* threads that took the slot (the shared one: that shared it) */
	EF_K_RATIONED,   /* waits left as asked: the wake-ups added hit EPOLLFIX_MAX_EXTRA */
	/* Empty zero-timeout polls, whatever their outcome, by function
	 * (EF_K_EMPTY + call): the key (call, EF_T_ZERO_EMPTY, EF_O_PASSED) is
	 * never written, it is these less the other outcomes. */
	EF_K_EMPTY,
	EF_K_STREAK_MARK = EF_K_EMPTY + EF_CALL_COUNT, /* the empty polls when the streak began */
	EF_K_LATE,                                  /* EF_K_LATE + bucket: lateness */
	EF_K_LATE_NS = EF_K_LATE + EF_LATE_BUCKETS, /* their lateness summed, in ns */
	/* EF_K_SITES + row * EF_SC_COUNT + counter: the call sites' counters, per
	 * thread, so that upgraded waits on many threads never write one line. */
	EF_K_SITES,
	EF_K_COUNT = EF_K_SITES + EF_SITE_ROWS * EF_SC_COUNT
};

struct ef_slot {
	_Atomic uint64_t c[EF_K_COUNT];
};

/* Threads beyond the first EF_SLOTS - 1 alive at once share the last slot, with
 * atomic adds (and every call of theirs takes the slow path). */
#define EF_SLOTS 256
extern struct ef_slot ef_stats_slots[EF_SLOTS] __attribute__((visibility("hidden")));
/* A slot for a new thread, which keeps it in its thread-local state: a fresh
 * one, or one a thread that ended gave back. */
struct ef_slot *ef_stats_claim(void);
/* A thread ends (or a fork child drops another thread's): its slot goes back,
 * counts and all, for the next thread to add to. */
void ef_stats_release(struct ef_slot *s);

static inline int ef_stats_shared(const struct ef_slot *s)
{
	return s == &ef_stats_slots[EF_SLOTS - 1];
}

static inline enum ef_tclass ef_tclass_of(int timeout_ms, int max_ms, int result)
{
	return timeout_ms < 0 ? EF_T_NEGATIVE
	       : timeout_ms == 0 ? (result == 0 ? EF_T_ZERO_EMPTY : EF_T_ZERO)
	       : timeout_ms == 1 ? EF_T_ONE_MS
	       : timeout_ms <= max_ms ? EF_T_UP_TO_MAX
				     : EF_T_LONGER;
}

static inline unsigned ef_key(enum ef_call call, enum ef_tclass tc, enum ef_outcome o)
{
	return ((unsigned)call * EF_T_COUNT + tc) * EF_O_COUNT + o;
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

/* The owner takes back an increment (a zero-timeout poll counted as empty
 * before it returned, that found events). */
static inline void ef_slot_unbump(struct ef_slot *s, unsigned k)
{
	atomic_store_explicit(&s->c[k], atomic_load_explicit(&s->c[k], memory_order_relaxed) - 1,
			      memory_order_relaxed);
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
 * matter, so it may be counted first. */
static inline void ef_stats_count(struct ef_slot *s, enum ef_call call, int timeout_ms,
				  int max_ms, enum ef_outcome o, int result)
{
	if (timeout_ms == 0 && result == 0) {
		/* The total first: a reader that sees the outcome's count sees it. */
		ef_stats_add(s, EF_K_EMPTY + call);
		if (o != EF_O_PASSED) { /* released: a reader that sees it sees the total */
			unsigned k = ef_key(call, EF_T_ZERO_EMPTY, o);
			if (ef_stats_shared(s))
				atomic_fetch_add_explicit(&s->c[k], 1, memory_order_release);
			else
				atomic_store_explicit(
					&s->c[k], atomic_load_explicit(&s->c[k], memory_order_relaxed) + 1,
					memory_order_release);
		}
		return;
	}
	ef_stats_add(s, ef_key(call, ef_tclass_of(timeout_ms, max_ms, result), o));
	if (ef_slot_streak_open(s))
		ef_stats_streak_end(s);
}

/* A slot's counters as the report reads them, every key exact: the empty
 * zero-timeout polls that passed, and the longest streak counting the one
 * under way. shared: the slot is the one threads beyond EF_SLOTS - 1 share. */
void ef_slot_read(const struct ef_slot *s, int shared, uint64_t out[EF_K_COUNT]);

/* ---- Call sites (slow path only) ----------------------------------------------
 * What the policy did where: one row per return address that made a rounded-up
 * request, shared by all threads, holding what it is (its flags, which change
 * rarely); what was done there is counted in each thread's slot (EF_K_SITES). */
enum {
	EF_SF_ENDS = 1,        /* runs of requests ended: deadlines were predicted */
	EF_SF_ENDLESS = 2,     /* a stream of 1 ms requests that never ends */
	EF_SF_PROVEN = 4,      /* a deadline finer than the request was seen */
	EF_SF_RECOGNISED = 8,  /* the caller's object is a runtime whose 1 ms is genuine */
	EF_SF_BACKED_OFF = 16, /* left alone after a verdict (grid, or safe) */
	EF_SF_LISTED_GENUINE = 32, /* named in EPOLLFIX_GENUINE_CALLERS */
	EF_SF_LISTED_SUBMS = 64,   /* named in EPOLLFIX_SUBMS_CALLERS */
};

struct ef_site_row {
	_Atomic(const void *) ra;
	_Atomic unsigned flags;
};
extern struct ef_site_row ef_site_rows[EF_SITE_ROWS];

/* A row as the report shows it: its counters summed over the slots. */
struct ef_site_view {
	const void *ra; /* NULL: no more rows */
	unsigned flags;
	uint64_t c[EF_SC_COUNT];
};

/* The rows with their counters, from any array of rows and slots: this
 * process's, or copies read out of another process. Pure. */
void ef_site_views(const struct ef_site_row *rows, const struct ef_slot *slots, size_t nslots,
		   struct ef_site_view out[EF_SITE_ROWS]);

/* After a rounded-up request from ra, counted in slot s: what was done, what
 * the policy knows of the site now (NULL: nothing), and how its caller was
 * classed (EF_SF_RECOGNISED, EF_SF_LISTED_*, or 0). *memo is the thread's
 * row of the site it counted last (NULL at first): rows are never given up,
 * so a run of waits from one site does not scan them again. */
void ef_stats_site(struct ef_slot *s, struct ef_site_row **memo, const void *ra,
		   const struct ef_site *site, struct ef_decision done, unsigned caller_flags);

/* A run of requests from ra ended (ef_decision.ended). */
void ef_stats_site_ended(struct ef_slot *s, struct ef_site_row **memo, const void *ra);

/* The report's figures, summed over all slots. */
struct ef_totals {
	uint64_t calls[EF_CALL_COUNT];
	uint64_t by_class[EF_T_COUNT];
	uint64_t upgraded, clamped, passed, fell_back, empty_zero, longest_streak;
	uint64_t genuine, learned_genuine, learned_subms, retries;
	uint64_t hinted, hint_stale;
	uint64_t threads, threads_shared; /* threads counted, and of them those that shared a slot */
	uint64_t rationed;
	uint64_t late[EF_LATE_BUCKETS], late_ns; /* lateness (EF_K_LATE) */
};

/* The upper bound in us of the bucket that holds the q-th permille of the
 * lateness histogram (q = 500: the median); 0 when it is empty, UINT64_MAX
 * for the last, open bucket. */
uint64_t ef_late_quantile_us(const struct ef_totals *t, unsigned q);

/* Records a verdict of the learner (enum ef_learned, nonzero). */
void ef_stats_learned(struct ef_slot *s, int learned);

void ef_stats_sum(struct ef_totals *t);
/* The same over any array of slots: this process's, or a copy read out of
 * another process (`epollfix status`). Pure. */
void ef_stats_sum_slots(const struct ef_slot *slots, size_t nslots, struct ef_totals *t);

/* Writes the report where EPOLLFIX_STATS says, if it asks for one (at exit). */
void ef_stats_report(void);
/* In a fork child: counts start again, so each process reports its own calls,
 * and every slot but keep (the surviving thread's, or NULL) is free. */
void ef_stats_after_fork(struct ef_slot *keep);

#endif
