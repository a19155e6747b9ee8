/* The agent's reader (agent_reader.h): the loop's side, which sends and
 * watches, then the child's, which reads. */
#define _GNU_SOURCE
#include "agent_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "goimage.h"
#include "gowake.h"
#include "look.h"
#include "proc.h"

#define CHILDREN 2 /* a slow reading (a large file, a slow disk) delays no other look */
#define QUEUE 128   /* requests under way at most, a child */
#define LEFT 64     /* children left blocked, remembered to be reaped and said */
#define CGROUPS 16  /* cgroups backed off */

struct ask {
	struct ef_rq q;
	int ring;         /* WAKE: the agent's copy of the ring, -1 */
};

/* One child and the requests it has, in the order it answers them. */
struct child {
	pid_t pid;
	int sock;
	volatile uint64_t *progress; /* the child's, in a page it shares with the loop */
	uint64_t seen;               /* progress at the last watch */
	uint64_t still_since;        /* ms: no progress since */
	uint64_t head_since;         /* ms: the oldest request became the one it is on */
	struct ask q[QUEUE];
	size_t head, n;
};

struct ef_reader {
	int ep;
	const struct ef_sel *sel;
	long only;
	struct child c[CHILDREN];
	pid_t left[LEFT];
	size_t nleft;
	struct {
		uint64_t until; /* s, CLOCK_MONOTONIC; 0: a free slot */
		char path[512];
	} off[CGROUPS];
};

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* ---- the child ---- */

/* Executables read: their verdicts kept by file, and one that failed (or
 * changed since) read again RETRY_SECONDS after its last reading at the
 * soonest: a process the agent cannot serve costs one reading of its file a
 * minute at most, however often it is looked at and however its owner
 * touches the file. The table is the child's: a child that replaces one left
 * blocked reads again. */
#define EXES 512
#define RETRY_SECONDS 60

struct exe {
	dev_t dev;
	ino_t ino;
	struct timespec ctime;
	uint64_t read_at; /* CLOCK_MONOTONIC, s: 0 for a free slot */
	enum ef_go_why why;
	struct ef_go_image img;
};

static struct {
	const struct ef_sel *sel;
	long only;
	pid_t parent;
	volatile uint64_t *progress;
	struct exe *exes;
} C;

/* Each read of an executable is progress; the agent gone, the reading stops. */
static int child_stop(void)
{
	(*C.progress)++;
	return getppid() != C.parent;
}

