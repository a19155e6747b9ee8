/* The exported symbols. Each is one line into ef_wait(), which asks the policy
 * and then calls the real function. Nothing here allocates or uses stdio. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "policy.h"
#include "real.h"
#include "state.h"
#include "stats.h"

#define EXPORT __attribute__((visibility("default")))
#define NS_PER_S 1000000000LL
#define REFUSED (-2) /* never a result of the real call */

static __thread struct ef_thread thread_state __attribute__((tls_model("initial-exec")));

static int call_real(enum ef_call call, int epfd, struct epoll_event *ev, int maxevents,
		     int timeout, const sigset_t *mask)
{
	return call == EF_CALL_WAIT ? ef_real_epoll_wait(epfd, ev, maxevents, timeout)
				    : ef_real_epoll_pwait(epfd, ev, maxevents, timeout, mask);
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
	int r = ef_real_epoll_pwait2(epfd, ev, maxevents, &ts, mask);
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
	static const char *const what[] = { "passed through", "upgraded to ", "clamped to ",
					    "clamped (no epoll_pwait2) to " };
	char text[256];
	struct ef_buf b = EF_BUF(text);

	ef_str(ef_int(ef_str(&b, "epollfix["), (long)getpid()), "] ");
	ef_str(&b, call == EF_CALL_WAIT ? "epoll_wait(epfd=" : "epoll_pwait(epfd=");
	ef_str(ef_int(ef_str(ef_int(&b, epfd), ", timeout="), timeout), "ms) ");
	ef_str(&b, what[d.action]);
	if (d.action == EF_UPGRADE || d.action == EF_CLAMP)
		ef_dur(&b, d.wait_ns);
	else if (d.action == EF_CLAMP_MS)
		ef_str(ef_int(&b, d.timeout_ms), "ms");
	ef_str(ef_int(ef_str(&b, " = "), r), "\n");
	ef_warn_line(&b);
}

static int ef_wait(enum ef_call call, int epfd, struct epoll_event *ev, int maxevents,
		   int timeout, const sigset_t *mask)
{
	struct ef_config c;

	if (!ef_state_config(&c) || c.disable)
		return call_real(call, epfd, ev, maxevents, timeout, mask);

	struct ef_thread *t = &thread_state;
	struct ef_decision d = ef_decide(&c, t, timeout);
	int r = REFUSED, fell_back = 0;

	if (d.action != EF_PASS && !ef_pwait2_usable()) {
		d = ef_without_pwait2(d, timeout);
		fell_back = 1;
	}
	if (d.action == EF_UPGRADE || d.action == EF_CLAMP)
		r = wait_fine(&c, epfd, ev, maxevents, d.wait_ns, mask);
	if (r == REFUSED) {
		if (d.action == EF_UPGRADE || d.action == EF_CLAMP) {
			d = ef_without_pwait2(d, timeout);
			fell_back = 1;
		}
		r = call_real(call, epfd, ev, maxevents, d.timeout_ms, mask);
	}

	int err = errno;
	ef_observe(t, timeout, r);
	ef_stats_count(&c, call, timeout, d.action, fell_back, r, t->empty_zero_streak);
	if (c.log >= EF_LOG_DEBUG)
		debug_line(call, epfd, timeout, d, r);
	errno = err;
	return r;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	return ef_wait(EF_CALL_WAIT, epfd, events, maxevents, timeout, NULL);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
		       const sigset_t *sigmask)
{
	return ef_wait(EF_CALL_PWAIT, epfd, events, maxevents, timeout, sigmask);
}
