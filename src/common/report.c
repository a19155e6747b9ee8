#include "report.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "sandbox.h"

struct ef_buf *ef_policy_line(const struct ef_config *c, struct ef_buf *out)
{
	for (size_t i = 0; i < ef_nvars; i++) {
		if (ef_vars[i].kind == EF_KIND_TEXT)
			continue;
		ef_fmt(out, "%s%s=", i ? " " : "", ef_vars[i].name);
		ef_config_show(ef_config_get(c, &ef_vars[i]), &ef_vars[i], out);
	}
	return out;
}

struct ef_buf *ef_pwait2_why(int why, struct ef_buf *out)
{
	if (why < 0)
		return ef_fmt(out, "a probe was killed by signal %d%s", -why,
			      -why == SIGSYS ? " (SIGSYS: a seccomp filter kills or traps it)" : "");
	switch (why) {
	case EF_WHY_UNKNOWN_FILTER:
		return ef_fmt(out, "a seccomp filter of unknown content was in force at start; "
				   "EPOLLFIX_SECCOMP=probe would ask a child");
	case EF_WHY_NO_CONTAINER:
		return ef_fmt(out, "an unknown seccomp filter was in force at start, outside a container; "
				   "EPOLLFIX_SECCOMP=probe asks a child");
	case EF_WHY_FILTER_DENIES:
		return ef_fmt(out, "a seccomp filter the program installed would kill or trap it");
	case EF_WHY_FILTER_UNSEEN:
		return ef_fmt(out, "a seccomp filter was installed that the library, loaded with "
				   "dlopen and not preloaded, could not read first");
	case EF_WHY_PROBE_SILENT:
		return ef_fmt(out, "the probe, a child under the same filter, gave no answer in %d ms "
				   "(a listener?) and was killed",
			      (int)(EF_PROBE_PATIENCE_NS / 1000000));
	case EF_WHY_PROBE_NO_CHILD:
		return ef_fmt(out, "the probe, a child under the same filter, could not start (clone refused)");
	case EF_WHY_PROBE_NOT_AT_START:
		return ef_fmt(out, "a seccomp filter of unknown content was in force at start, and no probe "
				   "was made then (the library was off, or this process was forked while its "
				   "parent's probe ran); a probe is made at start only");
	case EF_WHY_DLOPEN_FILTER:
		return ef_fmt(out, "loaded with dlopen under a seccomp filter that may be the program's own; "
				   "EPOLLFIX_SECCOMP=probe asks a child");
	case EF_WHY_PROBE_LOST:
		return ef_fmt(out, "the probe's exit was taken by the program's own wait for every child");
	}
	if (why >= EF_WHY_COUNT_UNREAD && why < EF_WHY_COUNT_UNREAD + 1000)
		return ef_fmt(out, "loaded with dlopen, it cannot see seccomp filters in "
				   "/proc/self/status (%s)",
			      why > EF_WHY_COUNT_UNREAD ? strerror(why - EF_WHY_COUNT_UNREAD)
							: "no filter count");
	return ef_fmt(out, "%s",
		      why == ENOSYS ? "ENOSYS: kernel before 5.11 or a filter"
		      : why == EPERM ? "EPERM: refused by a seccomp filter"
				     : strerror(why));
}

struct ef_buf *ef_pwait2_line(enum ef_pwait2_state state, int why, struct ef_buf *out)
{
	switch (state) {
	case EF_PW2_OK:
		return ef_fmt(out, "available");
	case EF_PW2_NO:
		return ef_fmt(ef_pwait2_why(why, ef_fmt(out, "unavailable (")), ")");
	case EF_PW2_PROBING:
		return ef_fmt(out, "being probed");
	default:
		return ef_fmt(out, "not probed (no call needed it)");
	}
}

/* A busy loop this long, with the clamp off, earns a hint in the report. */
#define HINT_STREAK 1000

/* A bucket's bound: "64us", or "more" for the open one. */
static struct ef_buf *late_bound(uint64_t us, struct ef_buf *out)
{
	return us == UINT64_MAX ? ef_fmt(out, "more") : ef_fmt(out, "%" PRIu64 "us", us);
}

struct ef_buf *ef_late_line(const struct ef_totals *t, struct ef_buf *out)
{
	uint64_t n = 0;
	for (unsigned b = 0; b < EF_LATE_BUCKETS; b++)
		n += t->late[b];
	if (!n)
		return ef_fmt(out, "no timed waits");
	late_bound(ef_late_quantile_us(t, 500), ef_fmt(out, "p50 <= "));
	late_bound(ef_late_quantile_us(t, 990), ef_fmt(out, ", p99 <= "));
	return ef_fmt(out, ", mean %" PRIu64 "us (%" PRIu64 " waits)", t->late_ns / n / 1000, n);
}

