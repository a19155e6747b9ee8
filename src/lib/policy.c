#include "policy.h"
#include "wait_path.h"

#include <stddef.h>

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL

/* A program that comes back much later than its quickest re-ask after an empty
 * wake-up used it: gevent asks again within 1-2 us when no timer was due, and
 * runs a Python callback of 10-100 us when one was; asyncio's own empty turn
 * takes 4-7 us. The threshold is USED_GAP_FACTOR times the site's quickest re-ask
 * plus USED_GAP_SLOP_NS. A short gap says nothing: C callbacks are as quick as an
 * empty turn of the loop, and a program that uses every wake-up shows no quick
 * re-ask at all (its gaps all look alike: a stream that never ends). */
#define USED_GAP_FACTOR 3
#define USED_GAP_SLOP_NS (2 * NS_PER_US)
/* The quickest re-ask drifts up 1/QUICK_GAP_DRIFT of the way to a slower gap, so
 * one lucky fast turn does not set it for good; 1/USED_GAP_DRIFT of the way to one
 * judged used. Where first waits are predicted well every gap is a used one:
 * gevent's, followed by its Python callback. At 1/64 they pulled the threshold
 * above the callbacks within a few dozen runs, and two runs then ran into one
 * (18 SUBMS steps) until a probe's quick re-ask brought it down again. */
#define QUICK_GAP_DRIFT 64
#define USED_GAP_DRIFT 1024
/* A program that shows a deadline's passing by asking something else (asyncio,
 * trio and Tornado poll with 0 once a timer fired) uses no wake-up it asks the
 * same again after, however slowly: after a long sleep its turn runs with cold
 * caches (asyncio's 6 us became 20-40 us here under a slow allocator). Taken
 * for use, such a re-ask after an early wake-up ended the run there; its
 * deadline, far too early, sent the next probes earlier still, and a timer
 * 40 us away slept 700 us. Where most runs end so, a re-ask ends the run only
 * when it comes later than the program takes to ask something else after a
 * wake-up it used, plus the usual margin: it may have stopped asking, and a
 * run merged into the next costs wake-ups, not precision. */
#define ASKS_ELSE_MOST_OF_255 192
/* A run still going this long after its first request's timeout, having
 * asked for more than that timeout in waits, is no deadline being chased: it is
 * a stream of 1 ms requests that never ends. Counting what was asked, not only
 * the clock, keeps one wake-up delayed by a busy machine from looking like it. */
#define ENDLESS_PAST_BOUND_NS NS_PER_MS
/* Every so many runs, the first wait ends a little earlier than predicted, so
 * a deadline that moved earlier is found (the others only move it later). */
#define PROBE_EVERY_RUNS 8
/* A predicted run that needs more than PREDICTED_WAKES_MAX wake-ups after its first (one
 * more after a probe) went on long after the predicted deadline. Now and then
 * that is a deadline that moved later, or two of gevent's runs run into each
 * other; when most predicted runs do, the site's runs are no deadlines at all
 * but a stream of wake-ups the program uses, quickly (a C loop of 50 us
 * timers), cut at random points when a busy machine preempts the thread
 * between two waits, a gap that looks like use. Each such run would predict
 * the next as long as itself: first waits of a whole millisecond for 50 us
 * timers. So while most predicted runs go on (an average over about 8), the
 * site's runs are chased in SUBMS steps, and one in TRIAL_EVERY_RUNS is predicted
 * to see whether that still holds. */
#define PREDICTED_WAKES_MAX 2
#define WENT_ON_MOST_OF_255 128
#define TRIAL_EVERY_RUNS 16
/* EPOLLFIX_ADAPT=safe: runs ended without a deadline seen between two
 * wake-ups before the site is left alone. */
#define SAFE_UNPROVEN_RUNS 8
/* Waits left alone after a verdict of genuine, doubled each time it holds. */
#define BACKOFF_FIRST_WAITS 4096     /* 1 ms waits: about 4 s of a loop that waits 1 ms */
#define BACKOFF_MAX_WAITS (1u << 20) /* re-checked at least every ~17 minutes */
/* The most one wake-up teaches of how late wake-ups come back: a stall of
 * 20 ms taken whole sent the next first waits milliseconds early (3.88
 * wake-ups per 500 us timer over the next 8; 1.12 with the cap). */
