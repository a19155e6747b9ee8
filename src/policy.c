#include "policy.h"

#define NS_PER_MS 1000000LL

struct ef_decision ef_decide(const struct ef_config *c, const struct ef_thread *t,
			     int timeout_ms)
{
	struct ef_decision d = { EF_PASS, 0, timeout_ms };

	if (c->disable)
		return d;
	if (timeout_ms > 0 && timeout_ms <= c->max_ms && c->subms_ns > 0) {
		d.action = EF_UPGRADE;
		d.wait_ns = (int64_t)(timeout_ms - 1) * NS_PER_MS + c->subms_ns;
	} else if (timeout_ms == 0 && c->clamp_ns > 0 &&
		   t->empty_zero_streak >= (uint64_t)c->clamp_after) {
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

void ef_observe(struct ef_thread *t, int timeout_ms, int result)
{
	if (timeout_ms == 0 && result == 0)
		t->empty_zero_streak++;
	else
		t->empty_zero_streak = 0;
}
