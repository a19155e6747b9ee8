#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "log.h"

Test(fmt, conversions_write_what_printf_writes)
{
	char text[256], want[256];
	struct ef_buf b = EF_BUF(text);
	const char *volatile null = NULL; /* writes nothing */

	ef_fmt(&b, "%s|%c|%d|%i|%u|%x|%ld|%lu|%lld|%llu|%zu|%jd|%hd|%%|%s", "ab", 'c', -7, 42, 7u,
	       0xbeefu, -1L, 2UL, (long long)INT64_MIN, (unsigned long long)UINT64_MAX, (size_t)9,
	       (intmax_t)-3, (short)5, null);
	snprintf(want, sizeof(want), "%s|%c|%d|%i|%u|%x|%ld|%lu|%lld|%llu|%zu|%jd|%hd|%%|", "ab", 'c', -7,
		 42, 7u, 0xbeefu, -1L, 2UL, (long long)INT64_MIN, (unsigned long long)UINT64_MAX,
		 (size_t)9, (intmax_t)-3, (short)5);
	cr_assert_str_eq(text, want);
	cr_assert_eq(b.len, strlen(want));
	ef_fmt(&b, " %" PRId64 " %" PRIu64 " %td", INT64_MAX, UINT64_MAX, (ptrdiff_t)-12);
	cr_assert(strstr(text, "| 9223372036854775807 18446744073709551615 -12"));
}

Test(fmt, durations_as_the_parser_reads_them)
{
	char text[64];
	struct ef_buf b = EF_BUF(text);

	ef_fmt(&b, "%s %s %s %s", EF_DUR(50000), EF_DUR(1500000), EF_DUR(0), EF_DUR(INT64_MIN));
	cr_assert_str_eq(text, "50us 1.5ms 0ns -9223372036.854775807s");
}

Test(fmt, cut_at_capacity_and_always_terminated)
{
	char text[8];
	struct ef_buf b = EF_BUF(text);

	ef_fmt(&b, "%s-%d", "abcdef", 12345);
	cr_assert_str_eq(text, "abcdef-");
	cr_assert_eq(b.len, 7);
	ef_fmt(&b, "more");
	cr_assert_str_eq(text, "abcdef-");
	struct ef_buf none = { NULL, 0, 0 };
	ef_fmt(&none, "%s", "nothing is written"); /* and nothing is dereferenced */
}

Test(fmt, unknown_conversion_is_shown_as_written)
{
	char text[32];
	struct ef_buf b = EF_BUF(text);
	const char *fmt = "a%qb%";

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	ef_fmt(&b, fmt);
#pragma GCC diagnostic pop
	cr_assert_str_eq(text, "a%qb%");
}

static char logged[8192];
static int lines;
static void collect(const struct ef_buf *line)
{
	strncat(logged, line->p, sizeof(logged) - strlen(logged) - 1);
	lines++;
}

Test(log, one_gate_one_line_prefixed_by_level)
{
	ef_log_sink(collect);
	ef_log_set_level(EF_LOG_WARN);
	ef_log(EF_LOG_WARN, "EPOLLFIX_%s='%d' is bad", "X", 3);
	ef_log(EF_LOG_DEBUG, "not shown at warn");
	cr_assert_str_eq(logged, "epollfix: EPOLLFIX_X='3' is bad\n");
	ef_log_set_level(EF_LOG_QUIET);
	ef_log(EF_LOG_WARN, "not shown when quiet");
	cr_assert_eq(lines, 1);
	ef_log_set_level(EF_LOG_DEBUG);
	logged[0] = '\0';
	ef_log(EF_LOG_DEBUG, "epoll_wait(epfd=%d)", 4);
	char want[64];
	snprintf(want, sizeof(want), "epollfix[%ld] epoll_wait(epfd=4)\n", (long)getpid());
	cr_assert_str_eq(logged, want);
	ef_log_sink(NULL);
	ef_log_set_level(EF_LOG_WARN);
}

Test(log, a_huge_line_is_cut_and_keeps_its_newline)
{
	static char huge[3 * EF_LOG_LINE];
	memset(huge, 'x', sizeof(huge) - 1);
	ef_log_sink(collect);
	ef_log(EF_LOG_WARN, "%s", huge);
	ef_log_sink(NULL);
	cr_assert_eq(lines, 1);
	cr_assert_eq(strlen(logged), EF_LOG_LINE - 1);
	cr_assert_eq(logged[strlen(logged) - 1], '\n');
}

static const char *esc(const char *s, size_t width)
{
	static char out[256];
	struct ef_buf b = EF_BUF(out);
	ef_esc(&b, s, width);
	return out;
}

Test(fmt, esc_lets_no_control_character_through)
{
	cr_assert_str_eq(esc("python3", 0), "python3");
	cr_assert_str_eq(esc("\x1b]0;owned\x07\x1b[8m", 0), "\\x1b]0;owned\\x07\\x1b[8m");
	cr_assert_str_eq(esc("a\nb\tc\\d\x7f", 0), "a\\x0ab\\x09c\\x5cd\\x7f");
	cr_assert_str_eq(esc("caf\xc3\xa9", 0), "caf\xc3\xa9", "valid UTF-8 stays readable");
	cr_assert_str_eq(esc("\xc2\x9b" "31m", 0), "\\xc2\\x9b31m", "a C1 CSI is escaped");
	cr_assert_str_eq(esc("\xff\xc3(", 0), "\\xff\\xc3(", "bytes of no valid sequence");
	cr_assert_str_eq(esc("\xed\xa0\x80", 0), "\\xed\\xa0\\x80", "no surrogates");
}

Test(fmt, esc_keeps_a_column_in_its_width)
{
	cr_assert_str_eq(esc("ef", 5), "ef   ");
	cr_assert_str_eq(esc("abcde", 5), "abcde");
	cr_assert_str_eq(esc("abcdef", 5), "abcd~");
	cr_assert_str_eq(esc("ab\x1b" "cd", 5), "ab~  ", "an escape that does not fit is not split");
	cr_assert_str_eq(esc("\x1b", 4), "\\x1b");
	cr_assert_str_eq(esc("\x1b\x1b", 5), "\\x1b~");
}
