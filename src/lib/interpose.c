/* The exported symbols. Each is one line into ef_wait(): most calls pass through
 * on one atomic load and one counter increment; the rest take ef_wait_slow(),
 * which asks the policy and then calls the real function. Nothing here
 * allocates or uses stdio. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "epollfix.h"
#include "fmt.h"
#include "log.h"
#include "policy.h"
#include "real.h"
#include "ration.h"
#include "recognize.h"
#include "sandbox.h"
#include "state.h"
#include "stats.h"
#include "wait_path.h"

#define EXPORT __attribute__((visibility("default")))
#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define REFUSED (-2) /* never a result of the real call */

/* One thread-local block, reached with one offset: the policy's memory of
 * this thread, the counters it owns and its timer slack. */
struct thread_block {
	/* The thread's slot while its calls may take the fast path; NULL sends
	 * them to the slow path: no slot yet (or the shared one), a run of
	 * upgraded waits open (ef_watching), or a hint set. */
	struct ef_slot *fast;
	struct ef_slot *zfast; /* the same for zero-timeout calls; NULL also while they are held */
	struct ef_slot *slot;
	int own_slack; /* the thread's own timer slack (ns); 0 until read, -1 unknown */
	int lowered;   /* the slack the library set for the wait under way; 0: none */
	/* The program's exact deadline for its next wait (epollfix_hint_ns), on
	 * CLOCK_MONOTONIC; 0: none. While one is set every call takes the slow path. */
	int64_t hint_deadline_ns;
	int64_t hint_ns; /* the hint as given: a call of exactly as many ms passes unchanged */
	struct ef_site_row *row; /* the report's row of the call site counted last */
	/* The configuration as this thread last copied it. A signal handler's
	 * call may take a new copy under a call of the thread's own: that call
	 * then reads both, each a whole configuration that was in force. */
	struct ef_config_copy config;
	/* Last, for its sites come last: a wait of a run reads the lines up to
	 * the first site, where a thread with one event loop keeps its own. */
	struct ef_thread policy;
};

/* What a wait of a run reads, up to the first site (272 bytes), lies in five
 * cache lines from a line's start, and from any 16-byte start too. The block
 * is aligned to 16, not to a line: a library loaded by dlopen (as
 * epollfix.enable() loads it) gets static TLS only up to the alignment of the
 * blocks already there, 16 on aarch64's glibc, which refuses more ("cannot
 * allocate memory in static TLS block"). Its size is whole lines: on x86-64
 * the loader lays the blocks down from the thread pointer, a line's start, in
 * load order, so a library preloaded into a program with no thread-local data
 * of its own (its block the first) starts on a line, as it did aligned to one. */
#define LINE 64
static __thread struct {
	struct thread_block b;
	char to_line_end[(LINE - sizeof(struct thread_block) % LINE) % LINE];
} tls_block __attribute__((tls_model("initial-exec"), aligned(16)));
#define tls (tls_block.b)

/* Gives a thread's slot back when it ends (ef_interpose_init): without it,
 * once 255 threads had existed every new one shared the last slot, and took
 * the slow path for every call. */
static pthread_key_t slot_key;
static int slot_key_ready;

static void thread_gone(void *unused)
{
	(void)unused;
	struct ef_slot *s = tls.slot;
	/* A call made after this (another destructor's) claims a slot anew. */
	tls.fast = tls.zfast = NULL;
	tls.slot = NULL;
	ef_stats_release(s);
}

void ef_interpose_init(void)
{
	/* glibc allocates the values of keys past its first 32 on a thread's
	 * first pthread_setspecific, and the wait path never allocates: such a
	 * key is not used (threads then keep their slots). musl never does. */
	if (pthread_key_create(&slot_key, thread_gone) == 0)
#ifdef __GLIBC__
		slot_key_ready = slot_key < 32;
#else
		slot_key_ready = 1;
#endif
}

