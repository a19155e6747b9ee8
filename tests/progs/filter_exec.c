/* Runs a command under a seccomp filter on epoll_pwait2, as older Docker and
 * podman profiles do (eperm), as an old kernel would answer (enosys), or as a
 * strict profile that kills on unknown calls (kill).
 *
 *   ef-filter eperm|enosys|kill command [args...] */
#include "seccomp_filter.h"

#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s eperm|enosys|kill command [args...]\n", argv[0]);
		return 2;
	}
	if (filter_pwait2(argv[1]))
		return 2;
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
