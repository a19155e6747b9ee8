/* Warning and debug lines of the library, to stderr. */
#ifndef EPOLLFIX_LOG_H
#define EPOLLFIX_LOG_H

#include "fmt.h"

/* One warning line to stderr. */
void ef_warn_line(const struct ef_buf *line);

#endif
