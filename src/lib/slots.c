#include "slots.h"

_Atomic(struct ef_slot *) ef_stats_slots;

void ef_stats_streak_end(struct ef_slot *s)
{
	if (ef_stats_shared(s))
		return;
	uint64_t now = ef_slot_empty_polls(s);
	uint64_t len = now - atomic_load_explicit(&s->c[EF_K_STREAK_MARK], memory_order_relaxed);
	if (len > atomic_load_explicit(&s->c[EF_K_LONGEST_STREAK], memory_order_relaxed))
		atomic_store_explicit(&s->c[EF_K_LONGEST_STREAK], len, memory_order_relaxed);
	atomic_store_explicit(&s->c[EF_K_STREAK_MARK], now, memory_order_relaxed);
}