static const struct exe *exe_verdict(int fd, const struct stat *st)
{
	static struct exe one;
	uint64_t now = now_ms() / 1000 + 1, oldest = UINT64_MAX;
	struct exe *e = NULL;

	for (size_t i = 0; C.exes && i < EXES; i++) {
		struct exe *x = &C.exes[i];
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
	if (!e)
		e = &one; /* no table: read each time */
	e->why = ef_go_image_read_until(fd, &e->img, child_stop);
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->ctime = st->st_ctim;
	e->read_at = now;
	return e;
}

static int chosen(uint32_t pid, const char *path)
{
	static char cgroups[64 * 1024];
	ssize_t n = 0;
	if (C.only)
		return 1;
	if (ef_sel_needs_cgroup(C.sel) && (n = ef_proc_read(pid, "cgroup", cgroups, sizeof(cgroups))) < 0)
		n = 0;
	return ef_sel_chosen(C.sel, pid, path, cgroups, (size_t)n);
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

/* Whether the process is a Go program of a known layout, and where its
 * runtime's variables are: a->r EF_LOOK_*, the verdict's words in a->why. */
static void look(uint32_t pid, struct ef_ra *a)
{
	char link[64], path[PATH_MAX];
	struct ef_buf why = EF_BUF(a->why);
	a->r = EF_LOOK_NO;
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0) {
		if (errno == ENOENT)
			ef_fmt(&why, "pid %u: no executable: a kernel thread, or gone", pid);
		else
			ef_fmt(&why, "pid %u: its executable cannot be read: %s", pid, strerror(errno));
		return;
	}
	path[n] = '\0';
	if (!chosen(pid, path))
		return;
	/* The path is the process's own choice: escaped, it forges no log line. */
	char shown[4 * PATH_MAX];
	struct ef_buf sb = EF_BUF(shown);
	ef_esc(&sb, path, 0);
	int fd = open(link, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		ef_fmt(&why, "pid %u (%s): its executable cannot be read: %s", pid, shown, strerror(errno));
		if (fd >= 0)
			close(fd);
		a->r = EF_LOOK_AGAIN;
		return;
	}
	const struct exe *x = exe_verdict(fd, &st);
	close(fd);
	if (!x) {
		ef_fmt(&why, "pid %u (%s): its executable is read again later (a reading that failed is "
			     "tried again %d s after)",
		       pid, shown, RETRY_SECONDS);
		a->r = EF_LOOK_AGAIN;
		return;
	}
	const struct ef_go_image *img = &x->img;
	if (x->why == EF_GO_NOT_GO || x->why == EF_GO_NOT_ELF) {
		ef_fmt(&why, "pid %u (%s): not attached: %s", pid, shown, ef_go_why_text(x->why));
		a->fork = C.only && runs_parents_image(pid);
		return;
	}
	uint64_t bias = 0;
	if (x->why == EF_GO_OK && img->pie && ef_go_load_bias(pid, (uint64_t)st.st_ino, img, &bias) != 0) {
		/* In the middle of an exec (its segments not all mapped), or a
		 * program that unmapped its first: the file is not read again. */
		ef_fmt(&why, "pid %u (%s, %s): not attached (yet): its first segment is not mapped", pid,
		       shown, img->version);
		a->r = EF_LOOK_AGAIN;
		return;
	}
	if (x->why != EF_GO_OK) {
		ef_fmt(&why, "pid %u (%s, %s): not attached: %s", pid, shown,
		       *img->version ? img->version : "Go", ef_go_image_says(img, x->why));
		a->refused_go = 1;
		a->fork = C.only && runs_parents_image(pid);
		/* Too costly to read: the verdict holds until the file's back-off ends. */
		a->until = x->why == EF_GO_TOO_COSTLY ? x->read_at + RETRY_SECONDS : 0;
		return;
	}
	a->r = EF_LOOK_SERVE;
	a->sched = img->sched + bias;
	a->epfd = img->epfd + bias;
	a->wake = img->wake + bias;
	a->tag = ef_go_wake_tag(img, bias);
	snprintf(a->version, sizeof(a->version), "%s", img->version);
	ef_fmt(&why, "pid %u (%s, %s)", pid, shown, img->version);
}

static const char *const wake_text[] = {
	[EF_GO_WAKE_UNREADABLE] = "its runtime's epoll fd or wake-up could not be read",
	[EF_GO_WAKE_NO_FD] = "no file descriptor left",
	[EF_GO_WAKE_NO_TAG] = "its epoll set has no item of the runtime's wake-up as its release registers it",
	[EF_GO_WAKE_NOT_EPOLL] = "the file at its runtime's epoll fd is not an epoll set",
};

/* The ring added to the process's epoll set, beside its runtime's wake-up. */
static void wake(const struct ef_rq *q, int ring, struct ef_ra *a)
{
	struct ef_buf why = EF_BUF(a->why);
	int32_t epfd;
	struct iovec local = { &epfd, sizeof(epfd) };
	struct iovec remote = { (void *)(uintptr_t)q->epfd, sizeof(epfd) };
	a->r = -1;
	if (ring < 0 || ef_look_start(q->tgid) != q->start) {
		ef_fmt(&why, "the process changed");
		return;
	}
	if (process_vm_readv((pid_t)q->tgid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(epfd) || epfd < 0) {
		a->r = EF_GO_WAKE_UNREADABLE;
		ef_fmt(&why, "%s", wake_text[a->r]);
		return;
	}
	(*C.progress)++;
	int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)q->tgid, 0);
	if (pidfd < 0 || ef_look_start(q->tgid) != q->start) {
		if (pidfd >= 0)
			close(pidfd);
		ef_fmt(&why, "the process changed");
		return;
	}
	int dup;
	a->r = ef_go_wake_join((pid_t)q->tgid, pidfd, epfd, q->wake, q->tag, ring, &dup);
	close(pidfd);
	if (a->r == EF_GO_WAKE_OK)
		close(dup); /* the item stays while the agent's ring lives */
	else
		ef_fmt(&why, "%s", wake_text[a->r]);
}

