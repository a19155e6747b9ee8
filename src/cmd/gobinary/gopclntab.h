/* Where a Go executable's functions are, from its .gopclntab alone (what
 * `-ldflags='-s -w'` and strip keep): the format of Go 1.20 and later
 * (runtime/symtab.go's pcHeader, magic 0xfffffff1, and moduledata, whose
 * text field is the base of the function table's offsets), and that of Go
 * 1.18 and 1.19 (magic 0xfffffff0). The two differ in nothing read here
 * (1.19.8's and 1.26.8's symtab.go, debug/gosym: pcHeader, functab, _func's
 * entryOff and nameOff, moduledata's first 24 words are alike), but in what
 * the runtime checks: up to 1.19 the header's textStart is always stored
 * and equal to moduledata's text; from 1.20 it may be 0 (1.26 stores 0).
 * The magic found is given back, so that the release may be checked
 * against it. The header's instruction quantum must be the file's
 * machine's: x86-64's 1 or arm64's 4 (no other machine's code is read). The file is another process's: every offset is bounded, and
 * the checks the runtime makes of its own table at start-up
 * (moduledataverify1) are made here too. */
#ifndef EPOLLFIX_GOPCLNTAB_H
#define EPOLLFIX_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

#include "target.h"

#define EF_GO_FUNC_NAME_MAX 64
#define EF_GO_PCLN_GO118 0xfffffff0u /* Go 1.18 and 1.19: go118magic */
#define EF_GO_PCLN_GO120 0xfffffff1u /* Go 1.20 and later: go120magic */

struct ef_go_func {
	const char *name;    /* in: "runtime.netpoll", shorter than EF_GO_FUNC_NAME_MAX */
	uint64_t start, end; /* out: its code's link-time addresses, [start, end) */
};

/* Finds each of funcs[0..n) (n at most 8) in e's function table. 0 when each
 * was found exactly once, and *magic (if not NULL) the table's format
 * (EF_GO_PCLN_GO118 or EF_GO_PCLN_GO120); -1 with *why, a few static words,
 * otherwise. */
int ef_go_pcln_find(const struct ef_file *e, struct ef_go_func *funcs, size_t n, uint32_t *magic,
		    const char **why);

#endif
