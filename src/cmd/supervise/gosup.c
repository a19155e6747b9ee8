/* The Go supervisor and its heir (gosup.h, doc/go.md). One epoll loop: the
 * seccomp listener, the pidfd of every process seen, and the heir's. Every
 * notification is answered CONTINUE at once, after at most a timer is armed:
 * the call itself always runs natively in the program, so events and signals
 * reach it as they would without, and a wait never ends later than without.
 * Everything read from a process is hostile input: checked where it is read,
 * and acted on only through checks the kernel makes (kcmp, ID_VALID, the
 * item's tag in fdinfo). */
#define _GNU_SOURCE
#include "gosup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fdpass.h"
#include "fmt.h"
#include "goabi.h"
#include "goimage.h"
#include "golook.h"
#include "maps.h"
#include "proc.h"

#define KCMP_FILE_ 0

#define MAX_PROCS 256
#define MAX_INSTANCES 4 /* epoll instances per process: the runtime has one */
#define MAX_TIDS 16     /* threads remembered per process */
/* A process passed through is looked at again after this long, so one that
 * exec'd a Go program is found within it (an exec keeps the pid). */
#define RECHECK_NS (100 * 1000000LL)
#define MAX_RETRIES 8

enum { TAG_LISTENER = 1, TAG_HEIR, TAG_PROC };
#define TAG(kind, i) (((uint64_t)(kind) << 32) | (uint32_t)(i))

enum state { FREE, GO, PASS };

struct instance {
	int fd;  /* the number in the target, -1 when unused */
	int dup; /* our duplicate of its epoll file (pidfd_getfd) */
	int tfd; /* our timerfd, an item of that instance */
};

struct proc {
	enum state state;
	pid_t tgid;
	int pidfd, taskdir;
	dev_t dev;
	ino_t ino;
	uint64_t startcode;
	int64_t checked_ns;
	unsigned retries; /* identifications left to retry at once (see identify) */
	struct ef_go_image img;
	uint64_t bias;
	pid_t tids[MAX_TIDS];
	unsigned next_tid;
	struct instance inst[MAX_INSTANCES];
};

static struct proc procs[MAX_PROCS];
static struct ef_go_shared *shared;
static int listener = -1, loop = -1, heir_pidfd = -1;
static pid_t self;

static void count(enum ef_go_counter c)
{
	atomic_fetch_add_explicit(&shared->count[c], 1, memory_order_relaxed);
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void answer(uint64_t id)
{
	struct ef_notif_resp r = { .id = id, .flags = EF_NOTIF_FLAG_CONTINUE };
	/* ENOENT: the call is gone (a signal, an exit); nothing to answer. */
	while (ioctl(listener, EF_NOTIF_SEND, &r) != 0 && errno == EINTR)
		;
}

/* ---- Processes ------------------------------------------------------------- */

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
		epoll_ctl(loop, EPOLL_CTL_DEL, p->pidfd, NULL);
		close(p->pidfd);
	}
	if (p->taskdir >= 0)
		close(p->taskdir);
	memset(p, 0, sizeof(*p));
	p->state = FREE;
	p->pidfd = p->taskdir = -1;
}

/* Field 26 of /proc/PID/stat, startcode: it moves with each exec of a PIE
 * (and of another program), so it tells an exec the pid hides. */