static void child_main(int sock, const struct ef_sel *sel, long only, volatile uint64_t *progress)
{
	C.sel = sel;
	C.only = only;
	C.parent = getppid();
	C.progress = progress;
	/* Gone with the agent; holding nothing of the agent's but its socket:
	 * a child left blocked keeps no BPF object, no waker, no state file. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "epollfix-read");
	if (dup2(sock, 3) != 3)
		_exit(1);
	if (syscall(SYS_close_range, 4u, ~0u, 0u) != 0)
		for (int fd = 4; fd < 1024; fd++)
			close(fd);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* the agent's blocked signals end it */
	C.exes = calloc(EXES, sizeof(*C.exes)); /* NULL: read at every look */
	static struct ef_ra a;
	for (;;) {
		struct ef_rq q;
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { &q, sizeof(q) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(3, &m, MSG_CMSG_CLOEXEC);
		if (n <= 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(q))
			_exit(0); /* the agent closed it */
		int ring = -1;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&ring, CMSG_DATA(c), sizeof(ring));
		memset(&a, 0, sizeof(a));
		a.kind = q.kind, a.tgid = q.tgid, a.gen = q.gen, a.start = q.start;
		(*progress)++;
		if (q.kind == EF_RQ_LOOK)
			look(q.tgid, &a);
		else
			wake(&q, ring, &a);
		if (ring >= 0)
			close(ring);
		(*progress)++;
		/* Only the words written: a verdict is a line, not 17 KiB. */
		size_t len = offsetof(struct ef_ra, why) + strnlen(a.why, sizeof(a.why) - 1) + 1;
		if (send(3, &a, len, MSG_NOSIGNAL) < 0)
			_exit(0);
	}
}

/* ---- the loop's side ---- */

static int spawn(struct ef_reader *r, struct child *c)
{
	int sv[2];
	void *page = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		munmap(page, sizeof(uint64_t));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		close(sv[0]), close(sv[1]);
		munmap(page, sizeof(uint64_t));
		errno = err;
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		child_main(sv[1], r->sel, r->only, page);
		_exit(0);
	}
	close(sv[1]);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = sv[0] };
	epoll_ctl(r->ep, EPOLL_CTL_ADD, sv[0], &ev);
	c->pid = pid;
	c->sock = sv[0];
	c->progress = page;
	c->seen = 0;
	c->still_since = c->head_since = now_ms();
	return 0;
}

/* The child's socket closed, its page unmapped, the child killed: one that
 * may be blocked (left) ends when what blocks it answers, and is kept to be
 * reaped; an idle one is reaped now. */
static void let_go(struct ef_reader *r, struct child *c, int left)
{
	if (c->sock >= 0)
		close(c->sock); /* out of the epoll set */
	if (c->progress)
		munmap((void *)c->progress, sizeof(uint64_t));
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		if (left && r->nleft < LEFT)
			r->left[r->nleft++] = c->pid;
		else
			waitpid(c->pid, NULL, left ? WNOHANG : 0);
	}
	c->sock = -1;
	c->progress = NULL;
	c->pid = 0;
}

static int send_one(struct child *c, const struct ask *k)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)&k->q, sizeof(k->q) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (k->ring >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &k->ring, sizeof(int));
	}
	return c->sock >= 0 && sendmsg(c->sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(k->q)
		       ? 0
		       : -1;
}

void ef_reader_free(struct ef_reader *r);

struct ef_reader *ef_reader_new(int ep, const struct ef_sel *sel, long only)
{
	struct ef_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->ep = ep;
	r->sel = sel;
	r->only = only;
	for (int i = 0; i < CHILDREN; i++)
		r->c[i].sock = -1;
	for (int i = 0; i < CHILDREN; i++) {
		if (spawn(r, &r->c[i]) != 0) {
			int err = errno;
			ef_reader_free(r);
			errno = err;
			return NULL;
		}
	}
	return r;
}

static struct ask *at(struct child *c, size_t i)
{
	return &c->q[(c->head + i) % QUEUE];
}

/* The oldest request answered (its copy of the ring closed). */
static void pop(struct child *c)
{
	struct ask *k = at(c, 0);
	if (k->ring >= 0)
		close(k->ring);
	c->head = (c->head + 1) % QUEUE;
	c->n--;
	c->head_since = now_ms();
}

void ef_reader_free(struct ef_reader *r)
{
	if (!r)
		return;
	for (int i = 0; i < CHILDREN; i++) {
		/* A child busy on a request may be blocked: not waited for. */
		struct child *c = &r->c[i];
		int busy = c->n > 0;
		while (c->n)
			pop(c);
		let_go(r, c, busy);
	}
	free(r);
}

int ef_reader_is(const struct ef_reader *r, int fd)
{
	for (int i = 0; i < CHILDREN; i++)
		if (r->c[i].sock >= 0 && r->c[i].sock == fd)
			return 1;
	return 0;
}

