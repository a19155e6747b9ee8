/* A bounded text builder on caller-owned memory. The wait path, constructors and
 * the exit report format with it instead of stdio: it never allocates, never
 * locks and is safe before libc's stdio is usable. */
#ifndef EPOLLFIX_FMT_H
#define EPOLLFIX_FMT_H

#include <stddef.h>
#include <stdint.h>

struct ef_buf {
	char *p;
	size_t len, cap; /* len excludes the NUL; output is cut at cap - 1 */
};

#define EF_BUF(array) ((struct ef_buf){ .p = (array), .len = 0, .cap = sizeof(array) })

struct ef_buf *ef_str(struct ef_buf *b, const char *s);
struct ef_buf *ef_int(struct ef_buf *b, int64_t v);
struct ef_buf *ef_dur(struct ef_buf *b, int64_t ns);
/* Writes the whole buffer to fd with one write(2) where possible, keeping errno. */
void ef_buf_write(const struct ef_buf *b, int fd);

#endif
