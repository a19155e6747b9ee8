/* Names of user and group ids, for messages, read from /etc/passwd and
 * /etc/group directly rather than through NSS: the same answer in the glibc
 * and musl builds, and no NSS in the statically linked commands (glibc's
 * getpwuid there needs its shared libraries at run time). */
#include "ids.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first field of the line of file whose third field is id. */
static int name_of(const char *file, unsigned id, char *name, size_t size)
{
	FILE *f = fopen(file, "re");
	char line[1024];
	int found = 0;
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		char *end, *uid = strchr(line, ':');
		uid = uid ? strchr(uid + 1, ':') : NULL;
		if (!uid || uid[1] < '0' || uid[1] > '9')
			continue;
		unsigned long v = strtoul(uid + 1, &end, 10);
		if (*end != ':' || v != id)
			continue;
		*strchr(line, ':') = '\0';
		snprintf(name, size, "%s", line);
		found = 1;
	}
	fclose(f);
	return found ? 0 : -1;
}

int ef_user_name(unsigned uid, char *name, size_t size)
{
	return name_of("/etc/passwd", uid, name, size);
}

int ef_group_name(unsigned gid, char *name, size_t size)
{
	return name_of("/etc/group", gid, name, size);
}