#define OVERSHOOT_MAX_NS (100 * NS_PER_US)

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* An average of yes (255) and no (0) over about the last 8, in a byte. */
static uint8_t average8(uint8_t avg, int yes)
{
	return (uint8_t)(avg + ((yes ? 255 : 0) - avg) / 8);
}

/* A back-off of len waits, doubled for the next time it is confirmed. */
static void backoff_start(uint32_t *left, uint32_t *len)
{
	*len = *len ? *len : BACKOFF_FIRST_WAITS;
	*left = *len;
	*len = *len < BACKOFF_MAX_WAITS ? 2 * *len : BACKOFF_MAX_WAITS;
}

/* ---- The millisecond grid (per thread) ------------------------------------- */

/* A verdict once EF_LEARN_SAMPLES run ends are in, from the most that fall
 * within two adjacent bins (a quarter of a millisecond). Genuine at 6 of 7:
 * sub-ms deadlines end runs uniformly, and put 6 of 7 in one quarter by chance
 * with p of about 1%; a wrong verdict costs one back-off. Sub-ms at 4 or
 * fewer; 5 is too close to call, and sampling goes on, so one run end delayed
 * by a busy machine cannot misjudge a genuine loop for long. */
static enum ef_learned grid_verdict(struct ef_learn *l)
{
	unsigned best = 0;

	for (unsigned i = 0; i < EF_LEARN_BINS; i++) {
		unsigned w = l->bins[i] + l->bins[(i + 1) % EF_LEARN_BINS];
		best = w > best ? w : best;
	}
	for (unsigned i = 0; i < EF_LEARN_BINS; i++)
		l->bins[i] = 0;
	l->samples = 0;
	if (best >= EF_LEARN_SAMPLES - 1) {
		backoff_start(&l->backoff_left, &l->backoff_len);
		return EF_LEARNED_GENUINE;
	}
	if (best >= EF_LEARN_SAMPLES - 2)
		return EF_LEARNED_NOTHING;
	l->backoff_len = 0;
	return EF_LEARNED_SUBMS;
}

/* A run ended in an event; its last empty wait returned at end_ns. tokio's
 * first wait after its timer fires returns at once with its own wake-up, on
 * its millisecond tick; an I/O event at a random moment only adds a uniform
 * sample: the safe side. */
static enum ef_learned grid_sample(struct ef_learn *l, int64_t end_ns)
{
	l->bins[end_ns % NS_PER_MS * EF_LEARN_BINS / NS_PER_MS]++;
	return ++l->samples == EF_LEARN_SAMPLES ? grid_verdict(l) : EF_LEARNED_NOTHING;
}

/* ---- Call sites ------------------------------------------------------------ */

static struct ef_site *site_find(struct ef_thread *t, const void *ra)
{
	for (unsigned i = 0; i < EF_SITES; i++)
		if (t->sites[i].ra == ra)
			return &t->sites[i];
	return NULL;
}

EF_WAIT_PATH const struct ef_site *ef_site_of(const struct ef_thread *t, const void *ra)
{
	return site_find((struct ef_thread *)t, ra);
}

/* The thread's slot for ra; a new site takes a free slot, or the oldest. */
static struct ef_site *site_claim(struct ef_thread *t, const void *ra)
{
	struct ef_site *s = site_find(t, ra);

	if (s)
		return s;
	s = site_find(t, NULL);
	if (!s) {
		s = &t->sites[t->victim];
		t->victim = (uint8_t)((t->victim + 1) % EF_SITES);
		if (t->run.open && &t->sites[t->run.site] == s)
			t->run.open = 0;
	}
	*s = (struct ef_site){ .ra = ra };
	return s;
}

/* The earliest of the site's recent deadlines, as an offset from a run's start. */
static int64_t site_deadline(const struct ef_site *s)
{
	int64_t d = INT64_MAX;
	for (unsigned i = 0; i < s->ring_n; i++)
		d = min64(d, s->ring[i]);
	return d;
}

/* Whether a re-ask gap_ns after an empty wake-up says the program used it;
 * learns the site's quickest re-ask on the way. */
