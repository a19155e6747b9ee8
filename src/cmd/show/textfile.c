/* DIR/epollfix.prom for node_exporter's textfile collector (textfile.h).
 *
 * DIR is usually node_exporter's, and so is its parent: their owner may rename
 * DIR away and put a symbolic link in its place at any moment. Opened by path
 * on every round, a root agent would then create a root-owned file in any
 * directory the link names. So DIR is opened once and held: every file is made
 * and renamed relative to that descriptor, and what is done to the names
 * later cannot move the writes. The path itself is walked one component at a
 * time, and a symbolic link is followed only where no other user could have
 * put it: in a directory owned by root or by this user that no one else may
 * write, or in a sticky one (/tmp) when the link is root's or this user's.
 * Links the system and the caller made (/var/run to /run) work; a link in a
 * directory another user controls is refused, whatever it points to. Each
 * round walks the path again by the same rules and compares what it finds
 * with the held directory (device and inode; a removed one has no links):
 * when DIR is no longer the directory it opened (renamed away, a link
 * swapped, removed and made again), the new one is taken, and that is said
 * once; when the path leads nowhere the rules allow, the round writes nothing
 * and says why, once while the reason lasts. */
#define _GNU_SOURCE
#include "textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pathwalk.h"

static const char final[] = "epollfix.prom";

