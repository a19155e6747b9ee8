#define _GNU_SOURCE
#include "real.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "elfsym.h"
#include "proc.h"
#include "sandbox.h"
#include "wait_path.h"

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441 /* the same number on every architecture */
#endif
#ifndef SYS_seccomp
#define SYS_seccomp __NR_seccomp
#endif
#define KERNEL_SIGSET_BYTES (_NSIG / 8)
/* <linux/seccomp.h>, which musl's headers do not bring. */
#define SECCOMP_MODE_STRICT_ 1
#define SECCOMP_MODE_FILTER_ 2
#define SECCOMP_SET_MODE_STRICT_ 0
#define SECCOMP_SET_MODE_FILTER_ 1
#define FLAG_TSYNC (1UL << 0)
#define FLAG_TSYNC_ESRCH (1UL << 4)

_Atomic(void *) ef_real_table[EF_REAL_COUNT];

/* Stand-ins for what libc lacks. They behave as the libc functions would,
 * cancellation included: a raw syscall is no cancellation point. A cancel that
 * arrived before it is acted on first (musl then holds SIGCANCEL blocked, so
 * the wait itself would never see it), and one that interrupted the wait right
 * after it. */
static int raw_epoll_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
			   const sigset_t *mask)
{
	pthread_testcancel();
	int r = (int)ef_real_syscall()(SYS_epoll_pwait, epfd, ev, maxevents, timeout, mask,
				       KERNEL_SIGSET_BYTES);
	if (r < 0 && errno == EINTR)
		pthread_testcancel();
	return r;
}

static int raw_epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout)
{
	return raw_epoll_pwait(epfd, ev, maxevents, timeout, NULL);
}

static int raw_epoll_pwait2(int epfd, struct epoll_event *ev, int maxevents,
			    const struct timespec *timeout, const sigset_t *mask)
{
	pthread_testcancel();
	int r = (int)ef_real_syscall()(SYS_epoll_pwait2, epfd, ev, maxevents, timeout, mask,
				       KERNEL_SIGSET_BYTES);
	if (r < 0 && errno == EINTR)
		pthread_testcancel();
	return r;
}

static int raw_prctl(int option, ...)
{
	unsigned long a[4];

	EF_PRCTL_ARGS(option, a);
	return (int)ef_real_syscall()(SYS_prctl, option, a[0], a[1], a[2], a[3]);
}

/* libc always has syscall(); were it missing, this is what a kernel without the
 * call would answer. */
static long raw_syscall(long number, ...)
{
	(void)number;
	errno = ENOSYS;
	return -1;
}

#define EF_REAL_NAME(name, type) #name,
static const char *const real_names[] = { EF_REAL_FUNCS(EF_REAL_NAME) };
#define EF_REAL_RAW(name, type) (void *)raw_##name,
static void *const real_raw[] = { EF_REAL_FUNCS(EF_REAL_RAW) };

/* Racing threads store the same value; dlsym's errno never leaks out. */
void *ef_real_resolve(enum ef_real_id id)
{
	int saved = errno;
	void *p = dlsym(RTLD_NEXT, real_names[id]);
	errno = saved;
	if (!p)
		p = real_raw[id];
	atomic_store_explicit(&ef_real_table[id], p, memory_order_release);
	return p;
}

void ef_real_init(void)
{
	for (int id = 0; id < EF_REAL_COUNT; id++)
		if (!atomic_load_explicit(&ef_real_table[id], memory_order_acquire))
			ef_real_resolve((enum ef_real_id)id);
}

/* ---- Is epoll_pwait2 usable? ---------------------------------------------- */

static _Atomic int pw2_state = EF_PW2_UNKNOWN;
static _Atomic int pw2_why;

/* Was a filter in force before the program could install one (its launcher's)?
 * Read once, with the real syscall() (sandbox.c). */
static _Atomic int inherited = -1;
static _Atomic int go_filter; /* EF_GO_FILTER_ENV said the one filter is epollfix's */

void ef_seccomp_go_filter(const char *marker)
{
	atomic_store_explicit(&go_filter, marker && strcmp(marker, "1") == 0, memory_order_release);
}