static uint64_t startcode_of(pid_t pid)
{
	char buf[1024];
	if (ef_proc_read(pid, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	char *p = strrchr(buf, ')'); /* comm may hold anything but ends there */
	if (!p)
		return 0;
	int field = 2;
	for (; *p && field < 26; p++)
		if (*p == ' ')
			field++;
	return field == 26 ? strtoull(p, NULL, 10) : 0;
}

/* The load bias of a PIE (goimage.h). */
static int bias_of(struct proc *p)
{
	return ef_go_load_bias(p->tgid, (uint64_t)p->ino, &p->img, &p->bias);
}

/* Reads what the process runs now: GO with the addresses to read, or PASS. */
static void identify(struct proc *p)
{
	char path[64];
	struct stat st;
	enum state was = p->state;
	int go = 0;

	for (int i = 0; i < MAX_INSTANCES; i++)
		drop_instance(&p->inst[i]);
	p->state = PASS;
	p->checked_ns = now_ns();
	p->startcode = startcode_of(p->tgid);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->tgid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0) {
		p->dev = st.st_dev;
		p->ino = st.st_ino;
		if (ef_go_image_read(fd, &p->img) == EF_GO_OK)
			p->state = GO, go = 1;
	}
	if (fd >= 0)
		close(fd);
	p->bias = 0;
	if (p->state == GO && p->img.pie && bias_of(p) != 0)
		p->state = PASS;
	/* Read in the middle of an exec (the new executable, its segments not
	 * all mapped yet) or of a failed open: not a verdict. Asked again at the
	 * next call, a few times, before the 100 ms rhythm of a passed process. */
	if (p->state == PASS && (fd < 0 || go || !p->startcode) && p->retries > 0)
		p->retries--, p->checked_ns = 0;
	else if (p->state == GO)
		p->retries = MAX_RETRIES;
	if (p->state != was)
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
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_PROC, p - procs) };
		if (p->pidfd < 0 || p->taskdir < 0 || epoll_ctl(loop, EPOLL_CTL_ADD, p->pidfd, &ev) != 0) {
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

/* 1 when the epoll file has an item registered EPOLLIN with data tag: the
 * runtime's own wake-up (fdinfo: "tfd: N events: E data: D ..."; epoll_ctl
 * adds EPOLLERR and EPOLLHUP to every item's events). */
static int has_tag(int dup, uint64_t tag)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", dup);
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	size_t have = 0;
	ssize_t n;
	if (fd < 0)
		return 0;
	/* One line per item, thousands for a busy server: read line by line. */
	while (!found && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		have += (size_t)n;
		buf[have] = '\0';
		char *line = buf, *end;
		while (!found && (end = strchr(line, '\n'))) {
			unsigned events;
			unsigned long long data;
			*end = '\0';
			if (sscanf(line, "tfd: %*d events: %x data: %llx", &events, &data) == 2 &&
			    data == tag && (events & ~(unsigned)(EPOLLERR | EPOLLHUP)) == EPOLLIN)
				found = 1;
			line = end + 1;
		}
		have = strlen(line);
		if (have == sizeof(buf) - 1) /* no line is that long: not an epoll file */
			break;
		memmove(buf, line, have);
	}
	close(fd);
	return found;
}

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
	uint64_t tag = p->img.wake + p->bias;
	int dup = (int)syscall(SYS_pidfd_getfd, p->pidfd, fd, 0);
	if (dup < 0) {
		*why = EF_GC_UNREADABLE;
		return NULL;
	}
	if (!has_tag(dup, tag)) {
		close(dup);
		*why = EF_GC_NO_TAG;
		return NULL;
	}
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	/* Edge-triggered: each expiry is one event, reported exactly EPOLLIN,
	 * as the runtime requires of its wake-up; never read, re-armed. */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = tag };
	if (tfd < 0 || epoll_ctl(dup, EPOLL_CTL_ADD, tfd, &ev) != 0) {
		if (tfd >= 0)
			close(tfd);
		close(dup);
		*why = EF_GC_UNREADABLE;
		return NULL;
	}
	*freei = (struct instance){ .fd = fd, .dup = dup, .tfd = tfd };
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

