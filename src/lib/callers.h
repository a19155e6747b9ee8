/* EPOLLFIX_GENUINE_CALLERS and EPOLLFIX_SUBMS_CALLERS: comma lists naming the
 * objects (shared libraries, Python extensions, the program itself) whose
 * rounded-up waits the user has judged. Pure functions, so every rule is
 * unit-tested without loading anything. */
#ifndef EPOLLFIX_CALLERS_H
#define EPOLLFIX_CALLERS_H

/* 1 when an item of the comma list names the object at path. An item matches
 *   - the path's basename:                     libzmq.so.5
 *   - the basename up to a version suffix:     libzmq.so    (libzmq.so.5, and
 *                                              libzmq.so.5 matches libzmq.so.5.2.4)
 *   - one of the path's directory names:       gevent       (.../gevent/libev/x.so)
 *   - the path itself, for an item with a '/': /opt/app/lib/libfoo.so
 * Items are read as every list is (ef_list_next): blanks around them and empty
 * ones are ignored. */
int ef_object_listed(const char *list, const char *path);

enum ef_listed { EF_LISTED_NONE, EF_LISTED_GENUINE, EF_LISTED_SUBMS };

/* What the two lists say about an object known by path, or also by alias (the
 * program: the executable /proc/self/exe names, and the name it was started
 * by; NULL if none). An object named in both lists is genuine: leaving a 1 ms
 * alone is the safe side. */
enum ef_listed ef_object_judged(const char *genuine, const char *subms, const char *path,
				const char *alias);

#endif