int ef_seccomp_inherited(void)
{
	int v = atomic_load_explicit(&inherited, memory_order_acquire);
	if (v < 0) { /* racing readers find the same answer */
		int saved = errno;
		v = ef_seccomp_status_via(ef_real_syscall());
		/* epollfix's own Go filter, alone (filters are inherited and never
		 * removed, so one filter where the launcher found none is its own):
		 * its content is known, and it allows the library's calls. */
		if (v && atomic_load_explicit(&go_filter, memory_order_acquire) &&
		    ef_seccomp_filters_via(ef_real_syscall()) == 1)
			v = 0;
		errno = saved;
		atomic_store_explicit(&inherited, v, memory_order_release);
	}
	return v;
}

/* ---- Filters the library cannot see being installed ------------------------
 * Preloaded (or linked before libc), the library's prctl and syscall are the
 * ones every object calls, directly or through an interposer loaded before it
 * (which forwards to the next definition: the library's); it reads each filter
 * before it is in force
 * (ef_seccomp_set). Loaded with dlopen (Python's epollfix.enable()) it comes
 * after libc in symbol lookup, and a filter installed through libc (libseccomp's
 * seccomp_load, the program's own prctl) passes it by. Then, before each use of
 * epoll_pwait2 or of its own slack, the library reads the process's filter
 * count (Seccomp_filters: in /proc/self/status, Linux 5.9, before
 * epoll_pwait2's 5.11); any change from the count at start means a filter it
 * never read: it stops making either call for good. prctl(PR_GET_SECCOMP),
 * which needs no fd, is no check: the filter it would look for may kill
 * prctl, and the program alone would have gone on.
 * The read before a wait also gives the process's thread count (Threads:).
 * Where it was 1, and the wait did not end in EINTR, the slack is put back
 * after the wait with no second read: while the one thread was blocked in
 * the wait, only a signal handler on it could install a filter or start a
 * thread, and an epoll wait a handler interrupted always fails with EINTR
 * (never restarted, whatever SA_RESTART says). In every other case (more
 * threads, EINTR) the count is read again before the slack's prctl.
 * The status file is opened once, in the constructor, and read with pread: a
 * filter installed later that forbids opening files (pledge-like) leaves the
 * check what it needs, and a read costs no open and close. The fd sits at 256
 * or above, away from the low numbers a program reuses; it is checked by
 * fstat before each read, so a number the program closed and reused
 * (closefrom, dup2) is never read nor closed: the library opens the file
 * again then (the one open after start-up, and only after the program closed
 * the library's). A fork child's handler opens its own before the child's
 * code runs (the inherited one is the parent's file). The count is the main
 * thread's: a filter installed with TSYNC, or by the main thread, shows
 * there; one that another thread installs for itself alone does not
 * (doc/limits.md). */

static _Atomic int filters_watched = 1; /* 0: loaded with dlopen, checks needed */
/* The count at start; -1: unread then (EMFILE at the dlopen, say). */
static _Atomic long filters_at_start = -1;

#define STATUS_FD_FLOOR 256
static _Atomic int status_fd = -1; /* /proc/self/status, held */
static _Atomic uint64_t status_dev, status_ino;

