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

/* One field of a /proc file of "Name:\tvalue" lines (status), found
 * wherever it lies: the file is fed in chunks of any size, so no line, however
 * long (Groups: with thousands of groups), pushes a field out of a buffer. */
struct ef_proc_field {
	const char *name; /* without the colon: "NSpid" */
	unsigned matched; /* characters of "\n" name ":" seen so far */
	int state;
	char *out; /* the value, blanks before it skipped, NUL-terminated, cut to size - 1 */
	size_t size, len;
};
void ef_proc_field_init(struct ef_proc_field *f, const char *name, char *out, size_t size);
void ef_proc_field_feed(struct ef_proc_field *f, const char *text, size_t len);
/* 1 once the field's name was seen (its value may still be coming). */
int ef_proc_field_found(const struct ef_proc_field *f);

/* The raw syscall() to read with: the library's real one (real.h), whose
 * openat, read and close a seccomp filter that let the library load allows
 * and none of which is a cancellation point; the command's own. */
typedef long (*ef_syscall_fn)(long, ...);

/* Reads /proc/PID/FILE (pid 0: /proc/self/FILE, -1: /proc/thread-self/FILE)
 * in chunks until each of the n fields is found or the file ends, with no
 * stdio nor allocation, and closes it: no fd stays open past the call. 0 when
 * every field was found or the file was read to its end (so a field not found
 * is not there), -1 when it could not be opened or read. errno is kept. */
int ef_proc_fields_via(ef_syscall_fn sys, long pid, const char *file, struct ef_proc_field *f,
		       size_t n);
/* The same, but returns 0 or the errno of the open or read that failed
 * (EMFILE for a moment tells from /proc not mounted); errno itself is kept. */
int ef_proc_fields_err(ef_syscall_fn sys, long pid, const char *file, struct ef_proc_field *f,
		       size_t n);

/* The same from an fd held open (the library's, loaded with dlopen), read
 * from offset 0 with pread: no open, and the fd's offset never moves. */
int ef_proc_fields_fd(ef_syscall_fn sys, int fd, struct ef_proc_field *f, size_t n);

/* The first line of /proc/self/NAME: comm ends in a newline, cmdline's first
 * string (argv[0]) in a NUL. Empty if it cannot be read. */
void ef_proc_line(const char *name, char *buf, size_t size);

/* Whether a name in /proc (or anything) is a pid: digits, at least one. */
int ef_proc_is_pid(const char *name);

#endif
