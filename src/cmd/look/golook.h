/* The Go supervisor seen from outside (`epollfix status`, --metrics) and its
 * report's text: the supervisor keeps its counters in a page of a memfd
 * named EF_GO_MEMFD (gosup.h), which /proc/PID/maps shows; status finds the
 * supervisor by its name (comm epollfix-gosup) and that mapping, and copies
 * the page with process_vm_readv, as it reads the library's status block. */
#ifndef EPOLLFIX_GOLOOK_H
#define EPOLLFIX_GOLOOK_H

#include <stdio.h>

#include "fmt.h"
#include "goabi.h"

#define EF_GO_MEMFD "epollfix-go-supervisor"
#define EF_GO_COMM "epollfix-gosup"

struct ef_golook {
	long pid, program;
	uint64_t count[EF_GC_COUNT];
};

/* 1 and *g filled when pid is a Go supervisor that may be read; else 0. */
int ef_golook_at(long pid, struct ef_golook *g);

/* The report: one line, as at the end and for `epollfix status PID`. */
void ef_go_report(long pid, long program, const uint64_t *count, struct ef_buf *b);

/* fn for every supervisor in /proc (only: the one that is only or serves
 * it; 0: all); the number found. */
int ef_golook_each(long only, void (*fn)(const struct ef_golook *g, void *arg), void *arg);

/* Every supervisor in /proc (only: the one that is only or serves it; 0:
 * all): one line each (status); the number found. */
int ef_golook_list(long only, FILE *out);

#endif
