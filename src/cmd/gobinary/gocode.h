/* The Go runtime's addresses read from its code, for a binary without
 * .symtab (`-ldflags='-s -w'`, strip): the functions are found by name in
 * .gopclntab (gopclntab.h), and their RIP-relative operands decoded
 * (x86.h), or on arm64 the addresses their ADRP, ADD and loads and stores
 * make (arm64.h; the instructions named below have their arm64 twins in
 * gocode.c's struct uses). Each address must come out of the code of Go
 * 1.19 to 1.27 in one way only, and agree between the two functions that
 * use it:
 *
 * - runtime.epfd: the one variable runtime.netpoll compares with -1
 *   (`if epfd == -1`) and the one 32-bit variable runtime.netpollinit stores
 *   (`epfd, errno = EpollCreate1(...)`);
 * - the wake-up variable (runtime.netpollEventFd, runtime.netpollBreakRd):
 *   the one address netpollinit both takes (`&netpollEventFd`, the epoll
 *   item's data) and stores to, and netpoll both takes (to compare an
 *   event's data with) and loads (to read the fd); or, from Go 1.27, whose
 *   item's data is 0 (a nil tagged pointer), the one 64-bit variable
 *   netpollinit stores, whose address neither function takes, after a call
 *   taggedPointerPack(nil, 0) (gocode.c nil_tag);
 * - runtime.sched: findRunnable's 64-bit XCHGs through an address just taken
 *   (`sched.lastpoll.Swap(0)`, `sched.pollUntil.Store(...)`; in 1.19
 *   `atomic.Xchg64(&sched.lastpoll, 0)`, `atomic.Store64(&sched.pollUntil,
 *   ...)`: Go's atomic swaps and stores) name exactly two words, 8 apart:
 *   sched+8 and sched+16.
 *
 * All three must lie in one writable segment. Anything else (an instruction
 * not understood, a branch into the middle of one, two candidates) gives no
 * address, and a reason. */
#ifndef EPOLLFIX_GOCODE_H
#define EPOLLFIX_GOCODE_H

#include <stdint.h>

#include "target.h"

struct ef_go_vars {
	uint64_t sched, epfd, wake; /* link-time addresses */
	int nil_tag; /* the wake-up item's data is 0, not wake's address (Go 1.27) */
	uint32_t pcln_magic; /* the function table's format (gopclntab.h) */
};

/* 0 and *v filled, or -1 with *why (a few static words). */
int ef_go_code_vars(const struct ef_file *e, struct ef_go_vars *v, const char **why);

#endif
