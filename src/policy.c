#include "policy.h"

#define NS_PER_MS 1000000LL

struct ef_decision ef_decide(const struct ef_config *c, const struct ef_thread *t,
			     int timeout_ms, int64_t now_ns, int genuine)
{
	struct ef_decision d = { EF_PASS, 0, timeout_ms };

	if (c->disable)
		return d;
	if (ef_wants_caller(c, timeout_ms) && (genuine || t->learn.backoff_left)) {
		d.action = EF_GENUINE;
	} else if (timeout_ms > 0 && timeout_ms <= c->max_ms && c->subms_ns > 0) {
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

#define BACKOFF_FIRST 4096     /* 1 ms waits: about 4 s of a loop that waits 1 ms */
#define BACKOFF_MAX (1u << 20) /* re-checked at least every ~17 minutes */
#define QUIET_FIRST 64         /* run ends left unsampled after a sub-ms verdict */
#define QUIET_MAX 4096

/* A verdict once EF_LEARN_SAMPLES run ends are in, from the most that fall
 * within two adjacent bins (a quarter of a millisecond). Genuine at 6 of 7:
 * sub-ms deadlines end runs uniformly, and put 6 of 7 in one quarter by chance
 * with p of about 1%; a wrong verdict costs one back-off. Sub-ms at 4 or
 * fewer; 5 is too close to call, and sampling goes on, so one run end delayed
 * by a busy machine cannot misjudge a genuine loop for long. */
static enum ef_learned verdict(struct ef_learn *l)
{
	unsigned best = 0;

	for (unsigned i = 0; i < EF_LEARN_BINS; i++) {
		unsigned w = l->bins[i] + l->bins[(i + 1) % EF_LEARN_BINS];
		best = w > best ? w : best;
	}
	for (unsigned i = 0; i < EF_LEARN_BINS; i++)
		l->bins[i] = 0;
	l->samples = 0;
	if (best >= EF_LEARN_SAMPLES - 1) {
		l->backoff_len = l->backoff_len ? l->backoff_len : BACKOFF_FIRST;
		l->backoff_left = l->backoff_len;
		l->backoff_len = l->backoff_len < BACKOFF_MAX ? 2 * l->backoff_len : BACKOFF_MAX;
		l->quiet_len = 0;
		return EF_LEARNED_GENUINE;
	}
	if (best >= EF_LEARN_SAMPLES - 2)
		return EF_LEARNED_NOTHING;
	l->quiet_len = l->quiet_len ? l->quiet_len : QUIET_FIRST;
	l->quiet_left = l->quiet_len;
	l->quiet_len = l->quiet_len < QUIET_MAX ? 2 * l->quiet_len : QUIET_MAX;
	l->backoff_len = 0;
	return EF_LEARNED_SUBMS;
}

/* A run ended; its last empty wait returned at end_ns. */
static enum ef_learned sample(struct ef_learn *l, int64_t end_ns)
{
	l->in_run = 0;
	if (l->quiet_left) {
		l->quiet_left--;
		return EF_LEARNED_NOTHING;
	}
	l->bins[end_ns % NS_PER_MS * EF_LEARN_BINS / NS_PER_MS]++;
	return ++l->samples == EF_LEARN_SAMPLES ? verdict(l) : EF_LEARNED_NOTHING;
}

enum ef_learned ef_learn_before(struct ef_learn *l, int timeout_ms)
{
	if (!l->in_run || timeout_ms == 1)
		return EF_LEARNED_NOTHING;
	return sample(l, l->run_return_ns);
}

enum ef_learned ef_learn_after(struct ef_learn *l, enum ef_action done, int timeout_ms,
			       int result, int64_t end_ns)
{
	if (done == EF_UPGRADE && timeout_ms == 1 && result == 0) {
		l->in_run = 1;
		l->run_return_ns = end_ns;
	} else if (done == EF_UPGRADE && l->in_run) {
		/* A 1 ms wait that found an event also ends the run: tokio's first wait
		 * after its timer fires returns at once with its own wake-up. An I/O
		 * event at a random moment only adds a uniform sample: the safe side. */
		return sample(l, l->run_return_ns);
	} else if (done == EF_GENUINE && l->backoff_left && --l->backoff_left == 0) {
		return EF_LEARNED_RETRY;
	}
	return EF_LEARNED_NOTHING;
}
