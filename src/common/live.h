/* What crosses the process boundary: the status block, and everything it
 * points at that `epollfix status` reads out of a running process (the
 * per-thread slots and their keys, the call-site rows, the epoll_pwait2 state,
 * the runtimes seen; struct ef_config's words, config.h). The library writes
 * them, the command reads them: a change to anything in this file, or to
 * struct ef_config, must raise EF_LIVE_LAYOUT, and this is the one place where
 * that rule is kept.
 *
 * The status block itself is one struct in the library's memory, in its own
 * ELF section, so the command finds it through the section headers of the
 * library file (which strip keeps; .symtab it does not) and reads it with
 * process_vm_readv at the library's load address plus the section's offset.
 * It holds no counters: it says where they are, so the wait path does exactly
 * the work it did before. A command refuses a block of another layout instead
 * of misreading it. */
#ifndef EPOLLFIX_LIVE_H
#define EPOLLFIX_LIVE_H

#include <stdatomic.h>
#include <stdint.h>

#define EF_LIVE_SECTION "epollfix_live"

/* The system configuration file a build of the library reads (its
 * EF_SYSCONF_FILE), as an ELF note of the library's file: owner "epollfix",
 * this type, the path with its NUL. `epollfix --check` names the file of the
 * library it would preload, which a command of another build (the image's
 * musl one beside a glibc library) would not know. */
#define EF_NOTE_OWNER "epollfix"
#define EF_NOTE_CONFIG_FILE 1
#define EF_LIVE_MAGIC "epollfix status"      /* 15 characters and a NUL */
#ifndef EF_LIVE_LAYOUT /* a test builds a library of another layout */
#define EF_LIVE_LAYOUT 5
#endif

/* ---- The slots and their keys ---------------------------------------------- */

enum ef_call { EF_CALL_WAIT, EF_CALL_PWAIT, EF_CALL_COUNT };

/* Zero timeouts are split by result, so an empty poll costs one increment too. */
enum ef_tclass {
	EF_T_NEGATIVE,
	EF_T_ZERO,       /* found events, or failed */
	EF_T_ZERO_EMPTY, /* found nothing */
	EF_T_ONE_MS,
	EF_T_UP_TO_MAX,
	EF_T_LONGER,
	EF_T_COUNT
};

enum ef_outcome {
	EF_O_PASSED,
	EF_O_UPGRADED,
	EF_O_CLAMPED,
	EF_O_UPGRADE_FELL_BACK, /* meant to upgrade; epoll_pwait2 unusable: passed */
	EF_O_CLAMP_FELL_BACK,   /* meant to clamp; epoll_pwait2 unusable: whole ms */
	EF_O_GENUINE,           /* a 1 ms the loop means: passed (EPOLLFIX_ADAPT) */
	EF_O_HINTED,            /* the program said the deadline (epollfix_hint_ns): waited
				   until it exactly, or passed when it was whole ms */
	EF_O_COUNT
};

/* How late the library's timed waits came back after the timeout they asked
 * (upgraded waits, and hinted ones, which end at the program's own deadline):
 * bucket b counts those at most 2^b us late, the last bucket all later ones.
 * Log-scale and fixed, so per-thread counts add up to one histogram. */
#define EF_LATE_BUCKETS 16 /* up to 1, 2, 4, ... 16384 us, and later */

static inline unsigned ef_late_bucket(int64_t late_ns)
{
	uint64_t us = late_ns > 0 ? ((uint64_t)late_ns + 999) / 1000 : 0;
	if (us <= 1)
		return 0;
	unsigned b = 64 - (unsigned)__builtin_clzll(us - 1);
	return b < EF_LATE_BUCKETS - 1 ? b : EF_LATE_BUCKETS - 1;
}

/* Call sites with a row in the report (below); more are counted in totals only. */
#define EF_SITE_ROWS 16

/* A call site's counters, kept per thread like the others (EF_K_SITES). */
enum ef_site_counter {
	EF_SC_UPGRADED, /* waits upgraded */
	EF_SC_RUNS,     /* runs ended: deadlines reached */
	EF_SC_ALONE,    /* 1 ms waits left alone */
	EF_SC_WAIT_NS,  /* time asked of the upgraded waits */
	EF_SC_COUNT
};

