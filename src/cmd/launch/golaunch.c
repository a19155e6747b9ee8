/* The launcher's side of Go supervision (gosup.h): the plan, the filter, the
 * double fork of the supervisor and the hand-over of the listener. After it,
 * main.c execs the program in place: it keeps this pid, and with it its
 * signals, exit code, terminal and process group, with no forwarding. */
#define _GNU_SOURCE
#include "golaunch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdpass.h"
#include "fmt.h"
#include "goabi.h"
#include "gosup.h"
#include "goimage.h"
#include "proc.h"
#include "sandbox.h"

/* How long the launcher waits for the supervisor to say it holds the
 * listener: it acks right after recvmsg, so only a stalled machine is slow. */
#define ACK_TIMEOUT_MS 10000

/* Offsets in struct seccomp_data: nr, arch, then args[i]'s low and high words
 * (little-endian). */
#define OFF_NR 0
#define OFF_ARCH 4
#define OFF_ARG_LO(i) (16 + 8 * (i))
#define OFF_ARG_HI(i) (20 + 8 * (i))

#define LD_ABS(off) { 0x20, 0, 0, (off) }
#define JEQ(k, jt, jf) { 0x15, (jt), (jf), (k) }
#define RET(k) { 0x06, 0, 0, (k) }

/* Only epoll_wait(fd, ev, n, 1) and epoll_pwait(fd, ev, n, 1, NULL, ...) go
 * to the listener, by the numbers of the command's own machine (goabi.h).
 * Every other system call's verdict depends on the architecture and number
 * alone, so the kernel's constant-action cache (seccomp_cache_prepare)
 * allows it without running this program; another architecture's calls
 * (x86-64's x32 numbers, bit 30 set, match neither; arm64's 32-bit tasks are
 * AUDIT_ARCH_ARM) are allowed. */
#ifdef EF_NR_EPOLL_WAIT
static const struct ef_bpf_insn filter[] = {
	/* 0 */ LD_ABS(OFF_ARCH),
	/* 1 */ JEQ(EF_SECCOMP_ARCH, 0, 12),
	/* 2 */ LD_ABS(OFF_NR),
	/* 3 */ JEQ(EF_NR_EPOLL_WAIT, 1, 0),
	/* 4 */ JEQ(EF_NR_EPOLL_PWAIT, 2, 9),
	/* 5 epoll_wait: the timeout */ LD_ABS(OFF_ARG_LO(3)),
	/* 6 */ JEQ(1, 6, 7),
	/* 7 epoll_pwait: the timeout */ LD_ABS(OFF_ARG_LO(3)),
	/* 8 */ JEQ(1, 0, 5),
	/* 9 the signal mask, NULL */ LD_ABS(OFF_ARG_LO(4)),
	/* 10 */ JEQ(0, 0, 3),
	/* 11 */ LD_ABS(OFF_ARG_HI(4)),
	/* 12 */ JEQ(0, 0, 1),
	/* 13 */ RET(EF_SECCOMP_RET_USER_NOTIF),
	/* 14 */ RET(EF_SECCOMP_RET_ALLOW),
};
#else
/* A machine with no epoll_wait system call (arm64): epoll_pwait alone, the
 * same tests. */
static const struct ef_bpf_insn filter[] = {
	/* 0 */ LD_ABS(OFF_ARCH),
	/* 1 */ JEQ(EF_SECCOMP_ARCH, 0, 9),
	/* 2 */ LD_ABS(OFF_NR),
	/* 3 */ JEQ(EF_NR_EPOLL_PWAIT, 0, 7),
	/* 4 epoll_pwait: the timeout */ LD_ABS(OFF_ARG_LO(3)),
	/* 5 */ JEQ(1, 0, 5),
	/* 6 the signal mask, NULL */ LD_ABS(OFF_ARG_LO(4)),
	/* 7 */ JEQ(0, 0, 3),
	/* 8 */ LD_ABS(OFF_ARG_HI(4)),
	/* 9 */ JEQ(0, 0, 1),
	/* 10 */ RET(EF_SECCOMP_RET_USER_NOTIF),
	/* 11 */ RET(EF_SECCOMP_RET_ALLOW),
};
#endif

const struct ef_bpf_prog *ef_go_filter(void)
{
	static const struct ef_bpf_prog prog = { sizeof(filter) / sizeof(filter[0]), filter };
	return &prog;
}

