/* Process-wide state: the configuration in force, read once from the
 * environment (in the constructor, or on the first call if another library's
 * constructor waits first), and replaceable at run time without locks on the
 * wait path. */
#ifndef EPOLLFIX_STATE_H
#define EPOLLFIX_STATE_H

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "fmt.h"

/* What the wait path needs to let a call pass untouched, published with every
 * configuration. Each kind of timeout reads a word of its own, which the
 * compiler folds into one comparison with memory (two kinds reading one word
 * would share a load, and one kind would pay for the other's branch). Until
 * the environment has been read, while the debug log is on and when the
 * library is disabled, all three send every call to the slow path. */
#define EF_FAST_ALL INT_MAX /* ef_fast_pos: every call takes the slow path */
/* Positive timeouts up to this take the slow path (MAX_MS: the rounded-up
 * range, upgraded or not). */
extern _Atomic int ef_fast_pos __attribute__((visibility("hidden")));
/* EF_FAST_NEG_PASS: negative timeouts pass; anything else sends them to the
 * slow path too. (A comparison with a constant other than 0 is made in memory;
 * one with 0 would load the word into a register first.) */
#define EF_FAST_NEG_PASS 1
extern _Atomic int ef_fast_neg __attribute__((visibility("hidden")));
/* EF_FAST_ZERO_HOLD: zero timeouts take the slow path (the clamp is on, or
 * every call does); 0: they may pass. A thread learns of it before its first
 * zero-timeout call passes (fast_again, interpose.c) and, for a change made
 * while it polls, after the next one: the check shares the branch on the
 * poll's result, one comparison of the result with this word, which holds 0
 * or a value no epoll_wait returns (ef_fast_zero_empty). */
#define EF_FAST_ZERO_HOLD INT_MIN
extern _Atomic int ef_fast_zero_hold __attribute__((visibility("hidden")));
/* Nonzero: the library is disabled; the slow path passes the call uncounted. */
extern _Atomic int ef_fast_off __attribute__((visibility("hidden")));

/* The fast path reads the fast words (and the real functions, once resolved)
 * with plain loads, which the compiler folds into the comparison (it never
 * folds an atomic load): a word written meanwhile is read whole, old or new, as
 * an atomic load would. ThreadSanitizer is shown atomic loads. */
#if defined(__SANITIZE_THREAD__)
#define EF_FAST_LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#else
#define EF_FAST_LOAD(x) (*(const __typeof__(x + 0) *)&(x))
#endif

/* 1 when a call with this positive timeout passes untouched. */
static inline int ef_fast_pass_positive(int timeout)
{
	return timeout > EF_FAST_LOAD(ef_fast_pos);
}

/* 1 when a call with a negative timeout passes untouched. */
static inline int ef_fast_pass_negative(void)
{
	return EF_FAST_LOAD(ef_fast_neg) == EF_FAST_NEG_PASS;
}

/* Nonzero when zero-timeout calls must take the slow path. */
static inline int ef_fast_zero_held(void)
{
	return EF_FAST_LOAD(ef_fast_zero_hold);
}

/* 1 when a zero-timeout poll that passed returned r == 0 and such polls are
 * not held: r (-1 to maxevents) is never EF_FAST_ZERO_HOLD, so one
 * comparison with memory, which keeps r, asks both. */
static inline int ef_fast_zero_empty(int r)
{
	return r == EF_FAST_LOAD(ef_fast_zero_hold);
}

static inline int ef_fast_disabled(void)
{
	return atomic_load_explicit(&ef_fast_off, memory_order_relaxed);
}

/* Copies the configuration in force into *c. Returns 0 when there is none to be
 * had without waiting (another thread is reading the environment, or a writer is
 * mid-update): the caller then passes the call through untouched. */
int ef_state_config(struct ef_config *c);

/* A thread's own copy of the configuration, for the wait path: taken again
 * only when a writer has published since, so a call costs one load of the
 * seqlock's counter instead of a copy of every word. */
struct ef_config_copy {
	uint64_t seq; /* the seq the copy was published under; 0: none yet */
	struct ef_config c;
};

/* The configuration in force, through the thread's copy; NULL when
 * ef_state_config would return 0. */
const struct ef_config *ef_state_config_copy(struct ef_config_copy *copy);

/* Applies "key=value" (or "EPOLLFIX_KEY=value") for the runtime API. Returns 0,
 * or -1 with the reason in msg and the configuration unchanged. */
int ef_state_set(const char *word, struct ef_buf *msg);

/* EPOLLFIX_STATS, _ONLY and _SKIP as read at start-up; NULL until then. */
const struct ef_text *ef_state_text(void);

/* 0 when EPOLLFIX_ONLY or EPOLLFIX_SKIP leave this program alone. */
int ef_state_selected(void);

/* Reads the environment now, unless it is read or being read (constructor). */
void ef_state_load(void);

/* getenv(name), or NULL in secure execution (AT_SECURE: setuid, setgid, file
 * capabilities), where no EPOLLFIX_* variable of the caller is read. */
const char *ef_state_env(const char *name);
/* 1 in secure execution: the environment is not the caller's to read, nor
 * the library's to write. */
int ef_state_secure(void);

/* In a fork child, before anything else runs there. */
void ef_state_after_fork(void);

/* For the status block (live.h): the addresses of the seqlock, of its words
 * (struct ef_config) and of the selected flag, and the number of words. */
void ef_state_live(uint64_t *seq_addr, uint64_t *words_addr, uint32_t *nwords,
		   uint64_t *selected_addr);

/* Before fork(), in the forking thread: its own timer slack back in force,
 * since the child takes the slack in force as its default (interpose.c). */
void ef_interpose_before_fork(void);
/* The constructor's part of interpose.c: a thread's statistics slot is given
 * back when the thread ends. */
void ef_interpose_init(void);
/* In a fork child: the counts start again, and only this thread keeps a slot. */
void ef_interpose_after_fork(void);
/* In a child with its own copy of memory, made by fork() or a call that runs
 * no atfork handler: every part's after-fork reset (ef_state_after_fork,
 * ef_pwait2_after_fork, ef_interpose_after_fork, ef_ration_after_fork). */
void ef_interpose_child(void);

/* In a child made with its own copy of memory that no fork handler reached
 * (libc's clone, a raw clone or clone3): the rest of the reset, once; called
 * where the library is entered off the fast path. */
void ef_interpose_notice_child(void);

/* Fills the status block's addresses and build id, then marks it ready
 * (constructor; block.c). */
void ef_live_init(void);

#endif
