/* One trapped wait's answer (goanswer.h, doc/go.md "How it works" 3-5):
 * whose process it is, what its runtime waits for, and a timer of this
 * answerer's armed at that deadline in the runtime's epoll instance.
 * Everything read from a process is hostile input: checked where it is read,
 * and acted on only through checks the kernel makes (kcmp, ID_VALID, the
 * item's tag in fdinfo). */
#define _GNU_SOURCE
#include "goanswer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "goimage.h"
#include "gowake.h"
#include "proc.h"

#define KCMP_FILE_ 0

#define MAX_PROCS 256
#define MAX_INSTANCES 4 /* epoll instances per process: the runtime has one */
#define MAX_TIDS 16     /* threads remembered per process */
/* A process passed through is looked at again after this long, so one that
 * exec'd a Go program is found within it (an exec keeps the pid). */
#define RECHECK_NS (100 * 1000000LL)
#define MAX_RETRIES 8
enum state { FREE, GO, PASS };

struct instance {
	int fd;  /* the number in the target, -1 when unused */
	int dup; /* our duplicate of its epoll file (pidfd_getfd) */
	int tfd; /* our timerfd, an item of that instance */
	int64_t armed; /* the deadline it was last armed at */
	int again;     /* armed again at that deadline once it was past */
};

/* What tells an exec the pid hides: the executable file (a PIE or not, the
 * same program rebuilt in place), and the new image's start of code and of
 * stack (/proc/PID/stat 26 and 28: the stack moves with each exec under
 * ASLR, and the code of a PIE). Two non-PIE programs share their start of
 * code, 0x401000 for Go: the start of code alone misses that exec. */
struct image_id {
	dev_t dev;
	ino_t ino;
	int64_t mtime_ns;
	uint64_t startcode, startstack, starttime;
};

struct proc {
	enum state state;
	pid_t tgid;
	int pidfd, taskdir;
	struct image_id id;
	int64_t checked_ns;
	unsigned retries; /* identifications left to retry at once (see identify) */
	struct ef_go_image img;
	uint64_t bias;
	pid_t tids[MAX_TIDS];
	unsigned next_tid;
	struct instance inst[MAX_INSTANCES];
};

static struct proc procs[MAX_PROCS];
static struct proc procs[MAX_PROCS];
static struct ef_go_answerer me;
static pid_t self;

void ef_go_count(struct ef_go_shared *page, enum ef_go_counter c)
{
	atomic_fetch_add_explicit(&page->count[c], 1, memory_order_relaxed);
}

static void count(enum ef_go_counter c)
{
	ef_go_count(me.shared, c);
}

int64_t ef_go_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t now_ns(void)
{
	return ef_go_now_ns();
}

static void drop_instance(struct instance *in)
{
	if (in->fd < 0)
		return;
	close(in->tfd); /* the last reference: the kernel removes its item */
	close(in->dup);
	in->fd = -1;
}

static void forget(struct proc *p)
{
	for (int i = 0; i < MAX_INSTANCES; i++)
		drop_instance(&p->inst[i]);
	if (p->pidfd >= 0) {
		epoll_ctl(me.loop, EPOLL_CTL_DEL, p->pidfd, NULL);
		close(p->pidfd);
	}
	if (p->taskdir >= 0)
		close(p->taskdir);
	memset(p, 0, sizeof(*p));
	p->state = FREE;
	p->pidfd = p->taskdir = -1;
}

/* Fields 22 (starttime), 26 (startcode) and 28 (startstack) of
 * /proc/PID/stat, and the executable's identity: what image_id compares. */
static void image_id_of(pid_t pid, struct image_id *id)
{
	char buf[1024], path[64];
	struct stat st;
	memset(id, 0, sizeof(*id));
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st) == 0) {
		id->dev = st.st_dev;
		id->ino = st.st_ino;
		id->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	}
	if (ef_proc_read(pid, "stat", buf, sizeof(buf)) <= 0)
		return;
	char *p = strrchr(buf, ')'); /* comm may hold anything but ends there */
	if (!p)
		return;
	int field = 2;
	for (; *p && field < 28; p++)
		if (*p == ' ') {
			field++;
			if (field == 22)
				id->starttime = strtoull(p + 1, NULL, 10);
			else if (field == 26)
				id->startcode = strtoull(p + 1, NULL, 10);
			else if (field == 28)
				id->startstack = strtoull(p + 1, NULL, 10);
		}
}

