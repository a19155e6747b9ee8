#define _GNU_SOURCE
#include "sysconf.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Far more than every setting with a comment each; a bigger file is refused
 * whole rather than cut in the middle of a line. */
static char file_text[16384];

static void refuse(const struct ef_buf *line)
{
	ef_log(EF_LOG_WARN, "%s; ignored", line->p);
}

/* The file's length in file_text, or -1 (missing: silent) or -2 (refused). */
static ssize_t read_file(const char *path)
{
	char text[EF_PATH_SIZE + 160];
	struct ef_buf line = EF_BUF(text);
	struct stat st;
	ssize_t len = 0, n;
	/* O_NONBLOCK: a FIFO put in its place cannot hang the program's start. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return -1;
	ef_fmt(&line, "%s ", path);
	if (fd < 0) {
		ef_fmt(&line, "cannot be read (%s)", strerror(errno));
		refuse(&line);
		return -2;
	}
	size_t mark = line.len;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		ef_fmt(&line, "is not a regular file");
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		ef_fmt(&line, "is writable by group or others");
	/* Root's, or the effective user's: a file that user owns says nothing the
	 * user could not say through the environment, and in secure execution
	 * (where the environment is not read, and the path is always the
	 * sysconfdir's) the effective user owns the program already. No other
	 * user may steer it. */
	else if (st.st_uid != 0 && st.st_uid != geteuid())
		ef_fmt(&line, "is owned by neither root nor this process's user but by uid %u",
		       (unsigned)st.st_uid);
	else
		/* Up to a full buffer (a NUL goes after it), then one byte more
		 * into extra: only a file that has it is too long. */
		for (char extra;;) {
			size_t room = sizeof(file_text) - 1 - (size_t)len;
			n = read(fd, room ? file_text + len : &extra, room ? room : 1);
			if (n == 0)
				break;
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				ef_fmt(&line, "cannot be read (%s)", strerror(errno));
				break;
			}
			if (!room) {
				ef_fmt(&line, "is longer than %zu bytes", sizeof(file_text) - 1);
				break;
			}
			len += n;
		}
	close(fd);
	if (line.len > mark) {
		refuse(&line);
		return -2;
	}
	return len;
}

enum ef_file_state ef_config_load(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
				  const char **file, const char *(*get)(const char *name))
{
	return ef_config_load_from(c, t, o, file, EF_SYSCONF_FILE, get);
}

enum ef_file_state ef_config_load_from(struct ef_config *c, struct ef_text *t, struct ef_origin *o,
				       const char **file, const char *sysconf,
				       const char *(*get)(const char *name))
{
	const char *path = get("EPOLLFIX_CONFIG"), *log = get("EPOLLFIX_LOG");
	/* EPOLLFIX_LOG=quiet silences the file's warnings too. */
	ef_log_set_level(log && strcmp(log, "quiet") == 0 ? EF_LOG_QUIET : EF_LOG_WARN);

	ef_config_defaults(c);
	ef_text_defaults(t);
	memset(o, 0, sizeof(*o));
	*file = path && *path ? path : sysconf;
	ssize_t len = read_file(*file);
	if (len >= 0)
		ef_config_from_file(c, t, o, *file, file_text, (size_t)len);
	ef_config_apply_env(c, t, o, get);
	return len >= 0 ? EF_FILE_READ : len == -1 ? EF_FILE_MISSING : EF_FILE_IGNORED;
}
