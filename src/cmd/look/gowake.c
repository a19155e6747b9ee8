/* The Go runtime's wake-up item, joined from outside (gowake.h). */
#define _GNU_SOURCE
#include "gowake.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* fdinfo: "tfd: N events: E data: D ..."; epoll_ctl adds EPOLLERR and
 * EPOLLHUP to every item's events. The fd, read from the runtime's
 * variable, and the data, the release's (goimage.h), must agree: from Go
 * 1.27 the data is 0, which alone names nothing. */
int ef_go_wake_found(int dup, uint64_t tag, int64_t wakefd)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", dup);
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	size_t have = 0;
	ssize_t n;
	if (fd < 0)
		return -1;
	/* One line per item, thousands for a busy server: read line by line. */
	while (!found && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		have += (size_t)n;
		buf[have] = '\0';
		char *line = buf, *end;
		while (!found && (end = strchr(line, '\n'))) {
			unsigned events;
			unsigned long long data;
			long long tfd;
			*end = '\0';
			if (sscanf(line, "tfd: %lld events: %x data: %llx", &tfd, &events, &data) == 3 &&
			    tfd == wakefd && data == tag &&
			    (events & ~(unsigned)(EPOLLERR | EPOLLHUP)) == EPOLLIN)
				found = 1;
			line = end + 1;
		}
		have = strlen(line);
		if (have == sizeof(buf) - 1) /* no line is that long: not an epoll file */
			break;
		memmove(buf, line, have);
	}
	close(fd);
	return found;
}

/* Whether the link at path names an epoll instance: read from the name the
 * kernel gives the file, which asks nothing of the file's own file system. */
static int is_epoll(const char *path)
{
	static const char want[] = "anon_inode:[eventpoll]";
	char buf[sizeof(want) + 1];
	ssize_t n = readlink(path, buf, sizeof(buf));
	return n == (ssize_t)sizeof(want) - 1 && memcmp(buf, want, sizeof(want) - 1) == 0;
}

enum ef_go_wake_why ef_go_wake_join(pid_t tgid, int pidfd, int fd, uint64_t wake_addr, uint64_t tag,
				    int item, int *dup)
{
	int64_t wakefd;
	struct iovec local = { &wakefd, sizeof(wakefd) };
	struct iovec remote = { (void *)(uintptr_t)wake_addr, sizeof(wakefd) };
	*dup = -1;
	if (process_vm_readv(tgid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(wakefd))
		return EF_GO_WAKE_UNREADABLE;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)tgid, fd);
	if (!is_epoll(path))
		return EF_GO_WAKE_NOT_EPOLL; /* never taken */
	int d = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (d < 0)
		return errno == EMFILE || errno == ENFILE ? EF_GO_WAKE_NO_FD : EF_GO_WAKE_UNREADABLE;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", d);
	if (!is_epoll(path)) {
		close(d); /* swapped since: may block (see gowake.h) */
		return EF_GO_WAKE_NOT_EPOLL;
	}
	int tagged = ef_go_wake_found(d, tag, wakefd);
	if (tagged != 1) {
		close(d);
		return tagged < 0 ? EF_GO_WAKE_NO_FD : EF_GO_WAKE_NO_TAG;
	}
	/* Edge-triggered: each readiness is one event, reported exactly
	 * EPOLLIN (the mask drops what else the file reports, EPOLLRDNORM), as
	 * the runtime requires of its wake-up; a file never read never makes the
	 * runtime spin. */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = tag };
	if (epoll_ctl(d, EPOLL_CTL_ADD, item, &ev) != 0) {
		close(d);
		return EF_GO_WAKE_UNREADABLE;
	}
	*dup = d;
	return EF_GO_WAKE_OK;
}
