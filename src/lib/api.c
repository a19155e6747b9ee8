/* The documented API of include/epollfix.h: a thin layer over state and stats. */
#include "epollfix.h"

#include <errno.h>
#include <string.h>

#include "state.h"
#include "stats.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const char *epollfix_version(void)
{
	return EPOLLFIX_VERSION;
}

EXPORT int epollfix_counters(struct epollfix_counters *out, size_t size)
{
	struct ef_totals t;
	struct epollfix_counters all;

	if (!out) {
		errno = EINVAL;
		return -1;
	}
	ef_interpose_notice_child();
	ef_stats_sum(&t);
	all = (struct epollfix_counters){
		.epoll_wait = t.calls[EF_CALL_WAIT],
		.epoll_pwait = t.calls[EF_CALL_PWAIT],
		.timeout_negative = t.by_class[EF_T_NEGATIVE],
		.timeout_zero = t.by_class[EF_T_ZERO],
		.timeout_one_ms = t.by_class[EF_T_ONE_MS],
		.timeout_up_to_max = t.by_class[EF_T_UP_TO_MAX],
		.timeout_longer = t.by_class[EF_T_LONGER],
		.upgraded = t.upgraded,
		.clamped = t.clamped,
		.passed = t.passed,
		.fell_back = t.fell_back,
		.empty_zero_polls = t.empty_zero,
		.longest_empty_streak = t.longest_streak,
		.left_alone_genuine = t.genuine,
		.learned_genuine = t.learned_genuine,
		.learned_subms = t.learned_subms,
		.retries = t.retries,
		.hinted = t.hinted,
		.hint_stale = t.hint_stale,
		.rationed = t.rationed,
	};
	memcpy(out, &all, size < sizeof(all) ? size : sizeof(all));
	return 0;
}

EXPORT int epollfix_set(const char *word, char *err, size_t errlen)
{
	char text[512];
	struct ef_buf msg = EF_BUF(text);

	/* A writer's lock another thread of the parent held is undone first. */
	ef_interpose_notice_child();
	if (ef_state_set(word, &msg) == 0)
		return 0;
	if (err && errlen) {
		struct ef_buf out = { err, 0, errlen };
		ef_fmt(&out, "%s", text);
	}
	errno = EINVAL;
	return -1;
}
