/* The exported symbols. Each is one line into ef_wait(): most calls pass through
 * on one atomic load and one counter increment; the rest take ef_wait_slow(),
 * which asks the policy and then calls the real function. Nothing here
 * allocates or uses stdio. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "log.h"
#include "policy.h"
#include "real.h"
#include "recognize.h"
#include "state.h"
#include "stats.h"

#define EXPORT __attribute__((visibility("default")))
#define NS_PER_S 1000000000LL
#define REFUSED (-2) /* never a result of the real call */

/* One thread-local block, reached with one offset: the policy's memory of
 * this thread and the counters it owns. */
static __thread struct {
	struct ef_thread policy;
	struct ef_slot *slot;
} tls __attribute__((tls_model("initial-exec")));

static inline struct ef_slot *my_slot(void)
{
	if (__builtin_expect(!tls.slot, 0))
		tls.slot = ef_stats_claim();
	return tls.slot;
}

/* Inlined into both exported functions, so `call` is a constant there. */
static inline __attribute__((always_inline)) int call_real(enum ef_call call, int epfd,
							   struct epoll_event *ev, int maxevents,
							   int timeout, const sigset_t *mask)
{
	return call == EF_CALL_WAIT ? ef_real_epoll_wait()(epfd, ev, maxevents, timeout)
				    : ef_real_epoll_pwait()(epfd, ev, maxevents, timeout, mask);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* epoll_pwait2 for ns, with the configured timer slack in force only while it
 * sleeps. Returns its result, or REFUSED with errno as on entry when the real
 * call must run instead: after any error but EINTR the real call gives the
 * exact errno the program would have seen, and ENOSYS or EPERM mean a filter
 * or kernel said no for good. */
static int wait_fine(const struct ef_config *c, int epfd, struct epoll_event *ev,
		     int maxevents, int64_t ns, const sigset_t *mask)
{
	struct timespec ts = { .tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S };
	int saved = errno;
	int old_slack = -1;

	if (c->slack_ns > 0) {
		old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
		if (old_slack == c->slack_ns || old_slack <= 0)
			old_slack = -1;
		else
			prctl(PR_SET_TIMERSLACK, (unsigned long)c->slack_ns, 0, 0, 0);
	}
	int r = ef_real_epoll_pwait2()(epfd, ev, maxevents, &ts, mask);
	int err = errno;
	if (old_slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);

	if (r >= 0 || err == EINTR) {
		errno = r >= 0 ? saved : err;
		return r;
	}
	if (err == ENOSYS || err == EPERM)
		ef_pwait2_refused(err);
	errno = saved;
	return REFUSED;
}

static void debug_line(enum ef_call call, int epfd, int timeout, struct ef_decision d, int r)
{
	static const char *const what[] = { "passed through", "passed through (1ms meant)",
					    "upgraded to ", "clamped to ",
					    "clamped (no epoll_pwait2) to " };
	char ms[16] = "";

	if (d.action == EF_CLAMP_MS)
		ef_fmt(&EF_BUF(ms), "%dms", d.timeout_ms);
	ef_log(EF_LOG_DEBUG, "%s(epfd=%d, timeout=%dms) %s%s = %d",
	       call == EF_CALL_WAIT ? "epoll_wait" : "epoll_pwait", epfd, timeout, what[d.action],
	       d.action == EF_UPGRADE || d.action == EF_CLAMP ? EF_DUR(d.wait_ns) : ms, r);
}

static enum ef_outcome outcome_of(enum ef_action meant, enum ef_action done)
{
	if (meant == EF_GENUINE)
		return EF_O_GENUINE;
	if (meant == EF_UPGRADE)
		return done == EF_UPGRADE ? EF_O_UPGRADED : EF_O_UPGRADE_FELL_BACK;
	if (meant == EF_CLAMP)
		return done == EF_CLAMP ? EF_O_CLAMPED : EF_O_CLAMP_FELL_BACK;
	return EF_O_PASSED;
}

static void learned(enum ef_learned what)
{
	if (what != EF_LEARNED_NOTHING)
		ef_stats_learned(my_slot(), what);
}

static enum ef_caller caller_of(enum ef_runtime rt)
{
	if (rt == EF_RT_USER_SUBMS)
		return EF_CALLER_SUBMS;
	return ef_runtime_genuine(rt) ? EF_CALLER_GENUINE : EF_CALLER_UNKNOWN;
}

/* How the report names the site's caller. */
static unsigned caller_flags(enum ef_runtime rt)
{
	return rt == EF_RT_USER_SUBMS	   ? EF_SF_LISTED_SUBMS
	       : rt == EF_RT_USER_GENUINE ? EF_SF_LISTED_GENUINE
	       : ef_runtime_genuine(rt)	   ? EF_SF_RECOGNISED
					   : 0;
}

/* The policy's protocol (policy.h): before, the wait it chose (or the real
 * call when epoll_pwait2 is unusable), after. */
static __attribute__((noinline)) int ef_wait_slow(enum ef_call call, int epfd,
						  struct epoll_event *ev, int maxevents,
						  int timeout, const sigset_t *mask, const void *ra)
{
	struct ef_config c;
	struct ef_thread *t = &tls.policy;

	if (!ef_state_config(&c))
		c = (struct ef_config){ .disable = 1 };
	struct ef_request in = { .timeout_ms = timeout, .site = ra };
	enum ef_runtime rt = EF_RT_UNKNOWN;
	if (ef_wants_caller(&c, timeout))
		in.caller = caller_of(rt = ef_caller_runtime(ra));
	if (ef_wants_clock(&c, t, timeout))
		in.now_ns = mono_ns();
	struct ef_decision d = ef_before(&c, t, &in);
	enum ef_action meant = d.action;
	int r = REFUSED;

	learned(d.learned);
	if ((d.action == EF_UPGRADE || d.action == EF_CLAMP) && !ef_pwait2_usable())
		d = ef_without_pwait2(d, timeout);
	if (d.action == EF_UPGRADE || d.action == EF_CLAMP) {
		r = wait_fine(&c, epfd, ev, maxevents, d.wait_ns, mask);
		if (r == REFUSED)
			d = ef_without_pwait2(d, timeout);
	}
	if (r == REFUSED)
		r = call_real(call, epfd, ev, maxevents, d.timeout_ms, mask);
	if (c.disable)
		return r;

	int err = errno;
	int64_t end = ef_wants_end_clock(&c, &in, d) ? mono_ns() : 0;
	learned(ef_after(&c, t, &in, d, r, end));
	if (d.ended)
		ef_stats_site_ended(d.ended);
	if (ef_rounded_up(&c, timeout))
		ef_stats_site(ra, ef_site_of(t, ra), d, caller_flags(rt));
	ef_stats_count(my_slot(), call, timeout, (int)c.max_ms, outcome_of(meant, d.action), r, t);
	if (ef_log_on(EF_LOG_DEBUG))
		debug_line(call, epfd, timeout, d, r);
	errno = err;
	return r;
}

static inline __attribute__((always_inline)) int ef_wait(enum ef_call call, int epfd,
							 struct epoll_event *ev, int maxevents,
							 int timeout, const sigset_t *mask, const void *ra)
{
	uint32_t w = ef_state_fast();

	/* A thread in a run of upgraded waits needs the policy to see its next call. */
	if (__builtin_expect(!ef_fast_pass(w, timeout) || ef_watching(&tls.policy), 0))
		return ef_wait_slow(call, epfd, ev, maxevents, timeout, mask, ra);
	if (w & EF_FAST_UNCOUNTED)
		return call_real(call, epfd, ev, maxevents, timeout, mask);
	/* Counting touches no errno. A non-zero timeout is counted before the call,
	 * which is then a tail call; a zero timeout's count needs its result. */
	if (timeout != 0) {
		ef_observe(&tls.policy, timeout, 0);
		ef_stats_count(my_slot(), call, timeout, ef_fast_max_ms(w), EF_O_PASSED, 0, &tls.policy);
		return call_real(call, epfd, ev, maxevents, timeout, mask);
	}
	int r = call_real(call, epfd, ev, maxevents, 0, mask);
	ef_observe(&tls.policy, 0, r);
	ef_stats_count(my_slot(), call, 0, ef_fast_max_ms(w), EF_O_PASSED, r, &tls.policy);
	return r;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	return ef_wait(EF_CALL_WAIT, epfd, events, maxevents, timeout, NULL,
		       __builtin_return_address(0));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
		       const sigset_t *sigmask)
{
	return ef_wait(EF_CALL_PWAIT, epfd, events, maxevents, timeout, sigmask,
		       __builtin_return_address(0));
}
