/* A library loaded with dlopen whose code calls epoll_wait: the call binds to
 * the preloaded library like any other. */
#include "hard.h"

long ef_dl_median_us(int count, long *min_us);
long ef_dl_median_us(int count, long *min_us)
{
	return median_wait_us(idle_epoll(), 0, 1, count, min_us);
}
