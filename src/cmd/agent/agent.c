/* `epollfix agent` and `epollfix attach PID` (doc/agent.md): the kernel ends
 * a Go runtime's 1 ms netpoll wait at its own deadline (src/bpf). This side
 * finds the Go programs, reads where their runtime keeps its variables, and
 * tells the kernel; it is in the path of no wait. Killed, stopped or gone,
 * it costs the programs their precision only: what it loaded goes with its
 * file descriptors (killed), or goes on alone (stopped). */
#define _GNU_SOURCE
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/types.h>

#include "agent_bpf.h"
#include "agent_reader.h"
#include "agent_served.h"
#include "agent_signal.h"
#include "agentsel.h"
#include "fmt.h"
#include "look.h"
#include "netpoll.h"
#include "proc.h"
#include "publish.h"

#define EXIT_USAGE 2
#define EXIT_NO_PROCESS 3 /* as `epollfix status PID` */
#define EXIT_NOT_SERVED 4 /* attach: the process cannot be served, and why */
#define RESCAN_SECONDS 2 /* execs are followed at once; this finds the rest */
/* The looks a scan may leave under way with the reader: past this, the
 * rest wait until half of them are answered (the scan goes on then), so that
 * an exec's look waits behind at most this many (tens of microseconds each
 * for a process not chosen, a few milliseconds for a new executable read). */
#define SCAN_ASKS 128
#define WATCH_MS 250 /* the reader's progress looked at, while it has work */
/* After execs that woke the agent, the queue is read again this much later:
 * an exec within 100 ms of one that woke it does not wake it (the kernel's
 * storm limit), and a launcher's exec of its program (env, an entrypoint's
 * exec "$@") comes milliseconds after the launcher's own; without this look
 * it waited for the next second. */
#define FOLLOW_MS 20

/* A process looked at and not attached (not Go, not chosen, refused): not
 * read again while it is the same process running the same image. */
struct seen {
	uint32_t pid;
	uint64_t start, gen;
	uint64_t until; /* s (CLOCK_MONOTONIC) it holds until; 0: for good */
};

static struct {
	struct ef_abpf *bpf;
	struct ef_asig *sig;     /* the signal mechanism's deadlines, or NULL */
	struct ef_reader *rd;    /* reads what the processes control (agent_reader.h) */
	struct ef_served *sv;    /* the processes read and served (agent_served.h) */
	enum ef_mechanism want, mech;
	long only;               /* attach PID: that process alone */
	struct ef_sel sel;
	int verbose;
	struct seen *seen, *next;
	size_t nseen, nnext, capseen, capnext;
	uint64_t attached;       /* processes attached, over the run */
	int exec_seen;           /* attach: the process exec'd, in the last batch */
	int cut;                 /* the last scan stopped at SCAN_ASKS: it goes on */
	int status, done;        /* attach: its exit status, once a verdict ends it */
	char said[4 * PATH_MAX + 512]; /* attach: the last verdict said */
} A;

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* SIGINT, SIGTERM or SIGHUP is pending (they are blocked, and read from a
 * signalfd): a reading in progress stops, and a scan, so that the agent
 * acts on it within a reading's stop. */