static __attribute__((noinline)) struct ef_slot *claim_slot(void)
{
	ef_interpose_notice_child();
	tls.slot = ef_stats_claim();
	if (slot_key_ready && !ef_stats_shared(tls.slot))
		pthread_setspecific(slot_key, &tls);
	return tls.slot;
}

static inline struct ef_slot *my_slot(void)
{
	if (__builtin_expect(!tls.slot, 0))
		return claim_slot();
	return tls.slot;
}

void ef_interpose_after_fork(void)
{
	ef_stats_after_fork(tls.slot);
}

/* fork() copies one thread: a lock, an odd seq, a probe or a read of the
 * environment that another thread had under way would stay so forever in the
 * child, and the counts would be the parent's. The atfork handler
 * (lifecycle.c) runs this in the child; a child made by a call that runs no
 * such handler notices later (new_process). */
void ef_interpose_child(void)
{
	ef_state_after_fork();
	ef_pwait2_after_fork();
	ef_filters_after_fork(1);
	ef_interpose_after_fork();
	ef_ration_after_fork();
}

/* In a child made with its own copy of memory by a call that runs no atfork
 * handler (libc's clone, a raw clone or clone3), noticed where it next enters
 * the library off the fast path (its counts were zeroed by the kernel,
 * stats.c): what the fork handler does, but for the slots of the parent's
 * other threads, which stay taken (the thread here need not be the one that
 * made the child, whose slot it could then give away). */
static __attribute__((noinline, cold)) void new_process(void)
{
	int saved = errno;
	ef_state_after_fork();
	ef_pwait2_after_fork();
	ef_filters_after_fork(0);
	ef_ration_after_fork();
	if (tls.slot)
		ef_stats_add(tls.slot, EF_K_THREADS);
	errno = saved;
}

void ef_interpose_notice_child(void)
{
	if (__builtin_expect(ef_stats_new_process(), 0))
		new_process();
}

/* After the slow path: may the thread's next call take the fast path? It calls
 * the real functions without checking that they are resolved. */
static void fast_again(void)
{
	struct ef_slot *s = tls.slot;
	struct ef_slot *fast =
		s && !ef_stats_shared(s) && !tls.hint_deadline_ns && !ef_watching(&tls.policy) ? s
											       : NULL;
	/* Only when the fast path opens again, not at every wait of a run. */
	if (fast && !tls.fast)
		ef_real_init();
	tls.fast = fast;
	tls.zfast = ef_fast_zero_held() ? NULL : fast;
}

/* ---- Timer slack ------------------------------------------------------------
 * The configured slack is in force for an upgraded wait only: set just before
 * it, and the thread's own put back as soon as it returns. The program's own
 * code never runs with the library's slack, so nothing it creates (a process
 * or thread by any call, libc's own helper threads) can inherit it: the
 * kernel copies the slack in force into a new task, as its default too. Only
 * a signal handler that interrupts the wait runs with it; a fork there is
 * covered by the atfork handler, and prctl answers the thread's own. The own
 * value is read once per thread, and follows the program's own
 * PR_SET_TIMERSLACK (prctl). */

static int real_slack(int op, unsigned long v)
{
	return ef_real_prctl()(op, v, 0UL, 0UL, 0UL);
}

/* 1 when no seccomp filter the program installed refuses the library's prctl. */
static int slack_allowed(void)
{
	return !(ef_sandbox_denied() & EF_DENY_SLACK);
}

/* The thread's own slack back in force, if the library's is. Once a filter
 * refuses the library's prctl, a thread keeps what it has: asking could kill.
 * checked: no filter can have come since the check before the wait
 * (ef_filters_seen_alone), so none is made again. */
static void slack_back(int checked)
{
	if (__builtin_expect(!tls.lowered, 1))
		return;
	int saved = errno;
	checked = slack_allowed() && (checked || ef_filters_seen());
	if (checked)
		real_slack(PR_SET_TIMERSLACK, (unsigned long)tls.own_slack);
	/* The check could not be made for a moment (EMFILE): kept, so the
	 * thread's next call, on the slow path, tries again. */
	if (checked || !slack_allowed())
		tls.lowered = 0;
	errno = saved;
}

