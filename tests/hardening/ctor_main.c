/* Prints the median the constructor of libef-ctorwait measured, then its own. */
#include "hard.h"

extern long ef_ctor_median_us;

int main(void)
{
	long m = median_wait_us(idle_epoll(), 0, 1, 40);
	printf("ctor_median_us=%ld main_median_us=%ld\n", ef_ctor_median_us, m);
	return ef_ctor_median_us < 0 || m < 0;
}
