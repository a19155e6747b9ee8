#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Room for one descriptor, aligned as a cmsghdr must be. */
union one_fd {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

static struct msghdr one_fd_msg(char *byte, struct iovec *iov, union one_fd *u)
{
	*iov = (struct iovec){ byte, 1 };
	return (struct msghdr){ .msg_iov = iov, .msg_iovlen = 1, .msg_control = u->buf,
				.msg_controllen = sizeof(u->buf) };
}

int ef_send_fd(int sock, int fd)
{
	char byte = 'L';
	struct iovec iov;
	union one_fd u;
	memset(&u, 0, sizeof(u));
	struct msghdr m = one_fd_msg(&byte, &iov, &u);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t n;
	while ((n = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n == 1 ? 0 : -1;
}

int ef_recv_fd(int sock)
{
	char byte;
	struct iovec iov;
	union one_fd u;
	struct msghdr m = one_fd_msg(&byte, &iov, &u);
	ssize_t n;
	int fd;
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&m) : NULL;
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}
