/* The Go families of `epollfix status --metrics` (gometrics.c): the Go
 * programs served by either mechanism, the supervisor (golook.h) and the
 * agent (agentlook.h), in one set of epollfix_go_* families, a `mechanism`
 * label saying which. Labelled like the library's families (look.h's
 * ef_metrics_labels): by default a series stands for a program in a
 * container, its processes summed; per process, for one process. */
#ifndef EPOLLFIX_GOMETRICS_H
#define EPOLLFIX_GOMETRICS_H

#include <stdio.h>

#include "look.h"

/* only: a pid, the process or the supervisor or agent that is it; 0: all.
 * Nothing written when no Go program is served. -1 when there was no
 * memory (nothing written). */
int ef_gometrics_write(FILE *out, long only, enum ef_metrics_by by);

#endif