static int gap_used(struct ef_site *s, int64_t gap_ns)
{
	gap_ns = max64(gap_ns, 0);
	int64_t margin = USED_GAP_FACTOR * s->quick_gap_ns + USED_GAP_SLOP_NS;
	if (s->asks_else >= ASKS_ELSE_MOST_OF_255)
		margin += s->else_gap_ns;
	int used = s->quick_gap_ns && gap_ns > margin;
	if (!s->quick_gap_ns || gap_ns < s->quick_gap_ns)
		s->quick_gap_ns = max64(gap_ns, 1);
	else
		s->quick_gap_ns += (min64(gap_ns, 64 * NS_PER_US) - s->quick_gap_ns) /
				   (used ? USED_GAP_DRIFT : QUICK_GAP_DRIFT);
	return used;
}

/* The open run ended without finding events: its deadline had passed by the
 * last wake-up. asked_else: the program asked for something else (0, or
 * longer), rather than coming back late from a wake-up it used. */
static enum ef_learned run_ended(const struct ef_config *c, struct ef_thread *t, int asked_else,
				 int64_t gap_ns)
{
	struct ef_run *r = &t->run;
	struct ef_site *s = &t->sites[r->site];
	int64_t passed = r->last_end_ns - r->start_ns;

	r->open = 0;
	s->asks_else = average8(s->asks_else, asked_else);
	if (asked_else)
		s->else_gap_ns += (min64(max64(gap_ns, 0), NS_PER_MS) - s->else_gap_ns) / 8;
	if (s->shape == EF_SHAPE_NEW)
		s->shape = EF_SHAPE_ENDS;
	if (r->held)
		return EF_LEARNED_NOTHING;
	/* With one wake-up the deadline is known only to lie before it: news when
	 * that wake-up came earlier than predicted. */
	if ((r->wakes >= 2 || r->probing) &&
	    passed <= (int64_t)r->first_ms * NS_PER_MS + ENDLESS_PAST_BOUND_NS) {
		s->ring[s->ring_i] = passed;
		s->ring_i = (uint8_t)((s->ring_i + 1) % EF_RING);
		s->ring_n = s->ring_n < EF_RING ? s->ring_n + 1 : EF_RING;
	}
	if (r->predicted) {
		s->went_on = average8(s->went_on, r->wakes > PREDICTED_WAKES_MAX + 1 + r->probing);
	}
	if (r->probing && r->wakes == 1) {
		/* Early, and still late enough: try earlier again next run. */
		s->probe_step = min64(2 * s->probe_step, (int64_t)r->first_ms * NS_PER_MS);
		s->probe_in = 0;
	} else if (r->probing || r->wakes >= 2) {
		s->probe_step = c->subms_ns;
		s->probe_in = PROBE_EVERY_RUNS;
	} else if (s->probe_in) {
		s->probe_in--;
	}
	/* The deadline passed inside the request, and the program showed it: it
	 * asked for something else, or it let an earlier empty wake-up go by.
	 * A program that uses every wake-up (a ticker doing work on each) shows
	 * neither, however early it is woken. */
	if ((asked_else || r->wakes >= 2) &&
	    passed <= (int64_t)r->first_ms * NS_PER_MS + USED_GAP_SLOP_NS)
		s->proven = 1;
	/* Wake-ups held back on average more than OVERSHOOT_MAX_NS each (a busy
	 * machine ran other work) may have come back past the deadline and past
	 * the request's bound: such a run shows neither a sub-ms deadline nor its
	 * absence, and what the library added cost nothing then. Counted, a
	 * loaded start left asyncio alone for thousands of waits. */
	int held_back = passed - r->asked_ns > (int64_t)r->wakes * OVERSHOOT_MAX_NS;
	if (!s->proven && !held_back && c->adapt == EF_ADAPT_SAFE &&
	    ++s->unproven_runs >= SAFE_UNPROVEN_RUNS) {
		s->unproven_runs = 0;
		backoff_start(&s->backoff_left, &s->backoff_len);
		return EF_LEARNED_GENUINE;
	}
	return EF_LEARNED_NOTHING;
}