static struct ef_buf *line(struct ef_buf *b, long pid, const char *key)
{
	return ef_fmt(b, "epollfix[%ld] %s: ", pid, key);
}

static void head(const struct ef_totals *t, const struct ef_config *c, long pid,
		 const char *comm, const char *pwait2, const char *runtimes, struct ef_buf *out)
{
	const uint64_t *k = t->by_class;

	ef_fmt(line(out, pid, "report"), "%s\n", comm);
	ef_fmt(line(out, pid, "calls"), "%" PRIu64 " (epoll_wait %" PRIu64 ", epoll_pwait %" PRIu64 ")\n",
	       t->calls[EF_CALL_WAIT] + t->calls[EF_CALL_PWAIT], t->calls[EF_CALL_WAIT],
	       t->calls[EF_CALL_PWAIT]);
	ef_fmt(line(out, pid, "by timeout"), "negative %" PRIu64 ", 0 %" PRIu64 ", 1ms %" PRIu64,
	       k[EF_T_NEGATIVE], k[EF_T_ZERO], k[EF_T_ONE_MS]);
	if (c->max_ms > 1) /* else the class is empty by definition */
		ef_fmt(out, ", 2..%" PRId64 "ms %" PRIu64, c->max_ms, k[EF_T_UP_TO_MAX]);
	ef_fmt(out, ", longer %" PRIu64 "\n", k[EF_T_LONGER]);
	ef_fmt(line(out, pid, "upgraded"), "%" PRIu64 "\n", t->upgraded);
	ef_fmt(line(out, pid, "clamped"), "%" PRIu64 "\n", t->clamped);
	ef_fmt(line(out, pid, "passed through"), "%" PRIu64 "\n", t->passed);
	if (c->adapt) /* what the adaptive policy recognised or learned, and when it changed its mind */
		ef_fmt(line(out, pid, "1ms left alone as meant"),
		       "%" PRIu64 " (recognised: %s; learned: %" PRIu64 " genuine, %" PRIu64
		       " sub-ms, %" PRIu64 " tried again)\n",
		       t->genuine, *runtimes ? runtimes : "none", t->learned_genuine, t->learned_subms,
		       t->retries);
	ef_fmt(line(out, pid, "hinted"), "%" PRIu64 " (exact timeouts the program said), stale hints %" PRIu64 "\n",
	       t->hinted, t->hint_stale);
	ef_late_line(t, line(out, pid, "late after timeout"));
	ef_fmt(out, "\n");
	ef_fmt(line(out, pid, "fell back"), "%" PRIu64 "\n", t->fell_back);
	if (t->rationed || c->max_extra)
		ef_fmt(line(out, pid, "rationed"),
		       "%" PRIu64 " (waits left as asked: more than %" PRId64 " added wake-ups a second)\n",
		       t->rationed, c->max_extra);
	ef_fmt(line(out, pid, "threads"), "%" PRIu64 " that waited (%" PRIu64 " shared the last slot: more than %d alive at once)\n",
	       t->threads, t->threads_shared, EF_SLOTS - 1);
	ef_fmt(line(out, pid, "empty zero-timeout polls"), "%" PRIu64 ", longest streak %" PRIu64 "\n",
	       t->empty_zero, t->longest_streak);
	ef_fmt(line(out, pid, "epoll_pwait2"), "%s\n", pwait2);
	ef_fmt(ef_policy_line(c, line(out, pid, "policy")), "\n");
	if (c->clamp_ns == 0 && t->longest_streak >= HINT_STREAK)
		ef_fmt(line(out, pid, "hint"),
		       "a busy loop of %" PRIu64 " empty zero-timeout polls in a row ran while the clamp"
		       " was off; EPOLLFIX_CLAMP=1ms would let it sleep\n",
		       t->longest_streak);
}


/* n / d with two decimals, as "1.23". */
static void ratio(struct ef_buf *b, uint64_t n, uint64_t d)
{
	uint64_t x100 = d ? (n * 100 + d / 2) / d : 0;
	ef_fmt(b, "%" PRIu64 ".%s%" PRIu64, x100 / 100, x100 % 100 < 10 ? "0" : "", x100 % 100);
}

