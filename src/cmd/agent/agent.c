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
#include "agent_signal.h"
#include "agent_wake.h"
#include "agentsel.h"
#include "fmt.h"
#include "goabi.h"
#include "goimage.h"
#include "look.h"
#include "netpoll.h"
#include "proc.h"
#include "publish.h"

#define EXIT_USAGE 2
#define EXIT_NO_PROCESS 3 /* as `epollfix status PID` */
#define EXIT_NOT_SERVED 4 /* attach: the process cannot be served, and why */
#define RESCAN_SECONDS 2 /* execs are followed at once; this finds the rest */
/* Executables read: their verdicts kept by file, and one that failed (or
 * changed since) read again RETRY_SECONDS after its last reading at the
 * soonest: a process the agent cannot serve costs one reading of its file a
 * minute at most, however often it is scanned and however its owner touches
 * the file. */
#define EXES 512
#define RETRY_SECONDS 60
/* The readings of new executables one scan, or one batch of execs, may
 * start: past this, the rest wait for the next. With each reading bounded
 * (EF_GO_READ_MS), an exec waits for at most about a second of other
 * readings, whatever files the machine's users make. */
#define SLICE_MS 500

/* A process looked at and not attached (not Go, not chosen, refused): not
 * read again while it is the same process running the same image. */
struct seen {
	uint32_t pid;
	uint64_t start, gen;
	uint64_t until; /* s (CLOCK_MONOTONIC) it holds until; 0: for good */
};

struct exe {
	dev_t dev;
	ino_t ino;
	struct timespec ctime;
	uint64_t read_at; /* CLOCK_MONOTONIC, s: 0 for a free slot */
	enum ef_go_why why;
	struct ef_go_image img;
};

static struct {
	struct ef_abpf *bpf;
	struct ef_asig *sig;     /* the signal mechanism's deadlines, or NULL */
	struct ef_awake *wake;   /* the wake-up mechanism's wakers, or NULL */
	enum ef_mechanism want, mech;
	long only;               /* attach PID: that process alone */
	struct ef_sel sel;
	int verbose;
	struct seen *seen, *next;
	size_t nseen, nnext, capseen, capnext;
	uint64_t attached;       /* processes attached, over the run */
	struct exe *exes;        /* EXES of them, or NULL: every look reads */
	uint64_t slice_end;      /* ms: no new reading after it in this batch */
	uint64_t until;          /* the last verdict of look_at holds until (0: for good) */
	int exec_seen;           /* attach: the process exec'd, in the last batch */
	char why[4 * PATH_MAX + 512]; /* attach: the last look's verdict, for its line */
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

/* What the executable open at fd says: kept from an earlier reading of the
 * same file (device, inode, change time), read now, or NULL when it may not
 * be read yet (its back-off, or this batch's slice is spent). */
static const struct exe *exe_verdict(int fd, const struct stat *st)
{
	static struct exe one;
	uint64_t now = now_ms() / 1000 + 1, oldest = UINT64_MAX;
	struct exe *e = NULL;

	for (size_t i = 0; A.exes && i < EXES; i++) {
		struct exe *x = &A.exes[i];
		if (x->read_at && x->dev == st->st_dev && x->ino == st->st_ino) {
			e = x;
			break;
		}
		if (x->read_at < oldest)
			oldest = x->read_at, e = x; /* the slot to reuse: free, or the oldest */
	}
	int same = e && e->read_at && e->dev == st->st_dev && e->ino == st->st_ino;
	if (same) {
		int unchanged = e->ctime.tv_sec == st->st_ctim.tv_sec &&
				e->ctime.tv_nsec == st->st_ctim.tv_nsec;
		if (unchanged && e->why != EF_GO_TOO_COSTLY)
			return e;
		if ((e->why != EF_GO_OK || !unchanged) && now - e->read_at < RETRY_SECONDS)
			return unchanged ? e : NULL;
	}
	if (now_ms() > A.slice_end || stopping())
		return NULL;
	if (!e)
		e = &one; /* no table: read each time */
	e->why = ef_go_image_read_until(fd, &e->img, stopping);
	if (e->why == EF_GO_TOO_COSTLY && stopping())
		return NULL; /* stopped, not judged */
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->ctime = st->st_ctim;
	e->read_at = now;
	return e;
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
		"                  signal, Linux 5.15), signal (the agent sends SIGURG, Linux\n"
		"                  5.15: a program may see it), auto (the default: taskwork,\n"
		"                  else wakeup, never signal)\n");
}

