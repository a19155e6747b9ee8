/* One file descriptor over a Unix socket (SCM_RIGHTS), with one byte beside
 * it: how the launcher hands the supervisor the seccomp listener. */
#ifndef EF_FDPASS_H
#define EF_FDPASS_H

/* 0 when fd went; -1 and errno otherwise. Retries EINTR; never SIGPIPE. */
int ef_send_fd(int sock, int fd);

/* The descriptor received (close-on-exec), or -1 when the peer closed or sent
 * anything but one byte with exactly one descriptor. Retries EINTR. */
int ef_recv_fd(int sock);

#endif
