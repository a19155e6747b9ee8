#define _GNU_SOURCE
#include "maps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ef_maps_each(long pid, int (*each)(const struct ef_map_line *, void *), void *arg)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (r == 0 && getline(&line, &cap, f) > 0) {
		struct ef_map_line m;
		int name_at = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx-%llx %*s %llx %*s %llu %n", &m.start, &m.end, &m.offset, &m.inode,
			   &name_at) < 4)
			continue;
		m.name = name_at ? line + name_at : "";
		r = each(&m, arg);
	}
	int err = r == 0 && ferror(f) ? errno : 0;
	free(line);
	fclose(f);
	if (err) {
		errno = err;
		return -1;
	}
	return r;
}
