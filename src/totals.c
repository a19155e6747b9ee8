/* The report's figures summed over an array of per-thread slots: this
 * process's own (stats.c), or a copy read out of another process by
 * `epollfix status`. Pure, in the core library so the command links it. */
#include <string.h>

#include "stats.h"

void ef_stats_sum_slots(const struct ef_slot *slots, size_t nslots, struct ef_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < nslots; i++) {
		const struct ef_slot *s = &slots[i];
		for (unsigned call = 0; call < EF_CALL_COUNT; call++)
			for (unsigned tc = 0; tc < EF_T_COUNT; tc++)
				for (unsigned o = 0; o < EF_O_COUNT; o++) {
					uint64_t n = atomic_load_explicit(
						&s->c[(call * EF_T_COUNT + tc) * EF_O_COUNT + o],
						memory_order_relaxed);
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
					t->fell_back += o == EF_O_UPGRADE_FELL_BACK ||
									o == EF_O_CLAMP_FELL_BACK
								? n
								: 0;
				}
		uint64_t longest = atomic_load_explicit(&s->c[EF_K_LONGEST_STREAK], memory_order_relaxed);
		t->longest_streak = longest > t->longest_streak ? longest : t->longest_streak;
		t->learned_genuine += atomic_load_explicit(&s->c[EF_K_LEARNED_GENUINE], memory_order_relaxed);
		t->learned_subms += atomic_load_explicit(&s->c[EF_K_LEARNED_SUBMS], memory_order_relaxed);
		t->retries += atomic_load_explicit(&s->c[EF_K_RETRIES], memory_order_relaxed);
	}
}
