#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "parse.h"

#define MS 1000000LL

static int64_t dur(const char *s)
{
	int64_t v = -1;
	cr_assert_eq(ef_parse_duration(s, 0, INT64_MAX, &v), EF_PARSE_OK, "%s", s);
	return v;
}

static enum ef_parse_err dur_err(const char *s)
{
	int64_t v = 12345;
	enum ef_parse_err e = ef_parse_duration(s, 0, INT64_MAX, &v);
	cr_assert_eq(v, 12345, "a refused value must leave the output alone (%s)", s);
	return e;
}

Test(duration, every_unit)
{
	cr_assert_eq(dur("7ns"), 7);
	cr_assert_eq(dur("50us"), 50000);
	cr_assert_eq(dur("3ms"), 3 * MS);
	cr_assert_eq(dur("2s"), 2000 * MS);
	cr_assert_eq(dur("0ns"), 0);
}

Test(duration, decimals)
{
	cr_assert_eq(dur("0.05ms"), 50000);
	cr_assert_eq(dur("1.5us"), 1500);
	cr_assert_eq(dur(".5ms"), 500000);
	cr_assert_eq(dur("5.ms"), 5 * MS);
	cr_assert_eq(dur("0.000000001s"), 1);
	cr_assert_eq(dur("1.9ns"), 1, "below a nanosecond is truncated");
	cr_assert_eq(dur("0.0001us"), 0);
	cr_assert_eq(dur("1.0000000000000000000000000009s"), 1000 * MS);
}

Test(duration, same_value_many_spellings)
{
	cr_assert_eq(dur("50us"), dur("0.05ms"));
	cr_assert_eq(dur("50us"), dur("50000ns"));
	cr_assert_eq(dur("50us"), dur("0.00005s"));
}

