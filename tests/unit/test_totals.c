/* The sum over slots that the exit report and `epollfix status` share: a copy
 * of another process's slots must sum exactly as the process's own. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "real.h"
#include "report.h"
#include "slots.h"

static struct ef_slot slots[3];

static void put(unsigned slot, enum ef_call call, enum ef_tclass tc, enum ef_outcome o, uint64_t n)
{
	atomic_store(&slots[slot].c[((unsigned)call * EF_T_COUNT + tc) * EF_O_COUNT + o], n);
}

Test(totals, sums_every_slot_by_call_class_and_outcome)
{
	struct ef_totals t;

	memset(slots, 0, sizeof(slots));
	put(0, EF_CALL_WAIT, EF_T_ONE_MS, EF_O_UPGRADED, 5);
	put(1, EF_CALL_WAIT, EF_T_ONE_MS, EF_O_UPGRADED, 7);
	put(2, EF_CALL_PWAIT, EF_T_ZERO_EMPTY, EF_O_CLAMPED, 3);
	put(2, EF_CALL_PWAIT, EF_T_ZERO_EMPTY, EF_O_CLAMP_FELL_BACK, 2);
	put(1, EF_CALL_WAIT, EF_T_LONGER, EF_O_PASSED, 11);
	put(0, EF_CALL_WAIT, EF_T_ONE_MS, EF_O_GENUINE, 4);
	put(0, EF_CALL_WAIT, EF_T_ONE_MS, EF_O_UPGRADE_FELL_BACK, 1);
	atomic_store(&slots[0].c[EF_K_LONGEST_STREAK], 9);
	atomic_store(&slots[2].c[EF_K_LONGEST_STREAK], 30);
	atomic_store(&slots[1].c[EF_K_RETRIES], 2);

	ef_stats_sum_slots(slots, 3, &t);
	cr_assert_eq(t.calls[EF_CALL_WAIT], 5 + 7 + 11 + 4 + 1);
	cr_assert_eq(t.calls[EF_CALL_PWAIT], 5);
	cr_assert_eq(t.by_class[EF_T_ONE_MS], 17);
	cr_assert_eq(t.by_class[EF_T_ZERO], 5, "empty zero polls count as zero timeouts");
	cr_assert_eq(t.empty_zero, 5);
	cr_assert_eq(t.upgraded, 12);
	cr_assert_eq(t.clamped, 5, "a clamp that fell back is still a clamped poll");
	cr_assert_eq(t.passed, 11 + 4 + 1);
	cr_assert_eq(t.genuine, 4);
	cr_assert_eq(t.fell_back, 3);
	cr_assert_eq(t.longest_streak, 30, "the longest streak is a maximum, not a sum");
	cr_assert_eq(t.retries, 2);

	/* Fewer slots: only those are read. */
	ef_stats_sum_slots(slots, 1, &t);
	cr_assert_eq(t.upgraded, 5);
	cr_assert_eq(t.longest_streak, 9);
}

/* A call site's counters live in each thread's slot; a row's view sums them. */
Test(totals, site_rows_sum_their_counters_over_the_slots)
{
	struct ef_site_row rows[EF_SITE_ROWS];
	struct ef_site_view v[EF_SITE_ROWS];
	static const int site_a, site_b;
	unsigned a = EF_K_SITES, b = EF_K_SITES + EF_SC_COUNT;

	memset(slots, 0, sizeof(slots));
	memset(rows, 0, sizeof(rows));
	atomic_store(&rows[0].ra, (const void *)&site_a);
	atomic_store(&rows[0].flags, EF_SF_ENDS);
	atomic_store(&rows[1].ra, (const void *)&site_b);
	atomic_store(&slots[0].c[a + EF_SC_UPGRADED], 10);
	atomic_store(&slots[2].c[a + EF_SC_UPGRADED], 5);
	atomic_store(&slots[1].c[a + EF_SC_RUNS], 3);
	atomic_store(&slots[0].c[a + EF_SC_WAIT_NS], 2000000);
	atomic_store(&slots[1].c[b + EF_SC_ALONE], 7);
	/* A row no site has claimed: its counters are not read. */
	atomic_store(&slots[0].c[b + EF_SC_COUNT + EF_SC_UPGRADED], 99);

	ef_site_views(rows, slots, 3, v);
	cr_assert_eq(v[0].ra, &site_a);
	cr_assert_eq(v[0].flags, EF_SF_ENDS);
	cr_assert_eq(v[0].c[EF_SC_UPGRADED], 15);
	cr_assert_eq(v[0].c[EF_SC_RUNS], 3);
	cr_assert_eq(v[0].c[EF_SC_WAIT_NS], 2000000);
	cr_assert_eq(v[0].c[EF_SC_ALONE], 0);
	cr_assert_eq(v[1].c[EF_SC_ALONE], 7);
	cr_assert_eq(v[1].c[EF_SC_UPGRADED], 0);
	cr_assert_null(v[2].ra);
	cr_assert_eq(v[2].c[EF_SC_UPGRADED], 0);
	/* The per-site counters are not calls: the totals do not count them. */
	struct ef_totals t;
	ef_stats_sum_slots(slots, 3, &t);
	cr_assert_eq(t.calls[EF_CALL_WAIT] + t.calls[EF_CALL_PWAIT], 0);
}