/* Put at the end of c's queue and sent: 0, or -1. */
static int queue(struct child *c, struct ask *k)
{
	if (c->sock < 0 || c->n == QUEUE || send_one(c, k) != 0)
		return -1;
	if (!c->n) {
		/* Progress is watched from now: the child was idle. */
		c->head_since = c->still_since = now_ms();
		c->seen = c->progress ? *c->progress : 0;
	}
	*at(c, c->n++) = *k;
	return 0;
}

int ef_reader_ask(struct ef_reader *r, const struct ef_rq *q, int ring)
{
	/* A process's own child (the verdicts it keeps are of the executables
	 * it read), unless that one is busy and another idle. */
	struct child *c = &r->c[q->tgid % CHILDREN];
	for (int i = 0; i < CHILDREN; i++)
		if (r->c[i].sock >= 0 && (c->sock < 0 || (c->n && !r->c[i].n)))
			c = &r->c[i];
	if (c->sock < 0)
		return -1;
	struct ask k = { .q = *q, .ring = ring >= 0 ? fcntl(ring, F_DUPFD_CLOEXEC, 3) : -1 };
	if ((ring >= 0 && k.ring < 0) || queue(c, &k) != 0) {
		if (k.ring >= 0)
			close(k.ring);
		return -1;
	}
	return 0;
}

size_t ef_reader_pending(const struct ef_reader *r)
{
	size_t n = 0;
	for (int i = 0; i < CHILDREN; i++)
		n += r->c[i].n;
	return n;
}

static void replace(struct ef_reader *r, struct child *c, const char *what, ef_reader_fn *fn, void *arg);

void ef_reader_answers(struct ef_reader *r, int fd, ef_reader_fn *fn, void *arg)
{
	static struct ef_ra a;
	struct child *c = NULL;
	for (int i = 0; i < CHILDREN; i++)
		if (r->c[i].sock >= 0 && r->c[i].sock == fd)
			c = &r->c[i];
	while (c && c->sock >= 0 && c->n) {
		memset(&a, 0, sizeof(a));
		ssize_t n = recv(c->sock, &a, sizeof(a), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < (ssize_t)offsetof(struct ef_ra, why)) {
			/* The child ended on it (killed by someone, out of
			 * memory, or the request's own doing). */
			replace(r, c, "ended its reader", fn, arg);
			return;
		}
		a.why[sizeof(a.why) - 1] = '\0';
		struct ask k = *at(c, 0);
		pop(c); /* closes the copy of the ring: k.ring is not used */
		if (a.kind == k.q.kind && a.tgid == k.q.tgid && a.gen == k.q.gen)
			fn(&k.q, &a, arg);
	}
	if (c && c->sock >= 0 && !c->n) {
		/* Readable with nothing asked: it ended while idle. */
		char b;
		if (recv(c->sock, &b, 1, MSG_DONTWAIT | MSG_PEEK) == 0) {
			let_go(r, c, 0);
			spawn(r, c);
		}
	}
}

static void reap(struct ef_reader *r)
{
	for (size_t i = 0; i < r->nleft;) {
		if (waitpid(r->left[i], NULL, WNOHANG) == r->left[i]) {
			fprintf(stderr, "epollfix agent: reader pid %d, left blocked, has ended\n", (int)r->left[i]);
			r->left[i] = r->left[--r->nleft];
			continue;
		}
		i++;
	}
}

/* The cgroup of tgid, as its /proc/PID/cgroup says it (cgroup v2's
 * "0::PATH", or a v1 hierarchy's first line whole), in buf: 0, or -1. */
static int cgroup_of(uint32_t tgid, char *buf, size_t size)
{
	static char text[8192];
	ssize_t n = ef_proc_read(tgid, "cgroup", text, sizeof(text) - 1);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	const char *line = strstr(text, "0::/");
	line = line && (line == text || line[-1] == '\n') ? line + 3 : text;
	size_t len = strcspn(line, "\n");
	if (len == 0 || len >= size)
		return -1;
	memcpy(buf, line, len);
	buf[len] = '\0';
	return 0;
}

int ef_reader_backed_off(const struct ef_reader *r, uint32_t tgid)
{
	uint64_t now = now_ms() / 1000;
	char path[sizeof(r->off[0].path)];
	int read = 0;
	for (size_t i = 0; i < CGROUPS; i++) {
		if (r->off[i].until <= now)
			continue;
		if (!read++ && cgroup_of(tgid, path, sizeof(path)) != 0)
			return 0;
		size_t len = strlen(r->off[i].path);
		if (strncmp(path, r->off[i].path, len) == 0 &&
		    (path[len] == '\0' || path[len] == '/' || r->off[i].path[len - 1] == '/'))
			return 1;
	}
	return 0;
}

