/* Each process the agent is reading or serving, in one record whose life
 * (looked at, attached, its waker asked, made and given, mended, dropped at
 * an exec or its end) is decided here and nowhere else (doc/agent.md). The
 * kernel's map of attached processes (agent_bpf.h), the reader's requests
 * (agent_reader.h) and the wake-up mechanism's rings (agent_wake.h) are
 * what it acts on.
 *
 * An exec is judged against the record: the kernel numbers each process's
 * execs (its generation), and a record made by a reading of the process at
 * generation g already saw every exec up to g. A launcher that execs again
 * at once (env, nice, setpriv, `sh -c 'exec ...'`, an entrypoint's `exec
 * "$@"`) queues two exec events; the first one's reading may already find the
 * final image and attach it, and the second then finds a record of its own
 * generation and leaves it, waker and all. */
#ifndef EPOLLFIX_AGENT_SERVED_H
#define EPOLLFIX_AGENT_SERVED_H

#include <stdint.h>

struct ef_abpf;
struct ef_bpf_deadline;
struct ef_reader;
struct ef_rq;
struct ef_ra;
struct ef_served;

/* What each attached process is given to put into its runtime's epoll set,
 * by the mechanism loaded: nothing, a waker (wakeup: a ring buffer the
 * kernel writes), or a timerfd (timerfd: the agent arms it at each deadline
 * the kernel sends). */
enum ef_item { EF_ITEM_NONE, EF_ITEM_RING, EF_ITEM_TIMERFD };
struct ef_served *ef_served_new(struct ef_abpf *b, struct ef_reader *r, enum ef_item item, int verbose);
/* Every waker closed: out of every epoll set. */
void ef_served_free(struct ef_served *s);

/* Whether tgid has a record (read or being read): a scan leaves it. */
int ef_served_has(struct ef_served *s, uint32_t tgid);
/* Asks the reader about tgid, at generation gen: 0 asked; -1 not (its
 * owner backed off, or the reader's queue full: asked again by a scan). */
int ef_served_look(struct ef_served *s, uint32_t tgid, uint64_t gen);
/* tgid exec'd (the kernel's event): 0 when its record was read after that
 * exec (nothing to do); otherwise the record goes (its waker with it) and,
 * with look, it is looked at again: 1 asked, -1 not; without (the loop
 * knows it is not chosen), 0. */
int ef_served_exec(struct ef_served *s, uint32_t tgid, int look);

/* A LOOK's answer: 1 attached; 0 a verdict for this image (not for us, the
 * caller's to remember, a->why its words); -1 none (stale, or looked at
 * again later). */
int ef_served_looked(struct ef_served *s, const struct ef_rq *q, const struct ef_ra *a);
/* A WAKE's answer. */
void ef_served_woke(struct ef_served *s, const struct ef_rq *q, const struct ef_ra *a);

/* The kernel's events of the wake-up mechanism: tgid's netpoller waits and
 * has no waker; its waker is a quarter full. */
void ef_served_waker_asked(struct ef_served *s, uint32_t tgid);
void ef_served_drain(struct ef_served *s, uint32_t tgid);
/* The timerfd mechanism: a netpoll wait's deadline (the kernel's ring
 * buffer): the process's timerfd armed at it, or made when it has none. */
void ef_served_deadline(const struct ef_bpf_deadline *d, void *s);
/* The wakers made since, given to the kernel at once (one wait of the
 * kernel's for many: agent_bpf.h). */
void ef_served_commit(struct ef_served *s);
/* Each second: every waker emptied; the records of processes that ended go;
 * an attached process the kernel asked a waker for and has none (its event
 * lost, its making failed) is mended, or said. */
void ef_served_tick(struct ef_served *s);

#endif
