/* The cost ceiling (EPOLLFIX_MAX_EXTRA): how many wake-ups the library may add
 * in this process, a second. A wake-up is added when an upgraded wait comes
 * back early and the program asks the same again (policy.h, ration_ns);
 * without the library that request would have been one wake-up. The rate is
 * kept as one theoretical arrival time (GCRA, the leaky bucket as a meter):
 * each added wake-up moves it on by 1/MAX_EXTRA s, and none may be added while
 * it runs more than a second ahead of now. One atomic word, no lock; a thread
 * whose compare-exchange loses takes the new value and decides again. */
#include "ration.h"

#include <stdatomic.h>

#define NS_PER_S 1000000000LL
#define BURST_NS (NS_PER_S / 2) /* half a second's worth at once: a short test or spike */

static _Atomic int64_t ahead; /* when the meter would be empty again */

void ef_ration_after_fork(void)
{
	atomic_store_explicit(&ahead, 0, memory_order_relaxed);
}

int ef_ration_take(int64_t per_s, int64_t now_ns)
{
	if (per_s <= 0) /* off: no ceiling */
		return 1;
	int64_t step = NS_PER_S / per_s, t = atomic_load_explicit(&ahead, memory_order_relaxed);
	for (;;) {
		int64_t from = t > now_ns ? t : now_ns;
		if (from - now_ns >= BURST_NS)
			return 0;
		if (atomic_compare_exchange_weak_explicit(&ahead, &t, from + (step ? step : 1),
							  memory_order_relaxed, memory_order_relaxed))
			return 1;
	}
}
