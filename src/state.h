/* Process-wide state: the configuration in force, read once from the
 * environment (in the constructor, or on the first call if another library's
 * constructor waits first), and replaceable at run time without locks on the
 * wait path. */
#ifndef EPOLLFIX_STATE_H
#define EPOLLFIX_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "fmt.h"

/* What the wait path needs to let a call pass untouched, in one word, published
 * with every configuration: most calls decide on this single load. */
#define EF_FAST_UPGRADE_MAX 0x00000fffu /* largest timeout upgraded; 0: none */
#define EF_FAST_MAX_MS_SHIFT 12         /* bits 12-23: MAX_MS, for counting */
#define EF_FAST_CLAMP (1u << 28)        /* zero timeouts may be clamped */
#define EF_FAST_SLOW (1u << 29)         /* every call takes the slow path (debug log) */
#define EF_FAST_UNCOUNTED (1u << 30)    /* disabled: pass, and do not even count */
#define EF_FAST_READY (1u << 31)        /* 0 until the environment has been read */

extern _Atomic uint32_t ef_fast_word;

static inline uint32_t ef_state_fast(void)
{
	return atomic_load_explicit(&ef_fast_word, memory_order_acquire);
}

/* 1 when a call with this timeout passes through untouched. Unsigned arithmetic
 * folds "timeout <= 0 or above the upgrade limit" into one comparison. */
static inline int ef_fast_pass(uint32_t w, int timeout)
{
	return (w & (EF_FAST_READY | EF_FAST_SLOW)) == EF_FAST_READY &&
	       (unsigned)timeout - 1u >= (w & EF_FAST_UPGRADE_MAX) &&
	       (timeout != 0 || !(w & EF_FAST_CLAMP));
}

static inline int ef_fast_max_ms(uint32_t w)
{
	return (int)((w >> EF_FAST_MAX_MS_SHIFT) & 0xfffu);
}

/* Copies the configuration in force into *c. Returns 0 when there is none to be
 * had without waiting (another thread is reading the environment, or a writer is
 * mid-update): the caller then passes the call through untouched. */
int ef_state_config(struct ef_config *c);

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

/* In a fork child, before anything else runs there. */
void ef_state_after_fork(void);

/* For the status block (live.h): the addresses of the seqlock, of its words
 * (struct ef_config) and of the selected flag, and the number of words. */
void ef_state_live(uint64_t *seq_addr, uint64_t *words_addr, uint32_t *nwords,
		   uint64_t *selected_addr);

#endif
