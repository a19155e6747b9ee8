#include "parse.h"

#include <string.h>

#include "fmt.h"

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Accumulates decimal digits into *acc, refusing to pass limit. */
static enum ef_parse_err add_digit(int64_t *acc, int d, int64_t limit)
{
	if (*acc > (limit - d) / 10)
		return EF_PARSE_OVERFLOW;
	*acc = *acc * 10 + d;
	return EF_PARSE_OK;
}

enum ef_parse_err ef_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	int64_t v = 0;

	if (!s || !*s)
		return EF_PARSE_EMPTY;
	if (*s == '-')
		return EF_PARSE_NEGATIVE;
	/* Syntax first, so "99999999999999999999x" is not a number, as for durations. */
	for (const char *p = s; *p; p++)
		if (!is_digit(*p))
			return EF_PARSE_SYNTAX;
	for (const char *p = s; *p; p++)
		if (add_digit(&v, *p - '0', INT64_MAX))
			return EF_PARSE_OVERFLOW;
	if (v < min || v > max)
		return EF_PARSE_RANGE;
	*out = v;
	return EF_PARSE_OK;
}

enum ef_parse_err ef_parse_duration(const char *s, int64_t min_ns, int64_t max_ns,
				    int64_t *out_ns)
{
	const char *p = s, *int_start, *frac_start = NULL, *frac_end = NULL;
	size_t i;

	if (!s || !*s)
		return EF_PARSE_EMPTY;
	if (*s == '-')
		return EF_PARSE_NEGATIVE;
	for (int_start = p; is_digit(*p); p++)
		;
	const char *int_end = p;
	if (*p == '.') {
		frac_start = ++p;
		while (is_digit(*p))
			p++;
		frac_end = p;
	}
	if (int_end == int_start && (!frac_start || frac_end == frac_start))
		return EF_PARSE_SYNTAX;

	for (i = 0; i < EF_UNIT_COUNT; i++)
		if (strcmp(p, ef_units[i].name) == 0)
			break;
	if (i == EF_UNIT_COUNT)
		return EF_PARSE_SYNTAX;

	int64_t whole = 0, frac = 0;
	for (const char *q = int_start; q < int_end; q++)
		if (add_digit(&whole, *q - '0', INT64_MAX / ef_units[i].ns))
			return EF_PARSE_OVERFLOW;
	/* Fraction digits beyond what the unit resolves are below 1 ns: dropped. */
	int used = 0;
	for (const char *q = frac_start; q && q < frac_end && used < ef_units[i].frac_digits; q++, used++)
		frac = frac * 10 + (*q - '0');
	for (; used < ef_units[i].frac_digits; used++)
		frac *= 10;

	int64_t ns = whole * ef_units[i].ns;
	if (ns > INT64_MAX - frac)
		return EF_PARSE_OVERFLOW;
	ns += frac;
	if (ns < min_ns || ns > max_ns)
		return EF_PARSE_RANGE;
	*out_ns = ns;
	return EF_PARSE_OK;
}

const char *ef_parse_strerror(enum ef_parse_err err, int is_duration)
{
	switch (err) {
	case EF_PARSE_OK:
		return "is valid";
	case EF_PARSE_EMPTY:
		return "is empty";
	case EF_PARSE_NEGATIVE:
		return "is negative";
	case EF_PARSE_OVERFLOW:
		return "is too large";
	case EF_PARSE_RANGE:
		return "is out of range";
	case EF_PARSE_SYNTAX:
	default:
		return is_duration ? "is not a duration (like 50us)" : "is not a whole number";
	}
}

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

const char *ef_list_next(const char **cursor, size_t *n)
{
	const char *p = *cursor;
	while (p && *p) {
		const char *end = strchr(p, ',');
		const char *stop = end ? end : p + strlen(p);
		*cursor = end ? end + 1 : stop;
		while (p < stop && blank(*p))
			p++;
		size_t len = (size_t)(stop - p);
		while (len && blank(p[len - 1]))
			len--;
		if (len) {
			*n = len;
			return p;
		}
		p = *cursor;
	}
	return NULL;
}