/* NULL when this kernel, under the seccomp filters in force, lets the
 * supervisor do its work; else what stops it, after "but ". */
static const char *kernel_lacks(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;
	uint32_t action = EF_SECCOMP_RET_USER_NOTIF;

	if (uname(&u) != 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return "the kernel lacks a readable release";
	/* The listener's hang-up when no task is left (5.8), the fixed
	 * ID_VALID number (5.7), pidfd_getfd (5.6). */
	if (major < 5 || (major == 5 && minor < 8))
		return "the kernel lacks Linux 5.8 (seccomp listener hang-up, pidfd_getfd)";
	if (syscall(SYS_seccomp, EF_SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0)
		return "the kernel lacks SECCOMP_RET_USER_NOTIF";
	errno = 0;
	if (syscall(SYS_pidfd_getfd, -1, 0, 0) == 0 || errno == ENOSYS)
		return "the kernel lacks pidfd_getfd";
	/* The kernel answers an fd of -1 with EBADF; anything else is a seccomp
	 * filter's answer. Docker's default profile allows pidfd_getfd only with
	 * CAP_SYS_PTRACE, containerd's not at all: there the supervisor could
	 * read no wait, and each would cost a round trip to it for nothing. */
	if (errno != EBADF)
		return "the seccomp filter in force refuses pidfd_getfd (a container runtime's default "
		       "profile without CAP_SYS_PTRACE)";
	/* The listener names threads by their pids in the supervisor's pid
	 * namespace, which it finds in /proc: a /proc of another namespace
	 * (unshare --pid without --mount-proc) names other processes. */
	char self[32];
	ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
	if (n <= 0 || (self[n] = '\0', atol(self) != (long)getpid()))
		return "/proc is another pid namespace's (mount this one's: unshare --mount-proc)";
	return NULL;
}

/* 1 when the filter will need no_new_privs (no CAP_SYS_ADMIN) and it is not
 * set yet: setuid, setgid and file-capability programs the program runs
 * will then run without their privileges. */
static int adds_no_new_privs(void)
{
	char caps[32] = "";
	struct ef_proc_field eff;
	ef_proc_field_init(&eff, "CapEff", caps, sizeof(caps));
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 || ef_proc_fields_via(syscall, 0, "status", &eff, 1) != 0)
		return 0;
	return !(strtoull(caps, NULL, 16) & (1ULL << 21)); /* CAP_SYS_ADMIN */
}

#define NO_NEW_PRIVS_TEXT                                                                          \
	"no_new_privs (no CAP_SYS_ADMIN): setuid, setgid and file-capability programs it runs get "  \
	"no privileges (sudo, ping...; run it with --go=off for them)"

int ef_go_plan(const char *path, struct ef_buf *out)
{
	struct ef_go_image img;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	enum ef_go_why why = ef_go_image_read(fd, EF_GO_SUPERVISOR, &img);
	int privileged = fstat(fd, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID));
	privileged |= fgetxattr(fd, "security.capability", NULL, 0) > 0;
	close(fd);
	if (why == EF_GO_NOT_GO || why == EF_GO_NOT_ELF)
		return 0;
	ef_fmt(out, "is a Go program (%s): ", *img.version ? img.version : "release unknown");
	if (why == EF_GO_OK && privileged && getuid() != 0) {
		/* no_new_privs would run it without the privileges it is installed with */
		ef_fmt(out, "%s", "setuid, setgid or file capabilities: not supervised (no_new_privs would "
				  "drop them): its own timers stay at whole milliseconds\n");
		return 0;
	}
	if (why != EF_GO_OK) {
		ef_fmt(out, "%s: its own timers stay at whole milliseconds\n", ef_go_image_says(&img, why));
		return 0;
	}
	const char *lacks = kernel_lacks();
	if (lacks) {
		ef_fmt(out, "%s, but %s: its own timers stay at whole milliseconds\n",
		       ef_go_image_says(&img, why), lacks);
		return 0;
	}
	ef_fmt(out, "%s: supervised (its 1 ms netpoll waits end at the runtime's own deadline)%s\n",
	       ef_go_image_says(&img, why), adds_no_new_privs() ? "; " NO_NEW_PRIVS_TEXT : "");
	return 1;
}

/* The supervisor's process: out of the program's session and process group
 * (a terminal's Ctrl-C, kill -PGID), deaf to every catchable signal, with no
 * fd of the program's but stderr and the socket. */