static void handle(const struct ef_notif *n)
{
	count(EF_GC_NOTIFIED);
	struct proc *p = process_of((pid_t)n->pid);
	if (!p) {
		count(EF_GC_UNREADABLE);
		answer(n->id);
		return;
	}
	if (p->state == PASS && !p->checked_ns) {
		identify(p); /* a retry (identify) */
	} else if (p->state == PASS && now_ns() - p->checked_ns > RECHECK_NS) {
		struct stat st;
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->tgid);
		if (stat(path, &st) != 0 || st.st_dev != p->dev || st.st_ino != p->ino ||
		    startcode_of(p->tgid) != p->startcode)
			identify(p);
		else
			p->checked_ns = now_ns();
	}
	if (p->state != GO) {
		count(EF_GC_PASSED);
		answer(n->id);
		return;
	}
	int32_t epfd = -1; /* read_runtime may fail before it sets it */
	int64_t sched[2];
	int fd = (int)(int32_t)n->data.args[0];
	int ok = read_runtime(p, &epfd, sched) == 0 && epfd == fd;
	if (!ok && startcode_of(p->tgid) != p->startcode) { /* an exec: read it anew */
		identify(p);
		ok = p->state == GO && read_runtime(p, &epfd, sched) == 0 && epfd == fd;
	}
	if (!ok) {
		count(p->state == GO && epfd != fd ? EF_GC_OTHER_FD : EF_GC_PASSED);
		answer(n->id);
		return;
	}
	if (sched[0] != 0 || sched[1] <= 0) {
		count(EF_GC_NOT_POLLING);
		answer(n->id);
		return;
	}
	/* What was read belongs to this call only if the call still waits. */
	uint64_t id = n->id;
	if (ioctl(listener, EF_NOTIF_ID_VALID, &id) != 0) {
		count(EF_GC_GONE);
		return;
	}
	enum ef_go_counter why = EF_GC_UNREADABLE;
	struct instance *in = instance_of(p, fd, &why);
	if (in) {
		struct itimerspec at = { .it_value = { .tv_sec = sched[1] / 1000000000,
						       .tv_nsec = sched[1] % 1000000000 } };
		/* Already past: it fires at once, so never later than without. */
		if (timerfd_settime(in->tfd, TFD_TIMER_ABSTIME, &at, NULL) == 0)
			count(EF_GC_ARMED);
		else
			count(EF_GC_UNREADABLE);
	} else {
		count(why);
	}
	answer(n->id);
}

/* ---- The loop, the heir, the report --------------------------------------------- */

static void write_report(const char *stats)
{
	if (!stats || !*stats || atomic_exchange(&shared->reported, 1))
		return;
	char text[2048];
	struct ef_buf b = EF_BUF(text);
	uint64_t counts[EF_GC_COUNT];
	for (int i = 0; i < EF_GC_COUNT; i++)
		counts[i] = atomic_load(&shared->count[i]);
	ef_go_report((long)getpid(), shared->program, counts, &b);
	/* What the supervisor itself cost (the benchmark's figure). */
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0 && b.len > 0) {
		b.len--; /* its newline */
		ef_fmt(&b, "; supervisor: %ld voluntary switches, %ld us CPU\n", ru.ru_nvcsw,
		       (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
			       ru.ru_stime.tv_usec);
	}
	int fd = 2;
	if (strcmp(stats, "1") != 0) {
		char path[4096];
		struct ef_buf pb = EF_BUF(path);
		for (const char *c = stats; *c; c++) /* %p: the pid, as the library's */
			if (c[0] == '%' && c[1] == 'p')
				ef_fmt(&pb, "%d", (int)getpid()), c++;
			else
				ef_fmt(&pb, "%c", *c);
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	}
	if (fd >= 0) {
		ef_buf_write(&b, fd);
		if (fd != 2)
			close(fd);
	}
}

static void spawn_heir(const char *stats);

__attribute__((noreturn)) static void serve(const char *stats)
{
	self = getpid();
	atomic_store(&shared->supervisor, (int)self);
	prctl(PR_SET_NAME, EF_GO_COMM, 0, 0, 0); /* for ps, status and tests */
	for (int i = 0; i < MAX_PROCS; i++)
		forget(&procs[i]);
	loop = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_LISTENER, 0) };
	if (loop < 0 || epoll_ctl(loop, EPOLL_CTL_ADD, listener, &ev) != 0)
		_exit(1); /* the heir takes over */
	spawn_heir(stats);
	for (;;) {
		struct epoll_event evs[16];
		int n = epoll_wait(loop, evs, 16, -1);
		for (int i = 0; i < n; i++) {
			uint32_t kind = (uint32_t)(evs[i].data.u64 >> 32), at = (uint32_t)evs[i].data.u64;
			if (kind == TAG_LISTENER && (evs[i].events & EPOLLIN)) {
				struct ef_notif note;
				memset(&note, 0, sizeof(note));
				if (ioctl(listener, EF_NOTIF_RECV, &note) != 0)
					continue; /* ENOENT: withdrawn by a signal */
				atomic_store(&shared->pending, note.id);
				handle(&note);
				atomic_store(&shared->pending, 0);
			} else if (kind == TAG_LISTENER) {
				/* EPOLLHUP: no task uses the filter any more (5.8). */
				write_report(stats);
				_exit(0);
			} else if (kind == TAG_HEIR) {
				epoll_ctl(loop, EPOLL_CTL_DEL, heir_pidfd, NULL);
				close(heir_pidfd);
				heir_pidfd = -1;
				spawn_heir(stats);
			} else if (kind == TAG_PROC && at < MAX_PROCS) {
				forget(&procs[at]);
			}
		}
	}
}

