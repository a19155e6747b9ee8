/* Where a Go executable's functions are, from its .gopclntab alone (what
 * `-ldflags='-s -w'` and strip keep): the format of Go 1.20 and later
 * (runtime/symtab.go's pcHeader, magic 0xfffffff1, and moduledata, whose
 * text field is the base of the function table's offsets). The file is
 * another process's: every offset is bounded, and the checks the runtime
 * makes of its own table at start-up (moduledataverify1) are made here too. */
#ifndef EPOLLFIX_GOPCLNTAB_H
#define EPOLLFIX_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

#include "target.h"

#define EF_GO_FUNC_NAME_MAX 64

struct ef_go_func {
	const char *name;    /* in: "runtime.netpoll", shorter than EF_GO_FUNC_NAME_MAX */
	uint64_t start, end; /* out: its code's link-time addresses, [start, end) */
};

/* Finds each of funcs[0..n) (n at most 8) in e's function table. 0 when each
 * was found exactly once; -1 with *why, a few static words, otherwise. */
int ef_go_pcln_find(const struct ef_file *e, struct ef_go_func *funcs, size_t n, const char **why);

#endif
