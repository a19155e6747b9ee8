/* Prints the median and shortest wait the constructor of libef-ctorwait
 * measured, then its own, then the library's counters. */
#include "hard.h"

extern long ef_ctor_median_us, ef_ctor_min_us;

int main(void)
{
	long min, m = median_wait_us(idle_epoll(), 0, 1, 40, &min);
	printf("ctor_median_us=%ld ctor_min_us=%ld main_median_us=%ld main_min_us=%ld ",
	       ef_ctor_median_us, ef_ctor_min_us, m, min);
	print_counters();
	printf("\n");
	return ef_ctor_median_us < 0 || m < 0;
}
