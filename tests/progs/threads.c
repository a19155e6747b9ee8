/* Many short-lived threads, one after another, each making a few waits: the
 * statistics slots of threads that ended must be given back, so the counts
 * stay whole and a late thread still has a slot of its own.
 *
 *   ef-threads N     N threads in turn, each 100 epoll_wait(0) and 2
 *                    epoll_wait(1), then the main thread the same; prints
 *                    calls=<all epoll_wait calls made>. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

static int ep;
static long calls;

static void *waits(void *arg)
{
	struct epoll_event ev;
	(void)arg;
	for (int i = 0; i < 100; i++)
		epoll_wait(ep, &ev, 1, 0);
	epoll_wait(ep, &ev, 1, 1);
	epoll_wait(ep, &ev, 1, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc == 2 ? atol(argv[1]) : -1;
	if (n < 0) {
		fprintf(stderr, "usage: ef-threads N\n");
		return 2;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (long i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, waits, NULL) || pthread_join(t, NULL)) {
			perror("ef-threads: pthread");
			return 1;
		}
		calls += 102;
	}
	waits(NULL);
	calls += 102;
	printf("calls=%ld\n", calls);
	return 0;
}
