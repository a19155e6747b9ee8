/* `epollfix copy-files DEST`: copies the tree the command was installed in
 * (the directory above its own bin/: /epollfix in the image, holding
 * glibc/libepollfix.so, musl/libepollfix.so and bin/epollfix) into DEST, for a
 * pod whose cluster cannot mount an image as a volume: an init container runs
 * it into an emptyDir the pod's containers then mount. Each file goes to a
 * temporary name and is renamed over the old one, so a container that
 * restarts never maps half a library. */
#define _GNU_SOURCE
#include "copy.h"

#include <dirent.h>
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
		     "Copies the directory above this command's own bin/ (the image's /epollfix:\n"
		     "glibc/, musl/, bin/) into DEST, which must exist: the image's init container\n"
		     "runs it into an emptyDir (deploy/helm/epollfix, doc/kubernetes.md).\n");
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

/* Directories and regular files, depth-first; links and the rest are left
 * out. A few levels: the tree is the image's own. */
static int copy_tree(int from_dir, int to_dir, int depth)
{
	DIR *d = fdopendir(dup(from_dir));
	struct dirent *de;
	int bad = !d || depth > 4;
	while (!bad && (de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.' || fstatat(from_dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			bad = copy_file(from_dir, to_dir, de->d_name, st.st_mode) != 0;
		} else if (S_ISDIR(st.st_mode)) {
			if (mkdirat(to_dir, de->d_name, 0755) != 0 && errno != EEXIST) {
				fprintf(stderr, "epollfix: copy-files: %s: %s\n", de->d_name, strerror(errno));
				bad = 1;
				break;
			}
			int f = openat(from_dir, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			int t = openat(to_dir, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			bad = f < 0 || t < 0 || copy_tree(f, t, depth + 1) != 0;
			if (f >= 0)
				close(f);
			if (t >= 0)
				close(t);
		}
	}
	if (d)
		closedir(d);
	return bad ? -1 : 0;
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
	int r = copy_tree(from, to, 0);
	close(from);
	close(to);
	if (r == 0)
		printf("epollfix: copied %s into %s\n", root, argv[1]);
	return r == 0 ? 0 : 1;
}