static int same_image(const struct image_id *a, const struct image_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->mtime_ns == b->mtime_ns &&
	       a->startcode == b->startcode && a->startstack == b->startstack;
}

/* 1 the first time any answerer of the pair finds this process (its pid and
 * start time, the executable) in this state: the counts of processes are
 * of processes, not of answerers. A full table counts again. */
static int first_seen(const struct proc *p)
{
	uint64_t key = (uint64_t)p->tgid * 0x9e3779b97f4a7c15ULL ^ p->id.starttime * 0xbf58476d1ce4e5b9ULL ^
		       (uint64_t)p->id.ino * 0x94d049bb133111ebULL ^ (uint64_t)p->state;
	key |= 1; /* 0 marks a free entry */
	for (unsigned i = 0, at = (unsigned)(key >> 40) % EF_GO_SEEN; i < EF_GO_SEEN; i++) {
		uint64_t want = 0;
		_Atomic uint64_t *e = &me.shared->seen[(at + i) % EF_GO_SEEN];
		if (atomic_compare_exchange_strong(e, &want, key))
			return 1;
		if (want == key)
			return 0;
	}
	return 1;
}

/* The load bias of a PIE (goimage.h). */
static int bias_of(struct proc *p)
{
	return ef_go_load_bias(p->tgid, (uint64_t)p->id.ino, &p->img, &p->bias);
}

/* Reads what the process runs now: GO with the addresses to read, or PASS. */
static void identify(struct proc *p)
{
	char path[64];
	enum state was = p->state;
	int go = 0;

	for (int i = 0; i < MAX_INSTANCES; i++)
		drop_instance(&p->inst[i]);
	p->state = PASS;
	p->checked_ns = now_ns();
	image_id_of(p->tgid, &p->id);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->tgid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && ef_go_image_read(fd, EF_GO_SUPERVISOR, &p->img) == EF_GO_OK)
		p->state = GO, go = 1;
	if (fd >= 0)
		close(fd);
	p->bias = 0;
	if (p->state == GO && p->img.pie && bias_of(p) != 0)
		p->state = PASS;
	/* Read in the middle of an exec (the new executable, its segments not
	 * all mapped yet) or of a failed open: not a verdict. Asked again at the
	 * next call, a few times, before the 100 ms rhythm of a passed process. */
	if (p->state == PASS && (fd < 0 || go || !p->id.startcode) && p->retries > 0)
		p->retries--, p->checked_ns = 0;
	else if (p->state == GO)
		p->retries = MAX_RETRIES;
	if (p->state != was && first_seen(p))
		count(p->state == GO ? EF_GC_PROCS_GO : EF_GC_PROCS_PASS);
}

/* Tgid: of /proc/TID/status (a thread's own entry, though not listed). */
static pid_t tgid_of(pid_t tid)
{
	char buf[512];
	if (ef_proc_read(tid, "status", buf, sizeof(buf)) <= 0)
		return -1;
	char *t = strstr(buf, "\nTgid:");
	return t ? (pid_t)strtol(t + 6, NULL, 10) : -1;
}

static int exited(const struct proc *p)
{
	struct pollfd q = { p->pidfd, POLLIN, 0 };
	return poll(&q, 1, 0) > 0;
}

/* The process the thread tid belongs to, now (the thread is in the trapped
 * call, so the tid names it until the call is answered). */
static struct proc *process_of(pid_t tid)
{
	char name[16];
	struct proc *freep = NULL;

