/* `epollfix status --textfile=DIR`: DIR/epollfix.prom, replaced whole, for
 * node_exporter's textfile collector (textfile.c). DIR and the names in it may
 * belong to another user (node_exporter's), who may change them at any time:
 * DIR is opened once, without following a symbolic link that another user
 * could have put in its path, and every write goes through that descriptor. */
#ifndef EPOLLFIX_TEXTFILE_H
#define EPOLLFIX_TEXTFILE_H

#include <stdio.h>

struct ef_textfile {
	const char *path; /* DIR as given, for the messages */
	int dirfd;        /* DIR as opened, or -1 */
};

/* Opens DIR (textfile.c says how its path is walked): 0, or -1 after one line
 * on stderr. */
int ef_textfile_open(struct ef_textfile *t, const char *dir);

/* A new file in DIR filled by fill(f, arg), then renamed over
 * DIR/epollfix.prom: a reader never sees half a file. 0, or -1 after one line
 * on stderr (the round failed; the next may succeed). */
int ef_textfile_replace(struct ef_textfile *t, void (*fill)(FILE *f, void *arg), void *arg);

void ef_textfile_close(struct ef_textfile *t);

#endif
