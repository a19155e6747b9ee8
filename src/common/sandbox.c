/* Reading seccomp filters before they are in force (sandbox.h). */
#define _GNU_SOURCE /* CLONE_FILES */
#include "sandbox.h"

#include "config.h"
#include "fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441 /* the same number on every architecture */
#endif
#define KERNEL_SIGSET_BYTES (_NSIG / 8)
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000 /* Linux 5.2; polled to the child's exit from 5.3 */
#endif

/* The seccomp ABI, spelled out: musl's headers bring no <linux/seccomp.h>
 * or <linux/audit.h>, and these values never change. */
struct seccomp_data_ {
	int32_t nr;
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t args[6];
};
#define MAX_INSNS 4096 /* BPF_MAXINSNS: the kernel refuses longer programs */
#define RET_ACTION 0xffff0000u
#define RET_DATA 0x0000ffffu
#define RET_ALLOW 0x7fff0000u
#define RET_LOG 0x7ffc0000u
#define RET_ERRNO 0x00050000u
#define RET_KILL 0x80000000u /* what a program that cannot be run counts as */

#if defined(__x86_64__) && defined(__ILP32__)
#define NR_BIAS 0x40000000 /* x32 */
#endif
#ifndef NR_BIAS
#define NR_BIAS 0
#endif
#define NR_EPOLL_PWAIT2 441 /* the same number on every architecture */

/* Runs prog on d as the kernel would, to its return value; a program the
 * kernel would refuse, or that this reading cannot follow, returns RET_KILL.
 * Jumps only go forward, so it ends within len steps. */
static uint32_t run(const struct ef_bpf_insn *prog, unsigned len, const struct seccomp_data_ *d)
{
	uint32_t a = 0, x = 0, mem[16] = { 0 };
	unsigned char data[sizeof(*d)];

	memcpy(data, d, sizeof(data));
	for (unsigned pc = 0; pc < len; pc++) {
		const struct ef_bpf_insn *i = &prog[pc];
		uint32_t k = i->k, src = i->code & 0x08 ? x : k;
		switch (i->code & 0x07) {
		case 0x00: /* LD */
		case 0x01: /* LDX */ {
			uint32_t v;
			switch (i->code & 0xf8) {
			case 0x00: /* LD|W|IMM, LDX|W|IMM */
				v = k;
				break;
			case 0x20: /* LD|W|ABS: a word of seccomp_data */
				if ((i->code & 0x07) != 0 || k % 4 || k > sizeof(data) - 4)
					return RET_KILL;
				memcpy(&v, data + k, 4);
				break;
			case 0x60: /* W|MEM */
				if (k >= 16)
					return RET_KILL;
				v = mem[k];
				break;
			case 0x80: /* W|LEN */
				v = sizeof(data);
				break;
			default:
				return RET_KILL;
			}
			if (i->code & 0x07)
				x = v;
			else
				a = v;
			break;
		}
		case 0x02: /* ST */
		case 0x03: /* STX */
			if (k >= 16 || (i->code & 0xf8))
				return RET_KILL;
			mem[k] = (i->code & 0x07) == 0x02 ? a : x;
			break;
		case 0x04: /* ALU */
			switch (i->code & 0xf0) {
			case 0x00: a += src; break;
			case 0x10: a -= src; break;
			case 0x20: a *= src; break;
			case 0x30: if (!src) return RET_KILL; a /= src; break;
			case 0x40: a |= src; break;
			case 0x50: a &= src; break;
			case 0x60: a = src < 32 ? a << src : 0; break;
			case 0x70: a = src < 32 ? a >> src : 0; break;
			case 0x80: a = -a; break;
			case 0x90: if (!src) return RET_KILL; a %= src; break;
			case 0xa0: a ^= src; break;
			default: return RET_KILL;
			}
			break;
		case 0x05: { /* JMP */
			unsigned op = i->code & 0xf0, to;
			if (op == 0x00) { /* JA */
				if (k >= len - pc - 1)
					return RET_KILL;
				pc += k;
				break;
			}
			int take = op == 0x10 ? a == src
				   : op == 0x20 ? a > src
				   : op == 0x30 ? a >= src
				   : op == 0x40 ? (a & src) != 0
						: -1;
			if (take < 0)
				return RET_KILL;
			to = take ? i->jt : i->jf;
			if (to >= len - pc - 1)
				return RET_KILL;
			pc += to;
			break;
		}
		case 0x06: /* RET */
			return (i->code & 0x18) == 0x10 ? a : (i->code & 0x18) == 0 ? k : RET_KILL;
		case 0x07: /* MISC: TAX, TXA */
			if ((i->code & 0xf8) == 0x00)
				x = a;
			else if ((i->code & 0xf8) == 0x80)
				a = x;
			else
				return RET_KILL;
			break;
		}
	}
	return RET_KILL; /* fell off the end: the kernel refuses such a program */
}

static int allowed(uint32_t ret)
{
	uint32_t action = ret & RET_ACTION;
	return action == RET_ALLOW || action == RET_LOG;
}

static uint32_t run_call(const struct ef_bpf_prog *p, long nr, uint64_t a0, uint64_t a1, uint64_t a2,
			 uint64_t a3, uint64_t a4, uint64_t a5)
{
	const struct seccomp_data_ d = { .nr = (int32_t)(nr | NR_BIAS),
					 .arch = EF_SECCOMP_ARCH,
					 .args = { a0, a1, a2, a3, a4, a5 } };
	return run(p->filter, p->len, &d);
}

unsigned ef_sandbox_verdict(const void *prog, int64_t slack_ns, int *why)
{
	const struct ef_bpf_prog *p = prog;

	*why = EF_WHY_FILTER_DENIES;
	if (!EF_SECCOMP_ARCH || !p->filter || p->len == 0 || p->len > MAX_INSNS)
		return EF_DENY_ALL;
	/* Arguments as the library passes them (pointers stand for any). */
	uint32_t pw2 = run_call(p, NR_EPOLL_PWAIT2, 3, 0x1000, 64, 0x2000, 0, 8);
	unsigned denied = 0;
	if (!allowed(pw2)) {
		denied |= EF_DENY_PWAIT2;
		if ((pw2 & RET_ACTION) == RET_ERRNO && (pw2 & RET_DATA))
			*why = (int)(pw2 & RET_DATA);
	}
	uint64_t slack = slack_ns > 0 ? (uint64_t)slack_ns : 1000;
	if (!allowed(run_call(p, SYS_prctl, PR_SET_TIMERSLACK, slack, 0, 0, 0, 0)) ||
	    !allowed(run_call(p, SYS_prctl, PR_SET_TIMERSLACK, 50000, 0, 0, 0, 0)) ||
	    !allowed(run_call(p, SYS_prctl, PR_GET_TIMERSLACK, 0, 0, 0, 0, 0)))
		denied |= EF_DENY_SLACK;
	/* The exit report's calls, as stats.c and proc.c make them through
	 * glibc or musl (open, fstat: either call of each). */
	const long fd = 6, flags_w = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	int opens = allowed(run_call(p, SYS_openat, (uint64_t)AT_FDCWD, 0x3000, O_RDONLY | O_CLOEXEC, 0, 0, 0)) &&
		    allowed(run_call(p, SYS_openat, (uint64_t)AT_FDCWD, 0x3000, (uint64_t)flags_w, 0644, 0, 0)) &&
		    allowed(run_call(p, SYS_read, fd, 0x4000, 31, 0, 0, 0)) &&
		    allowed(run_call(p, SYS_fstat, fd, 0x4000, 0, 0, 0, 0)) &&
		    allowed(run_call(p, SYS_close, fd, 0, 0, 0, 0, 0));
#ifdef SYS_open
	opens = opens && allowed(run_call(p, SYS_open, 0x3000, O_RDONLY | O_CLOEXEC, 0, 0, 0, 0)) &&
		allowed(run_call(p, SYS_open, 0x3000, (uint64_t)flags_w, 0644, 0, 0, 0));
#endif
#ifdef SYS_newfstatat
	opens = opens && allowed(run_call(p, SYS_newfstatat, fd, 0x3000, 0x4000, AT_EMPTY_PATH, 0, 0));
#endif
	if (!opens)
		denied |= EF_DENY_OPEN;
	if (!allowed(run_call(p, SYS_getpid, 0, 0, 0, 0, 0, 0)) ||
	    !allowed(run_call(p, SYS_write, STDERR_FILENO, 0x4000, 1000, 0, 0, 0)) ||
	    !allowed(run_call(p, SYS_write, fd, 0x4000, 1000, 0, 0, 0)))
		denied |= EF_DENY_WRITE;
	return denied;
}