/* The wait for a request of the open run, elapsed_ns after it began. */
static int64_t run_wait(const struct ef_config *c, struct ef_thread *t, const struct ef_site *s,
			int64_t elapsed_ns, int timeout_ms)
{
	int64_t w = c->subms_ns;

	if (t->run.predicted) {
		/* Aim to return at the predicted deadline: ask that much less the
		 * usual lateness of a wake-up. */
		int64_t aim = site_deadline(s) - t->overshoot_ns;
		if (t->run.wakes == 0 && t->run.probing)
			aim -= s->probe_step;
		/* Short of the aim (a probe that came back early): the rest of the
		 * way. Past it, and the deadline not yet passed: SUBMS steps. */
		if (aim > elapsed_ns)
			w = max64(aim - elapsed_ns, NS_PER_US);
	}
	if (timeout_ms > 1)
		w = max64(w, (int64_t)(timeout_ms - 1) * NS_PER_MS + c->subms_ns);
	return min64(w, (int64_t)timeout_ms * NS_PER_MS);
}

/* ---- The protocol ---------------------------------------------------------- */

static struct ef_decision upgrade(int64_t wait_ns, int timeout_ms)
{
	return (struct ef_decision){ EF_UPGRADE, wait_ns, timeout_ms, EF_LEARNED_NOTHING, NULL, -1 };
}

/* A request of T ms at t0 says the program's deadline lies after t0 + T - 1
 * ms and no later than t0 + T ms. Until a request says it lies past the
 * thread's bound (its deadline passed, or it set a later one), the deadline
 * is no later than the earliest of those bounds, whichever request or run of
 * the policy's it came from: a chase the ceiling cut short and the program
 * took up again after an early wake-up is still bound by its first request. */
static void bound(struct ef_thread *t, const struct ef_request *call)
{
	int64_t hi = call->now_ns + (int64_t)call->timeout_ms * NS_PER_MS;

	if (hi - NS_PER_MS >= t->bound_ns || hi < t->bound_ns)
		t->bound_ns = hi;
}

/* The tail guarantee. A request of T ms at t0 says the program's deadline is
 * no later than t0 + T: without the library it would wake there. A run that
 * goes on (the program asked the same again after an early wake-up) is still
 * that chase, so a wait of it that the policy gives up ends at that bound
 * (left_ns from now), and one that is rationed at the thread's bound, which
 * holds across runs too (a stream that never ends), not a whole request
 * later. A bound a whole request away is the request as it is. */
static struct ef_decision bounded(struct ef_decision d, int64_t left_ns, int timeout_ms)
{
	if (left_ns >= 0 && left_ns < (int64_t)timeout_ms * NS_PER_MS) {
		d.action = EF_BOUNDED;
		d.wait_ns = left_ns;
	}
	return d;
}

