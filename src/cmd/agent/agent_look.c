/* What the agent's reader child reads of one process (agent_look.h). */
#define _GNU_SOURCE
#include "agent_look.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "goimage.h"
#include "gowake.h"
#include "look.h"
#include "proc.h"

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

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
	e->why = ef_go_image_read_until(fd, EF_GO_AGENT, &e->img, child_stop);
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
void ef_alook_look(uint32_t pid, struct ef_ra *a)
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
void ef_alook_wake(const struct ef_rq *q, int ring, struct ef_ra *a)
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

void ef_alook_init(const struct ef_sel *sel, long only, volatile uint64_t *progress)
{
	C.sel = sel;
	C.only = only;
	C.parent = getppid();
	C.progress = progress;
	C.exes = calloc(EXES, sizeof(*C.exes)); /* NULL: read at every look */
}
