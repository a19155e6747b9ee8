#include <string.h>

#include "totals.h"

void ef_slot_read(const struct ef_slot *s, int shared, uint64_t out[EF_K_COUNT])
{
	uint64_t others = 0;
	for (unsigned k = 0; k < EF_K_COUNT; k++)
		out[k] = atomic_load_explicit(&s->c[k], memory_order_relaxed);
	for (unsigned call = 0; call < EF_CALL_COUNT; call++) {
		/* Each counter is written on its own (ef_stats_count): none is a
		 * difference of two, which a read between their writes could see
		 * larger than a later read. */
		out[ef_key(call, EF_T_ZERO_EMPTY, EF_O_PASSED)] = out[EF_K_EMPTY + call];
		for (unsigned o = 0; o < EF_O_COUNT; o++)
			others += o == EF_O_PASSED ? 0 : out[ef_key(call, EF_T_ZERO_EMPTY, o)];
	}
	/* The streak under way: the mark moves back for each empty poll that was
	 * not passed through, so the difference is taken modulo 2^64; a mark
	 * read with a count of another moment gives no more than the polls. */
	uint64_t now = out[EF_K_EMPTY + EF_CALL_WAIT] + out[EF_K_EMPTY + EF_CALL_PWAIT];
	uint64_t run = now - out[EF_K_STREAK_MARK];
	if (!shared && run <= now + others && run > out[EF_K_LONGEST_STREAK])
		out[EF_K_LONGEST_STREAK] = run;
}

void ef_stats_sum_slots(const struct ef_slot *slots, size_t nslots, struct ef_totals *t)
{
	uint64_t c[EF_K_COUNT];

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < nslots; i++) {
		ef_slot_read(&slots[i], nslots == EF_SLOTS && i == EF_SLOTS - 1, c);
		for (unsigned call = 0; call < EF_CALL_COUNT; call++)
			for (unsigned tc = 0; tc < EF_T_COUNT; tc++)
				for (unsigned o = 0; o < EF_O_COUNT; o++) {
					uint64_t n = c[ef_key(call, tc, o)];
					t->calls[call] += n;
					t->by_class[tc == EF_T_ZERO_EMPTY ? EF_T_ZERO : tc] += n;
					t->empty_zero += tc == EF_T_ZERO_EMPTY ? n : 0;
					t->upgraded += o == EF_O_UPGRADED ? n : 0;
					t->clamped += o == EF_O_CLAMPED || o == EF_O_CLAMP_FELL_BACK ? n : 0;
					t->passed += o == EF_O_PASSED || o == EF_O_UPGRADE_FELL_BACK ||
								     o == EF_O_GENUINE
							     ? n
							     : 0;
					t->genuine += o == EF_O_GENUINE ? n : 0;
					t->hinted += o == EF_O_HINTED ? n : 0;
					t->fell_back += o == EF_O_UPGRADE_FELL_BACK ||
									o == EF_O_CLAMP_FELL_BACK
								? n
								: 0;
				}
		t->longest_streak = c[EF_K_LONGEST_STREAK] > t->longest_streak ? c[EF_K_LONGEST_STREAK]
										: t->longest_streak;
		t->learned_genuine += c[EF_K_LEARNED_GENUINE];
		t->learned_subms += c[EF_K_LEARNED_SUBMS];
		t->retries += c[EF_K_RETRIES];
		t->hint_stale += c[EF_K_HINT_STALE];
		t->threads += c[EF_K_THREADS];
		t->rationed += c[EF_K_RATIONED];
		if (nslots == EF_SLOTS && i == EF_SLOTS - 1)
			t->threads_shared += c[EF_K_THREADS];
		for (unsigned b = 0; b < EF_LATE_BUCKETS; b++)
			t->late[b] += c[EF_K_LATE + b];
		t->late_ns += c[EF_K_LATE_NS];
	}
}

uint64_t ef_late_quantile_us(const struct ef_totals *t, unsigned q)
{
	uint64_t n = 0, seen = 0;
	for (unsigned b = 0; b < EF_LATE_BUCKETS; b++)
		n += t->late[b];
	if (!n)
		return 0;
	/* The smallest bucket that holds at least q permille of the waits. */
	uint64_t want = (n * q + 999) / 1000;
	for (unsigned b = 0; b < EF_LATE_BUCKETS - 1; b++)
		if ((seen += t->late[b]) >= (want ? want : 1))
			return (uint64_t)1 << b;
	return UINT64_MAX;
}

void ef_site_views(const struct ef_site_row *rows, const struct ef_slot *slots, size_t nslots,
		   struct ef_site_view out[EF_SITE_ROWS])
{
	memset(out, 0, sizeof(struct ef_site_view) * EF_SITE_ROWS);
	for (unsigned i = 0; i < EF_SITE_ROWS; i++) {
		out[i].ra = atomic_load_explicit(&rows[i].ra, memory_order_acquire);
		if (!out[i].ra)
			break;
		out[i].flags = atomic_load_explicit(&rows[i].flags, memory_order_relaxed);
		for (size_t n = 0; n < nslots; n++)
			for (unsigned k = 0; k < EF_SC_COUNT; k++)
				out[i].c[k] += atomic_load_explicit(
					&slots[n].c[EF_K_SITES + i * EF_SC_COUNT + k],
					memory_order_relaxed);
	}
}
