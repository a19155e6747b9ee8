/* A path walked by hand, one component at a time, where the kernel's own
 * resolution would follow links this side's way: status's textfile directory
 * (only links no other user could have made) and a library a process names
 * (its links, inside its root). Both splice a link's target in front of what
 * is left of the path, as the kernel does. */
#ifndef EPOLLFIX_PATHWALK_H
#define EPOLLFIX_PATHWALK_H

#include <stddef.h>

/* The link link_fd (opened O_PATH | O_NOFOLLOW) spliced in front of what is
 * left of the path at *p, which points into rest (size bytes): rest becomes
 * "<target>/<left>" and *p its start. 1 when the target is absolute (the walk
 * goes on from its root), 0 when relative (from the link's directory), or
 * -errno: -ENOENT for an empty link, -ENAMETOOLONG when it does not fit. */
int ef_path_splice_link(int link_fd, char *rest, size_t size, const char **p);

#endif