static void slack_restore(void)
{
	slack_back(0);
}

/* Before an upgraded wait: the configured slack (none for `keep`, nor where
 * the thread's own is that already, or finer: the wait then makes one system
 * call, and there is nothing to put back). A signal handler's wait under the
 * interrupted one finds it set, and its restore puts the own back early. */
static void slack_for_wait(const struct ef_config *c)
{
	int want = c->slack_ns > 0 && c->slack_ns <= INT_MAX && slack_allowed() ? (int)c->slack_ns : 0;

	if (!want || want == tls.lowered)
		return;
	if (!tls.own_slack) {
		int own = real_slack(PR_GET_TIMERSLACK, 0);
		tls.own_slack = own > 0 ? own : -1;
	}
	if (tls.own_slack < 0 || tls.own_slack <= want)
		return;
	int saved = errno;
	if (real_slack(PR_SET_TIMERSLACK, (unsigned long)want) == 0)
		tls.lowered = want;
	errno = saved;
}

/* The program sets its own slack (a signal handler, during a wait): it takes
 * effect, and is the one restored. */
static int set_own_slack(unsigned long v)
{
	int r = real_slack(PR_SET_TIMERSLACK, v);
	if (r == 0) {
		tls.lowered = 0;
		/* 0 restores the thread's default: read again when needed. */
		tls.own_slack = v == 0 ? 0 : v <= INT_MAX ? (int)v : -1;
	}
	return r;
}

/* fork() copies the slack in force, and makes it the child's default: a
 * signal handler that forks during a wait gives the child the thread's own. */
void ef_interpose_before_fork(void)
{
	slack_restore();
}

