/* Counters of what the library did, and the report a user reads at exit.
 * Each thread owns a slot it alone writes (plain loads and stores, no locked
 * instructions on the wait path); the report sums the slots. */
#ifndef EPOLLFIX_STATS_H
#define EPOLLFIX_STATS_H

#include <stdint.h>

#include "config.h"
#include "fmt.h"
#include "policy.h"

enum ef_counter {
	EF_C_EPOLL_WAIT, /* calls, by function */
	EF_C_EPOLL_PWAIT,
	EF_C_T_NEGATIVE, /* calls, by the timeout the program asked for */
	EF_C_T_ZERO,
	EF_C_T_ONE_MS,
	EF_C_T_UP_TO_MAX, /* 2..MAX_MS */
	EF_C_T_LONGER,
	EF_C_UPGRADED,  /* by what the library did */
	EF_C_CLAMPED,
	EF_C_PASSED,
	EF_C_FELL_BACK, /* an upgrade or clamp that ran the real call instead */
	EF_C_EMPTY_ZERO,     /* zero-timeout polls that found nothing */
	EF_C_LONGEST_STREAK, /* a maximum, not a sum */
	EF_C_COUNT
};

struct ef_totals {
	uint64_t c[EF_C_COUNT];
};

enum ef_call { EF_CALL_WAIT, EF_CALL_PWAIT };

/* Wait path: one call's outcome. streak is the thread's empty zero-timeout streak
 * after the call; fell_back says an upgrade or clamp ran the real call instead. */
void ef_stats_count(const struct ef_config *c, enum ef_call call, int timeout_ms,
		    enum ef_action action, int fell_back, int result, uint64_t streak);

void ef_stats_sum(struct ef_totals *t);

/* The report, pure: every line starts with "epollfix[pid] ". pwait2 is
 * "available", "not needed yet" or why it is not used. */
void ef_stats_format(const struct ef_totals *t, const struct ef_config *c, long pid,
		     const char *comm, const char *pwait2, struct ef_buf *out);

/* Reads EPOLLFIX_STATS (constructor) and arranges the report at exit. */
void ef_stats_init(void);
/* In a fork child: counts start again, so each process reports its own calls. */
void ef_stats_after_fork(void);

#endif
