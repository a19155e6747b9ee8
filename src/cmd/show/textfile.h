/* `epollfix status --textfile=DIR`: DIR/epollfix.prom, replaced whole, for
 * node_exporter's textfile collector (textfile.c). DIR and the names in it may
 * belong to another user (node_exporter's), who may change them at any time:
 * DIR is opened without following a symbolic link that another user could
 * have put in its path, and every write goes through that descriptor; each
 * round checks that the path still leads to it, and follows it by the same
 * rules when it no longer does. */
#ifndef EPOLLFIX_TEXTFILE_H
#define EPOLLFIX_TEXTFILE_H

#include <stdio.h>

struct ef_textfile {
	const char *path; /* DIR as given, for the messages */
	int dirfd;        /* DIR as opened, or -1 */
	char said[4096 + 512]; /* the line said last about DIR, said once */
};

/* Opens DIR (textfile.c says how its path is walked): 0, or -1 after one line
 * on stderr. */
int ef_textfile_open(struct ef_textfile *t, const char *dir);

/* A new file in DIR filled by fill(f, arg), then renamed over
 * DIR/epollfix.prom: a reader never sees half a file. 0, or -1 after one line
 * on stderr (the round failed; the next may succeed). DIR is walked to first:
 * when it is no longer the directory held, the new one is taken (said once,
 * as a path that leads nowhere allowed is, while it lasts). */
int ef_textfile_replace(struct ef_textfile *t, void (*fill)(FILE *f, void *arg), void *arg);

void ef_textfile_close(struct ef_textfile *t);

#endif
