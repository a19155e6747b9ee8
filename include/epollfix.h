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

struct epoll_event;

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
	uint64_t hinted;             /* waits that took an exact timeout (epollfix_hint_ns) */
	uint64_t hint_stale;         /* hints dropped: the next wait's timeout did not fit */
	uint64_t rationed;           /* waits left as asked: EPOLLFIX_MAX_EXTRA reached */
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

/* ---- Exact timeouts ----------------------------------------------------------
 * A program that keeps its deadline finer than a millisecond can say it, and
 * the library then waits for exactly that instead of guessing:
 *
 *     epollfix_hint_ns(timeout_ns);                     this thread's next wait
 *     epoll_wait(ep, ev, n, (timeout_ns + 999999) / 1000000);
 *
 * The hint is a deadline timeout_ns from now (CLOCK_MONOTONIC), for this
 * thread only. The thread's next epoll_wait or epoll_pwait takes it when the
 * call's timeout is the time left to that deadline rounded up to whole
 * milliseconds (or one more, for the time the program took to get there), or
 * the hint itself rounded up (a program preempted between the two, maybe
 * past the deadline): then the call waits with epoll_pwait2 until the deadline, whatever its
 * length (never past the call's own timeout, never before the deadline unless
 * an event comes; a deadline already past makes it a poll), and a call whose
 * timeout is the hint itself in whole milliseconds passes unchanged. A call
 * that does not fit the hint runs as if there were none, and the hint is
 * counted as stale. Either way the hint is that call's only, whatever it
 * returns, EINTR included: a program that retries after a signal says its
 * hint again (epollfix_epoll_wait_ns does, called again). When epoll_pwait2 is
 * refused the call runs with its own arguments, as always.
 *
 * timeout_ns < 0 withdraws a hint that no call took. Returns 0. Costs one
 * clock read; never allocates, locks or blocks. */
int epollfix_hint_ns(int64_t timeout_ns);

/* epoll_wait with an exact timeout in nanoseconds (negative: no timeout), for
 * programs that load the library with dlopen instead of LD_PRELOAD (their own
 * epoll_wait calls are then libc's): the hint above, then the library's
 * epoll_wait with the timeout rounded up to whole milliseconds (INT_MAX at
 * most; any int64_t is valid). Errors and errno are epoll_wait's. */
int epollfix_epoll_wait_ns(int epfd, struct epoll_event *events, int maxevents,
			   int64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif
