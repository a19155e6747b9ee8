/* The launcher's side of Go supervision (golaunch.c, doc/go.md). */
#ifndef EPOLLFIX_GOLAUNCH_H
#define EPOLLFIX_GOLAUNCH_H

/* The filter, as a struct ef_bpf_prog of sandbox.h. */
struct ef_bpf_prog;
const struct ef_bpf_prog *ef_go_filter(void);

/* The launcher's side (golaunch.c): what `epollfix PROGRAM` will do with the
 * executable at path, as one line into out; 1 when it supervises. */
struct ef_buf;
int ef_go_plan(const char *path, struct ef_buf *out);

/* Forks the supervisor, installs the filter in this process, hands the
 * listener over and waits for the ack. 0: supervised, exec now. -1: not (the
 * filter is not installed; a line said why). Exits (126) when the filter is
 * in place and no supervisor took the listener: a program started then would
 * fail on its first sub-ms wait. */
int ef_go_launch(const char *stats);

#endif