static _Atomic unsigned denied_mask;

unsigned ef_sandbox_denied(void)
{
	return atomic_load_explicit(&denied_mask, memory_order_acquire);
}

unsigned ef_sandbox_deny(unsigned bits)
{
	return atomic_fetch_or_explicit(&denied_mask, bits, memory_order_acq_rel);
}

void ef_sandbox_undeny(unsigned before)
{
	atomic_store_explicit(&denied_mask, before, memory_order_release);
}

int ef_seccomp_mode_of(const struct ef_proc_field *seccomp, int whole)
{
	if (!ef_proc_field_found(seccomp))
		return whole ? 0 : -1;
	char c = seccomp->len ? seccomp->out[0] : '\0';
	return c >= '0' && c <= '9' ? c - '0' : -1;
}

/* ---- The kernel asked directly -------------------------------------------- */

/* With maxevents 0 a kernel that has the call answers EINVAL (or EBADF) before
 * touching anything; ENOSYS means too old, anything else a filter said no. */
int ef_pwait2_probe_via(ef_syscall_fn sys)
{
	errno = 0;
	long r = sys(SYS_epoll_pwait2, -1, NULL, 0, NULL, NULL, KERNEL_SIGSET_BYTES);
	if (r < 0 && (errno == EINVAL || errno == EBADF))
		return 0;
	return r < 0 ? errno : EINVAL;
}

/* ---- The probe ------------------------------------------------------------- */