static int ours(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* Whether a link in directory dir can only have been made by root or us. */
static int link_trusted(const struct stat *dir, const struct stat *link)
{
	if (!ours(dir->st_uid))
		return 0;
	if (!(dir->st_mode & (S_IWGRP | S_IWOTH)))
		return 1;
	/* Sticky: only the link's owner and the directory's may replace it. */
	return (dir->st_mode & S_ISVTX) && ours(link->st_uid);
}

static int open_root(const char *path)
{
	return open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* DIR's descriptor (O_PATH), or -1 with why, one line, in msg. */
static int walk(const char *dir, char *msg, size_t size)
{
	char rest[2 * PATH_MAX], name[NAME_MAX + 1];
	size_t len = strlen(dir);
	int fd = -1, links = 0, err = ENAMETOOLONG;

	if (len >= sizeof(rest))
		goto failed;
	memcpy(rest, dir, len + 1);
	fd = open_root(dir);
	err = errno;
	for (const char *p = rest; fd >= 0;) {
		p += strspn(p, "/");
		if (!*p)
			return fd;
		size_t n = strcspn(p, "/");
		err = ENAMETOOLONG;
		if (n >= sizeof(name))
			break;
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (strcmp(name, ".") == 0)
			continue;
		struct stat st, in;
		int next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(next, &st) != 0) {
			err = errno;
			if (next >= 0)
				close(next);
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			close(fd);
			fd = next;
			continue;
		}
		err = S_ISLNK(st.st_mode) ? 0 : ENOTDIR;
		if (!err && fstat(fd, &in) != 0)
			err = errno;
		if (!err && !link_trusted(&in, &st)) {
			snprintf(msg, size,
				 "epollfix: status: %s: '%s' is a symbolic link in a directory another user "
				 "may change (owner uid %u, mode %03o): not followed",
				 dir, name, (unsigned)in.st_uid, (unsigned)(in.st_mode & 07777));
			close(next);
			close(fd);
			return -1;
		}
		if (!err && ++links > 40)
			err = ELOOP;
		/* What the link says, then what was left of the path. */
		int r = err ? 0 : ef_path_splice_link(next, rest, sizeof(rest), &p);
		close(next);
		if (!err && r < 0)
			err = -r;
		if (err)
			break;
		if (r == 1) {
			close(fd);
			fd = open_root(rest);
			err = errno;
		}
	}
	if (fd >= 0)
		close(fd);
failed:
	snprintf(msg, size, "epollfix: status: %s: %s", dir, strerror(err));
	return -1;
}

int ef_textfile_open(struct ef_textfile *t, const char *dir)
{
	char why[sizeof(t->said)];
	t->path = dir;
	t->said[0] = '\0';
	t->dirfd = walk(dir, why, sizeof(why));
	if (t->dirfd < 0)
		fprintf(stderr, "%s\n", why);
	return t->dirfd >= 0 ? 0 : -1;
}

/* One line on stderr, unless it is the one said last. */
static void say_once(struct ef_textfile *t, const char *line)
{
	if (strcmp(t->said, line) == 0)
		return;
	fprintf(stderr, "%s\n", line);
	snprintf(t->said, sizeof(t->said), "%s", line);
}

/* DIR walked to again: the held directory when the path still leads to it,
 * else the one it leads to now (said once). 0, or -1 when it leads nowhere
 * the rules allow (said once while that lasts). */
static int follow(struct ef_textfile *t)
{
	char why[sizeof(t->said)];
	struct stat held, now;
	int fd = walk(t->path, why, sizeof(why));
	if (fd >= 0 && fstat(fd, &now) != 0) {
		snprintf(why, sizeof(why), "epollfix: status: %s: %s", t->path, strerror(errno));
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		say_once(t, why);
		return -1;
	}
	if (t->dirfd >= 0 && fstat(t->dirfd, &held) == 0 && held.st_nlink > 0 &&
	    held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
		close(fd);
		return 0;
	}
	if (t->dirfd >= 0) {
		snprintf(why, sizeof(why),
			 "epollfix: status: %s is no longer the directory it opened: writing into the "
			 "one there now",
			 t->path);
		say_once(t, why);
	}
	ef_textfile_close(t);
	t->dirfd = fd;
	return 0;
}

void ef_textfile_close(struct ef_textfile *t)
{
	if (t->dirfd >= 0)
		close(t->dirfd);
	t->dirfd = -1;
}

/* A new file in dirfd that nobody else made: O_EXCL never follows a link nor
 * reuses a name that exists, so what DIR's owner plants at a name it can
 * predict (a link to a file of ours) makes this take another name, never
 * write through it. 0644 whatever the umask: node_exporter reads it. */
static int create_tmp(int dirfd, char *name, size_t size)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned long r = (unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 16);
	for (int tries = 0; tries < 64; tries++) {
		r = r * 6364136223846793005ul + 1442695040888963407ul;
		snprintf(name, size, ".epollfix.prom.%ld.%06lx", (long)getpid(), (r >> 40) & 0xffffff);
		int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 && fchmod(fd, 0644) != 0) {
			int err = errno;
			close(fd);
			unlinkat(dirfd, name, 0);
			errno = err;
			return -1;
		}
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

/* The file filled into a new name in DIR, renamed over final. */
static int write_tmp_then_rename(const struct ef_textfile *t, void (*fill)(FILE *, void *),
				 void *arg)
{
	char tmp[64];
	int fd = create_tmp(t->dirfd, tmp, sizeof(tmp));
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "epollfix: status: %s/.epollfix.prom.%ld: %s\n", t->path,
			(long)getpid(), strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlinkat(t->dirfd, tmp, 0);
		}
		return -1;
	}
	errno = 0;
	fill(f, arg);
	/* The first error is the one to name (a full file system: ENOSPC). */
	int err = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
	if (!err && fsync(fileno(f)) != 0)
		err = errno;
	if (fclose(f) != 0 && !err)
		err = errno;
	/* rename replaces the name, never writes through it: a link planted
	 * since the check before is replaced, not followed. */
	if (!err && renameat(t->dirfd, tmp, t->dirfd, final) != 0)
		err = errno;
	if (err) {
		fprintf(stderr, "epollfix: status: %s/%s: %s\n", t->path, final, strerror(err));
		unlinkat(t->dirfd, tmp, 0);
		return -1;
	}
	return 0;
}

int ef_textfile_replace(struct ef_textfile *t, void (*fill)(FILE *, void *), void *arg)
{
	struct stat st;
	if (follow(t) != 0)
		return -1;
	/* A final name that is not a regular file (a link, a directory, a fifo
	 * planted there) is refused: this round fails, the next tries again. */
	if (fstatat(t->dirfd, final, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "epollfix: status: %s/%s is not a regular file (%s): not replaced\n",
			t->path, final,
			S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory"
								 : "a special file");
		return -1;
	}
	/* A stop (systemd's SIGTERM, Ctrl-C) while the temporary file exists
	 * waits until it is renamed or removed: none is left behind. */
	sigset_t stops, before;
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &before);
	int r = write_tmp_then_rename(t, fill, arg);
	sigprocmask(SIG_SETMASK, &before, NULL);
	if (r == 0)
		t->said[0] = '\0'; /* written: the next change of DIR is news again */
	return r;
}
