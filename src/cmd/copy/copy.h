/* `epollfix copy-files DEST`: the image's init container (deploy/image) has
 * no shell and no cp; the static command copies its own tree instead. */
#ifndef EPOLLFIX_COPY_H
#define EPOLLFIX_COPY_H

/* argv[0] is "copy-files". Returns the exit status. */
int ef_copy_main(int argc, char **argv);

#endif
