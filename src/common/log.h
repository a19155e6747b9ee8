/* The one log gate: every warning and debug line of the library goes through
 * ef_log, which checks the level in force (EPOLLFIX_LOG) once and writes one
 * line with one write(2) to stderr. */
#ifndef EPOLLFIX_LOG_H
#define EPOLLFIX_LOG_H

#include <stdatomic.h>

#include "fmt.h"

enum ef_log { EF_LOG_QUIET, EF_LOG_WARN, EF_LOG_DEBUG };

extern _Atomic int ef_log_level;

/* The level in force: the configuration's EPOLLFIX_LOG, set where it is read
 * and wherever a configuration is published. EF_LOG_WARN until then. */
static inline void ef_log_set_level(enum ef_log level)
{
	atomic_store_explicit(&ef_log_level, (int)level, memory_order_relaxed);
}

static inline int ef_log_on(enum ef_log level)
{
	return (int)level <= atomic_load_explicit(&ef_log_level, memory_order_relaxed);
}

/* One line, when level is on: "epollfix: " (warnings) or "epollfix[pid] "
 * (debug), the formatted text (fmt.h's conversions), "\n". A line longer
 * than EF_LOG_LINE bytes is cut, and still ends in its newline. */
#define EF_LOG_LINE 4352 /* a warning naming a PATH_MAX path */
__attribute__((format(printf, 2, 3))) void ef_log(enum ef_log level, const char *fmt, ...);

/* Where the lines go: stderr, or sink (the unit tests collect them). NULL
 * restores stderr. */
void ef_log_sink(void (*sink)(const struct ef_buf *line));

#endif