__attribute__((noreturn)) static void become_supervisor(int sock, const char *stats, int program)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &ign, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
	}
	if (sock != 3) {
		dup2(sock, 3);
		sock = 3;
	}
	/* A pipe the program's parent waits on (a shell's $(...)) must not stay
	 * open in a process that outlives the program. */
	if (syscall(SYS_close_range, 4, ~0U, 0) != 0)
		for (long fd = 4, max = sysconf(_SC_OPEN_MAX); fd < max && fd < 65536; fd++)
			close((int)fd);
	if (chdir("/") != 0) {
		/* keeps the program's directory busy, nothing worse */
	}
	ef_go_supervise(sock, stats, program);
}

/* The pair's first notification, made here before the program runs. One an
 * answerer received but was stopped or killed before publishing is found by
 * its id (gosup.c's rescue), and the filter numbers its notifications from a
 * random first id: this call's id tells the pair where the program's start.
 * An answer not come in PRIME_RETRY_MS (its answerer stopped right after its
 * RECV) is withdrawn by a signal (SIGALRM of a POSIX timer, which exec
 * deletes; no SA_RESTART) and asked again, of the other. NULL when
 * answered; else why not. */
#define PRIME_RETRY_MS 100

static void prime_interrupt(int sig)
{
	(void)sig;
}

static const char *prime(void)
{
	struct sigaction on = { .sa_handler = prime_interrupt }, old;
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct itimerspec every = { { 0, PRIME_RETRY_MS * 1000000L }, { 0, PRIME_RETRY_MS * 1000000L } };
	sigset_t alrm, mask, pending;
	timer_t timer;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	/* A SIGALRM the caller left pending, blocked, is the program's: no
	 * retries then, rather than take it. */
	int mine = sigpending(&pending) == 0 && !sigismember(&pending, SIGALRM);
	if (mine) {
		sigaction(SIGALRM, &on, &old);
		sigprocmask(SIG_UNBLOCK, &alrm, &mask);
	}
	int timed = mine && timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0 &&
		    timer_settime(timer, 0, &every, NULL) == 0;
	struct epoll_event ev;
	long r;
	int err, tries = 0;
	do {
		r = syscall(EF_NR_EPOLL_PWAIT, EF_GO_PRIME_FD, &ev, 1, 1, NULL, 8);
		err = errno;
	} while (r < 0 && err == EINTR && ++tries < ACK_TIMEOUT_MS / PRIME_RETRY_MS);
	if (timed)
		timer_delete(timer); /* a signal it sent meanwhile was taken by the handler */
	if (mine) {
		sigprocmask(SIG_SETMASK, &mask, NULL);
		sigaction(SIGALRM, &old, NULL);
	}
	if (r < 0 && err == EINTR)
		return "no answer in 10s";
	/* ENOSYS: the listener is gone, no one holds it. EBADF is the answer
	 * (CONTINUE); any other, a filter in force before ours, is not ours. */
	return r < 0 && err == ENOSYS ? "it let go of the listener" : NULL;
}

/* NULL when the supervisor said it holds the listener (its pid in *sup);
 * else why not. */
