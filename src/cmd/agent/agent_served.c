/* The records of the processes the agent reads and serves (agent_served.h). */
#define _GNU_SOURCE
#include "agent_served.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "agent_bpf.h"
#include "agent_reader.h"
#include "gowake.h"
#include "agent_signal.h"
#include "agent_wake.h"
#include "look.h"
#include "netpoll.h"

/* A waker whose making failed is asked again after 1, 2, 4... s, MEND_TRIES
 * times at most; the last failure is said. */
#define MEND_TRIES 5

enum state { READING, ATTACHED };

struct rec {
	uint32_t tgid;
	enum state state;
	uint64_t gen, start;
	uint64_t epfd, wake, tag; /* load bias applied */
	struct ef_waker w; /* EF_ITEM_RING's; EF_ITEM_TIMERFD's timerfd in w.ring */
	int waking;  /* its WAKE under way */
	int joined;  /* in the epoll set, not yet given to the kernel */
	int given;   /* in the kernel's map of wakers */
	int tries;   /* WAKEs that failed */
	uint64_t next_try; /* s */
};

struct ef_served {
	struct ef_abpf *b;
	struct ef_reader *r;
	enum ef_item item;
	int verbose;
	int64_t offset; /* the agent's time namespace: its clock = host + offset */
	struct rec *v;
	size_t n, cap;
};

static uint64_t now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec;
}

struct ef_served *ef_served_new(struct ef_abpf *b, struct ef_reader *r, enum ef_item item, int verbose)
{
	struct ef_served *s = calloc(1, sizeof(*s));
	if (s)
		*s = (struct ef_served){ .b = b, .r = r, .item = item, .verbose = verbose,
					 .offset = ef_asig_own_offset() };
	return s;
}

/* The item put into the process's epoll set: a ring buffer, mapped, or a
 * timerfd (never read: each expiry is one event, edge-triggered). */
static int item_open(struct ef_served *s, struct ef_waker *w, const char **why)
{
	if (s->item == EF_ITEM_RING)
		return ef_waker_open(w, why);
	*w = EF_WAKER_NONE;
	w->ring = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	*why = "no timerfd";
	return w->ring < 0 ? -1 : 0;
}

static struct rec *find(struct ef_served *s, uint32_t tgid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].tgid == tgid)
			return &s->v[i];
	return NULL;
}

/* The record goes, and its waker: out of the kernel's map at once (while
 * the kernel finds a waker for the pid, a new image would never ask for its
 * own), then out of the epoll set (closed). */
static void forget(struct ef_served *s, struct rec *x)
{
	if (x->given && s->item == EF_ITEM_RING)
		ef_abpf_drop_wakers(s->b, &x->tgid, 1);
	ef_waker_close(&x->w);
	*x = s->v[--s->n];
}

void ef_served_free(struct ef_served *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		ef_waker_close(&s->v[i].w);
	free(s->v);
	free(s);
}

int ef_served_has(struct ef_served *s, uint32_t tgid)
{
	return find(s, tgid) != NULL;
}

int ef_served_look(struct ef_served *s, uint32_t tgid, uint64_t gen)
{
	struct rec *x = find(s, tgid);
	if (x)
		forget(s, x);
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct rec *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1; /* looked at again by a scan */
		s->v = v, s->cap = cap;
	}
	struct ef_rq q = { .kind = EF_RQ_LOOK, .tgid = tgid, .gen = gen, .start = ef_look_start(tgid) };
	if (ef_reader_backed_off(s->r, tgid) || ef_reader_ask(s->r, &q, -1) != 0)
		return -1;
	s->v[s->n++] = (struct rec){ .tgid = tgid, .state = READING, .gen = gen, .start = q.start,
				     .w = EF_WAKER_NONE };
	return 0;
}

int ef_served_exec(struct ef_served *s, uint32_t tgid, int look)
{
	uint64_t gen = ef_abpf_generation(s->b, tgid);
	struct rec *x = find(s, tgid);
	if (x && x->gen == gen)
		return 0; /* read after this exec: what it found stands */
	if (look)
		return ef_served_look(s, tgid, gen) == 0 ? 1 : -1;
	if (x)
		forget(s, x); /* the image it was of is gone */
	return 0;
}

int ef_served_looked(struct ef_served *s, const struct ef_rq *q, const struct ef_ra *a)
{
	struct rec *x = find(s, q->tgid);
	if (!x || x->state != READING || x->gen != q->gen)
		return -1; /* an exec since asked again */
	if (a->r != EF_LOOK_SERVE) {
		forget(s, x);
		return a->r == EF_LOOK_AGAIN ? -1 : 0;
	}
	int r = ef_abpf_attach(s->b, q->tgid, q->gen, q->start, a->sched, a->epfd);
	if (r != 0) {
		/* Changed meanwhile (its exec's event comes next), or the
		 * kernel's map is full: looked at again. */
		forget(s, x);
		return -1;
	}
	x->state = ATTACHED;
	x->epfd = a->epfd, x->wake = a->wake, x->tag = a->tag;
	return 1;
}

