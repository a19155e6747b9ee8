/* libFuzzer target for the policy: any configuration the variables can take,
 * any sequence of calls (any int as the timeout, any result), and a monotonic
 * clock. Checks every decision against the documented rules:
 *  - disabled, or not a rounded-up timeout and not a busy zero poll: PASS with
 *    the original timeout;
 *  - UPGRADE only for 1 <= T <= MAX_MS with SUBMS on, waiting at least 1 us,
 *    more than T-1 ms, never more than T ms; exactly (T-1) ms + SUBMS when
 *    nothing is predicted (EPOLLFIX_ADAPT=off, or a caller listed as sub-ms);
 *  - GENUINE only for such timeouts with EPOLLFIX_ADAPT on;
 *  - CLAMP only for T == 0 with the clamp on, after CLAMP_AFTER empty polls;
 *  - without epoll_pwait2: upgrades pass with T, clamps wait whole ms >= the clamp;
 *  - ef_observe's streaks count exactly the empty zero-timeout polls in a row.
 *
 * Input: for each variable 9 bytes (word or number), then 9 bytes per call:
 * timeout (4), result and caller and site (1), clock advance (4; its top bit:
 * epoll_pwait2 refused). The whole protocol runs: before, fallback, after. */
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

static void check_decision(const struct ef_config *c, const struct ef_thread *t, int T,
			   enum ef_caller caller, struct ef_decision d)
{
	int rounded = !c->disable && T >= 1 && T <= c->max_ms && c->subms_ns > 0;
	switch (d.action) {
	case EF_PASS:
		CHECK(d.timeout_ms == T);
		/* Passing a rounded-up timeout happens only when upgrades are off. */
		CHECK(!rounded);
		break;
	case EF_GENUINE: /* left alone: a loop whose 1 ms is real */
		CHECK(d.timeout_ms == T);
		CHECK(rounded && c->adapt && caller != EF_CALLER_SUBMS);
		break;
	case EF_UPGRADE:
		CHECK(rounded);
		/* Never longer than asked, never a spin: at least 1 us (or SUBMS), and more
		 * than the whole milliseconds the program is sure to wait. */
		CHECK(d.wait_ns >= (c->subms_ns < 1000 ? c->subms_ns : 1000) &&
		      d.wait_ns <= (int64_t)T * NS_PER_MS);
		CHECK(T == 1 || d.wait_ns > (int64_t)(T - 1) * NS_PER_MS);
		if (!c->adapt || caller == EF_CALLER_SUBMS || T > 1)
			CHECK(d.wait_ns == (int64_t)(T - 1) * NS_PER_MS + c->subms_ns ||
			      (T > 1 && c->adapt && d.wait_ns > (int64_t)(T - 1) * NS_PER_MS));
		CHECK(caller != EF_CALLER_GENUINE || !c->adapt);
		break;
	case EF_BOUNDED: /* a chase given up: until its first request's bound */
		CHECK(rounded && c->adapt && caller == EF_CALLER_UNKNOWN);
		CHECK(d.wait_ns > (int64_t)(T - 1) * NS_PER_MS && d.wait_ns < (int64_t)T * NS_PER_MS);
		break;
	case EF_CLAMP:
		CHECK(!c->disable && T == 0 && c->clamp_ns > 0);
		CHECK(d.wait_ns == c->clamp_ns && d.wait_ns > 0 && d.wait_ns <= 1000 * NS_PER_MS);
		CHECK(t->empty_streak >= (uint64_t)c->clamp_after);
		break;
	default:
		CHECK(0); /* ef_before never answers CLAMP_MS */
	}
	struct ef_decision w = ef_without_pwait2(d, T);
	if (d.action == EF_CLAMP) {
		CHECK(w.action == EF_CLAMP_MS);
		CHECK(w.timeout_ms >= 1 && (int64_t)w.timeout_ms * NS_PER_MS >= d.wait_ns &&
		      (int64_t)(w.timeout_ms - 1) * NS_PER_MS < d.wait_ns);
	} else if (d.action == EF_GENUINE) {
		CHECK(w.action == EF_GENUINE && w.timeout_ms == T);
	} else {
		CHECK(w.action == EF_PASS && w.timeout_ms == T);
	}
}

static const char sites[4];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ef_config c;
	ef_config_defaults(&c);
	/* The numeric settings only, nine bytes each: the text ones (STATS,
	 * ONLY, SKIP, CONFIG) play no part in the policy. */
	size_t n = 0;
	for (size_t i = 0; i < ef_nvars; i++)
		n += ef_vars[i].kind != EF_KIND_TEXT;
	if (size < n * 9)
		return 0;
	for (size_t i = 0, k = 0; i < ef_nvars; i++)
		if (ef_vars[i].kind != EF_KIND_TEXT)
			pick(&c, &ef_vars[i], data + 9 * k++);
	data += n * 9;
	size -= n * 9;

	/* The whole protocol, as the wait path runs it: before, maybe the
	 * fallback without epoll_pwait2, after. */
	struct ef_thread t;
	memset(&t, 0, sizeof(t));
	uint64_t streak = 0;
	int64_t now = (int64_t)(u64(data, size < 4 ? size : 4) << 20); /* any boot time */
	for (; size >= 9; data += 9, size -= 9) {
		int T = (int)(uint32_t)u64(data, 4);
		int r = data[4] % 4 == 0 ? -1 : data[4] % 3; /* -1, 0, 1, 2 events */
		enum ef_caller caller = (enum ef_caller)((data[4] >> 6) % 3);
		struct ef_request in = { T, &sites[(data[4] >> 2) & 3], caller, now };
		struct ef_decision d = ef_before(&c, &t, &in);
		check_decision(&c, &t, T, caller, d);
		if (data[5] & 0x80) /* epoll_pwait2 unusable or refused */
			d = ef_without_pwait2(d, T);

		int64_t end = now + (int64_t)u64(data + 5, 4);
		ef_after(&c, &t, &in, d, r, end);
		streak = T == 0 && r == 0 ? streak + 1 : 0;
		CHECK(t.empty_streak == streak);
		CHECK(t.busy_streak <= t.empty_streak);
		CHECK(t.run.site < EF_SITES);
		CHECK(!t.run.open || d.action == EF_UPGRADE);
		now = end + (int64_t)(data[5] & 0x3f);
	}
	return 0;
}