/* A rounded-up request with EPOLLFIX_ADAPT on, from an unrecognised caller. */
static struct ef_decision adaptive(const struct ef_config *c, struct ef_thread *t,
				   const struct ef_request *call, struct ef_decision d)
{
	struct ef_run *r = &t->run;
	int T = call->timeout_ms;
	/* A run that goes on: the time left to its first request's bound. */
	int64_t left = r->open ? r->start_ns + (int64_t)r->first_ms * NS_PER_MS - call->now_ns : -1;
	/* What a wake-up the ceiling refuses waits instead (ef_rationed). */
	int64_t bound_left = t->bound_ns - call->now_ns;

	if (t->learn.backoff_left) {
		d.action = EF_GENUINE;
		return r->open && left > (int64_t)(T - 1) * NS_PER_MS ? bounded(d, left, T) : d;
	}
	struct ef_site *s = site_claim(t, call->site);
	if (s->backoff_left) {
		d.action = EF_GENUINE;
		return r->open && left > (int64_t)(T - 1) * NS_PER_MS ? bounded(d, left, T) : d;
	}
	if (!r->open) {
		int predict = s->ring_n != 0;
		if (predict && s->went_on >= WENT_ON_MOST_OF_255) {
			predict = s->trial_in == 0;
			s->trial_in = predict ? TRIAL_EVERY_RUNS - 1 : s->trial_in - 1;
		}
		*r = (struct ef_run){ .open = 1,
				      .site = (uint8_t)(s - t->sites),
				      .probing = !s->ring_n || s->probe_in == 0,
				      .predicted = (uint8_t)predict,
				      .first_ms = T,
				      .start_ns = call->now_ns };
		if (s->probe_step == 0)
			s->probe_step = c->subms_ns;
	}
	int64_t elapsed = call->now_ns - r->start_ns;
	if (elapsed > (int64_t)r->first_ms * NS_PER_MS + ENDLESS_PAST_BOUND_NS &&
	    r->asked_ns > (int64_t)r->first_ms * NS_PER_MS) {
		/* Nothing the library sees tells a ticker that means its 1 ms from
		 * libev or mio chasing 50 us deadlines with C callbacks. auto keeps
		 * the precision; safe leaves the stream alone for a back-off. */
		s->shape = EF_SHAPE_ENDLESS;
		if (c->adapt == EF_ADAPT_SAFE) {
			r->open = 0;
			backoff_start(&s->backoff_left, &s->backoff_len);
			d.action = EF_GENUINE;
			d.learned = EF_LEARNED_GENUINE;
			return d;
		}
		d = upgrade(min64(c->subms_ns + (int64_t)(T - 1) * NS_PER_MS, (int64_t)T * NS_PER_MS), T);
		/* Past the first request's bound the stream is no one chase, but
		 * the thread's bound still holds each deadline in it. */
		d.ration_ns = bound_left;
		return d;
	}
	int64_t w = run_wait(c, t, s, elapsed, T);
	if (left < 0) { /* the run's first wait */
		d = upgrade(w, T);
		/* In a stream that never ends every early wake-up is one the
		 * library adds, the first of a run too; elsewhere the first is
		 * aimed at the deadline, and only asking again shows an early one.
		 * A site just rationed: its first waits too, or each run would
		 * still add one early wake-up, free (a ticker's every other). */
		if (s->shape == EF_SHAPE_ENDLESS || s->rationed)
			d.ration_ns = bound_left;
		return d;
	}
	/* Never past the first request's bound while the chase goes on. A
	 * request that says its deadline lies beyond that bound (more than
	 * T-1 ms away) starts another chase: its own bound holds. */
	int chase = left > (int64_t)(T - 1) * NS_PER_MS;
	d = upgrade(chase ? min64(w, max64(left, NS_PER_US)) : w, T);
	d.ration_ns = bound_left;
	return d;
}

EF_WAIT_PATH struct ef_decision ef_before(const struct ef_config *c, struct ef_thread *t,
			     const struct ef_request *call)
{
	int T = call->timeout_ms;
	struct ef_decision d = { EF_PASS, 0, T, EF_LEARNED_NOTHING, NULL, -1 };

	if (c->disable) {
		t->run.open = 0;
		return d;
	}
	int hold = 0;
	if (t->run.open) {
		const struct ef_run *r = &t->run;
		struct ef_site *s = &t->sites[r->site];
		int same = ef_rounded_up(c, T) && c->adapt && s->ra == call->site;
		int64_t gap = call->now_ns - r->last_end_ns;
		if (!same || gap_used(s, gap)) {
			/* A probe woke early on purpose: the same asked again
			 * slowly after it may be a slow turn (cold caches after
			 * the long sleep) with the deadline still ahead, not a
			 * wake-up used. The next run's first wait keeps the
			 * bound: one wake-up more if the deadline had passed. */
			hold = same && r->probing && r->wakes == 1;
			d.learned = run_ended(c, t, !same, gap);
			d.ended = s->ra;
		}
	}
	if (ef_rounded_up(c, T)) {
		if (c->adapt && call->caller == EF_CALLER_UNKNOWN) {
			struct ef_decision before = d;
			bound(t, call);
			d = adaptive(c, t, call, d);
			int64_t bound_left = t->bound_ns - call->now_ns;
			if (hold && d.action == EF_UPGRADE && t->run.wakes == 0 &&
			    bound_left < d.wait_ns) {
				d.wait_ns = max64(bound_left, NS_PER_US);
				t->run.held = 1;
			}
			d.ended = before.ended;
			if (d.learned == EF_LEARNED_NOTHING)
				d.learned = before.learned;
			if (d.action != EF_UPGRADE)
				t->run.open = 0;
			return d;
		}
		t->run.open = 0; /* no run: the caller alone decides */
		if (call->caller == EF_CALLER_GENUINE && c->adapt) {
			d.action = EF_GENUINE;
			return d;
		}
		return upgrade((int64_t)(T - 1) * NS_PER_MS + c->subms_ns, T);
	}
	if (T == 0 && c->clamp_ns > 0 && t->busy_streak >= (uint64_t)c->clamp_after &&
	    call->now_ns - t->last_return_ns <= c->clamp_gap_ns) {
		d.action = EF_CLAMP;
		d.wait_ns = c->clamp_ns;
	}
	return d;
}

