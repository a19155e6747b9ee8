/* The wake-up mechanism's user-space half (agent_wake.h). */
#define _GNU_SOURCE
#include "agent_wake.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/types.h>

#include "agent_bpf.h"
#include "gowake.h"
#include "look.h"
#include "netpoll.h"

struct waker {
	uint32_t tgid;
	uint64_t start, epfd_addr, wake_addr, tag;
	int ring;                 /* the ring buffer's fd, -1: none yet */
	int pending;              /* in the epoll set, not yet given to the kernel */
	uint64_t *cons;           /* its consumer position (ours to write) */
	const uint64_t *prod;     /* its producer position (the kernel's) */
};

struct ef_awake {
	struct ef_abpf *b;
	int verbose;
	long page;
	struct waker *w;
	size_t n, cap;
};

struct ef_awake *ef_awake_new(struct ef_abpf *b, int verbose)
{
	struct ef_awake *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->b = b;
	a->verbose = verbose;
	a->page = sysconf(_SC_PAGESIZE);
	return a;
}

static struct waker *find(struct ef_awake *a, uint32_t tgid)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->w[i].tgid == tgid)
			return &a->w[i];
	return NULL;
}

/* Its ring unmapped and closed: the last reference to the file, which the
 * kernel then takes out of the epoll set (the kernel's map, which holds the
 * ring buffer and not the file, is the caller's to change). */
static void close_ring(struct ef_awake *a, struct waker *w)
{
	if (w->ring < 0)
		return;
	if (w->cons)
		munmap(w->cons, (size_t)a->page);
	if (w->prod)
		munmap((void *)w->prod, (size_t)a->page);
	close(w->ring);
	w->ring = -1;
	w->pending = 0;
	w->cons = NULL;
	w->prod = NULL;
}

static void forget(struct ef_awake *a, struct waker *w)
{
	close_ring(a, w);
	*w = a->w[--a->n];
}

void ef_awake_free(struct ef_awake *a)
{
	if (!a)
		return;
	while (a->n)
		forget(a, &a->w[0]);
	free(a->w);
	free(a);
}

void ef_awake_note(struct ef_awake *a, uint32_t tgid, uint64_t start, uint64_t epfd_addr,
		   uint64_t wake_addr, uint64_t tag)
{
	struct waker *w = find(a, tgid);
	if (w) {
		close_ring(a, w);
	} else {
		if (a->n == a->cap) {
			size_t cap = a->cap ? 2 * a->cap : 64;
			struct waker *m = realloc(a->w, cap * sizeof(*m));
			if (!m)
				return; /* no waker for it: its waits keep their own 1 ms */
			a->w = m, a->cap = cap;
		}
		w = &a->w[a->n++];
	}
	*w = (struct waker){ .tgid = tgid, .start = start, .epfd_addr = epfd_addr,
			     .wake_addr = wake_addr, .tag = tag, .ring = -1 };
}

static const char *const why_text[] = {
	[EF_GO_WAKE_UNREADABLE] = "its runtime's epoll fd or wake-up could not be read",
	[EF_GO_WAKE_NO_FD] = "no file descriptor left",
	[EF_GO_WAKE_NO_TAG] = "its epoll set has no item of the runtime's wake-up as its release registers it",
};

/* The waker of w's process: a ring buffer, its two positions mapped, added
 * beside the runtime's wake-up in its epoll set; given to the kernel by
 * ef_awake_commit. NULL or why not. */
