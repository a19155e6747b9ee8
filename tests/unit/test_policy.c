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
	struct ef_decision d = ef_decide(&cfg, &th, 1, 0, 0);
	cr_assert_eq(d.action, EF_UPGRADE);
	cr_assert_eq(d.wait_ns, 50000);
}

Test(policy, negative_zero_and_longer_pass)
{
	const int timeouts[] = { -1, -1000, 0, 2, 5, 1000, 0x7fffffff };
	for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		struct ef_decision d = ef_decide(&cfg, &th, timeouts[i], 0, 0);
		cr_assert_eq(d.action, EF_PASS, "timeout %d", timeouts[i]);
		cr_assert_eq(d.timeout_ms, timeouts[i]);
	}
}

Test(policy, max_ms_widens_the_window)
{
	cfg.max_ms = 3;
	cr_assert_eq(ef_decide(&cfg, &th, 2, 0, 0).wait_ns, 1 * MS + 50000);
	cr_assert_eq(ef_decide(&cfg, &th, 3, 0, 0).wait_ns, 2 * MS + 50000);
	cr_assert_eq(ef_decide(&cfg, &th, 4, 0, 0).action, EF_PASS);
}

Test(policy, no_overflow_at_the_top)
{
	cfg.max_ms = 1000;
	cfg.subms_ns = MS;
	struct ef_decision d = ef_decide(&cfg, &th, 1000, 0, 0);
	cr_assert_eq(d.wait_ns, 1000 * MS);
}

Test(policy, off_and_disable_pass)
{
	cfg.subms_ns = 0;
	cr_assert_eq(ef_decide(&cfg, &th, 1, 0, 0).action, EF_PASS);
	reset();
	cfg.disable = 1;
	cfg.clamp_ns = MS;
	th.busy_streak = 1000;
	cr_assert_eq(ef_decide(&cfg, &th, 1, 0, 0).action, EF_PASS);
	cr_assert_eq(ef_decide(&cfg, &th, 0, 0, 0).action, EF_PASS);
}

Test(policy, without_pwait2_upgrades_pass_with_original_timeout)
{
	struct ef_decision d = ef_without_pwait2(ef_decide(&cfg, &th, 1, 0, 0), 1);
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
	ef_observe(&th, 0, 0);
	ef_observe(&th, 1, 0); /* a real wait */
	cr_assert_eq(th.empty_streak, 0);
	ef_observe(&th, 0, 0);
	ef_observe(&th, 0, -1); /* EINTR and other errors end it too */
	cr_assert_eq(th.empty_streak, 0);
}

