/* The signal mechanism's user-space half (agent_signal.h): on kernels
 * without the task-work kfunc, the kernel sends each netpoll wait's deadline
 * here (src/bpf/netpoll.bpf.c, on_switch_signal); this arms one timerfd at
 * the earliest, and at each deadline sends SIGURG to the thread if the
 * kernel's entry for it still names that wait. */
#define _GNU_SOURCE
#include "agent_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "agent_bpf.h"
#include "netpoll.h"

/* Deadlines are at most 1 ms ahead and one per sleeping thread: this many
 * pending is already far more than the kernel's threads map holds at once
 * in that wait; beyond it a deadline is dropped (its wait keeps its 1 ms). */
#define MAX_PENDING 4096
#define NSEC_PER_SEC 1000000000LL
#define NSEC_PER_MSEC 1000000LL

struct ef_asig {
	struct ef_abpf *b;
	int tfd;
	int64_t offset;    /* this process's time namespace: its clock = host + offset */
	uint64_t armed_at; /* the timerfd's expiry (host clock), 0: disarmed */
	size_t n;
	struct ef_bpf_deadline heap[MAX_PENDING]; /* a min-heap by deadline */
	uint64_t count[EF_ASIG_COUNT];
};

int64_t ef_asig_own_offset(void)
{
	char buf[256];
	int fd = open("/proc/self/timens_offsets", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	long long sec, nsec;
	const char *m = strstr(buf, "monotonic");
	if (!m || sscanf(m, "monotonic %lld %lld", &sec, &nsec) != 2)
		return 0;
	return sec * NSEC_PER_SEC + nsec;
}

static uint64_t now_host(const struct ef_asig *s)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)((int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec - s->offset);
}

static void swap(struct ef_bpf_deadline *a, struct ef_bpf_deadline *b)
{
	struct ef_bpf_deadline t = *a;
	*a = *b;
	*b = t;
}

static void push(struct ef_asig *s, const struct ef_bpf_deadline *d)
{
	size_t i = s->n++;
	s->heap[i] = *d;
	while (i > 0 && s->heap[(i - 1) / 2].deadline > s->heap[i].deadline) {
		swap(&s->heap[(i - 1) / 2], &s->heap[i]);
		i = (i - 1) / 2;
	}
}

static void pop(struct ef_asig *s)
{
	s->heap[0] = s->heap[--s->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->n && s->heap[l].deadline < s->heap[m].deadline)
			m = l;
		if (r < s->n && s->heap[r].deadline < s->heap[m].deadline)
			m = r;
		if (m == i)
			break;
		swap(&s->heap[i], &s->heap[m]);
		i = m;
	}
}

/* The timerfd at the earliest deadline, absolute in the agent's clock. */
static void arm(struct ef_asig *s)
{
	uint64_t at = s->n ? s->heap[0].deadline : 0;
	if (at == s->armed_at)
		return;
	int64_t mine = at ? (int64_t)at + s->offset : 0;
	if (at && mine <= 0)
		mine = 1; /* long past: at once (0 would disarm) */
	struct itimerspec its = { .it_value = { mine / NSEC_PER_SEC, mine % NSEC_PER_SEC } };
	if (timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		s->armed_at = at;
}

struct ef_asig *ef_asig_new(struct ef_abpf *b)
{
	struct ef_asig *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->b = b;
	s->offset = ef_asig_own_offset();
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->tfd < 0) {
		free(s);
		return NULL;
	}
	ef_abpf_on_deadline(b, ef_asig_add, s);
	return s;
}

void ef_asig_free(struct ef_asig *s)
{
	if (!s)
		return;
	close(s->tfd);
	free(s);
}

int ef_asig_fd(const struct ef_asig *s)
{
	return s->tfd;
}

void ef_asig_add(const struct ef_bpf_deadline *d, void *arg)
{
	struct ef_asig *s = arg;
	/* Read late (the agent was stopped or starved): that wait is over. */
	if (d->deadline + NSEC_PER_MSEC < now_host(s)) {
		s->count[EF_ASIG_LATE]++;
		return;
	}
	if (s->n == MAX_PENDING) {
		s->count[EF_ASIG_FULL]++;
		return;
	}
	push(s, d);
	arm(s);
}

/* At a deadline: the thread is sent SIGURG only when the kernel's entry for
 * it still names this wait (it has not run since it began) in a process
 * still attached. Between this look and the signal the thread may wake on
 * its own: then it gets one SIGURG the runtime ignores. */
static void due(struct ef_asig *s, const struct ef_bpf_deadline *d)
{
	struct ef_bpf_sigwait w;
	if (ef_abpf_sigwait(s->b, d->tid, &w) != 0 || w.waiting != d->seq || w.tgid != d->tgid) {
		s->count[EF_ASIG_STALE]++;
		return;
	}
	if (!ef_abpf_attached(s->b, d->tgid)) {
		s->count[EF_ASIG_DETACHED]++;
		return;
	}
	if (syscall(SYS_tgkill, (pid_t)d->tgid, (pid_t)d->tid, SIGURG) == 0) {
		s->count[EF_ASIG_SENT]++;
	} else if (errno == EPERM) {
		if (!s->count[EF_ASIG_REFUSED]++)
			fprintf(stderr, "epollfix agent: SIGURG to pid %u refused (EPERM): signalling "
					"another user's program needs CAP_KILL; its waits keep their "
					"own 1 ms\n",
				d->tgid);
	} else {
		s->count[EF_ASIG_STALE]++; /* the thread is gone */
	}
}

void ef_asig_due(struct ef_asig *s)
{
	uint64_t ticks;
	if (read(s->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return;
	s->armed_at = 0; /* expired: armed again below if anything is left */
	uint64_t now = now_host(s);
	while (s->n && s->heap[0].deadline <= now) {
		struct ef_bpf_deadline d = s->heap[0];
		pop(s);
		due(s, &d);
	}
	arm(s);
}

void ef_asig_counters(const struct ef_asig *s, uint64_t count[EF_ASIG_COUNT])
{
	memcpy(count, s->count, sizeof(s->count));
}
