/* A path walked by hand (pathwalk.h). */
#define _GNU_SOURCE
#include "pathwalk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

int ef_path_splice_link(int link_fd, char *rest, size_t size, const char **p)
{
	char target[PATH_MAX];
	ssize_t k = readlinkat(link_fd, "", target, sizeof(target));
	if (k < 0)
		return -errno;
	size_t left = strlen(*p);
	if (k == 0)
		return -ENOENT;
	if ((size_t)k >= sizeof(target) || (size_t)k + 1 + left >= size)
		return -ENAMETOOLONG;
	memmove(rest + k + 1, *p, left + 1);
	memcpy(rest, target, (size_t)k);
	rest[k] = '/';
	*p = rest;
	return target[0] == '/';
}