static int chosen(uint32_t pid, const char *path)
{
	static char cgroups[64 * 1024];
	ssize_t n = 0;
	if (A.only)
		return 1;
	if (ef_sel_needs_cgroup(&A.sel) && (n = ef_proc_read(pid, "cgroup", cgroups, sizeof(cgroups))) < 0)
		n = 0;
	return ef_sel_chosen(&A.sel, pid, path, cgroups, (size_t)n);
}

/* Reads the process and attaches it when it is a Go program of a known
 * layout. 1 attached, 0 not (a verdict for this image), -1 try again. The
 * verdict's words, for attach, in A.why. */
static int look_at(uint32_t pid, uint64_t gen)
{
	char link[64], path[PATH_MAX];
	struct ef_buf why = EF_BUF(A.why);
	A.until = 0;
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0) {
		if (errno == ENOENT)
			ef_fmt(&why, "pid %u: no executable: a kernel thread, or gone", pid);
		else
			ef_fmt(&why, "pid %u: its executable cannot be read: %s", pid, strerror(errno));
		return 0;
	}
	path[n] = '\0';
	if (!chosen(pid, path))
		return 0;
	/* The path is the process's own choice: escaped, it forges no log line. */
	char shown[4 * PATH_MAX];
	struct ef_buf sb = EF_BUF(shown);
	ef_esc(&sb, path, 0);
	int fd = open(link, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		ef_fmt(&why, "pid %u (%s): its executable cannot be read: %s", pid, shown,
		       strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	const struct exe *x = exe_verdict(fd, &st);
	close(fd);
	if (!x) {
		ef_fmt(&why, "pid %u (%s): its executable is read again later (a reading that failed is "
			     "tried again %d s after)",
		       pid, shown, RETRY_SECONDS);
		return -1;
	}
	const struct ef_go_image *img = &x->img;
	if (x->why == EF_GO_NOT_GO || x->why == EF_GO_NOT_ELF) {
		ef_fmt(&why, "pid %u (%s): not attached: %s", pid, shown, ef_go_why_text(x->why));
		return 0;
	}
	uint64_t bias = 0;
	if (x->why == EF_GO_OK && img->pie &&
	    ef_go_load_bias(pid, (uint64_t)st.st_ino, img, &bias) != 0) {
		/* In the middle of an exec (its segments not all mapped), or a
		 * program that unmapped its first: the file is not read again. */
		ef_fmt(&why, "pid %u (%s, %s): not attached (yet): its first segment is not mapped",
		       pid, shown, img->version);
		return -1;
	}
	if (x->why != EF_GO_OK) {
		ef_fmt(&why, "pid %u (%s, %s): not attached: %s", pid, shown,
		       *img->version ? img->version : "Go", ef_go_image_says(img, x->why));
		if (A.verbose && !A.only)
			fprintf(stderr, "epollfix agent: %s\n", A.why);
		/* Too costly to read: the verdict holds until the file's back-off ends. */
		A.until = x->why == EF_GO_TOO_COSTLY ? x->read_at + RETRY_SECONDS : 0;
		return 0;
	}
	uint64_t start = ef_look_start(pid);
	if (A.wake) /* before the kernel can ask for its waker */
		ef_awake_note(A.wake, pid, start, img->epfd + bias, img->wake + bias, ef_go_wake_tag(img, bias));
	int r = ef_abpf_attach(A.bpf, pid, gen, start, img->sched + bias, img->epfd + bias);
	if (r != 0) {
		ef_fmt(&why, "pid %u (%s, %s): not attached (yet): the kernel's map refused it (full?)",
		       pid, shown, img->version);
		return -1;
	}
	A.attached++;
	if (A.verbose)
		fprintf(stderr, "epollfix agent: pid %u (%s, %s): attached\n", pid, shown, img->version);
	return 1;
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

/* One process, in a scan: skipped when it is what it was when last found
 * not to be for us; late, past the scan's slice, not looked at (the next
 * scan does). */
static void scan_one(uint32_t pid, int late)
{
	if (pid == (uint32_t)getpid() || ef_abpf_attached(A.bpf, pid))
		return;
	uint64_t gen = ef_abpf_generation(A.bpf, pid), start = ef_look_start(pid);
	struct seen key = { pid, 0, 0, 0 };
	struct seen *s = A.nseen ? bsearch(&key, A.seen, A.nseen, sizeof(*s), by_pid) : NULL;
	if (s && s->start == start && s->gen == gen && (!s->until || now_ms() / 1000 < s->until)) {
		remember(pid, start, gen, s->until);
		return;
	}
	if (!late && look_at(pid, gen) == 0)
		remember(pid, start, gen, A.until);
}

static void scan(void)
{
	A.nnext = 0;
	A.slice_end = now_ms() + SLICE_MS;
	if (A.only) {
		scan_one((uint32_t)A.only, 0);
	} else {
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d)))
			if (ef_proc_is_pid(de->d_name))
				scan_one((uint32_t)strtoul(de->d_name, NULL, 10),
					 stopping() || now_ms() > A.slice_end);
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

/* An exec: the kernel dropped the process's entry; read the new image. A
 * verdict of "not for us" goes into the last scan's list, so that the next
 * scan does not look (and say so) again. */
static void on_exec(uint32_t tgid)
{
	if (A.only) { /* attach_look's, after the batch */
		A.exec_seen |= tgid == (uint32_t)A.only;
		return;
	}
	if (ef_abpf_attached(A.bpf, tgid))
		return;
	uint64_t gen = ef_abpf_generation(A.bpf, tgid), start = ef_look_start(tgid);
	if (look_at(tgid, gen) != 0)
		return;
	struct seen key = { tgid, start, gen, A.until };
	struct seen *s = A.nseen ? bsearch(&key, A.seen, A.nseen, sizeof(*s), by_pid) : NULL;
	if (s) {
		*s = key; /* the same pid: the order holds */
	} else if (A.nseen < A.capseen) { /* inserted in order */
		size_t at = A.nseen;
		while (at > 0 && A.seen[at - 1].pid > tgid)
			at--;
		memmove(&A.seen[at + 1], &A.seen[at], (A.nseen - at) * sizeof(*A.seen));
		A.seen[at] = key;
		A.nseen++;
	} /* else looked at again by the next scan: said twice, not wrong */
}

/* What the kernel tells: an exec, or (wake-up mechanism) a process's waker
 * to make or to empty. */
static void on_event(uint32_t tgid, uint32_t kind, void *arg)
{
	(void)arg;
	if (kind == EF_BPF_EV_WAKER || kind == EF_BPF_EV_DRAIN) {
		if (A.wake && kind == EF_BPF_EV_WAKER)
			ef_awake_make(A.wake, tgid);
		else if (A.wake)
			ef_awake_drain(A.wake, tgid);
		return;
	}
	if (A.wake) /* the old image's waker goes with it */
		ef_awake_drop(A.wake, tgid);
	on_exec(tgid);
}

/* The execs the kernel queued, each read within this batch's slice. */
static void execs(void)
{
	A.slice_end = now_ms() + SLICE_MS;
	ef_abpf_events(A.bpf, on_event, NULL);
	if (A.wake)
		ef_awake_commit(A.wake);
}

/* attach: whether a later exec could change a verdict on the process: it
 * runs its parent's executable, a fork that has not exec'd yet (`prog &
 * epollfix attach $!` may find the shell's child before its exec). */
static int runs_parents_image(long pid)
{
	char pp[32], a[64], b[64];
	struct ef_proc_field f;
	struct stat x, y;
	ef_proc_field_init(&f, "PPid", pp, sizeof(pp));
	if (ef_proc_fields_via(syscall, pid, "status", &f, 1) != 0 || atol(pp) <= 0)
		return 0;
	snprintf(a, sizeof(a), "/proc/%ld/exe", pid);
	snprintf(b, sizeof(b), "/proc/%ld/exe", atol(pp));
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* attach: looks at the process (at start, at its execs, at each scan) unless
 * it is attached, and says each new verdict once. 0 to go on waiting or
 * serving; EXIT_NOT_SERVED when its image cannot be served and only its
 * exec could change that, which a fork's own image alone is waiting for. */
static int attach_look(void)
{
	static char said[sizeof(A.why)];
	uint32_t pid = (uint32_t)A.only;
	if (ef_abpf_attached(A.bpf, pid))
		return 0;
	A.slice_end = now_ms() + SLICE_MS;
	*A.why = '\0';
	int r = look_at(pid, ef_abpf_generation(A.bpf, pid));
	if (r == 1) {
		*said = '\0';
		return 0;
	}
	int fork = r == 0 && runs_parents_image(A.only);
	if (r == 0 && !fork) {
		fprintf(stderr, "epollfix attach: %s\n", A.why);
		return EXIT_NOT_SERVED;
	}
	if (strcmp(said, A.why) != 0)
		fprintf(stderr, "epollfix attach: %s; %s\n", A.why,
			fork ? "it runs its parent's executable, not exec'd yet: waiting for its exec"
			     : "looked at again at its next exec and every 2 s");
	memcpy(said, A.why, sizeof(said));
	return 0;
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
};

/* The program of A.mech loaded and attached. Chosen by auto, task work the
 * kernel refuses (it names the kfunc but will not load it here) falls back
 * to the wake-up mechanism, which needs less; said in one line. */
static struct ef_abpf *open_mechanism(const int has[EF_KF_COUNT], struct ef_buf *why)
{
	struct ef_abpf *b = ef_abpf_open(A.mech, why);
	if (b || A.want != EF_MECH_AUTO || A.mech != EF_MECH_TASKWORK ||
	    ef_abpf_choose(EF_MECH_WAKEUP, has) != EF_MECH_WAKEUP)
		return b;
	fprintf(stderr, "epollfix agent: taskwork: %s; the wakeup mechanism instead\n", why->p);
	why->len = 0;
	A.mech = EF_MECH_WAKEUP;
	return ef_abpf_open(A.mech, why);
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
	if (m == EF_MECH_AUTO && A.want == EF_MECH_AUTO)
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
	/* Why not, in every case: the line is all a skip message or an operator
	 * reads (nothing was written here before the load was tried). */
	char text[256] = "";
	struct ef_buf why = EF_BUF(text);
	if (!btf)
		ef_fmt(&why, "no BTF");
	else if (m == EF_MECH_AUTO)
		ef_fmt(&why, "this kernel lacks what %s",
		       A.want == EF_MECH_AUTO ? "taskwork and wakeup need" : A.want == EF_MECH_TASKWORK ? "taskwork needs"
					      : A.want == EF_MECH_WAKEUP ? "wakeup needs" : "signal needs");
	else if (geteuid() != 0)
		ef_fmt(&why, "the agent needs root");
	if (ok) {
		A.mech = m;
		struct ef_abpf *b = open_mechanism(has, &why);
		ok = b != NULL;
		ef_abpf_close(b);
		m = A.mech;
	}
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
	A.bpf = open_mechanism(has, &why);
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
	if (A.mech == EF_MECH_WAKEUP && !(A.wake = ef_awake_new(A.bpf, A.verbose))) {
		fprintf(stderr, "epollfix agent: %s\n", strerror(errno));
		ef_abpf_close(A.bpf);
		return 1;
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	/* Each second the state file; every RESCAN_SECONDS a scan. */
	struct itimerspec every = { { 1, 0 }, { 1, 0 } };
	if (ep < 0 || sfd < 0 || tfd < 0 || timerfd_settime(tfd, 0, &every, NULL) != 0) {
		fprintf(stderr, "epollfix agent: %s\n", strerror(errno));
		ef_abpf_close(A.bpf);
		return 1;
	}
	int fds[] = { sfd, tfd, ef_abpf_events_fd(A.bpf), pfd, A.sig ? ef_asig_fd(A.sig) : -1 };
	for (int i = 0; i < 5; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[i] };
		if (fds[i] >= 0)
			epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	A.exes = calloc(EXES, sizeof(*A.exes)); /* NULL: read at every look */
	ef_publish_open();
	if (!A.only)
		scan();
	int status = A.only ? attach_look() : 0, done = status != 0;
	ef_publish(A.bpf);
	uint64_t seconds = 0;
	while (!done) {
		struct epoll_event ev[5];
		int n = epoll_wait(ep, ev, 5, -1);
		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd;
			if (fd == sfd) {
				struct signalfd_siginfo si;
				if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
				    si.ssi_signo == SIGUSR1)
					report(stderr);
				else
					done = 1;
			} else if (fd == tfd) {
				uint64_t ticks;
				if (read(tfd, &ticks, sizeof(ticks)) <= 0)
					continue;
				/* The execs of the last second the kernel queued
				 * without waking the agent (within 100 ms of one
				 * that woke it), then the rest a scan finds. */
				execs();
				if (A.wake)
					ef_awake_tick(A.wake);
				if ((seconds += ticks) >= RESCAN_SECONDS) {
					seconds = 0;
					if (A.only)
						A.exec_seen = 1; /* looked at again */
					else
						scan();
				}
				ef_publish(A.bpf);
			} else if (fd == pfd) {
				done = 1; /* the process attached to is gone */
				if (!A.attached) {
					fprintf(stderr, "epollfix attach: pid %ld ended, never served\n", A.only);
					status = EXIT_NOT_SERVED;
				}
			} else if (A.sig && fd == ef_asig_fd(A.sig)) {
				ef_asig_due(A.sig);
			} else {
				execs();
			}
		}
		if (A.exec_seen && !done) {
			A.exec_seen = 0;
			done = (status = attach_look()) != 0;
		}
	}
	if (!status)
		report(stderr);
	ef_publish_close();
	/* Detaching is closing: the kernel cancels the timers and the task work
	 * still pending, and nothing is left in any program. */
	ef_asig_free(A.sig);
	ef_awake_free(A.wake); /* out of every program's epoll set */
	ef_abpf_close(A.bpf);
	free(A.seen);
	free(A.next);
	free(A.exes);
	return status;
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
				fprintf(stderr, "epollfix %s: --mechanism=%s: not auto, taskwork, wakeup or signal\n",
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