/* The fast path's: resolved by fast_again() before the thread got there. */
static inline __attribute__((always_inline)) int call_ready(enum ef_call call, int epfd,
							    struct epoll_event *ev, int maxevents,
							    int timeout, const sigset_t *mask)
{
	return call == EF_CALL_WAIT ? ef_real_epoll_wait_ready()(epfd, ev, maxevents, timeout)
				    : ef_real_epoll_pwait_ready()(epfd, ev, maxevents, timeout, mask);
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

/* epoll_pwait2 for ns, with the configured slack if c (an upgrade's wait; a
 * clamp's keeps the thread's own). alone: ef_pwait2_usable's, for this wait
 * (the one thread, before it). Returns its result, or REFUSED with errno
 * as on entry and the error in *why when the real call must run instead:
 * after any error but EINTR the real call gives the exact errno the program
 * would have seen, and ENOSYS or EPERM mean a filter or kernel said no for
 * good. */
static int wait_fine(const struct ef_config *c, int epfd, struct epoll_event *ev, int maxevents,
		     int64_t ns, const sigset_t *mask, int alone, int *why)
{
	struct timespec ts = { .tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S };
	int saved = errno;

	if (c)
		slack_for_wait(c);
	int r = ef_real_epoll_pwait2()(epfd, ev, maxevents, &ts, mask);
	int err = errno;
	/* The one thread, and no signal handler ran on it during the wait: no
	 * filter came since the check (real.c). */
	slack_back(alone && !(r < 0 && err == EINTR));
	if (r >= 0 || err == EINTR) {
		errno = r >= 0 ? saved : err;
		return r;
	}
	if (err == ENOSYS || err == EPERM)
		ef_pwait2_refused(err);
	*why = err;
	errno = saved;
	return REFUSED;
}

/* The real call ran after epoll_pwait2 failed with why, and returned r. When
 * it succeeded, the error was not the program's but epoll_pwait2's own (a
 * filter that answers EINVAL or EBADF): it is given up, so no later wait pays
 * a failed call first. */
static void refused_then(int why, int r)
{
	if (r >= 0)
		ef_pwait2_refused(why);
}

static __attribute__((noinline, cold)) void debug_line(enum ef_call call, int epfd, int timeout,
						       struct ef_decision d, int r)
{
	static const char *const what[] = { "passed through", "passed through (1ms meant)",
					    "upgraded to ", "clamped to ",
					    "clamped (no epoll_pwait2) to ",
					    "to the deadline's bound, " };
	char ms[16] = "";

	if (d.action == EF_CLAMP_MS)
		ef_fmt(&EF_BUF(ms), "%dms", d.timeout_ms);
	ef_log(EF_LOG_DEBUG, "%s(epfd=%d, timeout=%dms) %s%s = %d",
	       call == EF_CALL_WAIT ? "epoll_wait" : "epoll_pwait", epfd, timeout, what[d.action],
	       d.action == EF_UPGRADE || d.action == EF_CLAMP || d.action == EF_BOUNDED
		       ? EF_DUR(d.wait_ns)
		       : ms,
	       r);
}

static enum ef_outcome outcome_of(enum ef_action meant, enum ef_action done)
{
	if (meant == EF_GENUINE)
		return EF_O_GENUINE;
	if (meant == EF_UPGRADE || meant == EF_BOUNDED)
		return done == meant ? EF_O_UPGRADED : EF_O_UPGRADE_FELL_BACK;
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

#define NOT_HINTED (-3) /* never a result of the real call, nor REFUSED */

static __attribute__((noinline, cold)) void hint_debug_line(enum ef_call call, int epfd,
							     int timeout, int64_t wait_ns, int r)
{
	ef_log(EF_LOG_DEBUG, "%s(epfd=%d, timeout=%dms) hinted: %s%s = %d",
	       call == EF_CALL_WAIT ? "epoll_wait" : "epoll_pwait", epfd, timeout,
	       wait_ns < 0 ? "passed through" : wait_ns == 0 ? "the deadline passed, a poll" : "to the deadline, ",
	       wait_ns > 0 ? EF_DUR(wait_ns) : "",
	       r);
}

/* A wait under a hint (epollfix_hint_ns): no guess, no policy. The call's
 * timeout must be the time left, rounded up to whole ms, or one more (the
 * program read its clock a little before ours), or the hint rounded up (the
 * program read its clock for both, and was preempted between the hint and
 * the call, maybe past the deadline): then it waits until the
 * deadline, whatever its length (never past the call's own timeout, which is
 * at least the time left), or passes unchanged when its timeout is the hint
 * itself in whole ms. Otherwise the hint is stale: dropped, counted, and the
 * call goes to the policy as if there had been none. Either way the hint is
 * this call's only, whatever it returns: EINTR too, for a program may give
 * up after a signal (CPython does once its deadline has passed), and a
 * program that retries says its hint again. */
static int hinted_wait(enum ef_call call, int epfd, struct epoll_event *ev, int maxevents,
		       int timeout, const sigset_t *mask, const struct ef_config *c)
{
	int64_t hint = tls.hint_ns, deadline = tls.hint_deadline_ns, left = deadline - mono_ns();
	tls.hint_deadline_ns = 0; /* before the wait: a signal handler's wait cannot take it */
	if (left < 0)
		left = 0;
	int64_t fit = left / NS_PER_MS + (left % NS_PER_MS != 0);
	int64_t said = hint / NS_PER_MS + (hint % NS_PER_MS != 0);

	if (timeout != fit && timeout != fit + 1 && timeout != said) {
		ef_stats_add(my_slot(), EF_K_HINT_STALE);
		return NOT_HINTED;
	}
	/* A run the policy had open ends here: what it chased is not this. */
	tls.policy.run.open = 0;
	enum ef_outcome o = EF_O_HINTED;
	int r = REFUSED, why = 0, asked = timeout;
	int64_t waited = -1;
	if ((int64_t)timeout * NS_PER_MS != hint) {
		if (left == 0) { /* the deadline has passed: a poll */
			timeout = 0;
			waited = 0;
		} else {
			int alone;
			if (ef_pwait2_usable((int)c->seccomp, &alone)) {
				/* What is left once the check is made (loaded with
				 * dlopen, a read of /proc/self/status, about 6 us):
				 * the deadline is the program's, not the check's. */
				left = deadline - mono_ns();
				if (left < 0)
					left = 0;
				r = wait_fine(c, epfd, ev, maxevents, left, mask, alone, &why);
				if (r != REFUSED)
					waited = left;
				if (r == 0) /* timed out: how late after the program's deadline */
					ef_stats_late(my_slot(), mono_ns() - deadline);
			}
			if (r == REFUSED)
				o = EF_O_UPGRADE_FELL_BACK;
		}
	}
	if (r == REFUSED) {
		r = call_real(call, epfd, ev, maxevents, timeout, mask);
		if (why)
			refused_then(why, r);
	}
	int err = errno;
	/* A poll (the deadline passed, before or after the check) is counted
	 * with timeout 0, whatever the call said, as its debug line says. */
	ef_stats_count(my_slot(), call, waited == 0 ? 0 : timeout, (int)c->max_ms, o, r);
	fast_again();
	if (ef_log_on(EF_LOG_DEBUG))
		hint_debug_line(call, epfd, asked, waited, r);
	errno = err;
	return r;
}

/* The policy's protocol (policy.h): before, the wait it chose (or the real
 * call when epoll_pwait2 is unusable), after. */
static EF_WAIT_PATH __attribute__((noinline)) int ef_wait_slow(enum ef_call call, int epfd,
							       struct epoll_event *ev,
							       int maxevents, int timeout,
							       const sigset_t *mask, const void *ra)
{
	struct ef_thread *t = &tls.policy;
	ef_interpose_notice_child();
	const struct ef_config *c = ef_fast_disabled() ? NULL : ef_state_config_copy(&tls.config);

	if (!c || c->disable) {
		t->run.open = 0;
		tls.hint_deadline_ns = 0;
		return call_real(call, epfd, ev, maxevents, timeout, mask);
	}
	if (tls.hint_deadline_ns) {
		int r = hinted_wait(call, epfd, ev, maxevents, timeout, mask, c);
		if (r != NOT_HINTED)
			return r;
	}
	struct ef_request in = { .timeout_ms = timeout, .site = ra };
	enum ef_runtime rt = EF_RT_UNKNOWN;
	if (ef_wants_caller(c, timeout))
		in.caller = caller_of(rt = ef_caller_runtime(ra));
	if (ef_wants_clock(c, t, timeout))
		in.now_ns = mono_ns();
	struct ef_decision d = ef_before(c, t, &in);
	int rationed = d.action == EF_UPGRADE && d.ration_ns >= 0 &&
		       !ef_ration_take(c->max_extra, in.now_ns);
	if (rationed)
		d = ef_rationed(t, d, timeout);
	enum ef_action meant = d.action;
	int r = REFUSED, why = 0, alone = 0;

	learned(d.learned);
	int fine = d.action == EF_UPGRADE || d.action == EF_CLAMP || d.action == EF_BOUNDED;
	if (fine && !ef_pwait2_usable((int)c->seccomp, &alone)) {
		d = ef_without_pwait2(d, timeout);
		fine = 0;
	}
	if (fine) {
		r = wait_fine(d.action == EF_CLAMP ? NULL : c, epfd, ev, maxevents, d.wait_ns, mask,
			      alone, &why);
		if (r == REFUSED)
			d = ef_without_pwait2(d, timeout);
	}
	if (r == REFUSED) {
		r = call_real(call, epfd, ev, maxevents, d.timeout_ms, mask);
		if (why)
			refused_then(why, r);
	}

	int err = errno;
	int64_t end = ef_wants_end_clock(c, &in, d) ? mono_ns() : 0;
	if (d.action == EF_UPGRADE && r == 0 && end)
		ef_stats_late(my_slot(), end - in.now_ns - d.wait_ns);
	learned(ef_after(c, t, &in, d, r, end));
	if (d.ended)
		ef_stats_site_ended(my_slot(), &tls.row, d.ended);
	if (rationed)
		ef_stats_add(my_slot(), EF_K_RATIONED);
	if (ef_rounded_up(c, timeout))
		ef_stats_site(my_slot(), &tls.row, ra, ef_site_of(t, ra), d, caller_flags(rt));
	ef_stats_count(my_slot(), call, timeout, (int)c->max_ms, outcome_of(meant, d.action), r);
	fast_again();
	if (ef_log_on(EF_LOG_DEBUG))
		debug_line(call, epfd, timeout, d, r);
	errno = err;
	return r;
}

/* The slow path's entries, one per function: with at most six arguments the
 * fast path reaches them with a jump and needs no frame of its own. */
static EF_WAIT_PATH __attribute__((noinline)) int slow_wait(int epfd, struct epoll_event *ev,
							    int maxevents, int timeout,
							    const void *ra)
{
	return ef_wait_slow(EF_CALL_WAIT, epfd, ev, maxevents, timeout, NULL, ra);
}

static EF_WAIT_PATH __attribute__((noinline)) int slow_pwait(int epfd, struct epoll_event *ev,
							     int maxevents, int timeout,
							     const sigset_t *mask, const void *ra)
{
	return ef_wait_slow(EF_CALL_PWAIT, epfd, ev, maxevents, timeout, mask, ra);
}

/* Cold tails of the fast path: a call after a streak of empty zero-timeout
 * polls ends it, for the policy and for the report. They use tls.slot, the
 * same slot as tls.fast was: a signal handler's call during the real one may
 * have cleared tls.fast since. */
static void streak_ended(int timeout, int result)
{
	ef_observe(&tls.policy, timeout, result);
	ef_stats_streak_end(tls.slot);
}

static __attribute__((noinline, cold)) int streak_then_wait(int epfd, struct epoll_event *ev,
							    int maxevents, int timeout)
{
	streak_ended(timeout, 0);
	return ef_real_epoll_wait_ready()(epfd, ev, maxevents, timeout);
}

static __attribute__((noinline, cold)) int streak_then_pwait(int epfd, struct epoll_event *ev,
							     int maxevents, int timeout,
							     const sigset_t *mask)
{
	streak_ended(timeout, 0);
	return ef_real_epoll_pwait_ready()(epfd, ev, maxevents, timeout, mask);
}

/* After a zero-timeout poll that found events (or failed), or that passed
 * while such polls were being held for the slow path: it is counted as what
 * it was; the second makes the thread's next ones slow. */
static __attribute__((noinline, cold)) int zero_after(enum ef_call call, int r)
{
	if (ef_fast_zero_held())
		tls.zfast = NULL;
	if (r == 0) {
		ef_slot_bump(tls.slot, EF_K_EMPTY + call);
		return r;
	}
	ef_slot_bump(tls.slot, ef_key(call, EF_T_ZERO, EF_O_PASSED));
	if (ef_slot_streak_open(tls.slot))
		streak_ended(0, r);
	return r;
}

/* The caller's return address is read only on the way to the slow path (the
 * fast path is inlined into the exported function, whose caller it is). */
/* Not inlined, nor specialised for its constant arguments (gcc would then
 * make again in a register the 0 that is already there). */
#if defined(__has_attribute) && __has_attribute(noipa)
#define EF_NOIPA __attribute__((noipa))
#else
#define EF_NOIPA __attribute__((noinline))
#endif

/* A zero-timeout poll, counted once it is known whether it was empty: a
 * counter taken back after a reader saw it would look to Prometheus like a
 * reset. s is tls.zfast as read before the call, kept across it in a
 * register the call preserves: after a system call a reload of the thread's
 * data cost more than the saving of that register. It is still the thread's
 * slot (tls.slot), which never changes while the thread runs; a signal
 * handler's call during the real one may clear tls.zfast, not that. One
 * comparison asks both whether the poll was empty and whether zero-timeout
 * calls are held (ef_fast_zero_empty). */
static EF_WAIT_PATH EF_NOIPA int zero_wait(int epfd, struct epoll_event *ev, int maxevents,
					    int timeout, struct ef_slot *s)
{
	int r = ef_real_epoll_wait_ready()(epfd, ev, maxevents, timeout);
	if (__builtin_expect(!ef_fast_zero_empty(r), 0))
		return zero_after(EF_CALL_WAIT, r);
	ef_slot_bump(s, EF_K_EMPTY + EF_CALL_WAIT);
	__asm__("" : "+r"(r)); /* r is 0 and in place: not to be made again */
	return r;
}

static EF_WAIT_PATH EF_NOIPA int zero_pwait(int epfd, struct epoll_event *ev, int maxevents,
					     int timeout, const sigset_t *mask, struct ef_slot *s)
{
	int r = ef_real_epoll_pwait_ready()(epfd, ev, maxevents, timeout, mask);
	if (__builtin_expect(!ef_fast_zero_empty(r), 0))
		return zero_after(EF_CALL_PWAIT, r);
	ef_slot_bump(s, EF_K_EMPTY + EF_CALL_PWAIT);
	__asm__("" : "+r"(r));
	return r;
}

#define SLOW(call, epfd, ev, maxevents, timeout, mask)                                       \
	((call) == EF_CALL_WAIT                                                              \
		 ? slow_wait(epfd, ev, maxevents, timeout, __builtin_return_address(0))      \
		 : slow_pwait(epfd, ev, maxevents, timeout, mask, __builtin_return_address(0)))

/* A non-zero timeout that passes, counted under key k: the real call as a
 * tail call, unless a streak of empty polls ends here. */
static inline __attribute__((always_inline)) int pass_nonzero(enum ef_call call, struct ef_slot *s,
							      unsigned k, int epfd,
							      struct epoll_event *ev,
							      int maxevents, int timeout,
							      const sigset_t *mask)
{
	ef_slot_bump(s, k);
	if (__builtin_expect(ef_slot_streak_open(s), 0))
		return call == EF_CALL_WAIT ? streak_then_wait(epfd, ev, maxevents, timeout)
					    : streak_then_pwait(epfd, ev, maxevents, timeout, mask);
	return call_ready(call, epfd, ev, maxevents, timeout, mask);
}

/* A call the policy leaves alone costs a comparison with its kind's fast
 * word, a load of the thread's fast slot and one counter, before the real
 * call; for a non-zero timeout that is a tail call. Counting touches no
 * errno. Every other call from here is a tail call, so only the zero-timeout
 * path needs a frame. */
static inline __attribute__((always_inline)) int ef_wait(enum ef_call call, int epfd,
							 struct epoll_event *ev, int maxevents,
							 int timeout, const sigset_t *mask)
{
	struct ef_slot *s;

	if (timeout != 0) {
		if (timeout < 0) {
			if (__builtin_expect(!ef_fast_pass_negative() || !(s = tls.fast), 0))
				return SLOW(call, epfd, ev, maxevents, timeout, mask);
			return pass_nonzero(call, s, ef_key(call, EF_T_NEGATIVE, EF_O_PASSED), epfd,
					    ev, maxevents, timeout, mask);
		}
		if (__builtin_expect(!ef_fast_pass_positive(timeout) || !(s = tls.fast), 0))
			return SLOW(call, epfd, ev, maxevents, timeout, mask);
		return pass_nonzero(call, s, ef_key(call, EF_T_LONGER, EF_O_PASSED), epfd, ev,
				    maxevents, timeout, mask);
	}
	if (__builtin_expect(!(s = tls.zfast), 0))
		return SLOW(call, epfd, ev, maxevents, 0, mask);
	/* Counted after the call, as what it was. The call that needs a frame is
	 * in a function of its own: the other paths have none. */
	__asm__("" : "+r"(timeout)); /* 0, and already where the call wants it */
	return call == EF_CALL_WAIT ? zero_wait(epfd, ev, maxevents, timeout, s)
				    : zero_pwait(epfd, ev, maxevents, timeout, mask, s);
}

EF_WAIT_PATH EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	return ef_wait(EF_CALL_WAIT, epfd, events, maxevents, timeout, NULL);
}

EF_WAIT_PATH EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents,
				     int timeout, const sigset_t *sigmask)
{
	return ef_wait(EF_CALL_PWAIT, epfd, events, maxevents, timeout, sigmask);
}