static int stopping(void)
{
	sigset_t p;
	return sigpending(&p) == 0 &&
	       (sigismember(&p, SIGTERM) == 1 || sigismember(&p, SIGINT) == 1 ||
		sigismember(&p, SIGHUP) == 1);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: epollfix agent [--all | --path=PREFIX | --cgroup=PATH | --unit=NAME | --pods]... [--mechanism=M]\n"
		"                      [--quiet]\n"
		"       epollfix agent --check [--mechanism=M]\n"
		"       epollfix attach [--mechanism=M] PID\n\n"
		"Ends the Go runtime's 1 ms netpoll waits at the runtime's own deadline, from the\n"
		"kernel (BPF): running Go programs and those that start later (agent), or one\n"
		"running process (attach, in the foreground). Needs root. SIGINT or SIGTERM\n"
		"detaches and leaves every program as it was; SIGUSR1 writes the counters;\n"
		"`epollfix status` shows the processes served (/run/epollfix/agent.PID).\n"
		"attach exits 3 when there is no process PID, 4 when it cannot be served (why\n"
		"on stderr); it waits only where the process's exec may change that.\n"
		"A Go program is served when any option chooses it:\n"
		"  --all           every Go program\n"
		"  --path=PREFIX   those whose executable's path starts with PREFIX (the file\n"
		"                  this mount namespace has there: the same device and inode)\n"
		"  --cgroup=PATH   those in cgroup PATH or below (as /proc/PID/cgroup shows it;\n"
		"                  cgroup v2's line or any v1 line); a comma list\n"
		"  --unit=NAME     those of system unit NAME (.service, .scope, .slice; a bare\n"
		"                  NAME is NAME.service), below slices only, where the system\n"
		"                  manager puts it (not a user's manager's); a comma list\n"
		"  --pods          those of Kubernetes pods that opted in (epollfix.io/inject:\n"
		"                  the EPOLLFIX_POD_UID the chart's policy gives is the pod's),\n"
		"                  in kubelet's pod hierarchy (EPOLLFIX_KUBEPODS: its roots)\n"
		"  --check         say whether this kernel and these privileges allow it, and why\n"
		"  --mechanism=M   how a wait is ended: taskwork (the kernel, no signal, Linux\n"
		"                  6.18), wakeup (the kernel wakes the runtime's epoll set, no\n"
		"                  signal, Linux 5.15), timerfd (the agent's timer wakes the\n"
		"                  runtime's epoll set, no signal, no bpf_timer: PREEMPT_RT),\n"
		"                  signal (the agent sends SIGURG, Linux 5.15: a program may\n"
		"                  see it), auto (the default: taskwork, else wakeup, else\n"
		"                  timerfd where the kernel refuses bpf_timer; never signal)\n");
}

static int by_pid(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void remember(uint32_t pid, uint64_t start, uint64_t gen, uint64_t until)
{
	if (A.nnext == A.capnext) {
		size_t cap = A.capnext ? 2 * A.capnext : 1024;
		struct seen *s = realloc(A.next, cap * sizeof(*s));
		if (!s)
			return; /* looked at again next time: slower, not wrong */
		A.next = s, A.capnext = cap;
	}
	A.next[A.nnext++] = (struct seen){ pid, start, gen, until };
}

/* Whether the process may be chosen, from what the loop may read itself
 * (its executable's link, its cgroup file: procfs's own text): most of the
 * machine's processes are not, and are never sent to the reader. attach's
 * one process always may. */
static int may_choose(uint32_t pid)
{
	static char cgroups[64 * 1024];
	char link[32], exe[PATH_MAX];
	ssize_t n = 0, len;
	if (A.only)
		return 1;
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	if ((len = readlink(link, exe, sizeof(exe) - 1)) <= 0) {
		/* Gone already (most of an exec storm's short lives: their
		 * look would cost the reader's wake-up and the agent's for
		 * its answer); else the reader says why. */
		int gone = errno == ENOENT;
		snprintf(link, sizeof(link), "/proc/%u", pid);
		return !(gone && access(link, F_OK) != 0);
	}
	exe[len] = '\0';
	if (ef_sel_needs_cgroup(&A.sel) && (n = ef_proc_read(pid, "cgroup", cgroups, sizeof(cgroups))) < 0)
		n = 0;
	return ef_sel_may_choose(&A.sel, pid, exe, cgroups, (size_t)n);
}

/* One process, in a scan: skipped when it has a record (read or being
 * read), or is what it was when last found not to be for us; late, past the
 * scan's share of the reader, not asked (the next scan does). */
static void scan_one(uint32_t pid, int late)
{
	if (pid == (uint32_t)getpid() || ef_served_has(A.sv, pid))
		return;
	uint64_t gen = ef_abpf_generation(A.bpf, pid), start = ef_look_start(pid);
	struct seen key = { pid, 0, 0, 0 };
	struct seen *s = A.nseen ? bsearch(&key, A.seen, A.nseen, sizeof(*s), by_pid) : NULL;
	if (s && s->start == start && s->gen == gen && (!s->until || now_ms() / 1000 < s->until)) {
		remember(pid, start, gen, s->until);
		return;
	}
	if (late)
		return;
	if (may_choose(pid))
		ef_served_look(A.sv, pid, gen);
	else
		remember(pid, start, gen, 0); /* not chosen: for this image */
}

static void scan(void)
{
	A.nnext = 0;
	A.cut = 0;
	if (A.only) {
		scan_one((uint32_t)A.only, 0);
	} else {
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d)))
			if (ef_proc_is_pid(de->d_name))
				scan_one((uint32_t)strtoul(de->d_name, NULL, 10),
					 stopping() || (A.cut |= ef_reader_pending(A.rd) >= SCAN_ASKS));
		if (d)
			closedir(d);
	}
	/* This scan's list becomes the one to look things up in; the last one's
	 * buffer, with its own capacity, is filled next time. */
	struct seen *t = A.seen;
	size_t cap = A.capseen;
	A.seen = A.next, A.nseen = A.nnext, A.capseen = A.capnext;
	A.next = t, A.capnext = cap;
	if (A.nseen)
		qsort(A.seen, A.nseen, sizeof(*A.seen), by_pid);
}