/* struct k_sigaction as rt_sigaction(2) takes it on the architectures above. */
struct ksigaction_ {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* The child's whole life: only raw system calls through sys, on its own copy
 * of the host's memory, then exit_group with the answer: the low 7 bits
 * epoll_pwait2's (0 works, else its errno, 127 at most), bit 7 set when the
 * slack prctl was refused. */
static __attribute__((noreturn)) void probe_child(ef_syscall_fn sys, int64_t slack_ns)
{
	uint64_t all = ~(uint64_t)0;
	struct ksigaction_ dfl = { .handler = SIG_DFL };

	sys(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, KERNEL_SIGSET_BYTES);
	sys(SYS_rt_sigaction, SIGSYS, &dfl, NULL, KERNEL_SIGSET_BYTES);
	sys(SYS_prctl, PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);
	sys(SYS_prctl, PR_SET_PDEATHSIG, (long)SIGKILL, 0L, 0L, 0L);
	int pw2 = ef_pwait2_probe_via(sys);
	unsigned long slack = slack_ns > 0 ? (unsigned long)slack_ns : 1000;
	long own = sys(SYS_prctl, PR_GET_TIMERSLACK, 0L, 0L, 0L, 0L);
	int slack_ok = own > 0 && sys(SYS_prctl, PR_SET_TIMERSLACK, slack, 0L, 0L, 0L) == 0 &&
		       sys(SYS_prctl, PR_SET_TIMERSLACK, (unsigned long)own, 0L, 0L, 0L) == 0;
	long code = (pw2 > 0x7f ? 0x7f : pw2) | (slack_ok ? 0 : 0x80);
	for (;;)
		sys(SYS_exit_group, code);
}

long ef_probe_start(ef_syscall_fn sys, int64_t slack_ns, int *pidfd)
{
	*pidfd = -1;
#if defined(__s390x__) || !defined(SYS_clone)
	(void)sys;
	(void)slack_ns;
	return -ENOSYS; /* clone's arguments in another order, or no clone: no probe */
#else
	/* Exit signal 0: no SIGCHLD; CLONE_FILES: no second reference to any file.
	 * CLONE_PIDFD puts a pidfd of the child (close-on-exec) where the third
	 * argument points, the parent_tid one on every architecture here; with
	 * the others 0 the order of clone's arguments, which differs between
	 * architectures, does not matter. A kernel before 5.2 refuses the flag
	 * (EINVAL): the child is made without. */
	int fd = -1;
	long pid = sys(SYS_clone, (long)(CLONE_FILES | CLONE_PIDFD), 0L, &fd, 0L, 0L);
	if (pid < 0)
		pid = sys(SYS_clone, (long)CLONE_FILES, 0L, 0L, 0L, 0L);
	else if (pid > 0)
		*pidfd = fd;
	if (pid == 0)
		probe_child(sys, slack_ns);
	return pid < 0 ? -errno : pid;
#endif
}

int ef_probe_collect(ef_syscall_fn sys, long pid, int wait, unsigned *denied, int *why)
{
	siginfo_t si;
	long r;

	memset(&si, 0, sizeof(si));
	do /* __WALL: a child with no exit signal is a "clone" child */
		r = sys(SYS_waitid, (long)P_PID, pid, &si, (long)(WEXITED | __WALL | (wait ? 0 : WNOHANG)),
			NULL);
	while (r < 0 && errno == EINTR);
	*denied = EF_DENY_CALLS;
	if (r < 0) { /* ECHILD: the program waited for every child with __WALL */
		*why = EF_WHY_PROBE_LOST;
		return 0;
	}
	if (si.si_pid == 0)
		return 1;
	if (si.si_code != CLD_EXITED) { /* killed: by the filter, or by a SIGKILL */
		*why = -si.si_status;
		return 0;
	}
	*why = si.si_status & 0x7f;
	*denied = (*why ? EF_DENY_PWAIT2 : 0) | (si.si_status & 0x80 ? EF_DENY_SLACK : 0);
	return 0;
}

void ef_probe_abandon(ef_syscall_fn sys, long pid)
{
	unsigned denied;
	int why;

	/* Ours until reaped, so the pid cannot name another process. SIGKILL ends
	 * a task waiting for a seccomp listener's answer too. */
	sys(SYS_kill, pid, (long)SIGKILL);
	ef_probe_collect(sys, pid, 1, &denied, &why);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ef_probe_wait(ef_syscall_fn sys, long pid, int pidfd, int64_t patience_ns, unsigned *denied,
		  int *why)
{
	struct timespec tick = { 0, 20000 };
	int64_t until = mono_ns() + patience_ns;
	int blocking = pidfd >= 0;

	while (ef_probe_collect(sys, pid, 0, denied, why)) {
		int64_t left = until - mono_ns();
		if (left <= 0)
			return 1;
		if (blocking) {
			/* Readable once the child has exited: woken then, not at a
			 * tick, and no timer slack on that wake-up. */
			struct pollfd p = { .fd = pidfd, .events = POLLIN };
			struct timespec to = { (time_t)(left / 1000000000), (long)(left % 1000000000) };
			long r = sys(SYS_ppoll, &p, 1L, &to, NULL, (long)KERNEL_SIGSET_BYTES);
			if (r < 0 && errno != EINTR)
				blocking = 0; /* refused (ENOSYS, EPERM): the polls below */
			continue;
		}
		sys(SYS_nanosleep, &tick, NULL);
		if (tick.tv_nsec < 2000000)
			tick.tv_nsec *= 2;
	}
	return 0;
}

int ef_probe_run(ef_syscall_fn sys, int64_t slack_ns, unsigned *denied)
{
	int pidfd, why;
	long pid = ef_probe_start(sys, slack_ns, &pidfd);

	*denied = EF_DENY_CALLS;
	if (pid < 0)
		return EF_WHY_PROBE_NO_CHILD;
	int late = ef_probe_wait(sys, pid, pidfd, EF_PROBE_PATIENCE_NS, denied, &why);
	if (late) {
		ef_probe_abandon(sys, pid);
		*denied = EF_DENY_CALLS;
		why = EF_WHY_PROBE_SILENT;
	}
	if (pidfd >= 0) {
		int saved = errno;
		sys(SYS_close, (long)pidfd);
		errno = saved;
	}
	return why;
}

/* ---- The probe's answer, handed across exec -------------------------------- */

/* /proc/PID/stat (pid 0: self): the start time, field 22, counted from the
 * last ')' (the name may hold any). 0 when it cannot be read. */
static unsigned long long start_time_via(ef_syscall_fn sys, long pid)
{
	char path[40], buf[1024];
	struct ef_buf p = EF_BUF(path);
	int saved = errno;

	if (pid)
		ef_fmt(&p, "/proc/%ld/stat", pid);
	else
		ef_fmt(&p, "/proc/self/stat");
	long fd = sys(SYS_openat, (long)AT_FDCWD, path, (long)(O_RDONLY | O_CLOEXEC));
	long n = fd >= 0 ? sys(SYS_read, fd, buf, (long)sizeof(buf) - 1) : -1;
	if (fd >= 0)
		sys(SYS_close, fd);
	errno = saved;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *c = strrchr(buf, ')');
	if (!c)
		return 0;
	/* ") S ppid ..." : after the ')', field 3 is the first; 22 the 20th. */
	for (int field = 2; field < 22 && *c; c++)
		if (*c == ' ')
			field++;
	unsigned long long v = 0;
	for (; *c >= '0' && *c <= '9'; c++)
		v = v * 10 + (unsigned)(*c - '0');
	return *c == ' ' || *c == '\0' || *c == '\n' ? v : 0;
}

static long digits_of(const struct ef_proc_field *f)
{
	return ef_seccomp_filters_of(f); /* the same reading: digits, bounded */
}

int ef_probe_facts_via(ef_syscall_fn sys, struct ef_probe_facts *f)
{
	struct ef_proc_field fl[3];
	char pid[24], ppid[24], count[24], link[64];
	int saved = errno;

	memset(f, 0, sizeof(*f));
	ef_proc_field_init(&fl[0], "Pid", pid, sizeof(pid));
	ef_proc_field_init(&fl[1], "PPid", ppid, sizeof(ppid));
	ef_proc_field_init(&fl[2], "Seccomp_filters", count, sizeof(count));
	if (ef_proc_fields_via(sys, 0, "status", fl, 3) != 0)
		return -1;
	f->pid = digits_of(&fl[0]);
	f->ppid = digits_of(&fl[1]);
	f->filters = digits_of(&fl[2]);
	long n = sys(SYS_readlinkat, (long)AT_FDCWD, "/proc/self/ns/pid", link, (long)sizeof(link) - 1);
	errno = saved;
	if (f->pid <= 0 || f->ppid < 0 || f->filters < 0 || n <= 0)
		return -1;
	link[n] = '\0';
	const char *c = strchr(link, '[');
	for (c = c ? c + 1 : link + n; *c >= '0' && *c <= '9'; c++)
		f->pidns = f->pidns * 10 + (unsigned)(*c - '0');
	f->start = start_time_via(sys, 0);
	f->parent_start = f->ppid > 0 ? start_time_via(sys, f->ppid) : 0;
	return f->pidns && *c == ']' && f->start ? 0 : -1;
}

int ef_probe_answer_fmt(char *buf, size_t size, const struct ef_probe_facts *f, int64_t slack_ns,
			unsigned denied, int why)
{
	struct ef_buf b = { .p = buf, .len = 0, .cap = size };

	if (size)
		buf[0] = '\0';
	/* Said: it works, an errno, or killed by a signal. */
	if (denied > EF_DENY_CALLS || why > 0x7f || why < -64 || f->filters <= 0)
		return -1;
	ef_fmt(&b, "1:%ld:%llu:%llu:%ld:%lld:%u:%d", f->pid, f->start, f->pidns, f->filters,
	       (long long)slack_ns, denied, why);
	return b.len + 1 < size ? 0 : (buf[0] = '\0', -1); /* a full buffer may be cut */
}

/* The next field of text, digits with a '-' first where sign, ended by end
 * (':' or '\0'): its value in *v, text past it and its end. NULL when it is
 * none. */
static const char *field_of(const char *text, int sign, char end, long long *v)
{
	int neg = sign && *text == '-';
	const char *c = text + neg;
	long long n = 0;
	if (*c < '0' || *c > '9')
		return NULL;
	for (; *c >= '0' && *c <= '9'; c++) {
		if (n > 100000000000000000LL)
			return NULL;
		n = n * 10 + (*c - '0');
	}
	if (*c != end)
		return NULL;
	*v = neg ? -n : n;
	return end ? c + 1 : c;
}

int ef_probe_answer_take(const char *text, const struct ef_probe_facts *f, int64_t slack_ns,
			 unsigned *denied, int *why)
{
	long long v[8];
	const char *c = text;

	if (!c)
		return 0;
	for (int i = 0; i < 8; i++)
		if (!(c = field_of(c, i == 7, i == 7 ? '\0' : ':', &v[i])))
			return 0; /* too few, too many, or not digits */
	if (v[0] != 1)
		return 0; /* another version's */
	unsigned long long start = (unsigned long long)v[2];
	int maker = v[1] == f->pid && start == f->start;				  /* itself, after an exec */
	int parent = v[1] == f->ppid && f->ppid > 0 && start == f->parent_start; /* its child */
	if (!(maker || parent) || !start || (unsigned long long)v[3] != f->pidns || v[4] != f->filters ||
	    f->filters <= 0 || v[5] != slack_ns || v[6] < 0 || v[6] > EF_DENY_CALLS || v[7] > 0x7f ||
	    v[7] < -64)
		return 0;
	*denied = (unsigned)v[6];
	*why = (int)v[7];
	return 1;
}

int ef_seccomp_plan(int mode, int inherited, ef_syscall_fn sys)
{
	if (!inherited || mode == EF_SECCOMP_TRUST)
		return EF_PLAN_ASK;
	if (mode == EF_SECCOMP_PROBE)
		return EF_PLAN_PROBE;
	if (mode == EF_SECCOMP_AUTO)
		return ef_in_container_via(sys) ? EF_PLAN_PROBE : EF_WHY_NO_CONTAINER;
	return EF_WHY_UNKNOWN_FILTER;
}

int ef_in_container_via(ef_syscall_fn sys)
{
	static const char init_ns[] = "pid:[4026531836]"; /* PROC_PID_INIT_INO, fixed */
	char link[64];
	int saved = errno;
	long n = sys(SYS_readlinkat, (long)AT_FDCWD, "/proc/self/ns/pid", link, sizeof(link));
	errno = saved;
	return n > 0 && (n != (long)sizeof(init_ns) - 1 || memcmp(link, init_ns, (size_t)n) != 0);
}

int ef_seccomp_status_via(ef_syscall_fn sys)
{
	struct ef_proc_field f;
	char mode[8];

	ef_proc_field_init(&f, "Seccomp", mode, sizeof(mode));
	int whole = ef_proc_fields_via(sys, 0, "status", &f, 1) == 0;
	return ef_seccomp_mode_of(&f, whole) != 0; /* -1: it cannot tell, so assume one */
}

long ef_seccomp_filters_of(const struct ef_proc_field *count)
{
	if (!ef_proc_field_found(count) || !count->len)
		return -1;
	long n = 0;
	for (size_t i = 0; i < count->len; i++) {
		if (count->out[i] < '0' || count->out[i] > '9' || n > 100000000)
			return -1;
		n = n * 10 + (count->out[i] - '0');
	}
	return n;
}

long ef_seccomp_filters_via(ef_syscall_fn sys)
{
	struct ef_proc_field f;
	char count[24];

	ef_proc_field_init(&f, "Seccomp_filters", count, sizeof(count));
	if (ef_proc_fields_via(sys, 0, "status", &f, 1) != 0)
		return -1;
	return ef_seccomp_filters_of(&f);
}
