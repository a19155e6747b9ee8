/* Reading /proc files without stdio or allocation, with one read of a bounded
 * size: the library reads its own process's (the constructor, the exit report,
 * before libc's stdio may be usable and from any thread), the command another
 * process's, whose files are hostile input. */
#ifndef EPOLLFIX_PROC_H
#define EPOLLFIX_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the start of /proc/PID/NAME (pid 0: /proc/self/NAME) into buf, at
 * most size - 1 bytes, NUL-terminated. Returns the bytes read, or -1 (buf then
 * holds "") when it cannot be read. errno is kept. */
ssize_t ef_proc_read(long pid, const char *name, char *buf, size_t size);

/* The first line of /proc/self/NAME: comm ends in a newline, cmdline's first
 * string (argv[0]) in a NUL. Empty if it cannot be read. */
void ef_proc_line(const char *name, char *buf, size_t size);

#endif