static const char *make(struct ef_awake *a, struct waker *w)
{
	int32_t epfd;
	struct iovec local = { &epfd, sizeof(epfd) };
	struct iovec remote = { (void *)(uintptr_t)w->epfd_addr, sizeof(epfd) };
	if (ef_look_start(w->tgid) != w->start || !ef_abpf_attached(a->b, w->tgid))
		return "the process changed";
	if (process_vm_readv((pid_t)w->tgid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(epfd) || epfd < 0)
		return why_text[EF_GO_WAKE_UNREADABLE];
	int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)w->tgid, 0);
	if (pidfd < 0)
		return "the process changed";
	w->ring = ef_abpf_waker_new();
	if (w->ring < 0) {
		close(pidfd);
		return "the kernel refused a ring buffer";
	}
	void *cons = mmap(NULL, (size_t)a->page, PROT_READ | PROT_WRITE, MAP_SHARED, w->ring, 0);
	void *prod = mmap(NULL, (size_t)a->page, PROT_READ, MAP_SHARED, w->ring, a->page);
	w->cons = cons == MAP_FAILED ? NULL : cons;
	w->prod = prod == MAP_FAILED ? NULL : prod;
	if (!w->cons || !w->prod) {
		close(pidfd);
		close_ring(a, w);
		return "the ring buffer could not be mapped";
	}
	int dup;
	enum ef_go_wake_why why = ef_go_wake_join((pid_t)w->tgid, pidfd, epfd, w->wake_addr, w->tag, w->ring, &dup);
	close(pidfd);
	if (why != EF_GO_WAKE_OK) {
		close_ring(a, w);
		return why_text[why];
	}
	close(dup); /* the item stays while the ring's file lives */
	w->pending = 1;
	return NULL;
}

static void give(struct ef_awake *a, const uint32_t *tgids, const int *fds, size_t n)
{
	if (ef_abpf_set_wakers(a->b, tgids, fds, n) != 0 && a->verbose)
		fprintf(stderr, "epollfix agent: the kernel refused wakers (%zu): those waits keep their own 1 ms\n",
			n);
}

void ef_awake_commit(struct ef_awake *a)
{
	uint32_t tgids[64];
	int fds[64];
	size_t n = 0;
	for (size_t i = 0; i < a->n; i++) {
		if (!a->w[i].pending)
			continue;
		if (n == sizeof(tgids) / sizeof(tgids[0]))
			give(a, tgids, fds, n), n = 0;
		tgids[n] = a->w[i].tgid, fds[n++] = a->w[i].ring;
		a->w[i].pending = 0;
	}
	give(a, tgids, fds, n);
}

void ef_awake_make(struct ef_awake *a, uint32_t tgid)
{
	struct waker *w = find(a, tgid);
	if (!w || w->ring >= 0)
		return; /* not ours, or asked twice */
	const char *why = make(a, w);
	if (why && a->verbose)
		fprintf(stderr, "epollfix agent: pid %u: no waker: %s; its waits keep their own 1 ms\n", tgid,
			why);
}

static void drain(struct waker *w)
{
	if (w->ring >= 0)
		__atomic_store_n(w->cons, __atomic_load_n(w->prod, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}

void ef_awake_drain(struct ef_awake *a, uint32_t tgid)
{
	struct waker *w = find(a, tgid);
	if (w)
		drain(w);
}

void ef_awake_drop(struct ef_awake *a, uint32_t tgid)
{
	struct waker *w = find(a, tgid);
	if (!w)
		return;
	/* At once: while the kernel finds a waker for the pid, the new image
	 * would never ask for its own. */
	if (w->ring >= 0)
		ef_abpf_drop_wakers(a->b, &tgid, 1);
	forget(a, w);
}

void ef_awake_tick(struct ef_awake *a)
{
	uint32_t gone[64];
	size_t n = 0;
	for (size_t i = 0; i < a->n;) {
		if (n < sizeof(gone) / sizeof(gone[0]) && !ef_abpf_attached(a->b, a->w[i].tgid)) {
			if (a->w[i].ring >= 0)
				gone[n++] = a->w[i].tgid;
			forget(a, &a->w[i]); /* the last moved here: looked at next */
			continue;
		}
		drain(&a->w[i++]);
	}
	/* The processes that ended this second, out of the kernel's map at once
	 * (one wait of the kernel's: ef_abpf_drop_wakers); more, next second. */
	ef_abpf_drop_wakers(a->b, gone, n);
}
