#include "policy.h"

#define NS_PER_MS 1000000LL

struct ef_decision ef_decide(const struct ef_config *c, const struct ef_thread *t,
			     int timeout_ms, int64_t now_ns)
{
	struct ef_decision d = { EF_PASS, 0, timeout_ms };

	if (c->disable)
		return d;
	if (timeout_ms > 0 && timeout_ms <= c->max_ms && c->subms_ns > 0) {
		d.action = EF_UPGRADE;
		d.wait_ns = (int64_t)(timeout_ms - 1) * NS_PER_MS + c->subms_ns;
	} else if (timeout_ms == 0 && c->clamp_ns > 0 &&
		   t->busy_streak >= (uint64_t)c->clamp_after &&
		   now_ns - t->last_return_ns <= c->clamp_gap_ns) {
		d.action = EF_CLAMP;
		d.wait_ns = c->clamp_ns;
	}
	return d;
}

struct ef_decision ef_without_pwait2(struct ef_decision d, int timeout_ms)
{
	if (d.action == EF_CLAMP) {
		int64_t ms = (d.wait_ns + NS_PER_MS - 1) / NS_PER_MS;
		d.action = EF_CLAMP_MS;
		d.timeout_ms = ms > 0x7fffffff ? 0x7fffffff : (int)ms;
		return d;
	}
	d.action = EF_PASS;
	d.timeout_ms = timeout_ms;
	return d;
}

void ef_observe_timed(struct ef_thread *t, int result, int64_t start_ns, int64_t end_ns,
		      int64_t gap_ns)
{
	int back_to_back = t->busy_streak > 0 && start_ns - t->last_return_ns <= gap_ns;

	ef_observe(t, 0, result);
	if (result == 0)
		t->busy_streak = back_to_back ? t->busy_streak + 1 : 1;
	t->last_return_ns = end_ns;
}
