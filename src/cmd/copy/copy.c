/* `epollfix copy-files DEST`: copies the files of the tree the command was
 * installed in (the directory above its own bin/: the image's root, holding
 * glibc/libepollfix.so, musl/libepollfix.so and bin/epollfix) into DEST, for a
 * pod whose cluster cannot mount an image as a volume: an init container runs
 * it into an emptyDir the pod's containers then mount. Each file goes to a
 * temporary name and is renamed over the old one, so a container that
 * restarts never maps half a library. */
#define _GNU_SOURCE
#include "copy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int usage(FILE *out)
{
	fprintf(out, "usage: epollfix copy-files DEST\n\n"
		     "Copies the image's files from the directory above this command's own bin/\n"
		     "(the image's root: glibc/libepollfix.so, musl/libepollfix.so, bin/epollfix)\n"
		     "into DEST, which must exist: the image's init container runs it into an\n"
		     "emptyDir (deploy/helm/epollfix, doc/kubernetes.md).\n");
	return out == stdout ? 0 : 2;
}

static int copy_file(int from_dir, int to_dir, const char *name, mode_t mode)
{
	char tmp[NAME_MAX + 16];
	snprintf(tmp, sizeof(tmp), ".%.*s.tmp", NAME_MAX, name);
	int in = openat(from_dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int out = in < 0 ? -1 : openat(to_dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 0755);
	int ok = out >= 0;
	char buf[65536];
	for (ssize_t n; ok && (n = read(in, buf, sizeof(buf))) != 0;) {
		if (n < 0 && errno == EINTR)
			continue;
		for (ssize_t done = 0; ok && n > 0 && done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			ok = w > 0 || (w < 0 && errno == EINTR);
			done += w > 0 ? w : 0;
		}
		ok = ok && n > 0;
	}
	int saved = errno;
	if (out >= 0 && (fchmod(out, mode & 0755) != 0 || close(out) != 0))
		ok = 0, saved = errno;
	if (in >= 0)
		close(in);
	if (ok && renameat(to_dir, tmp, to_dir, name) != 0)
		ok = 0, saved = errno;
	if (!ok) {
		if (out >= 0)
			unlinkat(to_dir, tmp, 0);
		fprintf(stderr, "epollfix: copy-files: %s: %s\n", name, strerror(saved));
	}
	return ok ? 0 : -1;
}

/* The image's files, relative to the directory above bin/. Only these: in
 * the image that directory is the root, which holds /proc, /dev and what the
 * runtime mounts as well. */
static const char *const image_files[] = { "bin/epollfix", "glibc/libepollfix.so",
					   "musl/libepollfix.so" };

/* DIR/NAME's directory part made in to_dir (one level: the image's tree);
 * the file itself copied with its mode. */
static int copy_one(int from_dir, int to_dir, const char *path)
{
	char dir[NAME_MAX + 1];
	const char *slash = strchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	struct stat st;
	int found = fstatat(from_dir, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!found || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "epollfix: copy-files: %s: %s\n", path,
			found ? "not a regular file" : strerror(errno));
		return -1;
	}
	if (mkdirat(to_dir, dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "epollfix: copy-files: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	int f = openat(from_dir, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	int t = openat(to_dir, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	int r = f < 0 || t < 0 ? -1 : copy_file(f, t, slash + 1, st.st_mode);
	if (f < 0 || t < 0)
		fprintf(stderr, "epollfix: copy-files: %s: %s\n", dir, strerror(errno));
	if (f >= 0)
		close(f);
	if (t >= 0)
		close(t);
	return r;
}

int ef_copy_main(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		return usage(stdout);
	if (argc != 2 || argv[1][0] == '-')
		return usage(stderr);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
	if (slash)
		*slash = '\0';
	/* The tree is bin/'s parent; a command elsewhere has none to copy. */
	slash = slash ? strrchr(exe, '/') : NULL;
	if (!slash || strcmp(slash, "/bin") != 0) {
		fprintf(stderr, "epollfix: copy-files: this command is not in a bin/ directory of a tree to copy\n");
		return 1;
	}
	*slash = '\0';
	const char *root = exe[0] ? exe : "/";
	int from = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int to = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (from < 0 || to < 0) {
		fprintf(stderr, "epollfix: copy-files: %s: %s\n", from < 0 ? root : argv[1], strerror(errno));
		return 1;
	}
	int r = 0;
	for (size_t i = 0; i < sizeof(image_files) / sizeof(image_files[0]); i++)
		r |= copy_one(from, to, image_files[i]);
	close(from);
	close(to);
	if (r == 0)
		printf("epollfix: copied the image's files from %s into %s\n", root, argv[1]);
	return r == 0 ? 0 : 1;
}