/* ---- Exact timeouts (include/epollfix.h) --------------------------------------- */

EXPORT int epollfix_hint_ns(int64_t timeout_ns)
{
	if (timeout_ns < 0) {
		tls.hint_deadline_ns = 0;
	} else {
		int64_t now = mono_ns();
		/* Never 0, which means none; far deadlines saturate. */
		tls.hint_deadline_ns = timeout_ns < INT64_MAX - now ? now + timeout_ns : INT64_MAX;
		tls.hint_ns = timeout_ns;
	}
	/* Open or close the thread's fast path: a hinted call must reach the slow one. */
	fast_again();
	return 0;
}

EXPORT int epollfix_epoll_wait_ns(int epfd, struct epoll_event *events, int maxevents,
				  int64_t timeout_ns)
{
	if (timeout_ns <= 0)
		return ef_wait(EF_CALL_WAIT, epfd, events, maxevents, timeout_ns < 0 ? -1 : 0, NULL);
	/* Rounded up without an addition that INT64_MAX would overflow. */
	int64_t ms = timeout_ns / NS_PER_MS + (timeout_ns % NS_PER_MS != 0);
	epollfix_hint_ns(timeout_ns);
	return ef_wait(EF_CALL_WAIT, epfd, events, maxevents, ms < INT_MAX ? (int)ms : INT_MAX, NULL);
}

