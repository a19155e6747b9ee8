/* A library whose constructor calls epoll_wait. A program linked against it
 * runs this constructor before the preloaded libepollfix's own (dependencies
 * first, preloads after them): the library must already work, configuration
 * included. */
#include "hard.h"

long ef_ctor_median_us = -2;

__attribute__((constructor)) static void waits_early(void)
{
	ef_ctor_median_us = median_wait_us(idle_epoll(), 0, 1, 40);
}