static void site(const struct ef_site_view *row, const struct ef_config *c, long pid,
		 const char *where, struct ef_buf *out)
{
	unsigned f = row->flags;
	uint64_t up = row->c[EF_SC_UPGRADED], runs = row->c[EF_SC_RUNS];
	uint64_t alone = row->c[EF_SC_ALONE], ms = row->c[EF_SC_WAIT_NS] / 1000000;

	ef_fmt(line(out, pid, "site"), "%s: ", where);
	if (f & (EF_SF_RECOGNISED | EF_SF_LISTED_GENUINE)) {
		ef_fmt(out, "%s; %" PRIu64 " waits left alone (%s would upgrade them)\n",
		       f & EF_SF_LISTED_GENUINE ? "listed in EPOLLFIX_GENUINE_CALLERS"
						: "a runtime whose 1 ms is genuine",
		       alone, "EPOLLFIX_SUBMS_CALLERS naming its object");
		return;
	}
	if (f & EF_SF_LISTED_SUBMS) {
		ef_fmt(out, "listed in EPOLLFIX_SUBMS_CALLERS; %" PRIu64 " waits upgraded in SUBMS steps\n",
		       up);
		return;
	}
	/* A site that has shown both runs that end and a stream that does not is
	 * shown by what it mostly does: its runs while they account for its
	 * upgraded waits (no more a run than SUBMS steps take through its
	 * request), else the stream. One run cut short by a busy machine does not
	 * make a 1 ms ticker a loop whose runs end, nor one long stream the
	 * reverse. */
	uint64_t per_run = c->subms_ns > 0 ? (uint64_t)(c->max_ms * 1000000 / c->subms_ns) : 0;
	unsigned ends = (f & EF_SF_ENDS) && (!(f & EF_SF_ENDLESS) || up <= runs * per_run);
	unsigned endless = (f & EF_SF_ENDLESS) && !ends;
	ef_fmt(out, "%s%s%" PRIu64 " waits upgraded",
	       ends	 ? "runs of requests that end"
	       : endless ? "a stream of 1 ms requests that never ends"
			 : "no run ended yet",
	       f & EF_SF_PROVEN ? " (sub-ms deadlines seen); " : "; ", up);
	if (ends && runs) {
		ef_fmt(out, " for %" PRIu64 " deadlines (", runs);
		ratio(out, up, runs);
		ef_fmt(out, " per deadline)");
	}
	if (endless && ms) {
		ef_fmt(out, ", ");
		ratio(out, up, ms);
		ef_fmt(out, " per ms asked");
	}
	if (alone)
		ef_fmt(out, ", %" PRIu64 " left alone", alone);
	if (f & EF_SF_BACKED_OFF)
		ef_fmt(out, "; now left alone as genuine");
	else if (endless && c->adapt == EF_ADAPT_AUTO)
		ef_fmt(out, "; kept precise, in SUBMS steps (EPOLLFIX_ADAPT=safe leaves such a stream "
			    "alone: right for a loop that means its 1 ms)");
	else if (ends)
		ef_fmt(out, "; first waits go to the predicted deadline (EPOLLFIX_ADAPT=off polls in "
			    "SUBMS steps instead)");
	ef_fmt(out, "\n");
}

static const char *const names[EF_RT_COUNT] = {
	"unknown", "libuv", "nginx", "libevent", "Java NIO",
	"listed in EPOLLFIX_GENUINE_CALLERS", "listed in EPOLLFIX_SUBMS_CALLERS",
};

const char *ef_runtime_name(enum ef_runtime rt)
{
	return rt < EF_RT_COUNT ? names[rt] : "unknown";
}

void ef_runtimes_text(unsigned seen, struct ef_buf *b)
{
	size_t start = b->len;
	for (int i = 1; i < EF_RT_COUNT; i++)
		if (seen & (1u << i))
			ef_fmt(b, "%s%s", b->len > start ? ", " : "", ef_runtime_name((enum ef_runtime)i));
}

void ef_report_format(const struct ef_report_in *in, struct ef_buf *out)
{
	char pwait2[256], runtimes[128] = ""; /* stays empty when no runtime was recognised */
	struct ef_buf pw = EF_BUF(pwait2), rt = EF_BUF(runtimes);

	ef_pwait2_line(in->pw2, in->pw2_why, &pw);
	ef_runtimes_text(in->runtimes, &rt);
	head(in->t, in->c, in->pid, in->comm, pwait2, runtimes, out);
	for (unsigned i = 0; i < EF_SITE_ROWS && in->sites[i].ra; i++) {
		char where[512];
		struct ef_buf w = EF_BUF(where);
		in->where(in->sites[i].ra, in->ctx, &w);
		site(&in->sites[i], in->c, in->pid, where, out);
	}
}
