/* Reading this process's /proc files without stdio or allocation: the
 * constructor, the exit report and the epoll_pwait2 probe use it, before libc's
 * stdio may be usable and from any thread. */
#ifndef EPOLLFIX_PROC_H
#define EPOLLFIX_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the start of /proc/self/NAME into buf, NUL-terminated. Returns the
 * bytes read, or -1 (buf then holds "") when it cannot be read. errno is
 * kept. */
ssize_t ef_proc_read(const char *name, char *buf, size_t size);

/* The first line of /proc/self/NAME: comm ends in a newline, cmdline's first
 * string (argv[0]) in a NUL. Empty if it cannot be read. */
void ef_proc_line(const char *name, char *buf, size_t size);

#endif
