/* clone() and clone3() at their edges: flags, stacks and pointers that the
 * kernel accepts or refuses. Prints one line, the same with the library
 * preloaded as without it:
 *
 *   ef-clone-edges WAY
 *
 * Children (they exit with 7 without touching the thread's data of the
 * program's own libc, which their flags may have made unusable):
 *   settls        libc's clone(fn, stack, SIGCHLD | CLONE_SETTLS): own memory,
 *                 and a thread pointer of its own (a zeroed block)
 *   raw-settls    the same through syscall(SYS_clone, ...), no stack
 *   clone3-settls the same through syscall(SYS_clone3, ...)
 *   tiny-stack    libc's clone(fn, stack, SIGCHLD) on a 256-byte stack above
 *                 an inaccessible page
 *   vm-vfork      libc's clone(fn, stack, CLONE_VM | CLONE_VFORK | SIGCHLD)
 *   -> "WAY: exited 7" (or "WAY: signal N")
 * Requests the kernel refuses:
 *   clone3-efault syscall(SYS_clone3, an inaccessible page, 64)
 *   clone3-null   syscall(SYS_clone3, NULL, 64)
 *   clone3-short  syscall(SYS_clone3, args, 32): smaller than any version
 *   raw-einval    syscall(SYS_clone, CLONE_SIGHAND, 0, ...): no CLONE_VM
 *   clone-einval  libc's clone(fn, stack, CLONE_SIGHAND, ...)
 *   -> "WAY: -1 errno N" */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

#define PAGE 4096
#define STACK 65536

static int seven(void *unused)
{
	(void)unused;
	return 7;
}

/* The child of a raw call: the exit system call straight away (its libc's
 * thread data may be another's). */
static void child_exit(void)
{
	syscall(SYS_exit_group, 7L);
	for (;;)
		;
}

/* An inaccessible page with `room` bytes of memory above it, whose top is
 * returned; NULL on failure. */
static char *above_guard(size_t room)
{
	char *m = mmap(NULL, PAGE + STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m, PAGE, PROT_NONE))
		return NULL;
	return m + PAGE + room;
}

static void report(const char *way, long r, int err)
{
	if (r < 0) {
		printf("%s: -1 errno %d\n", way, err);
		return;
	}
	int status;
	if (waitpid((pid_t)r, &status, __WALL) != (pid_t)r)
		printf("%s: waitpid failed: %s\n", way, strerror(errno));
	else if (WIFEXITED(status))
		printf("%s: exited %d\n", way, WEXITSTATUS(status));
	else
		printf("%s: signal %d\n", way, WIFSIGNALED(status) ? WTERMSIG(status) : -1);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: ef-clone-edges WAY\n");
		return 2;
	}
	const char *way = argv[1];
	char *stack = above_guard(STACK);
	/* The new thread pointer: the middle of a zeroed block, so any read of
	 * thread data at it finds zeros (on either side of it, by architecture). */
	char *tls = above_guard(STACK / 2);
	if (!stack || !tls) {
		perror("ef-clone-edges: mmap");
		return 1;
	}
	uint64_t args[11] = { 0 }; /* struct clone_args, version 2 */
	args[4] = SIGCHLD;         /* exit_signal */
	long r;
	errno = 0;
	fflush(stdout);
	if (!strcmp(way, "settls")) {
		r = clone(seven, stack, SIGCHLD | CLONE_SETTLS, NULL, NULL, tls, NULL);
	} else if (!strcmp(way, "raw-settls")) {
#if defined(__x86_64__)
		r = syscall(SYS_clone, (long)(SIGCHLD | CLONE_SETTLS), 0L, 0L, 0L, (long)tls);
#else /* flags, stack, parent_tid, tls, child_tid */
		r = syscall(SYS_clone, (long)(SIGCHLD | CLONE_SETTLS), 0L, 0L, (long)tls, 0L);
#endif
		if (r == 0)
			child_exit();
	} else if (!strcmp(way, "clone3-settls")) {
		args[0] = CLONE_SETTLS; /* flags */
		args[7] = (uint64_t)(uintptr_t)tls;
		r = syscall(SYS_clone3, args, sizeof(args));
		if (r == 0)
			child_exit();
	} else if (!strcmp(way, "tiny-stack")) {
		char *tiny = above_guard(256);
		if (!tiny)
			return 1;
		r = clone(seven, tiny, SIGCHLD, NULL);
	} else if (!strcmp(way, "vm-vfork")) {
		r = clone(seven, stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	} else if (!strcmp(way, "clone3-efault")) {
		r = syscall(SYS_clone3, above_guard(0) - PAGE, sizeof(args));
	} else if (!strcmp(way, "clone3-null")) {
		r = syscall(SYS_clone3, NULL, sizeof(args));
	} else if (!strcmp(way, "clone3-short")) {
		r = syscall(SYS_clone3, args, 32L);
	} else if (!strcmp(way, "raw-einval")) {
		r = syscall(SYS_clone, (long)CLONE_SIGHAND, 0L, 0L, 0L, 0L);
		if (r == 0)
			child_exit();
	} else if (!strcmp(way, "clone-einval")) {
		r = clone(seven, stack, CLONE_SIGHAND, NULL);
	} else {
		fprintf(stderr, "ef-clone-edges: '%s' is not a way\n", way);
		return 2;
	}
	report(way, r, errno);
	return 0;
}