enum {
	EF_K_LONGEST_STREAK = EF_CALL_COUNT * EF_T_COUNT * EF_O_COUNT, /* a maximum */
	EF_K_LEARNED_GENUINE, /* verdicts of the learner (policy.h) */
	EF_K_LEARNED_SUBMS,
	EF_K_RETRIES,
	EF_K_HINT_STALE, /* hints dropped: the call's timeout did not fit them */
	EF_K_THREADS,    /* threads that took the slot (the shared one: that shared it) */
	EF_K_RATIONED,   /* waits left as asked: the wake-ups added hit EPOLLFIX_MAX_EXTRA */
	/* Empty zero-timeout polls passed through, by function (EF_K_EMPTY +
	 * call): the key (call, EF_T_ZERO_EMPTY, EF_O_PASSED) is never written,
	 * it is this one. */
	EF_K_EMPTY,
	/* The empty polls passed through when the streak began, less the other
	 * empty polls of the streak (modulo 2^64: ef_stats_count). */
	EF_K_STREAK_MARK = EF_K_EMPTY + EF_CALL_COUNT,
	EF_K_LATE,                                  /* EF_K_LATE + bucket: lateness */
	EF_K_LATE_NS = EF_K_LATE + EF_LATE_BUCKETS, /* their lateness summed, in ns */
	/* EF_K_SITES + row * EF_SC_COUNT + counter: the call sites' counters, per
	 * thread, so that upgraded waits on many threads never write one line. */
	EF_K_SITES,
	EF_K_COUNT = EF_K_SITES + EF_SITE_ROWS * EF_SC_COUNT
};

struct ef_slot {
	_Atomic uint64_t c[EF_K_COUNT];
};

static inline unsigned ef_key(enum ef_call call, enum ef_tclass tc, enum ef_outcome o)
{
	return ((unsigned)call * EF_T_COUNT + tc) * EF_O_COUNT + o;
}

/* Threads beyond the first EF_SLOTS - 1 alive at once share the last slot, with
 * atomic adds (and every call of theirs takes the slow path). */
#define EF_SLOTS 256
/* ---- Call sites -------------------------------------------------------------
 * One row per return address that made a rounded-up request, shared by all
 * threads, holding what it is (its flags, which change rarely); what was done
 * there is counted in each thread's slot (EF_K_SITES). */
enum {
	EF_SF_ENDS = 1,        /* runs of requests ended: deadlines were predicted */
	EF_SF_ENDLESS = 2,     /* a stream of 1 ms requests that never ends */
	EF_SF_PROVEN = 4,      /* a deadline finer than the request was seen */
	EF_SF_RECOGNISED = 8,  /* the caller's object is a runtime whose 1 ms is genuine */
	EF_SF_BACKED_OFF = 16, /* left alone after a verdict (grid, or safe) */
	EF_SF_LISTED_GENUINE = 32, /* named in EPOLLFIX_GENUINE_CALLERS */
	EF_SF_LISTED_SUBMS = 64,   /* named in EPOLLFIX_SUBMS_CALLERS */
};

struct ef_site_row {
	_Atomic(const void *) ra;
	_Atomic unsigned flags;
};

/* ---- The epoll_pwait2 state and the runtimes seen --------------------------- */

enum ef_pwait2_state { EF_PW2_UNKNOWN, EF_PW2_PROBING, EF_PW2_OK, EF_PW2_NO };

enum ef_runtime {
	EF_RT_UNKNOWN,
	EF_RT_LIBUV,
	EF_RT_NGINX,
	EF_RT_LIBEVENT,
	EF_RT_JAVA,
	EF_RT_USER_GENUINE, /* named in EPOLLFIX_GENUINE_CALLERS: its 1 ms is meant */
	EF_RT_USER_SUBMS,   /* named in EPOLLFIX_SUBMS_CALLERS: its 1 ms is rounded up */
	EF_RT_COUNT
};

/* ---- The block ---------------------------------------------------------------- */

struct ef_live {
	/* These four keep their places in every layout, so a reader of another
	 * layout can still say which library and which layout it found. */
	char magic[16];          /* EF_LIVE_MAGIC */
	uint32_t layout;         /* EF_LIVE_LAYOUT */
	uint32_t size;           /* sizeof(struct ef_live) */
	char version[16];        /* EPOLLFIX_VERSION, NUL-terminated */
	/* Filled by the constructor; 0 before, so a reader knows to wait. */
	uint32_t ready;
	uint32_t build_id_len;   /* of the library's NT_GNU_BUILD_ID note */
	uint8_t build_id[32];
	uint64_t self;           /* this block's own address: the reader checks it */
	uint64_t slots;          /* struct ef_slot[nslots] (stats.h) */
	uint32_t nslots, nkeys;  /* EF_SLOTS, EF_K_COUNT */
	uint64_t config_seq;     /* _Atomic uint64_t: the seqlock of the words (state.c) */
	uint64_t config_words;   /* _Atomic int64_t[nwords]: struct ef_config */
	uint32_t nwords;
	uint32_t reserved;
	uint64_t selected;       /* _Atomic int: 0 when EPOLLFIX_ONLY/SKIP left it alone */
	uint64_t pwait2_state;   /* _Atomic int: enum ef_pwait2_state (real.h) */
	uint64_t pwait2_why;     /* _Atomic int: its errno, or -signal */
	uint64_t runtimes;       /* _Atomic unsigned: bit (1 << enum ef_runtime) per one seen */
	uint64_t site_rows;      /* struct ef_site_row[nsite_rows] (stats.h): the call sites */
	uint32_t nsite_rows, site_row_size;
};

#endif