/* ---- prctl and syscall --------------------------------------------------------
 * Watched for the thread's own timer slack and for seccomp filters; every other
 * request goes to libc's function unchanged, errno included. */

/* A seccomp request: the thread's own slack back first (a filter may refuse
 * the library's prctl from now on), then read and passed on (real.c). */
static long seccomp_request(int via_prctl, unsigned long op, unsigned long flags, void *prog)
{
	ef_interpose_notice_child();
	const struct ef_config *c = ef_state_config_copy(&tls.config);
	slack_restore();
	fast_again();
	return ef_seccomp_set(via_prctl, op, flags, prog, c ? c->slack_ns : 1000);
}

/* prctl's requests the library watches; -2 (never a result of prctl): none. */
#define NOT_WATCHED (-2L)

static long watched_prctl(int option, unsigned long a2, unsigned long a3)
{
	switch (option) {
	case PR_SET_TIMERSLACK:
		return set_own_slack(a2);
	case PR_GET_TIMERSLACK:
		/* The program's own, not the one the library keeps for a run. */
		return tls.lowered ? tls.own_slack : NOT_WATCHED;
	case PR_SET_SECCOMP:
		return seccomp_request(1, a2, 0, (void *)a3);
	}
	return NOT_WATCHED;
}

EXPORT int prctl(int option, ...)
{
	unsigned long a[4];

	EF_PRCTL_ARGS(option, a);
	if (option == PR_SET_TIMERSLACK || option == PR_GET_TIMERSLACK || option == PR_SET_SECCOMP) {
		long r = watched_prctl(option, a[0], a[1]);
		if (r != NOT_WATCHED)
			return (int)r;
	}
	return ef_real_prctl()(option, a[0], a[1], a[2], a[3]);
}

/* Six arguments are read whatever the caller passed, as libc's own syscall()
 * reads six registers: past a short call's last one, va_arg reads the
 * caller's stack, which AddressSanitizer would call an overflow. */
#if defined(__has_attribute) && __has_attribute(no_sanitize_address)
__attribute__((no_sanitize_address))
#endif
EXPORT long syscall(long number, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (__builtin_expect(number == SYS_seccomp, 0))
		return seccomp_request(0, (unsigned long)a[0], (unsigned long)a[1], (void *)a[2]);
	if (__builtin_expect(number == SYS_prctl, 0)) {
		long r = watched_prctl((int)a[0], (unsigned long)a[1], (unsigned long)a[2]);
		if (r != NOT_WATCHED)
			return r;
	}
	return ef_real_syscall()(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