/* n empty zero-timeout polls, each gap_ns after the previous one returned. */
static int64_t spin(int n, int64_t now, int64_t gap_ns)
{
	for (int i = 0; i < n; i++) {
		now += gap_ns;
		cr_assert_eq(ef_decide(&cfg, &th, 0, now, 0).action, EF_PASS, "poll %d", i);
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
	struct ef_decision d = ef_decide(&cfg, &th, 0, now + 50, 0);
	cr_assert_eq(d.action, EF_CLAMP);
	cr_assert_eq(d.wait_ns, MS);
	ef_observe_timed(&th, 1, now + 50, now + 500, cfg.clamp_gap_ns);
	cr_assert_eq(ef_decide(&cfg, &th, 0, now + 550, 0).action, EF_PASS,
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
	cr_assert_eq(ef_decide(&cfg, &th, 0, now + 3 * cfg.clamp_gap_ns, 0).action, EF_PASS);
}

Test(policy, a_pause_in_a_busy_loop_is_not_delayed)
{
	cfg.clamp_ns = MS;
	cfg.clamp_after = 3;
	int64_t now = spin(3, 0, 10);
	cr_assert_eq(ef_decide(&cfg, &th, 0, now + 10, 0).action, EF_CLAMP);
	cr_assert_eq(ef_decide(&cfg, &th, 0, now + 10 * MS, 0).action, EF_PASS,
		     "after the program's own work the next poll is immediate");
}

Test(policy, clamp_without_pwait2_rounds_up_to_ms)
{
	cfg.clamp_ns = 100000;
	cfg.clamp_after = 1;
	th.busy_streak = 5;
	th.last_return_ns = 1000;
	struct ef_decision d = ef_without_pwait2(ef_decide(&cfg, &th, 0, 1000, 0), 0);
	cr_assert_eq(d.action, EF_CLAMP_MS);
	cr_assert_eq(d.timeout_ms, 1);
	cfg.clamp_ns = 2500000;
	d = ef_without_pwait2(ef_decide(&cfg, &th, 0, 1000, 0), 0);
	cr_assert_eq(d.timeout_ms, 3);
}

Test(policy, a_recognised_runtime_keeps_its_1ms)
{
	struct ef_decision d = ef_decide(&cfg, &th, 1, 0, 1);
	cr_assert_eq(d.action, EF_GENUINE);
	cr_assert_eq(d.timeout_ms, 1);
	cfg.adapt = 0;
	cr_assert_eq(ef_decide(&cfg, &th, 1, 0, 1).action, EF_UPGRADE, "EPOLLFIX_ADAPT=off");
	cfg.adapt = 1;
	cr_assert_eq(ef_decide(&cfg, &th, 0, 0, 1).action, EF_PASS, "only upgrades are affected");
	cr_assert_eq(ef_decide(&cfg, &th, 5, 0, 1).action, EF_PASS);
	cr_assert(ef_wants_caller(&cfg, 1));
	cr_assert_not(ef_wants_caller(&cfg, 0));
	cr_assert_not(ef_wants_caller(&cfg, 2));
}

/* One run of upgraded empty 1 ms waits, the last returning at end_ns, then a
 * request of next_ms ends it. Returns the learner's verdict. */
static enum ef_learned run(struct ef_learn *l, int waits, int64_t end_ns, int next_ms)
{
	enum ef_learned v = EF_LEARNED_NOTHING;
	for (int i = 0; i < waits; i++) {
		cr_assert_eq(ef_learn_before(l, 1), EF_LEARNED_NOTHING);
		ef_learn_after(l, EF_UPGRADE, 1, 0, end_ns - (waits - 1 - i) * 70000);
	}
	v = ef_learn_before(l, next_ms);
	return v;
}

TestSuite(learn, .init = reset);

Test(learn, runs_ending_on_a_millisecond_grid_are_genuine)
{
	struct ef_learn l = { 0 };
	/* libuv: each run ends 8..92 us after a CLOCK_MONOTONIC millisecond; one
	 * end was delayed by a busy machine. */
	const int64_t ends[EF_LEARN_SAMPLES] = { 5 * MS + 8000,	  9 * MS + 92000,  12 * MS + 40000,
						 20 * MS + 60000, 33 * MS + 15000, 41 * MS + 610000,
						 47 * MS + 30000 };
	for (int i = 0; i < EF_LEARN_SAMPLES - 1; i++)
		cr_assert_eq(run(&l, 3 + i, ends[i], 0), EF_LEARNED_NOTHING);
	cr_assert_eq(run(&l, 14, ends[EF_LEARN_SAMPLES - 1], 0), EF_LEARNED_GENUINE);
	cr_assert_gt(l.backoff_left, 0);
	th.learn = l;
	cr_assert_eq(ef_decide(&cfg, &th, 1, 0, 0).action, EF_GENUINE, "backed off");
}

Test(learn, runs_ending_anywhere_are_sub_ms)
{
	struct ef_learn l = { 0 };
	/* asyncio: sleeps end wherever their deadlines fall. */
	const int64_t ends[EF_LEARN_SAMPLES] = { 5 * MS + 100000,  9 * MS + 500000,  12 * MS + 830000,
						 20 * MS + 310000, 33 * MS + 650000, 41 * MS + 950000,
						 47 * MS + 220000 };
	for (int i = 0; i < EF_LEARN_SAMPLES - 1; i++)
		cr_assert_eq(run(&l, 1, ends[i], 0), EF_LEARNED_NOTHING);
	cr_assert_eq(run(&l, 1, ends[EF_LEARN_SAMPLES - 1], 0), EF_LEARNED_SUBMS);
	cr_assert_eq(l.backoff_left, 0);
	cr_assert_gt(l.quiet_left, 0, "no more sampling for a while");
	th.learn = l;
	cr_assert_eq(ef_decide(&cfg, &th, 1, 0, 0).action, EF_UPGRADE);
}

Test(learn, too_close_to_call_samples_again)
{
	struct ef_learn l = { 0 };
	/* Five in one quarter, two elsewhere: no verdict, no quiet spell. */
	const int64_t ends[EF_LEARN_SAMPLES] = { 1 * MS + 10000,  2 * MS + 20000,  3 * MS + 30000,
						 4 * MS + 40000,  5 * MS + 50000,  6 * MS + 500000,
						 7 * MS + 700000 };
	for (int i = 0; i < EF_LEARN_SAMPLES; i++)
		cr_assert_eq(run(&l, 2, ends[i], 0), EF_LEARNED_NOTHING);
	cr_assert_eq(l.samples, 0);
	cr_assert_eq(l.quiet_left, 0);
	cr_assert_eq(l.backoff_left, 0);
}

Test(learn, a_loop_that_keeps_asking_1ms_is_never_judged)
{
	/* mio poll(50us), libev at 50 us, Java select(1): every call a 1, no run ends. */
	struct ef_learn l = { 0 };
	for (int i = 0; i < 10000; i++) {
		cr_assert_eq(ef_learn_before(&l, 1), EF_LEARNED_NOTHING);
		ef_learn_after(&l, EF_UPGRADE, 1, 0, i * 70000);
	}
	cr_assert_eq(l.samples, 0);
	cr_assert_eq(l.backoff_left, 0);
}

Test(learn, a_wait_that_finds_an_event_ends_the_run)
{
	/* tokio: after its timer fires, the next 1 ms wait returns at once with
	 * its own wake-up. */
	struct ef_learn l = { 0 };
	enum ef_learned v = EF_LEARNED_NOTHING;
	for (int fire = 0; fire < EF_LEARN_SAMPLES; fire++) {
		for (int i = 0; i < 14; i++) {
			cr_assert_eq(ef_learn_before(&l, 1), EF_LEARNED_NOTHING);
			ef_learn_after(&l, EF_UPGRADE, 1, 0, fire * MS + 470000 - (13 - i) * 70000);
		}
		cr_assert_eq(ef_learn_before(&l, 1), EF_LEARNED_NOTHING);
		v = ef_learn_after(&l, EF_UPGRADE, 1, 1, fire * MS + 500000);
	}
	cr_assert_eq(v, EF_LEARNED_GENUINE);
}

Test(learn, events_alone_make_no_samples)
{
	struct ef_learn l = { 0 };
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(ef_learn_after(&l, EF_UPGRADE, 1, 1, i * MS + 10000), EF_LEARNED_NOTHING);
		cr_assert_eq(ef_learn_before(&l, 0), EF_LEARNED_NOTHING);
	}
	cr_assert_eq(l.samples, 0);
}

Test(learn, back_off_ends_and_doubles_when_confirmed)
{
	struct ef_learn l = { 0 };
	for (int i = 0; i < EF_LEARN_SAMPLES - 1; i++)
		run(&l, 2, (i + 1) * MS + 50000, 0);
	cr_assert_eq(run(&l, 2, 9 * MS + 50000, 0), EF_LEARNED_GENUINE);
	uint32_t first = l.backoff_left;
	for (uint32_t i = 0; i + 1 < first; i++)
		cr_assert_eq(ef_learn_after(&l, EF_GENUINE, 1, 0, 0), EF_LEARNED_NOTHING);
	cr_assert_eq(ef_learn_after(&l, EF_GENUINE, 1, 0, 0), EF_LEARNED_RETRY);
	cr_assert_eq(l.backoff_left, 0, "upgrades are tried again");
	for (int i = 0; i < EF_LEARN_SAMPLES - 1; i++)
		run(&l, 2, (i + 20) * MS + 50000, 2);
	cr_assert_eq(run(&l, 2, 40 * MS + 50000, 2), EF_LEARNED_GENUINE);
	cr_assert_eq(l.backoff_left, 2 * first, "confirmed: twice as long");
}
