/* A path as a process's loader would walk it, from outside (walkas.h). */
#define _GNU_SOURCE
#include "walkas.h"
#include "pathwalk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"

/* A process's effective ids and groups, from /proc/PID/status ("Uid:",
 * "Gid:": real, effective, saved; "Groups:"). */
#define MAX_GROUPS 4096
struct creds {
	unsigned uid, gid;
	size_t ngroups;
	unsigned groups[MAX_GROUPS];
};

/* 0, or -1 when not all could be read. */
static int proc_creds(long pid, struct creds *c)
{
	static char g[MAX_GROUPS * 11 + 2];
	char u[128], gi[128];
	unsigned r, s;
	struct ef_proc_field f[3];
	ef_proc_field_init(&f[0], "Uid", u, sizeof(u));
	ef_proc_field_init(&f[1], "Gid", gi, sizeof(gi));
	ef_proc_field_init(&f[2], "Groups", g, sizeof(g));
	if (ef_proc_fields_via(syscall, pid, "status", f, 3) != 0 || f[2].len + 1 >= sizeof(g) ||
	    sscanf(u, "%u %u %u", &r, &c->uid, &s) != 3 || sscanf(gi, "%u %u %u", &r, &c->gid, &s) != 3)
		return -1;
	c->ngroups = 0;
	for (char *p = g, *end; *p && c->ngroups < MAX_GROUPS; p = end) {
		unsigned long v = strtoul(p, &end, 10);
		if (end == p)
			break;
		c->groups[c->ngroups++] = (unsigned)v;
	}
	return 0;
}

/* Whether the process may search directory st, by its mode bits (an ACL
 * that grants it more is not read, and gives no verdict; one, or a security
 * module, that takes more away is not seen either). */
static int may_search(const struct creds *c, const struct stat *st)
{
	if (c->uid == 0)
		return 1;
	if (st->st_uid == c->uid)
		return !!(st->st_mode & S_IXUSR);
	int member = st->st_gid == c->gid;
	for (size_t i = 0; !member && i < c->ngroups; i++)
		member = st->st_gid == c->groups[i];
	return !!(st->st_mode & (member ? S_IXGRP : S_IXOTH));
}

int ef_walk_as(long pid, const char *path)
{
	static struct creds c;
	char root_path[64], rest[2 * PATH_MAX], name[NAME_MAX + 1];
	struct stat root_st, st;
	size_t len = strlen(path);
	int links = 0, err = 0;

	snprintf(root_path, sizeof(root_path), "/proc/%ld/root", pid);
	if (len >= sizeof(rest) || proc_creds(pid, &c) != 0)
		return EPERM;
	int root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || fstat(root, &root_st) != 0) {
		if (root >= 0)
			close(root);
		return EPERM;
	}
	memcpy(rest, path, len + 1);
	int fd = dup(root);
	for (const char *p = rest; fd >= 0 && !err;) {
		p += strspn(p, "/");
		size_t n = strcspn(p, "/");
		if (!n) {
			err = fstat(fd, &st) != 0 ? EPERM : S_ISREG(st.st_mode) ? 0 : EPERM;
			break;
		}
		if (n >= sizeof(name) || fstat(fd, &st) != 0) {
			err = EPERM;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			err = ENOTDIR;
			break;
		}
		if (!may_search(&c, &st)) {
			err = EACCES;
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (strcmp(name, ".") == 0 ||
		    (strcmp(name, "..") == 0 && st.st_dev == root_st.st_dev && st.st_ino == root_st.st_ino))
			continue;
		int next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(next, &st) != 0) {
			err = next < 0 && (errno == ENOENT || errno == ENOTDIR) ? errno : EPERM;
			if (next >= 0)
				close(next);
			break;
		}
		if (!S_ISLNK(st.st_mode)) {
			close(fd);
			fd = next;
			continue;
		}
		/* A link: what it says, then what was left of the path. */
		int r = ++links > 40 ? -ELOOP : ef_path_splice_link(next, rest, sizeof(rest), &p);
		close(next);
		if (r < 0) {
			err = r == -ENOENT ? ENOENT : EPERM;
			break;
		}
		if (r == 1) {
			close(fd);
			fd = dup(root);
		}
	}
	if (fd < 0 && !err)
		err = EPERM;
	if (fd >= 0)
		close(fd);
	close(root);
	return err;
}
