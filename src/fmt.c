#include "fmt.h"

#include <errno.h>
#include <unistd.h>

#include "parse.h"

struct ef_buf *ef_str(struct ef_buf *b, const char *s)
{
	if (!b->cap)
		return b;
	for (; s && *s && b->len + 1 < b->cap; s++)
		b->p[b->len++] = *s;
	b->p[b->len] = '\0';
	return b;
}

struct ef_buf *ef_int(struct ef_buf *b, int64_t v)
{
	char tmp[24];
	int n = sizeof(tmp) - 1;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	tmp[n] = '\0';
	do {
		tmp[--n] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[--n] = '-';
	return ef_str(b, tmp + n);
}

struct ef_buf *ef_dur(struct ef_buf *b, int64_t ns)
{
	char tmp[32];
	return ef_str(b, ef_format_duration(ns, tmp, sizeof(tmp)));
}

void ef_buf_write(const struct ef_buf *b, int fd)
{
	int saved = errno;
	size_t off = 0;

	while (off < b->len) {
		ssize_t n = write(fd, b->p + off, b->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	errno = saved;
}
