#include "fmt.h"

#include <errno.h>
#include <unistd.h>

static void put(struct ef_buf *b, char c)
{
	if (b->len + 1 < b->cap)
		b->p[b->len++] = c;
}

static void put_str(struct ef_buf *b, const char *s)
{
	for (; s && *s; s++)
		put(b, *s);
}

/* The one integer formatter: decimal or hexadecimal digits of u. */
static void put_uint(struct ef_buf *b, uint64_t u, unsigned base)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[u % base];
		u /= base;
	} while (u);
	while (n)
		put(b, tmp[--n]);
}

struct ef_buf *ef_vfmt(struct ef_buf *b, const char *fmt, va_list ap)
{
	if (!b->cap)
		return b;
	for (const char *f = fmt; *f; f++) {
		if (*f != '%' || !f[1]) {
			put(b, *f);
			continue;
		}
		const char *start = f++;
		int size = 0; /* 0: int, 1: long, 2: long long, 3: size_t, 4: intmax_t, 5: ptrdiff_t */
		if (*f == 'h') {
			while (*f == 'h')
				f++;
		} else if (*f == 'l') {
			size = f[1] == 'l' ? 2 : 1;
			f += size;
		} else if (*f == 'z' || *f == 'j' || *f == 't') {
			size = *f == 'z' ? 3 : *f == 'j' ? 4 : 5;
			f++;
		}
		switch (*f) {
		case 's':
			put_str(b, va_arg(ap, const char *));
			break;
		case 'c':
			put(b, (char)va_arg(ap, int));
			break;
		case 'd':
		case 'i': {
			int64_t v = size == 0   ? va_arg(ap, int)
				    : size == 1 ? va_arg(ap, long)
				    : size == 2 ? va_arg(ap, long long)
				    : size == 3 ? (int64_t)va_arg(ap, ssize_t)
				    : size == 4 ? va_arg(ap, intmax_t)
						: (int64_t)va_arg(ap, ptrdiff_t);
			if (v < 0)
				put(b, '-');
			put_uint(b, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, 10);
			break;
		}
		case 'u':
		case 'x': {
			uint64_t v = size == 0   ? va_arg(ap, unsigned)
				     : size == 1 ? va_arg(ap, unsigned long)
				     : size == 2 ? va_arg(ap, unsigned long long)
				     : size == 3 ? va_arg(ap, size_t)
				     : size == 4 ? va_arg(ap, uintmax_t)
						 : (uint64_t)va_arg(ap, ptrdiff_t);
			put_uint(b, v, *f == 'x' ? 16 : 10);
			break;
		}
		case '%':
			put(b, '%');
			break;
		default: /* not ours: shown as written, so the mistake is visible */
			for (; start <= f && *start; start++)
				put(b, *start);
			if (!*f)
				f--;
		}
	}
	b->p[b->len] = '\0';
	return b;
}

struct ef_buf *ef_fmt(struct ef_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ef_vfmt(b, fmt, ap);
	va_end(ap);
	return b;
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

int ef_utf8_len(const unsigned char *p)
{
	if (*p < 0x80)
		return 1;
	int n = (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
	if (!n || *p < 0xc2 || *p > 0xf4)
		return 0;
	for (int k = 1; k < n; k++)
		if ((p[k] & 0xc0) != 0x80)
			return 0;
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;
	return n;
}

struct ef_buf *ef_esc(struct ef_buf *b, const char *s, size_t width)
{
	static const char hex[] = "0123456789abcdef";
	size_t cols = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = ef_utf8_len(p);
		/* C1 controls are the two-byte sequences of U+0080..U+009F. */
		int plain = n > 1 ? !(p[0] == 0xc2 && p[1] < 0xa0)
				  : n == 1 && *p >= 0x20 && *p < 0x7f && *p != '\\';
		size_t adv = plain ? (size_t)n : 1, w = plain ? 1 : 4;
		/* Room for this, and for the '~' that says more follows. */
		if (width && cols + w + (p[adv] ? 1 : 0) > width) {
			ef_fmt(b, "~");
			cols++;
			break;
		}
		char out[5] = { '\\', 'x', hex[*p >> 4], hex[*p & 15], 0 };
		if (plain) {
			for (size_t k = 0; k < adv; k++)
				out[k] = (char)p[k];
			out[adv] = 0;
		}
		ef_fmt(b, "%s", out);
		cols += w;
		p += adv;
	}
	while (width && cols < width) {
		ef_fmt(b, " ");
		cols++;
	}
	return b;
}

const struct ef_unit ef_units[EF_UNIT_COUNT] = {
	{ "ns", 1, 0 },
	{ "us", 1000, 3 },
	{ "ms", 1000000, 6 },
	{ "s", 1000000000, 9 },
};

char *ef_format_duration(int64_t ns, char *buf, size_t size)
{
	struct ef_buf b = { buf, 0, size };
	int u = 3;

	if (ns < 0) {
		ef_fmt(&b, "-");
		ns = ns == INT64_MIN ? INT64_MAX : -ns;
	}
	/* Largest unit whose value is at least 1, so 1500us prints as 1.5ms. */
	while (u > 0 && ns < ef_units[u].ns)
		u--;
	ef_fmt(&b, "%" PRId64, ns / ef_units[u].ns);
	int64_t rem = ns % ef_units[u].ns;
	if (rem) {
		char digits[10];
		int nd = ef_units[u].frac_digits;
		for (int k = nd - 1; k >= 0; k--, rem /= 10)
			digits[k] = (char)('0' + rem % 10);
		while (nd > 0 && digits[nd - 1] == '0')
			nd--;
		digits[nd] = '\0';
		ef_fmt(&b, ".%s", digits);
	}
	ef_fmt(&b, "%s", ef_units[u].name);
	return buf;
}
