#include "log.h"

#include <unistd.h>

_Atomic int ef_log_level = EF_LOG_WARN;
static void (*_Atomic sink_fn)(const struct ef_buf *line);

void ef_log_sink(void (*sink)(const struct ef_buf *line))
{
	atomic_store_explicit(&sink_fn, sink, memory_order_relaxed);
}

/* Apart from ef_log, so that a line not written costs no stack. */
static __attribute__((noinline, format(printf, 2, 0))) void emit(enum ef_log level,
								   const char *fmt, va_list ap)
{
	char text[EF_LOG_LINE];
	struct ef_buf line = EF_BUF(text);

	if (level == EF_LOG_DEBUG)
		ef_fmt(&line, "epollfix[%ld] ", (long)getpid());
	else
		ef_fmt(&line, "epollfix: ");
	ef_vfmt(&line, fmt, ap);
	/* Room for the newline even when a huge value filled the buffer. */
	if (line.len + 2 > line.cap)
		line.len = line.cap - 2;
	ef_fmt(&line, "\n");
	void (*sink)(const struct ef_buf *) = atomic_load_explicit(&sink_fn, memory_order_relaxed);
	if (sink)
		sink(&line);
	else
		ef_buf_write(&line, STDERR_FILENO);
}

void ef_log(enum ef_log level, const char *fmt, ...)
{
	va_list ap;

	if (!ef_log_on(level))
		return;
	va_start(ap, fmt);
	emit(level, fmt, ap);
	va_end(ap);
}
