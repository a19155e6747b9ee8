/* The one formatter: printf's format strings on caller-owned memory. The wait
 * path, constructors, the exit report and the command format with it instead
 * of stdio: it never allocates, never locks, reads no locale and is safe
 * before libc's stdio is usable. */
#ifndef EPOLLFIX_FMT_H
#define EPOLLFIX_FMT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct ef_buf {
	char *p;
	size_t len, cap; /* len excludes the NUL; output is cut at cap - 1 */
};

#define EF_BUF(array) ((struct ef_buf){ .p = (array), .len = 0, .cap = sizeof(array) })

/* Appends the formatted text to b; returns b. A subset of printf, so the
 * compiler checks every call's arguments: %s (NULL writes nothing), %c, %d,
 * %i, %u and %x with the length modifiers h, l, ll, z, j and t (so PRId64
 * and PRIu64 work), and %%. No width, precision or flags; an unknown conversion is
 * copied as it stands. A duration is a %s argument, EF_DUR(ns). */
__attribute__((format(printf, 2, 3))) struct ef_buf *ef_fmt(struct ef_buf *b, const char *fmt, ...);
__attribute__((format(printf, 2, 0))) struct ef_buf *ef_vfmt(struct ef_buf *b, const char *fmt,
							     va_list ap);

/* The units of a duration, smallest first: the parser reads them (parse.h),
 * the formatter writes them. */
struct ef_unit {
	const char *name;
	int64_t ns;
	int frac_digits; /* decimal places that still contribute whole ns */
};
#define EF_UNIT_COUNT 4
extern const struct ef_unit ef_units[EF_UNIT_COUNT];

/* Writes the shortest exact rendering of ns with the largest unit that keeps it
 * whole-ish ("50us", "1.5ms", "1ns"); always NUL-terminated. Returns buf. */
char *ef_format_duration(int64_t ns, char *buf, size_t size);

/* ns as a user writes it ("50us", "1.5ms"; ef_format_duration), in
 * storage that lasts until the end of the enclosing block: for one %s. */
#define EF_DUR(ns) ef_format_duration((ns), (char[EF_DUR_SIZE]){ 0 }, EF_DUR_SIZE)
#define EF_DUR_SIZE 32 /* "-9223372036.854775807s" and its NUL fit */

/* The length of the valid UTF-8 sequence at p (1 for ASCII, up to 4), or 0
 * when p starts none: overlong forms, surrogates and code points past
 * U+10FFFF are not valid. */
int ef_utf8_len(const unsigned char *p);

/* Text from another process (a name, a path, a symbol) for a terminal:
 * printable ASCII and valid UTF-8 as they are; control characters (C0, DEL,
 * C1), bytes that start no valid sequence and the backslash as \xNN, so no
 * escape sequence reaches the terminal and nothing breaks a line. With width
 * > 0 it shows at most width characters, cut with '~', and pads to width
 * with blanks: a column nothing can push out of line. Appended to b. */
struct ef_buf *ef_esc(struct ef_buf *b, const char *s, size_t width);

/* Writes the whole buffer to fd with one write(2) where possible, keeping errno. */
void ef_buf_write(const struct ef_buf *b, int fd);

#endif