static const char *wait_ack(int sock, int *sup)
{
	struct pollfd p = { sock, POLLIN, 0 };
	int r;
	while ((r = poll(&p, 1, ACK_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return "no answer in 10s";
	char ack[1 + sizeof(int)] = { 0 };
	ssize_t n;
	while ((n = read(sock, ack, sizeof(ack))) < 0 && errno == EINTR)
		;
	memcpy(sup, ack + 1, sizeof(*sup));
	return n == (ssize_t)sizeof(ack) && ack[0] == 'A' ? NULL : "it ended before it held the listener";
}

/* EPOLLFIX_LOG=quiet: the launch's notes are not written (failures are). */
static int quiet(void)
{
	const char *log = getenv("EPOLLFIX_LOG");
	return log && strcmp(log, "quiet") == 0;
}

/* Fills each of fds 0-2 that is closed with /dev/null, close-on-exec: the
 * socket and the supervisor's dup2s then never land on them, and the exec
 * closes them again, so the program finds them closed as it would without. */
static void hold_standard_fds(void)
{
	for (int fd = 0; fd <= 2; fd++)
		/* The lowest free number is fd: the ones below are held by now. */
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDWR | O_CLOEXEC) != fd)
			return; /* no fd left: the socketpair fails too, and says so */
}

int ef_go_launch(const char *stats)
{
	int sv[2];

	hold_standard_fds();
	/* The init of a pid namespace takes every process of it along when it
	 * exits, the supervisor too, before it can write its report. */
	if (getpid() == 1 && stats && *stats && !quiet())
		fprintf(stderr, "epollfix: --stats: the Go supervisor's line may be lost: the program is its "
				"pid namespace's init, whose exit kills the supervisor (start it under an init)\n");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		fprintf(stderr, "epollfix: Go supervision off: socketpair: %s\n", strerror(errno));
		return -1;
	}
	fflush(NULL);
	int program = (int)getpid();
	/* Double fork: the supervisor is no child of the program, which then
	 * never sees its SIGCHLD or its zombie. */
	pid_t mid = fork();
	if (mid == 0) {
		close(sv[0]);
		pid_t sup = fork();
		if (sup == 0)
			become_supervisor(sv[1], stats, program);
		_exit(sup < 0 ? 1 : 0);
	}
	close(sv[1]);
	int status = 1;
	if (mid > 0)
		while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
			;
	if (mid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "epollfix: Go supervision off: fork: %s\n",
			mid < 0 ? strerror(errno) : "the supervisor could not start");
		close(sv[0]);
		return -1;
	}
	/* The preloaded library (cgo) reads a filter in force at start as of
	 * unknown content; told this one is alone, it knows it (sandbox.h). */
	int alone = ef_seccomp_status_via(syscall) == 0;
	/* Single-threaded here: no TSYNC. The listener is close-on-exec. With
	 * CAP_SYS_ADMIN no no_new_privs is needed, and setuid children of the
	 * program keep working; without it the kernel asks for no_new_privs. */
	long listener = syscall(SYS_seccomp, EF_SECCOMP_SET_MODE_FILTER,
				EF_SECCOMP_FLAG_NEW_LISTENER, ef_go_filter());
	if (listener < 0 && errno == EACCES) {
		if (adds_no_new_privs() && !quiet())
			fprintf(stderr, "epollfix: Go supervision sets %s\n", NO_NEW_PRIVS_TEXT);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
			fprintf(stderr, "epollfix: Go supervision off: no_new_privs: %s\n", strerror(errno));
			close(sv[0]); /* the supervisor reads EOF and leaves */
			return -1;
		}
		listener = syscall(SYS_seccomp, EF_SECCOMP_SET_MODE_FILTER, EF_SECCOMP_FLAG_NEW_LISTENER,
				   ef_go_filter());
	}
	if (listener < 0) {
		/* EBUSY: a filter in force already has a listener (a container's
		 * supervisor, or epollfix around epollfix). */
		fprintf(stderr, "epollfix: Go supervision off: seccomp listener: %s\n",
			errno == EBUSY ? "another listener is in force (EBUSY)" : strerror(errno));
		close(sv[0]);
		return -1;
	}
	/* From here the filter is in force and cannot be taken off: the
	 * listener must reach the supervisor before this copy closes, or the
	 * program's first sub-ms wait fails with ENOSYS and Go throws. */
	int sup = 0;
	const char *why = ef_send_fd(sv[0], (int)listener) == 0 ? wait_ack(sv[0], &sup) : "sendmsg failed";
	if (!why) {
		close((int)listener); /* the pair's alone: a notification no one answers is ENOSYS */
		listener = -1;
		why = prime();
	}
	if (why) {
		fprintf(stderr,
			"epollfix: the Go supervisor does not answer the filter's listener (%s): not starting "
			"the program under a filter no one answers (run it with --go=off)\n", why);
		exit(126);
	}
	close(sv[0]);
	/* Yama's ptrace_scope 1 lets only ancestors read a process, and the
	 * supervisor is none: the program names it (EINVAL without Yama). An heir
	 * that takes over is not named: it falls back where it cannot read. */
	prctl(PR_SET_PTRACER, (unsigned long)sup, 0, 0, 0);
	/* Only now: a failed install leaves the filters, and the word of the
	 * launcher that installed them, as they were. */
	if (alone)
		setenv(EF_GO_FILTER_ENV, "1", 1);
	else
		unsetenv(EF_GO_FILTER_ENV);
	return 0;
}
