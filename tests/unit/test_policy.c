#include <criterion/criterion.h>

#include "policy.h"

#define MS 1000000LL

static struct ef_config cfg;
static struct ef_thread th;

static void reset(void)
{
	ef_config_defaults(&cfg);
	th = (struct ef_thread){ 0 };
}

TestSuite(policy, .init = reset);

Test(policy, one_ms_is_upgraded_to_subms)
{
	struct ef_decision d = ef_decide(&cfg, &th, 1, 0);
	cr_assert_eq(d.action, EF_UPGRADE);
	cr_assert_eq(d.wait_ns, 50000);
}

Test(policy, negative_zero_and_longer_pass)
{
	const int timeouts[] = { -1, -1000, 0, 2, 5, 1000, 0x7fffffff };
	for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		struct ef_decision d = ef_decide(&cfg, &th, timeouts[i], 0);
		cr_assert_eq(d.action, EF_PASS, "timeout %d", timeouts[i]);
		cr_assert_eq(d.timeout_ms, timeouts[i]);
	}
}

Test(policy, max_ms_widens_the_window)
{
	cfg.max_ms = 3;
	cr_assert_eq(ef_decide(&cfg, &th, 2, 0).wait_ns, 1 * MS + 50000);
	cr_assert_eq(ef_decide(&cfg, &th, 3, 0).wait_ns, 2 * MS + 50000);
	cr_assert_eq(ef_decide(&cfg, &th, 4, 0).action, EF_PASS);
}

Test(policy, no_overflow_at_the_top)
{
	cfg.max_ms = 1000;
	cfg.subms_ns = MS;
	struct ef_decision d = ef_decide(&cfg, &th, 1000, 0);
	cr_assert_eq(d.wait_ns, 1000 * MS);
}

Test(policy, off_and_disable_pass)
{
	cfg.subms_ns = 0;
	cr_assert_eq(ef_decide(&cfg, &th, 1, 0).action, EF_PASS);
	reset();
	cfg.disable = 1;
	cfg.clamp_ns = MS;
	th.busy_streak = 1000;
	cr_assert_eq(ef_decide(&cfg, &th, 1, 0).action, EF_PASS);
	cr_assert_eq(ef_decide(&cfg, &th, 0, 0).action, EF_PASS);
}

Test(policy, without_pwait2_upgrades_pass_with_original_timeout)
{
	struct ef_decision d = ef_without_pwait2(ef_decide(&cfg, &th, 1, 0), 1);
	cr_assert_eq(d.action, EF_PASS);
	cr_assert_eq(d.timeout_ms, 1);
}

Test(policy, streak_counts_only_empty_zero_polls)
{
	ef_observe(&th, 0, 0);
	ef_observe(&th, 0, 0);
	cr_assert_eq(th.empty_streak, 2);
	ef_observe(&th, 0, 1); /* found an event */
	cr_assert_eq(th.empty_streak, 0);
	cr_assert_eq(th.longest_streak, 2);
	ef_observe(&th, 0, 0);
	ef_observe(&th, 1, 0); /* a real wait */
	cr_assert_eq(th.empty_streak, 0);
	ef_observe(&th, 0, 0);
	ef_observe(&th, 0, -1); /* EINTR and other errors end it too */
	cr_assert_eq(th.empty_streak, 0);
	cr_assert_eq(th.longest_streak, 2);
}

/* n empty zero-timeout polls, each gap_ns after the previous one returned. */
static int64_t spin(int n, int64_t now, int64_t gap_ns)
{
	for (int i = 0; i < n; i++) {
		now += gap_ns;
		cr_assert_eq(ef_decide(&cfg, &th, 0, now).action, EF_PASS, "poll %d", i);
		ef_observe_timed(&th, 0, now, now + 100, cfg.clamp_gap_ns);
		now += 100;
	}
	return now;
}

Test(policy, clamp_only_after_a_back_to_back_streak)
{
	cfg.clamp_ns = MS;
	cfg.clamp_after = 3;
	int64_t now = spin(3, 1000000, 50);
	struct ef_decision d = ef_decide(&cfg, &th, 0, now + 50);
	cr_assert_eq(d.action, EF_CLAMP);
	cr_assert_eq(d.wait_ns, MS);
	ef_observe_timed(&th, 1, now + 50, now + 500, cfg.clamp_gap_ns);
	cr_assert_eq(ef_decide(&cfg, &th, 0, now + 550).action, EF_PASS,
		     "an event ends the busy loop");
}

Test(policy, polls_with_work_between_them_are_no_busy_loop)
{
	/* asyncio with ready callbacks: every poll finds nothing, but the program
	 * runs microseconds of its own work in between; never clamped. */
	cfg.clamp_ns = MS;
	cfg.clamp_after = 3;
	int64_t now = spin(1000, 0, 3 * cfg.clamp_gap_ns);
	cr_assert_eq(th.busy_streak, 1);
	cr_assert_eq(th.empty_streak, 1000, "the report still sees the empty streak");
	cr_assert_eq(ef_decide(&cfg, &th, 0, now + 3 * cfg.clamp_gap_ns).action, EF_PASS);
}

Test(policy, a_pause_in_a_busy_loop_is_not_delayed)
{
	cfg.clamp_ns = MS;
	cfg.clamp_after = 3;
	int64_t now = spin(3, 0, 10);
	cr_assert_eq(ef_decide(&cfg, &th, 0, now + 10).action, EF_CLAMP);
	cr_assert_eq(ef_decide(&cfg, &th, 0, now + 10 * MS).action, EF_PASS,
		     "after the program's own work the next poll is immediate");
}

Test(policy, clamp_without_pwait2_rounds_up_to_ms)
{
	cfg.clamp_ns = 100000;
	cfg.clamp_after = 1;
	th.busy_streak = 5;
	th.last_return_ns = 1000;
	struct ef_decision d = ef_without_pwait2(ef_decide(&cfg, &th, 0, 1000), 0);
	cr_assert_eq(d.action, EF_CLAMP_MS);
	cr_assert_eq(d.timeout_ms, 1);
	cfg.clamp_ns = 2500000;
	d = ef_without_pwait2(ef_decide(&cfg, &th, 0, 1000), 0);
	cr_assert_eq(d.timeout_ms, 3);
}
