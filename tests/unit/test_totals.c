/* The sum over slots that the exit report and `epollfix status` share: a copy
 * of another process's slots must sum exactly as the process's own. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "real.h"
#include "report.h"
#include "stats.h"

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
			 "unavailable (a probe was killed by signal 31)");
	b = (struct ef_buf)EF_BUF(text);
	cr_assert_str_eq(ef_pwait2_line(EF_PW2_UNKNOWN, 0, &b)->p, "not probed (no call needed it)");
}
