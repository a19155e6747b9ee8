/* The status block: what `epollfix status` reads out of a running process,
 * without running any code in it. One struct in the library's memory, in its
 * own ELF section, so the command finds it through the section headers of the
 * library file (which strip keeps; .symtab it does not) and reads it with
 * process_vm_readv at the library's load address plus the section's offset.
 *
 * The block holds no counters itself: it says where they are (the per-thread
 * slots, the published configuration words, the epoll_pwait2 state), so the
 * wait path does exactly the work it did before.
 *
 * Any change to this struct, to struct ef_slot's keys, to struct ef_config, to
 * struct ef_site_row or to the types of the words it points at must raise
 * EF_LIVE_LAYOUT: a command
 * refuses a block of another layout instead of misreading it. */
#ifndef EPOLLFIX_LIVE_H
#define EPOLLFIX_LIVE_H

#include <stdint.h>

#define EF_LIVE_SECTION "epollfix_live"
#define EF_LIVE_MAGIC "epollfix status"      /* 15 characters and a NUL */
#ifndef EF_LIVE_LAYOUT
#define EF_LIVE_LAYOUT 3
/* Fills the block's addresses and build id, then marks it ready (constructor). */
void ef_live_init(void);

#endif

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

/* Fills the block's addresses and build id, then marks it ready (constructor). */
void ef_live_init(void);

#endif
