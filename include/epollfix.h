/* epollfix: sub-millisecond epoll waits for unmodified programs.
 *
 * A program that knows it may run under LD_PRELOAD=libepollfix.so can look these
 * functions up with dlsym(RTLD_DEFAULT, "epollfix_set") and so still run without
 * the library:
 *
 *     int (*set)(const char *, char *, size_t) = dlsym(RTLD_DEFAULT, "epollfix_set");
 *     if (set) set("subms=20us", NULL, 0);
 */
#ifndef EPOLLFIX_H
#define EPOLLFIX_H

#include <stddef.h>
#include <stdint.h>

/* EPOLLFIX_VERSION "x.y.z" and EPOLLFIX_VERSION_MAJOR, _MINOR, _PATCH. */
#include "epollfix_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The counters of the stats report, summed over all threads of this process
 * since it started (or since fork, in a child). New members are only ever added
 * at the end. */
struct epollfix_counters {
	uint64_t epoll_wait;        /* calls, by function */
	uint64_t epoll_pwait;
	uint64_t timeout_negative;  /* calls, by the timeout the program asked for */
	uint64_t timeout_zero;
	uint64_t timeout_one_ms;
	uint64_t timeout_up_to_max; /* 2..EPOLLFIX_MAX_MS */
	uint64_t timeout_longer;
	uint64_t upgraded;          /* waited through epoll_pwait2 for a finer timeout */
	uint64_t clamped;           /* a busy zero-timeout poll given a minimum wait */
	uint64_t passed;            /* the real call with the original arguments */
	uint64_t fell_back;         /* upgrades or clamps that ran the real call instead */
	uint64_t empty_zero_polls;  /* zero-timeout polls that found nothing */
	uint64_t longest_empty_streak;
	uint64_t left_alone_genuine; /* 1 ms waits left alone: the loop means them */
	uint64_t learned_genuine;    /* times a thread's loop was found to mean its 1 ms */
	uint64_t learned_subms;      /* times it was found to hide sub-ms deadlines */
	uint64_t retries;            /* times a back-off ended and upgrades were tried again */
};

/* The library's version, EPOLLFIX_VERSION of the header it was built with. */
const char *epollfix_version(void);

/* Fills *out (size: sizeof(struct epollfix_counters) as the caller knows it).
 * Returns 0, or -1 with errno EINVAL when out is NULL. */
int epollfix_counters(struct epollfix_counters *out, size_t size);

/* Changes the policy now, with the words of the environment: "subms=20us",
 * "max-ms=2", "slack=keep", "clamp=1ms", "clamp-after=16", "clamp-gap=1us",
 * "adapt=off", "log=quiet", "disable=1" (the EPOLLFIX_ names work too: "EPOLLFIX_SUBMS=20us"). Values are
 * checked exactly as in the environment. Safe while other threads wait; their
 * next call sees the change. Returns 0; or -1 with errno EINVAL, the policy
 * unchanged, and the reason in err (if err is not NULL). */
int epollfix_set(const char *word, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