/* A verdict of "not for us" from the reader goes into the last scan's list,
 * so that the next scan does not ask (and say so) again. */
static void not_for_us(uint32_t tgid, uint64_t start, uint64_t gen, uint64_t until)
{
	struct seen key = { tgid, start, gen, until };
	struct seen *s = A.nseen ? bsearch(&key, A.seen, A.nseen, sizeof(*s), by_pid) : NULL;
	if (s) {
		*s = key; /* the same pid: the order holds */
		return;
	}
	if (A.nseen == A.capseen) {
		size_t cap = A.capseen ? 2 * A.capseen : 1024;
		struct seen *v = realloc(A.seen, cap * sizeof(*v));
		if (!v)
			return; /* looked at again by the next scan: said twice, not wrong */
		A.seen = v, A.capseen = cap;
	}
	size_t at = A.nseen; /* inserted in order */
	while (at > 0 && A.seen[at - 1].pid > tgid)
		at--;
	memmove(&A.seen[at + 1], &A.seen[at], (A.nseen - at) * sizeof(*A.seen));
	A.seen[at] = key;
	A.nseen++;
}

/* What the kernel tells: an exec, or (wake-up mechanism) a process's waker
 * to make or to empty. Each is the process's record's to act on. */
static void on_event(uint32_t tgid, uint32_t kind, void *arg)
{
	(void)arg;
	if (kind == EF_BPF_EV_WAKER)
		ef_served_waker_asked(A.sv, tgid);
	else if (kind == EF_BPF_EV_DRAIN)
		ef_served_drain(A.sv, tgid);
	else if (A.only) /* attach_look's, after the batch */
		A.exec_seen |= tgid == (uint32_t)A.only;
	else if (ef_served_exec(A.sv, tgid, may_choose(tgid)) == 0 && !ef_served_has(A.sv, tgid))
		not_for_us(tgid, ef_look_start(tgid), ef_abpf_generation(A.bpf, tgid), 0);
}

/* The events the kernel queued: how many. */
static int execs(void)
{
	int n = ef_abpf_events(A.bpf, on_event, NULL);
	ef_served_commit(A.sv);
	return n;
}

/* attach: asks the reader about the process unless it is attached or being
 * read; its answer says the verdict (attach_verdict). */
static void attach_look(void)
{
	uint32_t pid = (uint32_t)A.only;
	if (!ef_served_has(A.sv, pid))
		ef_served_look(A.sv, pid, ef_abpf_generation(A.bpf, pid));
}

/* attach: each new verdict said once; EXIT_NOT_SERVED when the image cannot
 * be served and only its exec could change that, which a fork's own image
 * alone is waiting for. */
static void attach_verdict(const struct ef_ra *a, int r)
{
	if (r == 1) {
		*A.said = '\0';
		return;
	}
	if (r == 0 && !a->fork) {
		fprintf(stderr, "epollfix attach: %s\n", a->why);
		A.status = EXIT_NOT_SERVED, A.done = 1;
		return;
	}
	if (strcmp(A.said, a->why) != 0)
		fprintf(stderr, "epollfix attach: %s; %s\n", a->why,
			a->fork ? "it runs its parent's executable, not exec'd yet: waiting for its exec"
				: "looked at again at its next exec and every 2 s");
	snprintf(A.said, sizeof(A.said), "%s", a->why);
}

/* The reader's answers. */
static void on_answer(const struct ef_rq *q, const struct ef_ra *a, void *arg)
{
	(void)arg;
	if (q->kind == EF_RQ_WAKE) {
		ef_served_woke(A.sv, q, a);
		ef_served_commit(A.sv);
		return;
	}
	int r = ef_served_looked(A.sv, q, a);
	if (r == 1) {
		A.attached++;
		if (A.verbose)
			fprintf(stderr, "epollfix agent: %s: attached\n", a->why);
	} else if (r == 0) {
		not_for_us(q->tgid, q->start, q->gen, a->until);
		if (A.verbose && a->refused_go && !A.only)
			fprintf(stderr, "epollfix agent: %s\n", a->why);
	}
	if (A.only && q->tgid == (uint32_t)A.only && (r != -1 || a->r == EF_LOOK_AGAIN))
		attach_verdict(a, r);
}

