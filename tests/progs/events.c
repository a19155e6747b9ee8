/* Every event is delivered: a writer thread writes N bytes into a pipe, one at
 * a time at irregular sub-millisecond to millisecond intervals, while the main
 * thread waits with timeouts drawn from {-1 after the last, 0, 1, 2} ms and
 * reads what arrives. Exits 0 when all N bytes were read, in order.
 *
 *   ef-events [--api wait|pwait] [--count N] [--edge] */
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static int fds[2];
static long count = 2000;

static void *writer(void *arg)
{
	(void)arg;
	unsigned seed = 12345;
	for (long i = 0; i < count; i++) {
		unsigned char b = (unsigned char)i;
		if (write(fds[1], &b, 1) != 1)
			abort();
		struct timespec d = { 0, (long)(rand_r(&seed) % 1500) * 1000 };
		nanosleep(&d, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int use_pwait = 0, edge = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--api") && i + 1 < argc)
			use_pwait = !strcmp(argv[++i], "pwait");
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atol(argv[++i]);
		else if (!strcmp(argv[i], "--edge"))
			edge = 1;
		else {
			fprintf(stderr, "usage: %s [--api wait|pwait] [--count N] [--edge]\n", argv[0]);
			return 2;
		}
	}
	int ep = epoll_create1(0);
	if (ep < 0 || pipe(fds) || fcntl(fds[0], F_SETFL, O_NONBLOCK)) {
		perror("setup");
		return 1;
	}
	struct epoll_event ev = { .events = EPOLLIN | (edge ? EPOLLET : 0), .data.fd = fds[0] };
	epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);
	pthread_t t;
	pthread_create(&t, NULL, writer, NULL);

	static const int timeouts[] = { 0, 1, 1, 2, 1, 0, 1 };
	sigset_t none;
	sigemptyset(&none);
	long got = 0, calls = 0;
	int64_t give_up = now_ns() + 60LL * 1000000000;
	while (got < count && now_ns() < give_up) {
		struct epoll_event out[4];
		int timeout = timeouts[calls++ % 7];
		int r = use_pwait ? epoll_pwait(ep, out, 4, timeout, &none)
				  : epoll_wait(ep, out, 4, timeout);
		if (r < 0 && errno != EINTR) {
			perror("epoll");
			return 1;
		}
		/* Read everything: with EPOLLET nothing more is reported until new data. */
		for (int k = 0; k < r; k++) {
			unsigned char buf[256];
			ssize_t n;
			while ((n = read(fds[0], buf, sizeof(buf))) > 0)
				for (ssize_t j = 0; j < n; j++, got++)
					if (buf[j] != (unsigned char)got) {
						fprintf(stderr, "byte %ld out of order\n", got);
						return 1;
					}
		}
	}
	pthread_join(t, NULL);
	printf("written=%ld read=%ld calls=%ld\n", count, got, calls);
	return got == count ? 0 : 1;
}
