/* The agent's reader (agent_reader.h): the child's loop, which answers
 * (what it reads of a process: agent_look.c), then the agent's side, which
 * sends and watches. */
#define _GNU_SOURCE
#include "agent_reader.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_look.h"
#include "fmt.h"
#include "gowake.h"
#include "proc.h"

#define CHILDREN 2 /* a slow reading (a large file, a slow disk) delays no other look */
#define QUEUE 128   /* requests under way at most, a child */
#define LEFT 64     /* children left blocked, remembered to be reaped and said */
#define CGROUPS 16  /* cgroups backed off */
#define SLOW_MS 50  /* a child on one request this long: the other takes the next */
#define MOVED 64    /* executables sent away from their child, remembered */

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
	/* An executable whose request went to the other child (its own was
	 * slow) goes there after: that child holds its verdict, and the file
	 * is not read again by the first. A slot another takes costs a
	 * reading, not a wrong answer. */
	struct moved {
		uint32_t key;
		uint8_t used, child;
	} moved[MOVED];
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

static void child_main(int sock, const struct ef_sel *sel, long only, volatile uint64_t *progress)
{
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
	ef_alook_init(sel, only, progress);
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
			ef_alook_look(q.tgid, &a);
		else
			ef_alook_wake(&q, ring, &a);
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

/* Which child a process's requests go to: by its executable's path
 * (/proc/PID/exe's link, which asks nothing of the file's own file system),
 * so that every process of one executable goes to the same child. */
static uint32_t exe_key(uint32_t tgid)
{
	char link[32], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/%u/exe", tgid);
	ssize_t n = readlink(link, path, sizeof(path));
	if (n <= 0)
		return tgid;
	uint32_t h = 2166136261u; /* FNV-1a */
	for (ssize_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)path[i]) * 16777619u;
	return h;
}

int ef_reader_ask(struct ef_reader *r, const struct ef_rq *q, int ring)
{
	/* The executable's own child (the verdicts a child keeps are of the
	 * executables it read: each is read once), unless that one is slow on
	 * a request (a large file, a slow disk) and another is not. */
	uint32_t key = exe_key(q->tgid);
	struct moved *m = &r->moved[key % MOVED];
	struct child *home = &r->c[m->used && m->key == key ? m->child : key % CHILDREN], *c = home;
	uint64_t now = now_ms();
	for (int i = 0; i < CHILDREN; i++) {
		struct child *o = &r->c[i];
		int slow = c->n && now - c->head_since >= SLOW_MS, other_slow = o->n && now - o->head_since >= SLOW_MS;
		if (o->sock >= 0 && (c->sock < 0 || (slow && !other_slow)))
			c = o;
	}
	if (c->sock < 0)
		return -1;
	if (c != home)
		m->key = key, m->used = 1, m->child = (uint8_t)(c - r->c);
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