static void report_process(uint32_t tgid, const struct ef_bpf_proc *p, void *arg)
{
	char text[1024];
	struct ef_buf b = EF_BUF(text);
	struct ef_agentrec r;
	ef_publish_record(tgid, p, &r);
	ef_agent_report(&r, &b);
	fputs(text, arg);
}

static void report(FILE *out)
{
	uint64_t c[EF_BC_COUNT];
	struct rusage ru;
	ef_abpf_counters(A.bpf, c, EF_BC_COUNT);
	if (A.sig) { /* what the signal mechanism's timers found, the agent's count */
		uint64_t s[EF_ASIG_COUNT];
		ef_asig_counters(A.sig, s);
		c[EF_BC_STALE] += s[EF_ASIG_STALE];
		c[EF_BC_DETACHED] += s[EF_ASIG_DETACHED];
		c[EF_BC_UNREADABLE] += s[EF_ASIG_REFUSED]; /* not ours to signal */
		c[EF_BC_FULL] += s[EF_ASIG_LATE] + s[EF_ASIG_FULL];
	}
	getrusage(RUSAGE_SELF, &ru);
	fprintf(out,
		"epollfix[%d] agent: %" PRIu64 " processes attached; %" PRIu64 " netpoll waits, %" PRIu64
		" timers set at the runtime's deadline, %" PRIu64 " waits ended; fell back: %" PRIu64
		" other fd, %" PRIu64 " not polling, %" PRIu64 " out of range, %" PRIu64
		" repeated, %" PRIu64 " unreadable, %" PRIu64 " full; timers that found: %" PRIu64
		" stale, %" PRIu64 " awake, %" PRIu64 " detached, %" PRIu64 " busy; %" PRIu64
		" processes exec'd or ended; %ld voluntary switches, %ld us CPU; mechanism %s\n",
		(int)getpid(), A.attached, c[EF_BC_WAITS], c[EF_BC_ARMED], c[EF_BC_ENDED],
		c[EF_BC_OTHER_FD], c[EF_BC_NOT_POLLING], c[EF_BC_OUT_OF_RANGE], c[EF_BC_REPEATED],
		c[EF_BC_UNREADABLE], c[EF_BC_FULL], c[EF_BC_STALE], c[EF_BC_AWAKE], c[EF_BC_DETACHED],
		c[EF_BC_BUSY], c[EF_BC_DROPPED], ru.ru_nvcsw,
		(long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
			ru.ru_stime.tv_usec,
		ef_mechanism_name[A.mech]);
	/* Then each process served now, in the line `epollfix status` gives it. */
	ef_abpf_each(A.bpf, report_process, out);
	fflush(out);
}

static const char *const mechanism_text[EF_MECH_COUNT] = {
	[EF_MECH_TASKWORK] = "the kernel ends Go's netpoll waits at the runtime's deadline, no signal "
			     "(tp_btf/sched_switch, bpf_timer, task work)",
	[EF_MECH_WAKEUP] = "the kernel ends Go's netpoll waits at the runtime's deadline, no signal: "
			   "a bpf_timer writes a ring buffer of the agent's that the runtime's epoll "
			   "set holds as its own wake-up (tp_btf/sched_switch, bpf_timer, ring buffers); "
			   "the program's epoll set shows one more item (its fdinfo)",
	[EF_MECH_SIGNAL] = "the kernel sends each netpoll wait's deadline to the agent, which sends "
			   "SIGURG to the thread at that deadline (tp_btf/sched_switch, ring buffer, "
			   "timerfd); a program that subscribes to SIGURG (signal.Notify) sees one "
			   "per wait ended; stopped, the agent ends none",
	[EF_MECH_TIMERFD] = "the kernel sends each netpoll wait's deadline to the agent, which arms "
			    "a timerfd of its own that the runtime's epoll set holds as its own wake-up "
			    "(tp_btf/sched_switch, ring buffer, timerfd; no bpf_timer, no signal); the "
			    "agent wakes once per wait; the program's epoll set shows one more item "
			    "(its fdinfo); stopped, the agent ends none",
};

/* The program of A.mech loaded and attached. Chosen by auto, a mechanism
 * the kernel refuses falls back to the next that needs less: task work (the
 * kernel names the kfunc but will not load it here) to wakeup, wakeup (a
 * kernel that names bpf_timer and refuses it: PREEMPT_RT) to timerfd; each
 * said in one line (in *fell, when not NULL). */
static struct ef_abpf *open_mechanism(const int has[EF_KF_COUNT], struct ef_buf *why, struct ef_buf *fell)
{
	struct ef_abpf *b = ef_abpf_open(A.mech, why);
	while (!b && A.want == EF_MECH_AUTO && A.mech != EF_MECH_TIMERFD) {
		enum ef_mechanism next = A.mech == EF_MECH_TASKWORK ? EF_MECH_WAKEUP : EF_MECH_TIMERFD;
		if (ef_abpf_choose(next, has) != next)
			break;
		if (fell)
			ef_fmt(fell, "auto: %s refused here: %s", ef_mechanism_name[A.mech], why->p);
		else
			fprintf(stderr, "epollfix agent: %s: %s; the %s mechanism instead\n",
				ef_mechanism_name[A.mech], why->p, ef_mechanism_name[next]);
		why->len = 0;
		why->p[0] = '\0';
		A.mech = next;
		b = ef_abpf_open(A.mech, why);
	}
	return b;
}

static int check(void)
{
	struct utsname u;
	int has[EF_KF_COUNT];
	uname(&u);
	printf("kernel:      %s %s\n", u.sysname, u.release);
	int btf = ef_abpf_probe(has) == 0;
	printf("BTF:         %s\n", btf ? "/sys/kernel/btf/vmlinux" : "no: /sys/kernel/btf/vmlinux missing (CONFIG_DEBUG_INFO_BTF)");
	for (int i = 0; btf && i < EF_KF_COUNT; i++)
		printf("%s:%*s%s\n", ef_kfeatures[i].label, (int)(12 - strlen(ef_kfeatures[i].label)), "",
		       has[i] ? ef_kfeatures[i].yes : ef_kfeatures[i].no);
	printf("privileges:  %s\n", geteuid() == 0 ? "root" : "not root: the agent needs root");
	enum ef_mechanism m = btf ? ef_abpf_choose(A.want, has) : EF_MECH_AUTO;
	int ok = m != EF_MECH_AUTO && geteuid() == 0;
	/* Why not, in every case: the line is all a skip message or an operator
	 * reads (nothing was written here before the load was tried). */
	char text[256] = "", fallen[512] = "";
	struct ef_buf why = EF_BUF(text), fell = EF_BUF(fallen);
	if (ok) {
		A.mech = m;
		struct ef_abpf *b = open_mechanism(has, &why, &fell);
		ok = b != NULL;
		ef_abpf_close(b);
		m = A.mech;
	}
	if (*fallen)
		printf("mechanism:   %s (%s)\n", ef_mechanism_name[m], fallen);
	else if (m == EF_MECH_AUTO && A.want == EF_MECH_AUTO)
		printf("mechanism:   none: this kernel lacks what taskwork and wakeup need (above)%s\n",
		       btf && ef_abpf_choose(EF_MECH_SIGNAL, has) == EF_MECH_SIGNAL
			       ? "; --mechanism=signal would apply, sending SIGURG, which a program "
				 "may see (doc/agent.md)"
			       : "");
	else if (m == EF_MECH_AUTO)
		printf("mechanism:   none of the one asked for: this kernel lacks what %s needs "
		       "(above)\n",
		       ef_mechanism_name[A.want]);
	else
		printf("mechanism:   %s (%s)\n", ef_mechanism_name[m],
		       A.want != EF_MECH_AUTO	 ? "--mechanism"
		       : m == EF_MECH_TASKWORK ? "auto: the kernel has the task-work kfunc"
					       : "auto: the kernel has no task-work kfunc");
	if (!btf)
		ef_fmt(&why, "no BTF");
	else if (m == EF_MECH_AUTO)
		ef_fmt(&why, "this kernel lacks what %s",
		       A.want == EF_MECH_AUTO ? "taskwork and wakeup need" : A.want == EF_MECH_TASKWORK ? "taskwork needs"
					      : A.want == EF_MECH_WAKEUP ? "wakeup needs"
					      : A.want == EF_MECH_TIMERFD ? "timerfd needs" : "signal needs");
	else if (geteuid() != 0)
		ef_fmt(&why, "the agent needs root");
	if (ok)
		printf("agent:       applies: %s\n", mechanism_text[m]);
	else
		printf("agent:       does not apply%s%s: `epollfix PROGRAM` supervises a Go program "
		       "instead (doc/go.md)\n",
		       *text ? ": " : "", text);
	return ok ? 0 : 1;
}

static int run(void)
{
	char text[256];
	struct ef_buf why = EF_BUF(text);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);

	if (geteuid() != 0) {
		fprintf(stderr, "epollfix agent: needs root (see epollfix agent --check)\n");
		return 1;
	}
	int pfd = A.only ? (int)syscall(SYS_pidfd_open, (pid_t)A.only, 0) : -1;
	if (A.only && pfd < 0) {
		if (errno == ESRCH)
			fprintf(stderr, "epollfix attach: no process %ld\n", A.only);
		else
			fprintf(stderr, "epollfix attach: pid %ld: %s\n", A.only, strerror(errno));
		return errno == ESRCH ? EXIT_NO_PROCESS : 1;
	}
	int has[EF_KF_COUNT];
	ef_abpf_probe(has);
	A.mech = ef_abpf_choose(A.want, has);
	if (A.mech == EF_MECH_AUTO) {
		fprintf(stderr, "epollfix agent: this kernel lacks what %s needs (see epollfix agent "
				"--check)\n",
			A.want == EF_MECH_AUTO ? "the agent" : ef_mechanism_name[A.want]);
		return 1;
	}
	A.bpf = open_mechanism(has, &why, NULL);
	if (!A.bpf) {
		fprintf(stderr, "epollfix agent: %s (see epollfix agent --check)\n", text);
		return 1;
	}
	if (A.mech == EF_MECH_SIGNAL) {
		/* Its timerfd expires within 1 ns of a deadline, not the 50 us of
		 * the default timer slack. */
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
		if (!(A.sig = ef_asig_new(A.bpf))) {
			fprintf(stderr, "epollfix agent: %s\n", strerror(errno));
			ef_abpf_close(A.bpf);
			return 1;
		}
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	int wfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	int xfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	struct itimerspec follow = { .it_value = { 0, FOLLOW_MS * 1000000L } };
	/* Each second the state file; every RESCAN_SECONDS a scan; every
	 * WATCH_MS the reader's progress. */
	struct itimerspec every = { { 1, 0 }, { 1, 0 } };
	struct itimerspec watch = { { 0, WATCH_MS * 1000000L }, { 0, WATCH_MS * 1000000L } };
	if (ep < 0 || sfd < 0 || tfd < 0 || wfd < 0 || xfd < 0 || timerfd_settime(tfd, 0, &every, NULL) != 0 ||
	    !(A.rd = ef_reader_new(ep, &A.sel, A.only)) ||
	    !(A.sv = ef_served_new(A.bpf, A.rd,
				   A.mech == EF_MECH_WAKEUP    ? EF_ITEM_RING
				   : A.mech == EF_MECH_TIMERFD ? EF_ITEM_TIMERFD
							       : EF_ITEM_NONE,
				   A.verbose))) {
		fprintf(stderr, "epollfix agent: %s\n", strerror(errno));
		ef_reader_free(A.rd);
		ef_asig_free(A.sig);
		ef_abpf_close(A.bpf);
		return 1;
	}
	if (A.mech == EF_MECH_TIMERFD)
		ef_abpf_on_deadline(A.bpf, ef_served_deadline, A.sv);
	int fds[] = { sfd, tfd, wfd, xfd, ef_abpf_events_fd(A.bpf), pfd, A.sig ? ef_asig_fd(A.sig) : -1 };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[i] };
		if (fds[i] >= 0)
			epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	ef_publish_open();
	if (A.only)
		attach_look();
	else
		scan();
	ef_publish(A.bpf);
	uint64_t seconds = 0;
	int watching = 0;
	while (!A.done) {
		struct epoll_event ev[8];
		int n = epoll_wait(ep, ev, 8, -1);
		for (int i = 0; i < n && !A.done; i++) {
			int fd = ev[i].data.fd;
			uint64_t ticks;
			if (fd == sfd) {
				struct signalfd_siginfo si;
				if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
				    si.ssi_signo == SIGUSR1)
					report(stderr);
				else
					A.done = 1;
			} else if (ef_reader_is(A.rd, fd)) {
				ef_reader_answers(A.rd, fd, on_answer, NULL);
				/* A scan cut short goes on, the processes it
				 * asked about now remembered. */
				if (A.cut && ef_reader_pending(A.rd) < SCAN_ASKS / 2)
					scan();
			} else if (fd == wfd) {
				if (read(wfd, &ticks, sizeof(ticks)) > 0)
					ef_reader_watch(A.rd, on_answer, NULL);
				if (!ef_reader_pending(A.rd)) { /* idle: no tick */
					struct itimerspec off = { { 0, 0 }, { 0, 0 } };
					timerfd_settime(wfd, 0, &off, NULL);
					watching = 0;
				}
			} else if (fd == tfd) {
				if (read(tfd, &ticks, sizeof(ticks)) <= 0)
					continue;
				/* The execs of the last second the kernel queued
				 * without waking the agent (within 100 ms of one
				 * that woke it), then the rest a scan finds. */
				execs();
				ef_served_tick(A.sv);
				ef_reader_watch(A.rd, on_answer, NULL); /* reaps readers left */
				if ((seconds += ticks) >= RESCAN_SECONDS) {
					seconds = 0;
					if (A.only)
						A.exec_seen = 1; /* looked at again */
					else
						scan();
				}
				ef_publish(A.bpf);
			} else if (fd == pfd) {
				A.done = 1; /* the process attached to is gone */
				if (!A.attached) {
					fprintf(stderr, "epollfix attach: pid %ld ended, never served\n", A.only);
					A.status = EXIT_NOT_SERVED;
				}
			} else if (A.sig && fd == ef_asig_fd(A.sig)) {
				ef_asig_due(A.sig);
			} else if (fd == xfd) {
				if (read(xfd, &ticks, sizeof(ticks)) > 0)
					execs();
			} else if (execs() > 0) {
				/* One follow-up a wake-up, at most (one-shot). */
				timerfd_settime(xfd, 0, &follow, NULL);
			}
		}
		if (A.exec_seen && !A.done) {
			A.exec_seen = 0;
			attach_look();
		}
		/* The reader's progress is watched while it has work, only. */
		if (!watching && ef_reader_pending(A.rd) && timerfd_settime(wfd, 0, &watch, NULL) == 0)
			watching = 1;
	}
	if (!A.status)
		report(stderr);
	ef_publish_close();
	/* Detaching is closing: the kernel cancels the timers and the task work
	 * still pending, and nothing is left in any program. A reader left
	 * blocked holds nothing of the agent's (agent_reader.h). */
	ef_reader_free(A.rd);
	ef_asig_free(A.sig);
	ef_served_free(A.sv); /* out of every program's epoll set */
	ef_abpf_close(A.bpf);
	free(A.seen);
	free(A.next);
	return A.status;
}

