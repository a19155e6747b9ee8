/* The Go supervisor (doc/go.md): a seccomp filter traps the Go netpoller's
 * 1 ms epoll waits to a listener held by a process of the command's own,
 * which reads the runtime's next timer out of the program's memory, arms a
 * timerfd of its own at it inside the program's epoll instance, tagged as the
 * runtime's own wake-up, and lets the call run natively. The program keeps
 * its pid: the launcher becomes the program (golaunch.c); the supervisor and
 * its heir are a detached pair (gosup.c). */
#ifndef EPOLLFIX_GOSUP_H
#define EPOLLFIX_GOSUP_H

/* The supervisor's side, run in the detached process golaunch.c forked:
 * receives the listener over sock, acks it, and serves until no task uses
 * the filter. stats: where the report goes at the end ("" none, "1" stderr,
 * else a file); program: the pid it serves first, for status. Never
 * returns. */
__attribute__((noreturn)) void ef_go_supervise(int sock, const char *stats, int program);

#endif
