/* The lines of /proc/PID/maps, parsed once for every reader in the command
 * (status's library and call sites, the Go supervisor's load bias, the
 * supervisor's shared page). */
#ifndef EF_MAPS_H
#define EF_MAPS_H

struct ef_map_line {
	unsigned long long start, end, offset, inode;
	const char *name; /* the path or "[heap]" etc., "" when none; no newline */
};

/* Calls each(line, arg) for the lines of pid's maps, whole however long a
 * path, until it returns non-zero; returns that value, 0 when every line was
 * read, or -1 with errno when the file could not be opened or read. */
int ef_maps_each(long pid, int (*each)(const struct ef_map_line *, void *), void *arg);

#endif
