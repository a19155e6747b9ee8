/* The report's figures summed over an array of per-thread slots (live.h):
 * this process's own (stats.c), or a copy read out of another process by
 * `epollfix status`. Pure, shared by the library and the command. */
#ifndef EPOLLFIX_TOTALS_H
#define EPOLLFIX_TOTALS_H

#include <stddef.h>
#include <stdint.h>

#include "live.h"

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

/* A slot's counters as the report reads them, every key exact: the empty
 * zero-timeout polls that passed, and the longest streak counting the one
 * under way. shared: the slot is the one threads beyond EF_SLOTS - 1 share. */
void ef_slot_read(const struct ef_slot *s, int shared, uint64_t out[EF_K_COUNT]);

/* The figures of any array of slots: this process's, or a copy read out of
 * another process. */
void ef_stats_sum_slots(const struct ef_slot *slots, size_t nslots, struct ef_totals *t);

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

#endif
