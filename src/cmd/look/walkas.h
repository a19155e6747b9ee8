/* A path as process pid's loader would walk it, from outside: why
 * `epollfix status` says a library that a process's LD_PRELOAD names is
 * missing there, or only not loaded (look.c). What it reads is the process's
 * (its ids and groups, its root, its links), and hostile. */
#ifndef EPOLLFIX_WALKAS_H
#define EPOLLFIX_WALKAS_H

/* How path fares when process pid's loader opens it, found from outside
 * without following anything on this side: from its root (/proc/PID/root,
 * the one link the kernel makes), a component at a time, each directory
 * searched only when the process may search it, its links followed as it
 * would (an absolute one from its root, ".." no higher than its root).
 * 0: a regular file there; ENOENT or ENOTDIR: none there; another errno: no
 * verdict (a directory it may not search: behind one, a file and no file are
 * the same to it, and must be to whoever reads status). */
int ef_walk_as(long pid, const char *path);

#endif
