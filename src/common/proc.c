#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

ssize_t ef_proc_read(const char *name, char *buf, size_t size)
{
	char path[32] = "/proc/self/";
	size_t len = strlen(path);
	int saved = errno;

	for (; *name && len + 1 < sizeof(path); name++)
		path[len++] = *name;
	path[len] = '\0';
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
	ef_proc_read(name, buf, size);
	buf[strcspn(buf, "\n")] = '\0';
}
