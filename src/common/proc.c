#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fmt.h"

ssize_t ef_proc_read(long pid, const char *name, char *buf, size_t size)
{
	char path[64];
	struct ef_buf p = EF_BUF(path);
	int saved = errno;

	if (pid)
		ef_fmt(&p, "/proc/%ld/%s", pid, name);
	else
		ef_fmt(&p, "/proc/self/%s", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	errno = saved;
	return n > 0 ? n : -1;
}

void ef_proc_line(const char *name, char *buf, size_t size)
{
	ef_proc_read(0, name, buf, size);
	buf[strcspn(buf, "\n")] = '\0';
}

enum { SEARCHING, BLANKS, VALUE, DONE };

void ef_proc_field_init(struct ef_proc_field *f, const char *name, char *out, size_t size)
{
	f->name = name;
	f->matched = 1; /* the file's start is a line's */
	f->state = SEARCHING;
	f->out = out;
	f->size = size;
	f->len = 0;
	if (size)
		out[0] = '\0';
}

/* "\n" NAME ":" is matched one character at a time, so a chunk may end
 * anywhere; the value is copied up to its line's end, bounded by size. */
void ef_proc_field_feed(struct ef_proc_field *f, const char *text, size_t len)
{
	size_t namelen = strlen(f->name);

	for (size_t i = 0; i < len && f->state != DONE; i++) {
		char c = text[i];
		if (f->state == SEARCHING) {
			char want = f->matched == 0 ? '\n' : f->matched <= namelen ? f->name[f->matched - 1] : ':';
			if (c == want) {
				if (++f->matched == namelen + 2)
					f->state = BLANKS;
			} else {
				f->matched = c == '\n';
			}
			continue;
		}
		if (c == '\n') {
			f->state = DONE;
			break;
		}
		if (f->state == BLANKS && (c == ' ' || c == '\t'))
			continue;
		f->state = VALUE;
		if (f->len + 1 < f->size) {
			f->out[f->len++] = c;
			f->out[f->len] = '\0';
		}
	}
}

int ef_proc_field_found(const struct ef_proc_field *f)
{
	return f->state != SEARCHING;
}

/* /proc/PID/FILE (pid 0: self, -1: thread-self) opened read-only and
 * close-on-exec: its fd, or -errno. */
static int open_via(ef_syscall_fn sys, long pid, const char *file)
{
	char path[64];
	struct ef_buf p = EF_BUF(path);

	if (pid > 0)
		ef_fmt(&p, "/proc/%ld/%s", pid, file);
	else
		ef_fmt(&p, "/proc/%s/%s", pid ? "thread-self" : "self", file);
	long fd = sys(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

/* Feeds the fields from fd until each is found or the file ends: read from
 * where the fd is (at), or pread from offset 0 (at >= 0). 0 or the errno. */
static int feed_fields(ef_syscall_fn sys, int fd, long at, struct ef_proc_field *f, size_t n)
{
	/* A status file whole in one read, as a rule: the kernel makes the
	 * text once. */
	char buf[4096];
	for (;;) {
		size_t done = 0;
		for (size_t i = 0; i < n; i++)
			done += f[i].state == DONE;
		if (done == n)
			return 0;
		long got = at < 0 ? sys(SYS_read, fd, buf, sizeof(buf))
				  : sys(SYS_pread64, fd, buf, sizeof(buf), at);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? (errno ? errno : EIO) : 0;
		if (at >= 0)
			at += got;
		for (size_t i = 0; i < n; i++)
			ef_proc_field_feed(&f[i], buf, (size_t)got);
	}
}

int ef_proc_fields_err(ef_syscall_fn sys, long pid, const char *file, struct ef_proc_field *f,
		       size_t n)
{
	/* Read from a fresh fd, so plain read (which any filter that lets a
	 * program run allows) from the start. */
	int saved = errno;
	int fd = open_via(sys, pid, file);

	if (fd < 0) {
		errno = saved;
		return -fd;
	}
	int err = feed_fields(sys, fd, -1, f, n);
	sys(SYS_close, fd);
	errno = saved;
	return err;
}

int ef_proc_fields_fd(ef_syscall_fn sys, int fd, struct ef_proc_field *f, size_t n)
{
	int saved = errno;
	int err = feed_fields(sys, fd, 0, f, n);
	errno = saved;
	return err;
}

int ef_proc_fields_via(ef_syscall_fn sys, long pid, const char *file, struct ef_proc_field *f,
		       size_t n)
{
	return ef_proc_fields_err(sys, pid, file, f, n) ? -1 : 0;
}

int ef_proc_is_pid(const char *name)
{
	if (!*name)
		return 0;
	for (; *name; name++)
		if (*name < '0' || *name > '9')
			return 0;
	return 1;
}
