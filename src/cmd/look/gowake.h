/* A Go runtime's own wake-up item in its epoll instance, seen and joined from
 * outside (doc/go.md, doc/agent.md): the supervisor and the agent each put a
 * file of their own beside it, registered as the runtime registers its
 * wake-up, so that the file's readiness ends the runtime's netpoll wait as
 * its own netpollBreak does (one event, exactly EPOLLIN, with its data). */
#ifndef EPOLLFIX_GOWAKE_H
#define EPOLLFIX_GOWAKE_H

#include <stdint.h>
#include <sys/types.h>

enum ef_go_wake_why {
	EF_GO_WAKE_OK,
	EF_GO_WAKE_UNREADABLE, /* the wake-up variable, or the epoll fd, could not be read or taken */
	EF_GO_WAKE_NO_FD,      /* no file descriptor left here */
	EF_GO_WAKE_NO_TAG,     /* the instance has no item of the runtime's wake-up with that data */
	EF_GO_WAKE_NOT_EPOLL,  /* the file at the runtime's epoll fd is not an epoll instance */
};

/* Adds item (a file of the caller's) to the epoll instance the target tgid
 * has at fd, EPOLLIN | EPOLLET with data tag, once that instance is seen to
 * hold the runtime's wake-up: the item of the fd the variable at wake_addr
 * holds (read with process_vm_readv), registered EPOLLIN with data tag. The
 * duplicate of the instance (pidfd_getfd on pidfd) is returned in *dup, to
 * keep or close. Another process's memory and files: checked where read. The
 * file taken is an epoll instance (checked before it is taken and after: the
 * process may swap the file at that number meanwhile), or it is closed at
 * once: a close of the process's other files can block on what the process
 * controls (a FUSE file's FLUSH), so the caller runs this where that costs
 * only that process (the agent's reader, agent_reader.h). */
enum ef_go_wake_why ef_go_wake_join(pid_t tgid, int pidfd, int fd, uint64_t wake_addr, uint64_t tag,
				    int item, int *dup);

/* 1 when the epoll file open here at dup has the item of fd wakefd
 * registered EPOLLIN with data tag, 0 when not, -1 when its fdinfo cannot be
 * opened. */
int ef_go_wake_found(int dup, uint64_t tag, int64_t wakefd);

#endif