/* The heir: holds the listener too and waits for the supervisor to die.
 * Then it answers the call the supervisor had taken and not answered (the
 * thread would wait in it for ever), and becomes the supervisor. */
__attribute__((noreturn)) static void be_heir(pid_t parent, const char *stats)
{
	prctl(PR_SET_NAME, "epollfix-goheir", 0, 0, 0);
	int sup = (int)syscall(SYS_pidfd_open, parent, 0);
	if (sup >= 0 && getppid() != parent) { /* it died before we looked */
		close(sup);
		sup = -1;
	}
	if (sup >= 0) {
		for (;;) {
			/* The listener with no events asked: only its hang-up wakes us. */
			struct pollfd q[2] = { { sup, POLLIN, 0 }, { listener, 0, 0 } };
			if (poll(q, 2, -1) < 0)
				continue;
			if (q[1].revents & POLLHUP)
				_exit(0);
			if (q[0].revents) {
				/* Ended at the hang-up: nothing is left to take over. */
				q[1].revents = 0;
				if (poll(&q[1], 1, 0) > 0 && (q[1].revents & POLLHUP))
					_exit(0);
				break;
			}
		}
		close(sup);
	}
	uint64_t id = atomic_exchange(&shared->pending, 0);
	if (id && ioctl(listener, EF_NOTIF_ID_VALID, &id) == 0)
		answer(id);
	count(EF_GC_TAKEOVERS);
	serve(stats);
}

static void spawn_heir(const char *stats)
{
	pid_t parent = getpid();
	pid_t heir = fork();
	if (heir == 0) {
		close(loop);
		for (int i = 0; i < MAX_PROCS; i++)
			if (procs[i].state != FREE) {
				for (int k = 0; k < MAX_INSTANCES; k++)
					if (procs[i].inst[k].fd >= 0) {
						close(procs[i].inst[k].tfd);
						close(procs[i].inst[k].dup);
						procs[i].inst[k].fd = -1;
					}
				close(procs[i].pidfd);
				close(procs[i].taskdir);
				memset(&procs[i], 0, sizeof(procs[i]));
				procs[i].pidfd = procs[i].taskdir = -1;
			}
		be_heir(parent, stats);
	}
	if (heir < 0)
		return; /* none for now; tried again at the next process exit */
	heir_pidfd = (int)syscall(SYS_pidfd_open, heir, 0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_HEIR, 0) };
	if (heir_pidfd >= 0)
		epoll_ctl(loop, EPOLL_CTL_ADD, heir_pidfd, &ev);
}

void ef_go_supervise(int sock, const char *stats, int program)
{
	listener = ef_recv_fd(sock);
	if (listener < 0)
		_exit(0); /* the launcher gave up before the filter: nothing to serve */
	/* A memfd's page, so that status finds it by name in /proc/PID/maps. */
	int mem = memfd_create(EF_GO_MEMFD, MFD_CLOEXEC);
	shared = mem >= 0 && ftruncate(mem, sizeof(*shared)) == 0
			 ? mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED, mem, 0)
			 : MAP_FAILED;
	if (mem >= 0)
		close(mem);
	if (shared == MAP_FAILED)
		_exit(1); /* no ack: the launcher says so and stops */
	memcpy(shared->magic, EF_GO_SHARED_MAGIC, sizeof(shared->magic));
	shared->program = program;
	/* The thread's CPU wakes the supervisor at once (6.6); EINVAL before. */
	ioctl(listener, EF_NOTIF_SET_FLAGS, EF_NOTIF_FD_SYNC_WAKE_UP);
	for (int i = 0; i < MAX_PROCS; i++)
		procs[i].pidfd = procs[i].taskdir = -1;
	/* The ack, and who we are: under Yama's ptrace_scope 1 the program
	 * names us its ptracer (process_vm_readv and pidfd_getfd need it). */
	char ack[1 + sizeof(int)] = { 'A' };
	int me = (int)getpid();
	memcpy(ack + 1, &me, sizeof(me));
	while (write(sock, ack, sizeof(ack)) < 0 && errno == EINTR)
		;
	close(sock);
	serve(stats);
}
