/* libFuzzer target for the policy: any configuration the variables can take,
 * any sequence of calls (any int as the timeout, any result), and a monotonic
 * clock. Checks every decision against the documented rules:
 *  - disabled, or not a rounded-up timeout and not a busy zero poll: PASS with
 *    the original timeout;
 *  - UPGRADE only for 1 <= T <= MAX_MS with SUBMS on, waiting exactly
 *    (T-1) ms + SUBMS: more than T-1 ms, never more than T ms, no overflow;
 *  - CLAMP only for T == 0 with the clamp on, after CLAMP_AFTER empty polls;
 *  - without epoll_pwait2: upgrades pass with T, clamps wait whole ms >= the clamp;
 *  - ef_observe's streaks count exactly the empty zero-timeout polls in a row.
 *
 * Input: for each variable 9 bytes (word or number), then 9 bytes per call:
 * timeout (4), result (1), clock advance (4). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fmt.h"
#include "policy.h"

#define CHECK(x)                  \
	do {                      \
		if (!(x))         \
			abort();  \
	} while (0)
#define NS_PER_MS 1000000LL

static uint64_t u64(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* A value v can take, set through its text as a user would write it. */
static void pick(struct ef_config *c, const struct ef_var *v, const uint8_t *p)
{
	size_t nwords = 0;
	for (const struct ef_word *w = v->words; w && w->word; w++)
		nwords++;
	uint64_t raw = u64(p + 1, 8);
	int64_t x;
	if (v->kind == EF_KIND_WORD || (nwords && (p[0] & 1)))
		x = v->words[raw % nwords].value;
	else
		x = v->min + (int64_t)(raw % (uint64_t)(v->max - v->min + 1));
	char text[64], msg[256];
	struct ef_buf t = EF_BUF(text);
	ef_config_show(x, v, &t);
	CHECK(ef_config_set(c, v, text, &EF_BUF(msg)) == 0);
	CHECK(ef_config_get(c, v) == x);
}

/* The policy learns (EPOLLFIX_ADAPT) where its header says so: decisions then
 * take whether the caller is a runtime whose 1 ms is genuine. */
#ifdef EF_LEARN_BINS
#define DECIDE(c, t, T, now, genuine) ef_decide(c, t, T, now, genuine)
#else
#define DECIDE(c, t, T, now, genuine) ((void)(genuine), ef_decide(c, t, T, now))
#endif

static void check_decision(const struct ef_config *c, const struct ef_thread *t, int T,
			   int genuine, struct ef_decision d)
{
	(void)genuine;
	switch (d.action) {
	case EF_PASS:
		CHECK(d.timeout_ms == T);
		/* Passing a rounded-up timeout happens only when upgrades are off. */
		CHECK(c->disable || !(T >= 1 && T <= c->max_ms && c->subms_ns > 0));
		break;
#ifdef EF_LEARN_BINS
	case EF_GENUINE: /* left alone: a loop whose 1 ms is real */
		CHECK(d.timeout_ms == T);
		CHECK(!c->disable && c->adapt && T >= 1 && T <= c->max_ms && c->subms_ns > 0);
		CHECK(genuine || t->learn.backoff_left);
		break;
#endif
	case EF_UPGRADE:
		CHECK(!c->disable && T >= 1 && T <= c->max_ms && c->subms_ns > 0);
		CHECK(d.wait_ns == (int64_t)(T - 1) * NS_PER_MS + c->subms_ns);
		CHECK(d.wait_ns > (int64_t)(T - 1) * NS_PER_MS);
		CHECK(d.wait_ns <= (int64_t)T * NS_PER_MS);
		CHECK(d.wait_ns <= 1000 * NS_PER_MS);
#ifdef EF_LEARN_BINS
		CHECK(!(c->adapt && (genuine || t->learn.backoff_left)));
#endif
		break;
	case EF_CLAMP:
		CHECK(!c->disable && T == 0 && c->clamp_ns > 0);
		CHECK(d.wait_ns == c->clamp_ns && d.wait_ns > 0 && d.wait_ns <= 1000 * NS_PER_MS);
		CHECK(t->empty_streak >= (uint64_t)c->clamp_after);
		break;
	default:
		CHECK(0); /* ef_decide never answers CLAMP_MS */
	}
	struct ef_decision w = ef_without_pwait2(d, T);
	if (d.action == EF_CLAMP) {
		CHECK(w.action == EF_CLAMP_MS);
		CHECK(w.timeout_ms >= 1 && (int64_t)w.timeout_ms * NS_PER_MS >= d.wait_ns &&
		      (int64_t)(w.timeout_ms - 1) * NS_PER_MS < d.wait_ns);
	} else {
		CHECK(w.action == EF_PASS && w.timeout_ms == T);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ef_config c;
	ef_config_defaults(&c);
	if (size < ef_nvars * 9)
		return 0;
	for (size_t i = 0; i < ef_nvars; i++)
		pick(&c, &ef_vars[i], data + 9 * i);
	data += ef_nvars * 9;
	size -= ef_nvars * 9;

	struct ef_thread t;
	memset(&t, 0, sizeof(t));
	uint64_t streak = 0;
	int64_t now = (int64_t)(u64(data, size < 4 ? size : 4) << 20); /* any boot time */
	for (; size >= 9; data += 9, size -= 9) {
		int T = (int)(uint32_t)u64(data, 4);
		int r = data[4] % 4 == 0 ? -1 : data[4] % 3; /* -1, 0, 1, 2 events */
		int genuine = data[4] >> 7;
		struct ef_thread before = t;
		struct ef_decision d = DECIDE(&c, &t, T, now, genuine);
		CHECK(memcmp(&before, &t, sizeof(t)) == 0);
		check_decision(&c, &t, T, genuine, d);

		int64_t end = now + (int64_t)u64(data + 5, 4);
		if (T == 0 && c.clamp_ns > 0)
			ef_observe_timed(&t, r, now, end, c.clamp_gap_ns);
		else
			ef_observe(&t, T, r);
		streak = T == 0 && r == 0 ? streak + 1 : 0;
		CHECK(t.empty_streak == streak);
		CHECK(t.busy_streak <= t.empty_streak);
		now = end + (int64_t)(data[5] & 0x3f);
	}
	return 0;
}