Test(totals, pwait2_line_says_why)
{
	char text[128];
	struct ef_buf b = EF_BUF(text);

	cr_assert_str_eq(ef_pwait2_line(EF_PW2_OK, 0, &b)->p, "available");
	b = (struct ef_buf)EF_BUF(text);
	cr_assert_str_eq(ef_pwait2_line(EF_PW2_NO, EPERM, &b)->p,
			 "unavailable (EPERM: refused by a seccomp filter)");
	b = (struct ef_buf)EF_BUF(text);
	cr_assert_str_eq(ef_pwait2_line(EF_PW2_NO, -31, &b)->p,
			 "unavailable (a probe was killed by signal 31 (SIGSYS: a seccomp filter kills or traps it))");
	b = (struct ef_buf)EF_BUF(text);
	cr_assert_str_eq(ef_pwait2_line(EF_PW2_NO, EF_WHY_NO_CONTAINER, &b)->p,
			 "unavailable (an unknown seccomp filter was in force at start, outside a container; "
			 "EPOLLFIX_SECCOMP=probe asks a child)");
	b = (struct ef_buf)EF_BUF(text);
	cr_assert_str_eq(ef_pwait2_line(EF_PW2_PROBING, 0, &b)->p, "being probed");
	b = (struct ef_buf)EF_BUF(text);
	cr_assert_str_eq(ef_pwait2_line(EF_PW2_UNKNOWN, 0, &b)->p, "not probed (no call needed it)");
	/* Loaded with dlopen without a readable /proc: that, and no filter, is
	 * named, whole within the command's 128 bytes. */
	b = (struct ef_buf)EF_BUF(text);
	cr_assert_str_eq(ef_pwait2_line(EF_PW2_NO, EF_WHY_COUNT_UNREAD_ERRNO(ENOENT), &b)->p,
			 "unavailable (loaded with dlopen, it cannot see seccomp filters in "
			 "/proc/self/status (No such file or directory))");
	b = (struct ef_buf)EF_BUF(text);
	cr_assert_str_eq(ef_pwait2_line(EF_PW2_NO, EF_WHY_COUNT_UNREAD, &b)->p,
			 "unavailable (loaded with dlopen, it cannot see seccomp filters in "
			 "/proc/self/status (no filter count))");
}

static void name_x(const void *ra, const void *ctx, struct ef_buf *w)
{
	(void)ra;
	ef_fmt(w, "%s", (const char *)ctx);
}

/* One site's line of the report, with the default configuration. */
static const char *site_line(unsigned flags, uint64_t up, uint64_t runs, char *text, size_t size)
{
	static char report[8192];
	struct ef_config c;
	struct ef_totals t = { 0 };
	struct ef_site_view v[EF_SITE_ROWS] = { { .ra = (void *)1, .flags = flags } };
	struct ef_buf b = EF_BUF(report);

	ef_config_defaults(&c);
	v[0].c[EF_SC_UPGRADED] = up;
	v[0].c[EF_SC_RUNS] = runs;
	v[0].c[EF_SC_WAIT_NS] = up * 50000;
	struct ef_report_in in = { .t = &t, .c = &c, .pid = 1, .comm = "ef-x", .sites = v,
				   .where = name_x, .ctx = "ef-x" };
	ef_report_format(&in, &b);
	const char *line = strstr(report, "epollfix[1] site: ef-x: ");
	cr_assert(line, "no site line in %s", report);
	cr_assert_null(strstr(line + 1, "epollfix[1] site:"), "one site line: %s", report);
	snprintf(text, size, "%s", line);
	return text;
}

Test(totals, a_site_is_shown_by_what_it_mostly_does)
{
	char text[512];
	unsigned both = EF_SF_ENDS | EF_SF_ENDLESS;

	/* A 1 ms ticker whose first stream a busy machine cut once. */
	cr_assert(strstr(site_line(both, 100, 1, text, sizeof(text)), "a stream of 1 ms requests"),
		  "%s", text);
	/* A loop whose runs end, that once sent a stream that did not. */
	cr_assert(strstr(site_line(both, 500, 400, text, sizeof(text)),
			 "runs of requests that end; 500 waits upgraded for 400 deadlines"),
		  "%s", text);
	cr_assert(strstr(site_line(EF_SF_ENDS, 100, 1, text, sizeof(text)), "runs of requests that end"),
		  "%s", text);
	cr_assert(strstr(site_line(EF_SF_ENDLESS, 100, 0, text, sizeof(text)), "never ends; 100 waits"),
		  "%s", text);
}