	snprintf(name, sizeof(name), "%d", (int)tid);
	for (int i = 0; i < MAX_PROCS; i++) {
		struct proc *p = &procs[i];
		if (p->state == FREE) {
			if (!freep)
				freep = p;
			continue;
		}
		for (int k = 0; k < MAX_TIDS; k++)
			if (p->tids[k] == tid && faccessat(p->taskdir, name, F_OK, 0) == 0)
				return p;
	}
	pid_t tgid = tgid_of(tid);
	if (tgid <= 0)
		return NULL;
	struct proc *p = NULL;
	for (int i = 0; i < MAX_PROCS && !p; i++)
		if (procs[i].state != FREE && procs[i].tgid == tgid)
			p = &procs[i];
	if (p && exited(p)) { /* its exit not yet read, and the tgid reused */
		forget(p);
		if (!freep)
			freep = p;
		p = NULL;
	}
	if (!p) {
		if (!freep)
			return NULL;
		p = freep;
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", (int)tgid);
		p->pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
		p->taskdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		for (int k = 0; k < MAX_INSTANCES; k++)
			p->inst[k].fd = -1;
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = me.proc_tag | (uint32_t)(p - procs) };
		if (p->pidfd < 0 || p->taskdir < 0 || epoll_ctl(me.loop, EPOLL_CTL_ADD, p->pidfd, &ev) != 0) {
			if (p->pidfd >= 0)
				close(p->pidfd);
			if (p->taskdir >= 0)
				close(p->taskdir);
			p->pidfd = p->taskdir = -1;
			return NULL;
		}
		p->tgid = tgid;
		p->retries = MAX_RETRIES;
		p->state = FREE; /* identify counts the state it finds */
		identify(p);
	}
	p->tids[p->next_tid++ % MAX_TIDS] = tid;
	return p;
}

/* ---- Arming ------------------------------------------------------------------ */

/* The instance for the target's fd: ours when kcmp says the number still
 * names the same file, else a new one. NULL, with the counter to blame. */
static struct instance *instance_of(struct proc *p, int fd, enum ef_go_counter *why)
{
	struct instance *in = NULL, *freei = NULL;
	for (int i = 0; i < MAX_INSTANCES; i++) {
		if (p->inst[i].fd == fd)
			in = &p->inst[i];
		else if (p->inst[i].fd < 0 && !freei)
			freei = &p->inst[i];
	}
	if (in && syscall(SYS_kcmp, p->tgid, self, KCMP_FILE_, fd, in->dup) == 0)
		return in;
	if (in) { /* the number was closed and reused */
		drop_instance(in);
		freei = in;
	}
	if (!freei) {
		drop_instance(&p->inst[0]);
		freei = &p->inst[0];
	}
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), dup;
	if (tfd < 0) {
		*why = errno == EMFILE || errno == ENFILE ? EF_GC_NO_FD : EF_GC_UNREADABLE;
		return NULL;
	}
	/* Never read: each expiry is one event of the runtime's wake-up; re-armed. */
	static const enum ef_go_counter blame[] = { [EF_GO_WAKE_UNREADABLE] = EF_GC_UNREADABLE,
						    [EF_GO_WAKE_NO_FD] = EF_GC_NO_FD,
						    [EF_GO_WAKE_NO_TAG] = EF_GC_NO_TAG,
						    [EF_GO_WAKE_NOT_EPOLL] = EF_GC_OTHER_FD };
	enum ef_go_wake_why w = ef_go_wake_join(p->tgid, p->pidfd, fd, p->img.wake + p->bias,
						ef_go_wake_tag(&p->img, p->bias), tfd, &dup);
	if (w != EF_GO_WAKE_OK) {
		close(tfd);
		*why = blame[w];
		return NULL;
	}
	*freei = (struct instance){ .fd = fd, .dup = dup, .tfd = tfd, .armed = -1 };
	count(EF_GC_INSTANCES);
	return freei;
}

/* Reads runtime.epfd and sched.lastpoll/pollUntil. 0, or -1. */
static int read_runtime(const struct proc *p, int32_t *epfd, int64_t sched[2])
{
	struct iovec local[2] = { { epfd, sizeof(*epfd) }, { sched, 2 * sizeof(int64_t) } };
	struct iovec remote[2] = {
		{ (void *)(uintptr_t)(p->img.epfd + p->bias), sizeof(*epfd) },
		{ (void *)(uintptr_t)(p->img.sched + p->bias + EF_GO_SCHED_LASTPOLL), 2 * sizeof(int64_t) },
	};
	ssize_t want = (ssize_t)(sizeof(*epfd) + 2 * sizeof(int64_t));
	return process_vm_readv(p->tgid, local, 2, remote, 2, 0) == want ? 0 : -1;
}

