/* The one parser for durations, numbers and comma lists: the library, the
 * epollfix command and the runtime API all use it, so a value is accepted or
 * refused the same way everywhere. Pure functions: no allocation, no errno, no locale. */
#ifndef EPOLLFIX_PARSE_H
#define EPOLLFIX_PARSE_H

#include <stddef.h>
#include <stdint.h>

enum ef_parse_err {
	EF_PARSE_OK = 0,
	EF_PARSE_EMPTY,     /* NULL or "" */
	EF_PARSE_SYNTAX,    /* not a number, or a duration without a known unit */
	EF_PARSE_NEGATIVE,  /* starts with '-' */
	EF_PARSE_OVERFLOW,  /* does not fit in 63 bits (of nanoseconds) */
	EF_PARSE_RANGE,     /* well formed, outside [min, max] */
};

/* "50us", "0.05ms", "50000ns", "1s": a non-negative decimal number followed by
 * ns, us, ms or s. Fractions finer than 1 ns are truncated. */
enum ef_parse_err ef_parse_duration(const char *s, int64_t min_ns, int64_t max_ns,
				    int64_t *out_ns);

/* A non-negative decimal integer, digits only. */
enum ef_parse_err ef_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

/* The next item of a comma list (EPOLLFIX_ONLY, EPOLLFIX_SKIP, the caller
 * lists): one rule for every list, blanks (spaces, tabs) around an item are
 * ignored and so are empty items. Returns the item's start with its length in
 * *n, and moves *cursor past it; NULL at the end (or for a NULL list). */
const char *ef_list_next(const char **cursor, size_t *n);

/* Short phrase for an error, for warnings ("is not a duration (like 50us)"). */
const char *ef_parse_strerror(enum ef_parse_err err, int is_duration);

#endif