/* Its waker made and joined to its epoll set by the reader. */
static void wake(struct ef_served *s, struct rec *x)
{
	const char *why;
	if (x->waking || x->w.ring >= 0 || x->tries >= MEND_TRIES || now_s() < x->next_try)
		return;
	if (item_open(s, &x->w, &why) != 0) {
		if (s->verbose)
			fprintf(stderr, "epollfix agent: pid %u: no waker: %s; its waits keep their own 1 ms\n",
				x->tgid, why);
		x->tries = MEND_TRIES;
		return;
	}
	struct ef_rq q = { .kind = EF_RQ_WAKE, .tgid = x->tgid, .gen = x->gen, .start = x->start,
			   .epfd = x->epfd, .wake = x->wake, .tag = x->tag };
	if (ef_reader_backed_off(s->r, q.tgid) || ef_reader_ask(s->r, &q, x->w.ring) != 0) {
		ef_waker_close(&x->w); /* asked again by the mending */
		return;
	}
	x->waking = 1;
}

void ef_served_woke(struct ef_served *s, const struct ef_rq *q, const struct ef_ra *a)
{
	struct rec *x = find(s, q->tgid);
	if (!x || x->gen != q->gen || !x->waking)
		return; /* its ring went with an exec */
	x->waking = 0;
	if (a->r == 0) {
		/* A ring goes to the kernel's map; a timerfd is the agent's to arm. */
		x->joined = s->item == EF_ITEM_RING;
		x->given = s->item == EF_ITEM_TIMERFD;
		return;
	}
	ef_waker_close(&x->w);
	/* The process changed (an exec comes), or left blocked (not again):
	 * not mended; nor one whose runtime's epoll fd names another kind of
	 * file, which no Go runtime does (a process that swapped the word: said
	 * at once). Otherwise asked again after 1, 2, 4, 8 s. */
	x->tries = a->r < 0 || a->r == EF_GO_WAKE_NOT_EPOLL ? MEND_TRIES : x->tries + 1;
	x->next_try = now_s() + (1u << (x->tries < MEND_TRIES ? x->tries - 1 : 0));
	if (x->tries >= MEND_TRIES && a->r != -1 && s->verbose)
		fprintf(stderr, "epollfix agent: pid %u: no waker: %s; its waits keep their own 1 ms\n",
			x->tgid, a->why);
}

void ef_served_waker_asked(struct ef_served *s, uint32_t tgid)
{
	struct rec *x = find(s, tgid);
	if (s->item == EF_ITEM_RING && x && x->state == ATTACHED)
		wake(s, x);
}

void ef_served_deadline(const struct ef_bpf_deadline *d, void *arg)
{
	struct ef_served *s = arg;
	struct rec *x = find(s, d->tgid);
	if (!x || x->state != ATTACHED)
		return;
	if (!x->given) {
		wake(s, x); /* its first wait: this one keeps its own 1 ms */
		return;
	}
	/* Absolute, in the agent's clock; one long past fires at once (0 would
	 * disarm). */
	int64_t at = (int64_t)d->deadline + s->offset;
	if (at <= 0)
		at = 1;
	struct itimerspec its = { .it_value = { at / 1000000000, at % 1000000000 } };
	timerfd_settime(x->w.ring, TFD_TIMER_ABSTIME, &its, NULL);
}

void ef_served_drain(struct ef_served *s, uint32_t tgid)
{
	struct rec *x = find(s, tgid);
	if (x && s->item == EF_ITEM_RING)
		ef_waker_drain(&x->w);
}

static void give(struct ef_served *s, const uint32_t *tgids, const int *fds, size_t n)
{
	if (ef_abpf_set_wakers(s->b, tgids, fds, n) != 0 && s->verbose)
		fprintf(stderr, "epollfix agent: the kernel refused wakers (%zu): those waits keep their own 1 ms\n",
			n);
}

void ef_served_commit(struct ef_served *s)
{
	uint32_t tgids[64];
	int fds[64];
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct rec *x = &s->v[i];
		if (!x->joined)
			continue;
		if (n == sizeof(tgids) / sizeof(tgids[0]))
			give(s, tgids, fds, n), n = 0;
		tgids[n] = x->tgid, fds[n++] = x->w.ring;
		x->joined = 0;
		x->given = 1;
	}
	give(s, tgids, fds, n);
}

void ef_served_tick(struct ef_served *s)
{
	uint32_t gone[64];
	size_t n = 0;
	for (size_t i = 0; i < s->n;) {
		struct rec *x = &s->v[i];
		if (x->state == ATTACHED) {
			int asked = ef_abpf_asked(s->b, x->tgid);
			if (asked < 0 && n < sizeof(gone) / sizeof(gone[0])) {
				/* Ended, or exec'd with its event not read yet
				 * (read next: looked at again then). */
				if (x->given && s->item == EF_ITEM_RING)
					gone[n++] = x->tgid;
				x->given = 0;
				forget(s, x); /* the last moved here: looked at next */
				continue;
			}
			/* Asked for and never made: its event lost, or its
			 * making failed; mended here. */
			if (asked == 1 && s->item == EF_ITEM_RING && x->w.ring < 0)
				wake(s, x);
			if (s->item == EF_ITEM_RING)
				ef_waker_drain(&x->w);
		}
		i++;
	}
	/* The processes that ended this second, out of the kernel's map at once
	 * (one wait of the kernel's: ef_abpf_drop_wakers); more, next second. */
	ef_abpf_drop_wakers(s->b, gone, n);
	ef_served_commit(s);
}