struct ef_decision ef_without_pwait2(struct ef_decision d, int timeout_ms)
{
	if (d.action == EF_CLAMP) {
		int64_t ms = (d.wait_ns + NS_PER_MS - 1) / NS_PER_MS;
		d.action = EF_CLAMP_MS;
		d.timeout_ms = ms > 0x7fffffff ? 0x7fffffff : (int)ms;
		return d;
	}
	if (d.action == EF_UPGRADE || d.action == EF_BOUNDED)
		d.action = EF_PASS;
	d.timeout_ms = timeout_ms;
	return d;
}

struct ef_decision ef_rationed(struct ef_thread *t, struct ef_decision d, int timeout_ms)
{
	if (t->run.open)
		t->sites[t->run.site].rationed = 1;
	t->run.open = 0;
	d.action = EF_PASS;
	d = bounded(d, d.ration_ns, timeout_ms);
	d.ration_ns = -1;
	return d;
}

/* ef_observe for a zero-timeout poll while the clamp is on: an empty poll that
 * began within gap_ns of the previous one's return extends the busy loop; one
 * after more of the program's own work starts it anew. */
static void observe_timed(struct ef_thread *t, int result, int64_t start_ns, int64_t end_ns,
			  int64_t gap_ns)
{
	int back_to_back = t->busy_streak > 0 && start_ns - t->last_return_ns <= gap_ns;

	ef_observe(t, 0, result);
	if (result == 0)
		t->busy_streak = back_to_back ? t->busy_streak + 1 : 1;
	t->last_return_ns = end_ns;
}

static enum ef_learned left_alone(struct ef_thread *t, const void *ra)
{
	struct ef_site *s;

	if (t->learn.backoff_left)
		return --t->learn.backoff_left ? EF_LEARNED_NOTHING : EF_LEARNED_RETRY;
	if ((s = site_find(t, ra)) && s->backoff_left)
		return --s->backoff_left ? EF_LEARNED_NOTHING : EF_LEARNED_RETRY;
	return EF_LEARNED_NOTHING;
}

EF_WAIT_PATH enum ef_learned ef_after(const struct ef_config *c, struct ef_thread *t,
				      const struct ef_request *call, struct ef_decision done,
				      int result, int64_t end_ns)
{
	struct ef_run *r = &t->run;
	int T = call->timeout_ms;

	if (T == 0 && c->clamp_ns > 0)
		observe_timed(t, result, call->now_ns, end_ns, c->clamp_gap_ns);
	else
		ef_observe(t, T, result);

	if (done.action == EF_GENUINE || done.action == EF_BOUNDED)
		return left_alone(t, call->site);
	if (!r->open)
		return EF_LEARNED_NOTHING;
	if (done.action != EF_UPGRADE) { /* fell back: nothing to learn from */
		r->open = 0;
		return EF_LEARNED_NOTHING;
	}
	if (done.ration_ns >= 0) /* an added wake-up was let through */
		t->sites[r->site].rationed = 0;
	/* How much later than asked wake-ups return here, averaged over 8. A
	 * wake-up delayed by a busy machine counts as at most OVERSHOOT_MAX_NS, so
	 * one stall does not pull the next runs' first waits far forward. */
	int64_t late = min64(max64(end_ns - (call->now_ns + done.wait_ns), 0), OVERSHOOT_MAX_NS);
	t->overshoot_ns += (late - t->overshoot_ns) / 8;
	if (result == 0) {
		r->wakes = r->wakes < UINT16_MAX ? r->wakes + 1 : UINT16_MAX;
		r->asked_ns += done.wait_ns;
		r->last_end_ns = end_ns;
		return EF_LEARNED_NOTHING;
	}
	/* Events (or an error such as EINTR): where the deadline lay is unknown. */
	r->open = 0;
	if (result > 0 && r->wakes > 0)
		return grid_sample(&t->learn, r->last_end_ns);
	return EF_LEARNED_NOTHING;
}