/* 1 when the process runs another image than the one read (an exec). */
static int execd(const struct proc *p)
{
	struct image_id now;
	image_id_of(p->tgid, &now);
	return !same_image(&now, &p->id);
}

void ef_go_read(const struct ef_notif *n, struct ef_go_arming *arm)
{
	arm->instance = NULL;
	count(EF_GC_NOTIFIED);
	struct proc *p = process_of((pid_t)n->pid);
	if (!p) {
		count(EF_GC_UNREADABLE);
		return;
	}
	if (p->state == PASS && !p->checked_ns) {
		identify(p); /* a retry (identify) */
	} else if (p->state == PASS && now_ns() - p->checked_ns > RECHECK_NS) {
		if (execd(p))
			identify(p);
		else
			p->checked_ns = now_ns();
	}
	if (p->state != GO) {
		count(EF_GC_PASSED);
		return;
	}
	int32_t epfd = -1; /* read_runtime may fail before it sets it */
	int64_t sched[2];
	int fd = (int)(int32_t)n->data.args[0];
	int ok = read_runtime(p, &epfd, sched) == 0 && epfd == fd;
	if (!ok && execd(p)) { /* an exec: read it anew */
		identify(p);
		ok = p->state == GO && read_runtime(p, &epfd, sched) == 0 && epfd == fd;
	}
	if (!ok) {
		count(p->state == GO && epfd != fd ? EF_GC_OTHER_FD : EF_GC_PASSED);
		return;
	}
	if (sched[0] != 0 || sched[1] <= 0) {
		count(EF_GC_NOT_POLLING);
		return;
	}
	/* What was read belongs to this call only if the call still waits. */
	uint64_t id = n->id;
	if (ioctl(me.listener, EF_NOTIF_ID_VALID, &id) != 0) {
		count(EF_GC_GONE);
		return;
	}
	enum ef_go_counter why = EF_GC_UNREADABLE;
	struct instance *in = instance_of(p, fd, &why);
	if (!in)
		count(why);
	arm->instance = in;
	arm->deadline = sched[1];
}

void ef_go_arm(const struct ef_go_arming *arm)
{
	struct instance *in = arm->instance;
	int64_t deadline = arm->deadline;
	if (!in)
		return;
	if (deadline == in->armed && (deadline > now_ns() || in->again)) {
		/* Armed already and still pending; or past, armed again once
		 * already (its event may have been taken by a wait of the
		 * runtime's that was not trapped), and read once more, which a
		 * runtime that runs its timers would not show: a stale read (a
		 * wrong .symtab) must not spin the program on a timer past. */
		count(deadline > now_ns() ? EF_GC_ARMED : EF_GC_STALE);
		return;
	}
	in->again = deadline == in->armed;
	struct itimerspec at = { .it_value = { .tv_sec = deadline / 1000000000,
					       .tv_nsec = deadline % 1000000000 } };
	if (timerfd_settime(in->tfd, TFD_TIMER_ABSTIME, &at, NULL) == 0)
		count(EF_GC_ARMED), in->armed = deadline;
	else
		count(EF_GC_UNREADABLE);
}

void ef_go_proc_gone(uint32_t i)
{
	if (i < MAX_PROCS)
		forget(&procs[i]);
}

void ef_go_answer_setup(const struct ef_go_answerer *a)
{
	me = *a;
	self = getpid();
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i].state != FREE) {
			/* A new heir: its parent's processes, instances and timers
			 * are not its own (its loop is new: no EPOLL_CTL_DEL). */
			for (int k = 0; k < MAX_INSTANCES; k++)
				if (procs[i].inst[k].fd >= 0) {
					close(procs[i].inst[k].tfd);
					close(procs[i].inst[k].dup);
				}
			close(procs[i].pidfd);
			close(procs[i].taskdir);
			memset(&procs[i], 0, sizeof(procs[i]));
		}
	for (int i = 0; i < MAX_PROCS; i++)
		procs[i].pidfd = procs[i].taskdir = -1;
}