Test(totals, lateness_buckets_are_powers_of_two_microseconds)
{
	cr_assert_eq(ef_late_bucket(-5), 0);
	cr_assert_eq(ef_late_bucket(0), 0);
	cr_assert_eq(ef_late_bucket(1000), 0, "1 us is the first bucket's bound");
	cr_assert_eq(ef_late_bucket(1001), 1);
	cr_assert_eq(ef_late_bucket(2000), 1);
	cr_assert_eq(ef_late_bucket(2001), 2);
	cr_assert_eq(ef_late_bucket(64000), 6);
	cr_assert_eq(ef_late_bucket(64001), 7);
	cr_assert_eq(ef_late_bucket(16384000), EF_LATE_BUCKETS - 2);
	cr_assert_eq(ef_late_bucket(16384001), EF_LATE_BUCKETS - 1, "later: the open bucket");
	cr_assert_eq(ef_late_bucket(INT64_MAX), EF_LATE_BUCKETS - 1);
}

Test(totals, lateness_sums_over_slots_and_names_its_quantiles)
{
	struct ef_totals t;
	char text[128];
	struct ef_buf b = EF_BUF(text);

	memset(slots, 0, sizeof(slots));
	ef_stats_sum_slots(slots, 3, &t);
	cr_assert_eq(ef_late_quantile_us(&t, 500), 0, "no waits, no quantile");
	ef_late_line(&t, &b);
	cr_assert_str_eq(text, "no timed waits");

	/* 98 waits up to 32 us late on two threads, 2 up to 256 us. */
	atomic_store(&slots[0].c[EF_K_LATE + 5], 60);
	atomic_store(&slots[1].c[EF_K_LATE + 5], 38);
	atomic_store(&slots[2].c[EF_K_LATE + 8], 2);
	atomic_store(&slots[0].c[EF_K_LATE_NS], 2000000);
	ef_stats_sum_slots(slots, 3, &t);
	cr_assert_eq(t.late[5], 98);
	cr_assert_eq(ef_late_quantile_us(&t, 500), 32);
	cr_assert_eq(ef_late_quantile_us(&t, 980), 32);
	cr_assert_eq(ef_late_quantile_us(&t, 990), 256);
	b = (struct ef_buf)EF_BUF(text);
	ef_late_line(&t, &b);
	cr_assert_str_eq(text, "p50 <= 32us, p99 <= 256us, mean 20us (100 waits)");

	atomic_store(&slots[2].c[EF_K_LATE + EF_LATE_BUCKETS - 1], 50);
	ef_stats_sum_slots(slots, 3, &t);
	cr_assert_eq(ef_late_quantile_us(&t, 990), UINT64_MAX, "the open bucket has no bound");
}

/* An empty zero-timeout poll is counted by one store, whatever its outcome: a
 * reader between two stores would see a derived count that a later read finds
 * smaller, which Prometheus takes for a reset. The streak counts them all. */
Test(totals, an_empty_poll_is_one_store_and_every_count_only_grows)
{
	static struct ef_slot s;
	uint64_t before[EF_K_COUNT], after[EF_K_COUNT], raw[EF_K_COUNT];
	static const enum ef_outcome seq[] = { EF_O_CLAMPED, EF_O_CLAMPED, EF_O_PASSED, EF_O_GENUINE,
					       EF_O_PASSED, EF_O_CLAMP_FELL_BACK };

	memset(&s, 0, sizeof(s));
	ef_slot_read(&s, 0, before);
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		memcpy(raw, (const void *)s.c, sizeof(raw));
		ef_stats_count(&s, EF_CALL_WAIT, 0, 1, seq[i], 0);
		unsigned changed = 0;
		for (unsigned k = 0; k < EF_K_COUNT; k++)
			changed += k != EF_K_STREAK_MARK &&
				   raw[k] != atomic_load_explicit(&s.c[k], memory_order_relaxed);
		cr_assert_eq(changed, 1, "poll %zu (outcome %d): %u counters written", i, seq[i], changed);
		ef_slot_read(&s, 0, after);
		for (unsigned k = 0; k < EF_K_COUNT; k++) /* all but the mark, which is no count */
			cr_assert(k == EF_K_STREAK_MARK || after[k] >= before[k], "poll %zu: key %u went from %llu to %llu", i, k,
				      (unsigned long long)before[k], (unsigned long long)after[k]);
		cr_assert_eq(after[EF_K_LONGEST_STREAK], i + 1, "the streak under way");
		memcpy(before, after, sizeof(before));
	}
	struct ef_totals t;
	ef_stats_sum_slots(&s, 1, &t);
	cr_assert_eq(t.empty_zero, 6);
	cr_assert_eq(t.passed, 2 + 1, "passed through, and genuine");
	cr_assert_eq(t.clamped, 3);
	cr_assert_eq(t.longest_streak, 6, "the streak under way holds all six polls");
}
