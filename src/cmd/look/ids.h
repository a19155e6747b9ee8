/* Names of user and group ids for messages (ids.c). */
#ifndef EPOLLFIX_IDS_H
#define EPOLLFIX_IDS_H

#include <stddef.h>

/* 0 and the name of uid (gid) in name, from /etc/passwd (/etc/group);
 * -1 when there is none. */
int ef_user_name(unsigned uid, char *name, size_t size);
int ef_group_name(unsigned gid, char *name, size_t size);

#endif
