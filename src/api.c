/* The documented API of include/epollfix.h: a thin layer over state and stats. */
#include "epollfix.h"

#include <errno.h>
#include <string.h>

#include "state.h"
#include "stats.h"

#define EXPORT __attribute__((visibility("default")))

_Static_assert(sizeof(struct epollfix_counters) == EF_C_COUNT * sizeof(uint64_t),
	       "public counters mirror enum ef_counter");

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
	ef_stats_sum(&t);
	memcpy(&all, t.c, sizeof(all));
	memcpy(out, &all, size < sizeof(all) ? size : sizeof(all));
	return 0;
}

EXPORT int epollfix_set(const char *word, char *err, size_t errlen)
{
	char text[512];
	struct ef_buf msg = EF_BUF(text);

	if (ef_state_set(word, &msg) == 0)
		return 0;
	if (err && errlen) {
		struct ef_buf out = { err, 0, errlen };
		ef_str(&out, text);
	}
	errno = EINVAL;
	return -1;
}
