/* A small epoll server on loopback, the shape of a real service: it accepts
 * connections and echoes what it reads, and keeps a 200 us housekeeping tick
 * as event loops do (waiting ceil(remaining) ms, so under the library those
 * waits are upgraded). Writes its port on the first line of stdout, then runs
 * until killed or for --seconds (a bound, so a failed test leaves nothing).
 *
 *   ef-server [--seconds S] */
#include "clock.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long seconds = 60;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atol(argv[++i]);

	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 16) != 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
		perror("ef-server");
		return 1;
	}
	printf("%d\n", ntohs(a.sin_port));
	fflush(stdout);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = ls }, got[16];
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	int64_t end = now_ns() + seconds * 1000000000LL, tick = now_ns() + 200000;
	long ticks = 0, echoed = 0;
	while (now_ns() < end) {
		int64_t left = tick - now_ns();
		int timeout = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
		int n = epoll_wait(ep, got, 16, timeout);
		for (int i = 0; i < n; i++) {
			int fd = got[i].data.fd;
			if (fd == ls) {
				int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
				struct epoll_event cev = { .events = EPOLLIN, .data.fd = c };
				if (c >= 0)
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
				continue;
			}
			char buf[4096];
			ssize_t r = read(fd, buf, sizeof(buf));
			if (r <= 0 || write(fd, buf, (size_t)r) != r) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
			} else {
				echoed += r;
			}
		}
		if (now_ns() >= tick) {
			ticks++;
			tick += 200000;
			if (tick < now_ns())
				tick = now_ns() + 200000;
		}
	}
	printf("ticks=%ld echoed=%ld\n", ticks, echoed);
	return 0;
}
