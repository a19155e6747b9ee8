#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
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