/* tgid's cgroup backed off (said in *path, or "" when it could not be read,
 * or is the root: every process would be). */
static void back_off(struct ef_reader *r, uint32_t tgid, char *path, size_t size)
{
	size_t oldest = 0;
	*path = '\0';
	for (size_t i = 0; i < CGROUPS; i++)
		if (r->off[i].until < r->off[oldest].until)
			oldest = i;
	if (cgroup_of(tgid, r->off[oldest].path, sizeof(r->off[oldest].path)) != 0 ||
	    strcmp(r->off[oldest].path, "/") == 0)
		return;
	r->off[oldest].until = now_ms() / 1000 + EF_READER_BACKOFF_S;
	snprintf(path, size, "%s", r->off[oldest].path);
}

/* The child left where it is, on its oldest request (the one it is on): its
 * process refused, its owner backed off; the rest asked again of a new
 * child, in their order. */
static void replace(struct ef_reader *r, struct child *c, const char *what, ef_reader_fn *fn, void *arg)
{
	struct ask k = *at(c, 0);
	pid_t pid = c->pid;
	at(c, 0)->ring = -1; /* moved to k */
	pop(c);
	struct ask rest[QUEUE];
	size_t n = 0;
	while (c->n) {
		rest[n++] = *at(c, 0);
		at(c, 0)->ring = -1; /* moved */
		pop(c);
	}
	let_go(r, c, 1);
	/* The cgroup's path is its own to name (a delegated subtree): escaped,
	 * it forges no log line. */
	char path[512], shown[4 * 512];
	struct ef_buf sb = EF_BUF(shown);
	back_off(r, k.q.tgid, path, sizeof(path));
	ef_esc(&sb, path, 0);
	fprintf(stderr,
		"epollfix agent: pid %u: its %s %s: not served; %s%s%s; reader pid %d is left where it is, "
		"and ends when what blocks it answers\n",
		k.q.tgid, k.q.kind == EF_RQ_LOOK ? "executable or memory" : "files or memory", what,
		*path ? "the processes of its cgroup " : "its cgroup not backed off (the root, or it ended)", shown,
		*path ? " are not read for 60 s" : "", (int)pid);
	if (k.ring >= 0)
		close(k.ring);
	if (spawn(r, c) != 0)
		fprintf(stderr, "epollfix agent: no new reader: %s\n", strerror(errno));
	static struct ef_ra a;
	for (size_t i = 0; i < n; i++) {
		if (!ef_reader_backed_off(r, rest[i].q.tgid) && queue(c, &rest[i]) == 0)
			continue;
		/* Not asked again: answered "later" (looked at again by a
		 * scan, its waker mended), so that its record does not wait
		 * for an answer that never comes. */
		if (rest[i].ring >= 0)
			close(rest[i].ring);
		memset(&a, 0, sizeof(a));
		a.kind = rest[i].q.kind, a.tgid = rest[i].q.tgid, a.gen = rest[i].q.gen, a.start = rest[i].q.start;
		a.r = rest[i].q.kind == EF_RQ_LOOK ? EF_LOOK_AGAIN : EF_GO_WAKE_UNREADABLE;
		snprintf(a.why, sizeof(a.why), "pid %u: asked again later", a.tgid);
		fn(&rest[i].q, &a, arg);
	}
	memset(&a, 0, sizeof(a));
	a.kind = k.q.kind, a.tgid = k.q.tgid, a.gen = k.q.gen, a.start = k.q.start, a.r = -2;
	snprintf(a.why, sizeof(a.why), "pid %u: its %s %s: not served", k.q.tgid,
		 k.q.kind == EF_RQ_LOOK ? "executable or memory" : "files or memory", what);
	fn(&k.q, &a, arg);
}

void ef_reader_watch(struct ef_reader *r, ef_reader_fn *fn, void *arg)
{
	reap(r);
	uint64_t now = now_ms();
	for (int i = 0; i < CHILDREN; i++) {
		struct child *c = &r->c[i];
		if (c->sock < 0 && spawn(r, c) != 0)
			continue;
		uint64_t p = *c->progress;
		if (p != c->seen) {
			c->seen = p;
			c->still_since = now;
		}
		if (!c->n)
			continue;
		if (now - c->still_since >= EF_READER_HUNG_MS)
			replace(r, c, "did not answer (no progress for 1 s)", fn, arg);
		else if (now - c->head_since >= (uint64_t)EF_READER_SLOW_S * 1000)
			replace(r, c, "read on for too long (over 20 s)", fn, arg);
	}
}