int ef_agent_main(int argc, char **argv)
{
	int want_check = 0;
	int attach = strcmp(argv[0], "attach") == 0;
	A.verbose = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (!attach && strcmp(a, "--check") == 0) {
			want_check = 1;
		} else if (!attach && ef_sel_option(&A.sel, a)) {
			continue;
		} else if (strncmp(a, "--mechanism=", 12) == 0) {
			int m = EF_MECH_COUNT;
			while (--m >= 0 && strcmp(a + 12, ef_mechanism_name[m]) != 0)
				;
			if (m < 0) {
				fprintf(stderr, "epollfix %s: --mechanism=%s: not auto, taskwork, wakeup, timerfd or signal\n",
					argv[0], a + 12);
				return EXIT_USAGE;
			}
			A.want = (enum ef_mechanism)m;
		} else if (strcmp(a, "--quiet") == 0) {
			A.verbose = 0;
		} else if (attach && !A.only && a[0] >= '1' && a[0] <= '9' &&
			   strspn(a, "0123456789") == strlen(a) && strlen(a) < 10) {
			A.only = atol(a);
		} else {
			fprintf(stderr, "epollfix %s: unexpected %s\n", argv[0], a);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (want_check)
		return check();
	if (attach ? !A.only : !ef_sel_any(&A.sel)) {
		if (!attach)
			fprintf(stderr, "epollfix agent: no process chosen (--all, --path, --cgroup, --unit or "
					"--pods): nothing to do\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	return run();
}
