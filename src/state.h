/* Process-wide state: the configuration in force, read once from the
 * environment (in the constructor, or on the first call if another library's
 * constructor waits first), and replaceable at run time without locks on the
 * wait path. */
#ifndef EPOLLFIX_STATE_H
#define EPOLLFIX_STATE_H

#include "config.h"
#include "fmt.h"

/* Copies the configuration in force into *c. Returns 0 when there is none to be
 * had without waiting (another thread is reading the environment, or a writer is
 * mid-update): the caller then passes the call through untouched. */
int ef_state_config(struct ef_config *c);

/* Applies "key=value" (or "EPOLLFIX_KEY=value") for the runtime API. Returns 0,
 * or -1 with the reason in msg and the configuration unchanged. */
int ef_state_set(const char *word, struct ef_buf *msg);

/* One warning line to stderr. */
void ef_warn_line(const struct ef_buf *line);

#endif
