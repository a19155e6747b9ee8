/* A library whose constructor calls epoll_wait. A program linked against it
 * runs this constructor before the preloaded libepollfix's own (dependencies
 * first, preloads after them): the library must already work, configuration
 * included. With EF_CTOR_CANCEL set, a thread is first cancelled at its first
 * epoll_wait (the cancel pending when it calls): the library's first reading
 * of its configuration happens there, and must not be left half done. */
#include "hard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

long ef_ctor_median_us = -2, ef_ctor_min_us = -2;

static atomic_int cancel_sent;

static void *first_wait(void *arg)
{
	struct epoll_event ev;
	int ep = idle_epoll();
	(void)arg;
	while (!atomic_load(&cancel_sent))
		; /* no cancellation point before the wait */
	epoll_wait(ep, &ev, 1, 1);
	return NULL;
}

__attribute__((constructor)) static void waits_early(void)
{
	if (getenv("EF_CTOR_CANCEL")) {
		pthread_t t;
		/* The cancel is pending when the thread calls epoll_wait, and acted
		 * on at its first cancellation point. */
		if (pthread_create(&t, NULL, first_wait, NULL) == 0) {
			pthread_cancel(t);
			atomic_store(&cancel_sent, 1);
			pthread_join(t, NULL);
		}
	}
	ef_ctor_median_us = median_wait_us(idle_epoll(), 0, 1, 40, &ef_ctor_min_us);
}