Test(duration, garbage)
{
	const char *bad[] = { "abc", "50", "50 us", " 50us", "50us ", "50usx", "50USs", "us",
			      ".us", ".", "5..0us", "5e3us", "0x10us", "+5us", "50µs", "1,5ms",
			      "5m", "5sec" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(dur_err(bad[i]), EF_PARSE_SYNTAX, "%s", bad[i]);
}

Test(duration, empty_and_negative)
{
	cr_assert_eq(dur_err(""), EF_PARSE_EMPTY);
	cr_assert_eq(dur_err(NULL), EF_PARSE_EMPTY);
	cr_assert_eq(dur_err("-5us"), EF_PARSE_NEGATIVE);
	cr_assert_eq(dur_err("-0ns"), EF_PARSE_NEGATIVE);
}

Test(duration, overflow_and_huge_input)
{
	cr_assert_eq(dur("9223372036854775807ns"), INT64_MAX);
	cr_assert_eq(dur_err("9223372036854775808ns"), EF_PARSE_OVERFLOW);
	cr_assert_eq(dur_err("9223372036854775807us"), EF_PARSE_OVERFLOW);
	cr_assert_eq(dur_err("9223372037s"), EF_PARSE_OVERFLOW);
	cr_assert_eq(dur("9223372036s"), 9223372036LL * 1000 * MS);
	cr_assert_eq(dur_err("9223372036.854775808s"), EF_PARSE_OVERFLOW);

	static char huge[100000];
	memset(huge, '9', sizeof(huge) - 3);
	strcpy(huge + sizeof(huge) - 3, "s");
	cr_assert_eq(dur_err(huge), EF_PARSE_OVERFLOW);
	memset(huge, '0', sizeof(huge) - 5);
	strcpy(huge + sizeof(huge) - 5, "1us");
	cr_assert_eq(dur(huge), 1000, "leading zeros are only zeros");
}

Test(duration, range)
{
	int64_t v = 0;
	cr_assert_eq(ef_parse_duration("1ns", 1, MS, &v), EF_PARSE_OK);
	cr_assert_eq(ef_parse_duration("1ms", 1, MS, &v), EF_PARSE_OK);
	cr_assert_eq(ef_parse_duration("0ns", 1, MS, &v), EF_PARSE_RANGE);
	cr_assert_eq(ef_parse_duration("1.000001ms", 1, MS, &v), EF_PARSE_RANGE);
}

Test(integer, parses)
{
	int64_t v = 0;
	cr_assert_eq(ef_parse_int("0", 0, 10, &v), EF_PARSE_OK);
	cr_assert_eq(v, 0);
	cr_assert_eq(ef_parse_int("0010", 0, 10, &v), EF_PARSE_OK);
	cr_assert_eq(v, 10);
	cr_assert_eq(ef_parse_int("9223372036854775807", 0, INT64_MAX, &v), EF_PARSE_OK);
	cr_assert_eq(v, INT64_MAX);
}

Test(integer, refuses)
{
	int64_t v = 77;
	cr_assert_eq(ef_parse_int("", 0, 10, &v), EF_PARSE_EMPTY);
	cr_assert_eq(ef_parse_int(NULL, 0, 10, &v), EF_PARSE_EMPTY);
	cr_assert_eq(ef_parse_int("-1", 0, 10, &v), EF_PARSE_NEGATIVE);
	cr_assert_eq(ef_parse_int("1.5", 0, 10, &v), EF_PARSE_SYNTAX);
	cr_assert_eq(ef_parse_int("1ms", 0, 10, &v), EF_PARSE_SYNTAX);
	cr_assert_eq(ef_parse_int(" 1", 0, 10, &v), EF_PARSE_SYNTAX);
	cr_assert_eq(ef_parse_int("+1", 0, 10, &v), EF_PARSE_SYNTAX);
	cr_assert_eq(ef_parse_int("11", 0, 10, &v), EF_PARSE_RANGE);
	cr_assert_eq(ef_parse_int("9223372036854775808", 0, INT64_MAX, &v), EF_PARSE_OVERFLOW);
	cr_assert_eq(ef_parse_int("99999999999999999999999999", 0, 10, &v), EF_PARSE_OVERFLOW);
	cr_assert_eq(ef_parse_int("99999999999999999999x", 0, 10, &v), EF_PARSE_SYNTAX,
		     "not a number before too large, as for durations");
	cr_assert_eq(v, 77);
}

Test(format, round_trips)
{
	const int64_t values[] = { 1, 999, 1000, 1500, 50000, 999999, MS, 1500000, 2000 * MS,
				   1234567891, INT64_MAX };
	char buf[64];
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		ef_format_duration(values[i], buf, sizeof(buf));
		cr_assert_eq(dur(buf), values[i], "%lld printed as %s", (long long)values[i], buf);
	}
}

Test(format, readable)
{
	char buf[64];
	cr_assert_str_eq(ef_format_duration(50000, buf, sizeof(buf)), "50us");
	cr_assert_str_eq(ef_format_duration(1500000, buf, sizeof(buf)), "1.5ms");
	cr_assert_str_eq(ef_format_duration(0, buf, sizeof(buf)), "0ns");
	cr_assert_str_eq(ef_format_duration(1000000000, buf, sizeof(buf)), "1s");
	cr_assert_str_eq(ef_format_duration(50000, buf, 3), "50", "cut, still terminated");
}

/* Every list's items, as ef_list_next reads them, joined by '|'. */
static const char *items(const char *list)
{
	static char out[256];
	size_t at = 0, n;
	out[0] = '\0';
	for (const char *p; (p = ef_list_next(&list, &n));)
		at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%.*s", at ? "|" : "", (int)n, p);
	return out;
}

Test(lists, items_without_blanks_and_empty_items)
{
	cr_assert_str_eq(items("a,b,c"), "a|b|c");
	cr_assert_str_eq(items(" a ,\tb\t, c d "), "a|b|c d");
	cr_assert_str_eq(items(",,a,, ,b,"), "a|b");
	cr_assert_str_eq(items(""), "");
	cr_assert_str_eq(items(" , ,\t"), "");
	cr_assert_str_eq(items(NULL), "");
}