/* Opens /proc/self/status for keeps: its fd, or -errno. */
static int status_open(void)
{
	ef_syscall_fn sys = ef_real_syscall();
	struct stat st;
	long fd = sys(SYS_openat, (long)AT_FDCWD, "/proc/self/status", (long)(O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		return -errno;
	long high = sys(SYS_fcntl, fd, (long)F_DUPFD_CLOEXEC, (long)STATUS_FD_FLOOR);
	if (high >= 0) { /* else (RLIMIT_NOFILE under 257) where it is */
		sys(SYS_close, fd);
		fd = high;
	}
	if (fstat((int)fd, &st) != 0) {
		int err = errno;
		sys(SYS_close, fd);
		return -err;
	}
	atomic_store_explicit(&status_dev, (uint64_t)st.st_dev, memory_order_relaxed);
	atomic_store_explicit(&status_ino, (uint64_t)st.st_ino, memory_order_relaxed);
	return (int)fd;
}

/* 1 when fd is still the file the library opened. */
static int status_is_ours(int fd)
{
	struct stat st;
	/* libc's fstat: the call (fstat or newfstatat) the program's own make. */
	return fd >= 0 && fstat(fd, &st) == 0 &&
	       (uint64_t)st.st_dev == atomic_load_explicit(&status_dev, memory_order_relaxed) &&
	       (uint64_t)st.st_ino == atomic_load_explicit(&status_ino, memory_order_relaxed);
}

/* The held fd, opened again when it is missing (unopened at start, or closed
 * or replaced by the program): the fd, or -1 with *err why not. */
static int status_held(int *err)
{
	int fd = atomic_load_explicit(&status_fd, memory_order_acquire);
	if (status_is_ours(fd))
		return fd;
	int mine = status_open();
	if (mine < 0) {
		*err = -mine;
		return -1;
	}
	/* Two threads that race keep the first one's; the other closes its own. */
	if (!atomic_compare_exchange_strong(&status_fd, &fd, mine)) {
		ef_real_syscall()(SYS_close, (long)mine);
		return fd;
	}
	return mine;
}

/* The count read from fd, or -1 with *err the errno that kept it from being
 * read (0: the file holds no count); *threads the process's thread count
 * read with it (-1: not read). errno is kept. */
static long count_in(int fd, int *err, long *threads)
{
	struct ef_proc_field f[3];
	char mode[8], count[24], nthreads[24];
	ef_proc_field_init(&f[0], "Seccomp", mode, sizeof(mode));
	ef_proc_field_init(&f[1], "Seccomp_filters", count, sizeof(count));
	ef_proc_field_init(&f[2], "Threads", nthreads, sizeof(nthreads));
	*threads = -1;
	*err = ef_proc_fields_fd(ef_real_syscall(), fd, f, 3);
	if (*err)
		return -1;
	/* A count of digits, as the filters' is. */
	*threads = ef_seccomp_filters_of(&f[2]);
	/* Before the count was shown (Linux 5.9): the mode alone. A kernel
	 * without seccomp has no such line: 0. */
	return ef_proc_field_found(&f[1]) ? ef_seccomp_filters_of(&f[1]) : ef_seccomp_mode_of(&f[0], 1);
}

/* The process's filter count, or -1 with *err why not; *threads as count_in.
 * errno is kept. */
static long filter_count(int *err, long *threads)
{
	int saved = errno;
	int fd = status_held(err);
	*threads = -1;
	long n = fd >= 0 ? count_in(fd, err, threads) : -1;
	errno = saved;
	return n;
}

/* dl_iterate_phdr goes through the objects in the order they were loaded,
 * which is the order of symbol lookup for those loaded at start. */
struct lookup_order {
	const void *self, *next;
	int found; /* 1: the library's object first; 2: next's */
};

static int holds(const struct dl_phdr_info *i, const void *a)
{
	return ef_elf_contains(i->dlpi_addr, i->dlpi_phdr, i->dlpi_phnum, (uintptr_t)a);
}

static int first_of(struct dl_phdr_info *i, size_t size, void *arg)
{
	struct lookup_order *o = arg;
	(void)size;
	/* next in the library itself: a stand-in, no later definition to judge by */
	o->found = holds(i, o->next) ? 2 : holds(i, o->self) ? 1 : 0;
	return o->found;
}

/* Whether a call of name, by any object, reaches the library before next (the
 * definition the library forwards to, libc's): the library comes first in
 * lookup, or behind interposers (the ASan runtime, libfaketime) that forward
 * to the definition after theirs, which is the library's. Loaded with dlopen,
 * it comes after libc, and after the interposers too. */
static int ahead_of(const void *next)
{
	struct lookup_order o = { .self = (const void *)ef_filters_init, .next = next };
	if (next)
		dl_iterate_phdr(first_of, &o);
	return o.found == 1;
}

void ef_filters_init(void)
{
	int watched = ahead_of((const void *)ef_real_syscall()) && ahead_of((const void *)ef_real_prctl());
	if (!watched) {
		int err, fd = status_open();
		long threads;
		if (fd >= 0)
			atomic_store_explicit(&status_fd, fd, memory_order_release);
		atomic_store_explicit(&filters_at_start, fd >= 0 ? count_in(fd, &err, &threads) : -1,
				      memory_order_relaxed);
	}
	atomic_store_explicit(&filters_watched, watched, memory_order_release);
}

/* Failures that pass: the check is made again at the next use. */
static int transient(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOMEM || err == EINTR || err == EAGAIN ||
	       err == ENOBUFS;
}

/* A filter came that the library never read: both calls given up for good.
 * It may forbid opening files after start-up (pledge-like): the exit report
 * then goes to stderr, as when one it read does. */
static void unseen(int why)
{
	ef_sandbox_deny(EF_DENY_CALLS | EF_DENY_OPEN);
	ef_pwait2_refused(why);
}

static __attribute__((noinline, cold)) int filters_checked(int *alone)
{
	if ((ef_sandbox_denied() & EF_DENY_CALLS) == EF_DENY_CALLS)
		return 0;
	int err;
	long threads;
	long now = filter_count(&err, &threads);
	long start = atomic_load_explicit(&filters_at_start, memory_order_relaxed);
	if (now >= 0 && now == start) {
		*alone = threads == 1;
		return 1;
	}
	/* Unread at start, none now: none then either (filters are never removed). */
	if (now == 0 && start < 0) {
		atomic_store_explicit(&filters_at_start, 0, memory_order_relaxed);
		*alone = threads == 1;
		return 1;
	}
	/* A moment without a free fd or memory: this use does without. */
	if (now < 0 && transient(err))
		return 0;
	unseen(now < 0 ? EF_WHY_COUNT_UNREAD_ERRNO(err) : EF_WHY_FILTER_UNSEEN);
	return 0;
}

EF_WAIT_PATH int ef_filters_seen_alone(int *alone)
{
	*alone = 0;
	if (__builtin_expect(atomic_load_explicit(&filters_watched, memory_order_relaxed), 1))
		return 1;
	return filters_checked(alone);
}

EF_WAIT_PATH int ef_filters_seen(void)
{
	int alone;
	return ef_filters_seen_alone(&alone);
}

void ef_filters_after_fork(int before_child_code)
{
	if (atomic_load_explicit(&filters_watched, memory_order_relaxed))
		return;
	int saved = errno;
	int fd = atomic_exchange_explicit(&status_fd, -1, memory_order_acq_rel);
	if (status_is_ours(fd)) {
		/* The parent's file: a filter it holds unread is this one's too. */
		int err;
		long threads;
		long parent = count_in(fd, &err, &threads);
		long start = atomic_load_explicit(&filters_at_start, memory_order_relaxed);
		ef_real_syscall()(SYS_close, (long)fd);
		if (parent >= 0 && start >= 0 && parent != start) {
			ef_sandbox_deny(EF_DENY_CALLS | EF_DENY_OPEN);
			ef_pwait2_refused(EF_WHY_FILTER_UNSEEN);
		}
	}
	/* Before the child's own code, no filter of its own yet: its file now.
	 * Otherwise the next check opens it. */
	if (before_child_code && (ef_sandbox_denied() & EF_DENY_CALLS) != EF_DENY_CALLS) {
		int mine = status_open();
		if (mine >= 0)
			atomic_store_explicit(&status_fd, mine, memory_order_release);
	}
	errno = saved;
}

/* ---- The first use of epoll_pwait2 ------------------------------------------
 * A filter the program installs is read before it is in force
 * (ef_seccomp_set), so a use asks the kernel nothing. Under no filter the
 * kernel is asked at the first use, by a raw system call (no cancellation
 * point: nothing stays "probing" for a thread that leaves). Under a filter in
 * force at start, of unknown content, a child is asked (sandbox.h's probe),
 * in the constructor and only there: the program's own code has not run, so
 * no filter of its own can forbid the clone, the waitid or the kill, and the
 * probe is reaped, answered or killed, before the constructor returns: no
 * child of the library outlives it, and a fork child inherits the answer.
 * (A clone also copies the process's page tables, about 12 ms per 100 MB of
 * touched memory here, so a probe made later in a server that has grown would
 * stall it, where at start-up it costs about 0.1-0.3 ms.) A process that
 * reaches its first wait with no answer (the library was off at start, or it
 * was forked while its parent's constructor probed) does without. */

/* 1 once the constructor is past the time a probe may be made. */
static _Atomic int probe_time_over;

/* The state that the first use found, or the one the probe answered: a
 * filter installed meanwhile (ef_seccomp_set) may have said NO first, and
 * keeps it. */
static void pwait2_settle(int from, int why)
{
	atomic_store_explicit(&pw2_why, why, memory_order_relaxed);
	atomic_compare_exchange_strong(&pw2_state, &from, why ? EF_PW2_NO : EF_PW2_OK);
}

/* The probe from start to answer, in the constructor: EF_PROBE_PATIENCE_NS at
 * most, then killed and reaped, silent counting as no. */
static void probe_now(int64_t slack_ns, unsigned *denied, int *why)
{
	*why = ef_probe_run(ef_real_syscall(), slack_ns, denied);
	ef_sandbox_deny(*denied); /* the slack's verdict before any upgraded wait may use it */
	pwait2_settle(EF_PW2_PROBING, *why);
}

/* The answer handed across exec (sandbox.h), or the probe; then the answer
 * this process hands on in answer (empty: none). */
static void answer_now(int64_t slack_ns, const char *handed, char *answer, size_t size)
{
	struct ef_probe_facts f;
	unsigned denied;
	int why, known = ef_probe_facts_via(ef_real_syscall(), &f) == 0;

	if (known && ef_probe_answer_take(handed, &f, slack_ns, &denied, &why)) {
		ef_sandbox_deny(denied);
		pwait2_settle(EF_PW2_PROBING, why);
	} else {
		probe_now(slack_ns, &denied, &why);
	}
	if (!known || ef_probe_answer_fmt(answer, size, &f, slack_ns, denied, why) != 0)
		answer[0] = '\0';
}

static __attribute__((noinline, cold)) void pwait2_first_use(int mode)
{
	int saved = errno;
	int why = ef_seccomp_plan(mode, ef_seccomp_inherited(), ef_real_syscall());
	if (why == EF_PLAN_PROBE && !atomic_load_explicit(&probe_time_over, memory_order_acquire)) {
		/* Before the constructor (another object's constructor waits):
		 * this call passes through, and the constructor probes. */
		int probing = EF_PW2_PROBING;
		atomic_compare_exchange_strong(&pw2_state, &probing, EF_PW2_UNKNOWN);
	} else if (why == EF_PLAN_PROBE) {
		pwait2_settle(EF_PW2_PROBING, EF_WHY_PROBE_NOT_AT_START);
	} else {
		pwait2_settle(EF_PW2_PROBING, why == EF_PLAN_ASK ? ef_pwait2_probe_via(ef_real_syscall()) : why);
	}
	errno = saved;
}

int ef_pwait2_early(int wanted, int mode, int64_t slack_ns, const char *handed, char *answer,
		   size_t size)
{
	int saved = errno, expected = EF_PW2_UNKNOWN, asked = 0;
	answer[0] = '\0';
	if (wanted && ef_seccomp_plan(mode, ef_seccomp_inherited(), ef_real_syscall()) == EF_PLAN_PROBE) {
		/* Loaded with dlopen, a filter in force now may be the program's
		 * own, which may kill a clone: only an operator's
		 * EPOLLFIX_SECCOMP=probe asks a child then (and hands nothing
		 * on: the environment is no one's to change with threads about). */
		if (!atomic_load_explicit(&filters_watched, memory_order_acquire)) {
			if (atomic_compare_exchange_strong(&pw2_state, &expected, EF_PW2_PROBING)) {
				unsigned denied;
				int why = EF_WHY_DLOPEN_FILTER;
				if (mode == EF_SECCOMP_PROBE)
					probe_now(slack_ns, &denied, &why);
				else
					pwait2_settle(EF_PW2_PROBING, why);
			}
		} else if (atomic_compare_exchange_strong(&pw2_state, &expected, EF_PW2_PROBING)) {
			answer_now(slack_ns, handed, answer, size);
			asked = 1;
		}
	}
	atomic_store_explicit(&probe_time_over, 1, memory_order_release);
	errno = saved;
	return asked;
}

EF_WAIT_PATH int ef_pwait2_usable(int mode, int *alone)
{
	int s = atomic_load_explicit(&pw2_state, memory_order_acquire);
	*alone = 0;
	if (s == EF_PW2_OK)
		return ef_filters_seen_alone(alone);
	if (s == EF_PW2_UNKNOWN) {
		if (!ef_filters_seen()) /* no call a filter unread could kill */
			return 0;
		int expected = EF_PW2_UNKNOWN;
		if (atomic_compare_exchange_strong(&pw2_state, &expected, EF_PW2_PROBING))
			pwait2_first_use(mode);
	}
	return atomic_load_explicit(&pw2_state, memory_order_acquire) == EF_PW2_OK &&
	       ef_filters_seen_alone(alone);
}

void ef_pwait2_after_fork(void)
{
	/* Probing here: another thread of the parent was in the constructor's
	 * probe, whose child is the parent's. This process makes none of its
	 * own (no child outlives a constructor), so it does without. */
	int probing = EF_PW2_PROBING;
	if (atomic_load_explicit(&pw2_state, memory_order_relaxed) == EF_PW2_PROBING)
		atomic_store_explicit(&pw2_why, EF_WHY_PROBE_NOT_AT_START, memory_order_relaxed);
	atomic_compare_exchange_strong(&pw2_state, &probing, EF_PW2_NO);
}

void ef_pwait2_refused(int err)
{
	atomic_store_explicit(&pw2_why, err, memory_order_relaxed);
	atomic_store_explicit(&pw2_state, EF_PW2_NO, memory_order_release);
}

enum ef_pwait2_state ef_pwait2_state(int *why)
{
	if (why)
		*why = atomic_load_explicit(&pw2_why, memory_order_relaxed);
	return atomic_load_explicit(&pw2_state, memory_order_acquire);
}

void ef_pwait2_live(uint64_t *state_addr, uint64_t *why_addr)
{
	*state_addr = (uint64_t)(uintptr_t)&pw2_state;
	*why_addr = (uint64_t)(uintptr_t)&pw2_why;
}

long ef_seccomp_set(int via_prctl, unsigned long op, unsigned long flags, void *prog,
		    int64_t slack_ns)
{
	int filter = via_prctl ? op == SECCOMP_MODE_FILTER_ : op == SECCOMP_SET_MODE_FILTER_;
	int strict = via_prctl ? op == SECCOMP_MODE_STRICT_ : op == SECCOMP_SET_MODE_STRICT_;

	/* Not a request to filter, or one the kernel refuses (libseccomp asks
	 * with no program, to learn what the kernel supports): it answers. */
	if ((!filter && !strict) || (filter && !prog))
		return via_prctl ? ef_real_prctl()(PR_SET_SECCOMP, op, prog, 0, 0)
				 : ef_real_syscall()(SYS_seccomp, op, flags, prog);
	int saved = errno;
	ef_seccomp_inherited(); /* what was in force before this one */
	/* Strict mode allows read, write, exit and sigreturn only. */
	int why = EPERM;
	unsigned deny = strict ? EF_DENY_CALLS | EF_DENY_OPEN : ef_sandbox_verdict(prog, slack_ns, &why);
	/* Denied before the filter is in force, so no thread of ours races past it. */
	unsigned before = ef_sandbox_deny(deny);
	int state = atomic_load_explicit(&pw2_state, memory_order_acquire);
	int state_why = atomic_load_explicit(&pw2_why, memory_order_relaxed);
	if (deny & EF_DENY_PWAIT2)
		ef_pwait2_refused(why);
	errno = saved;
	long r = via_prctl ? ef_real_prctl()(PR_SET_SECCOMP, op, prog, 0, 0)
			   : ef_real_syscall()(SYS_seccomp, op, flags, prog);
	saved = errno;
	/* With TSYNC a positive result names the thread that kept it from being
	 * installed; with NEW_LISTENER it is the listener's fd. */
	int installed = (flags & FLAG_TSYNC) && !(flags & FLAG_TSYNC_ESRCH) ? r == 0 : r >= 0;
	if (!installed && deny) { /* nothing changed: as it was (a racing install may lose a bit) */
		ef_sandbox_undeny(before);
		if ((deny & EF_DENY_PWAIT2) && state != EF_PW2_PROBING) {
			atomic_store_explicit(&pw2_why, state_why, memory_order_relaxed);
			atomic_store_explicit(&pw2_state, state, memory_order_release);
		}
	}
	errno = saved;
	return r;
}
