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
	struct ef_decision d = ef_decide(&cfg, &th, 1);
	cr_assert_eq(d.action, EF_UPGRADE);
	cr_assert_eq(d.wait_ns, 50000);
}

Test(policy, negative_zero_and_longer_pass)
{
	const int timeouts[] = { -1, -1000, 0, 2, 5, 1000, 0x7fffffff };
	for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		struct ef_decision d = ef_decide(&cfg, &th, timeouts[i]);
		cr_assert_eq(d.action, EF_PASS, "timeout %d", timeouts[i]);
		cr_assert_eq(d.timeout_ms, timeouts[i]);
	}
}

Test(policy, max_ms_widens_the_window)
{
	cfg.max_ms = 3;
	cr_assert_eq(ef_decide(&cfg, &th, 2).wait_ns, 1 * MS + 50000);
	cr_assert_eq(ef_decide(&cfg, &th, 3).wait_ns, 2 * MS + 50000);
	cr_assert_eq(ef_decide(&cfg, &th, 4).action, EF_PASS);
}

Test(policy, no_overflow_at_the_top)
{
	cfg.max_ms = 1000;
	cfg.subms_ns = MS;
	struct ef_decision d = ef_decide(&cfg, &th, 1000);
	cr_assert_eq(d.wait_ns, 1000 * MS);
}

Test(policy, off_and_disable_pass)
{
	cfg.subms_ns = 0;
	cr_assert_eq(ef_decide(&cfg, &th, 1).action, EF_PASS);
	reset();
	cfg.disable = 1;
	cfg.clamp_ns = MS;
	th.empty_zero_streak = 1000;
	cr_assert_eq(ef_decide(&cfg, &th, 1).action, EF_PASS);
	cr_assert_eq(ef_decide(&cfg, &th, 0).action, EF_PASS);
}

Test(policy, without_pwait2_upgrades_pass_with_original_timeout)
{
	struct ef_decision d = ef_without_pwait2(ef_decide(&cfg, &th, 1), 1);
	cr_assert_eq(d.action, EF_PASS);
	cr_assert_eq(d.timeout_ms, 1);
}

Test(policy, streak_counts_only_empty_zero_polls)
{
	ef_observe(&th, 0, 0);
	ef_observe(&th, 0, 0);
	cr_assert_eq(th.empty_zero_streak, 2);
	ef_observe(&th, 0, 1); /* found an event */
	cr_assert_eq(th.empty_zero_streak, 0);
	ef_observe(&th, 0, 0);
	ef_observe(&th, 1, 0); /* a real wait */
	cr_assert_eq(th.empty_zero_streak, 0);
	ef_observe(&th, 0, 0);
	ef_observe(&th, 0, -1); /* EINTR and other errors end it too */
	cr_assert_eq(th.empty_zero_streak, 0);
}

Test(policy, clamp_only_after_a_streak)
{
	cfg.clamp_ns = MS;
	cfg.clamp_after = 3;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(ef_decide(&cfg, &th, 0).action, EF_PASS, "poll %d is not delayed", i);
		ef_observe(&th, 0, 0);
	}
	struct ef_decision d = ef_decide(&cfg, &th, 0);
	cr_assert_eq(d.action, EF_CLAMP);
	cr_assert_eq(d.wait_ns, MS);
	ef_observe(&th, 0, 1);
	cr_assert_eq(ef_decide(&cfg, &th, 0).action, EF_PASS, "an event ends the busy loop");
}

Test(policy, clamp_without_pwait2_rounds_up_to_ms)
{
	cfg.clamp_ns = 100000;
	cfg.clamp_after = 1;
	th.empty_zero_streak = 5;
	struct ef_decision d = ef_without_pwait2(ef_decide(&cfg, &th, 0), 0);
	cr_assert_eq(d.action, EF_CLAMP_MS);
	cr_assert_eq(d.timeout_ms, 1);
	cfg.clamp_ns = 2500000;
	d = ef_without_pwait2(ef_decide(&cfg, &th, 0), 0);
	cr_assert_eq(d.timeout_ms, 3);
}
