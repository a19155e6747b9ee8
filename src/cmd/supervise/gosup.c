/* The Go supervisor's pair of answerers (gosup.h, doc/go.md): the
 * supervisor and its heir, in two sessions, both holding the seccomp
 * listener. Each answers the notifications it takes (goanswer.c: read, answer
 * CONTINUE, arm), publishes the one it holds in a page they share, answers
 * the other's held too long, replaces the other when it dies or stops, and
 * writes the report. The call itself always runs natively in the program, so
 * events and signals reach it as they would without, and a wait never ends
 * later than without. */
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
#include <sys/time.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fdpass.h"
#include "fmt.h"
#include "goabi.h"
#include "goanswer.h"
#include "goimage.h"
#include "golook.h"
#include "maps.h"
#include "proc.h"

/* A notification one answerer has held this long is answered CONTINUE by
 * the other: a stopped or starved answerer then costs a wait at most this
 * on top of the program's own 1 ms. Handling one takes some 40 us. */
#define HOLD_NS (200 * 1000LL)
/* An answerer that has not woken for this long while the other does (each
 * notification wakes both) is looked at: stopped (SIGSTOP), it is replaced. */
#define ASLEEP_NS (100 * 1000000LL)
/* An answerer that has found notifications waiting for this long without a
 * break (a crowd of processes, a machine short of CPU) answers the next ones
 * at once, unread, until it catches up: each then waits its 1 ms as
 * without, instead of queueing behind the others' reads. */
#define BEHIND_NS (500 * 1000LL)
/* The two above, EPOLLFIX_GO_TEST_SLOW times longer on an emulated machine
 * (goimage.h, tests only). */
static int64_t hold_ns = HOLD_NS, behind_ns = BEHIND_NS;

enum { TAG_LISTENER = 1, TAG_PARTNER, TAG_PROC, TAG_WATCH, TAG_PROGRAM, TAG_CHILD };
#define TAG(kind, i) (((uint64_t)(kind) << 32) | (uint32_t)(i))

static struct ef_go_shared *shared;
static int listener = -1, loop = -1;
static pid_t self;
/* The pair: this answerer's slot in the shared page (the other's is 1 -
 * mine), the other's pidfd, and the pair's two watch timers, one a slot:
 * armed HOLD_NS ahead by the slot's owner when it takes a notification,
 * disarmed when it answers, watched by the other. Shared across the fork,
 * so the other sees the timer its partner arms. */
static int mine, partner = -1, watch[2] = { -1, -1 }, program_fd = -1;
static int heir; /* 1 in the heir, 0 in the supervisor */
static int child_fd = -1; /* signalfd of SIGCHLD: the heir, our child, stopped */
static int64_t looked_ns; /* when the partner's state was last read */
static pid_t partner_pid;
static int64_t busy_since; /* when the listener was last found with nothing waiting */
static const char *stats;

static void count(enum ef_go_counter c)
{
	ef_go_count(shared, c);
}

static int64_t now_ns(void)
{
	return ef_go_now_ns();
}

static void send_continue(uint64_t id)
{
	struct ef_notif_resp r = { .id = id, .flags = EF_NOTIF_FLAG_CONTINUE };
	/* ENOENT: the call is gone (a signal, an exit), or the other answerer
	 * answered it already; nothing to answer. */
	while (ioctl(listener, EF_NOTIF_SEND, &r) != 0 && errno == EINTR)
		;
}

static void set_watch(int slot, int64_t at_ns)
{
	struct itimerspec at = { .it_value = { .tv_sec = at_ns / 1000000000, .tv_nsec = at_ns % 1000000000 } };
	if (watch[slot] >= 0)
		timerfd_settime(watch[slot], TFD_TIMER_ABSTIME, &at, NULL);
}

/* Answers the notification this answerer took, and says so in its slot. */
static void answer(uint64_t id)
{
	send_continue(id);
	uint64_t held = id;
	if (atomic_compare_exchange_strong(&shared->slot[mine].id, &held, 0))
		set_watch(mine, 0);
}

/* ---- The loop, the heir, the report --------------------------------------------- */

static void write_report(void)
{
	if (!stats || !*stats || atomic_exchange(&shared->reported, 1))
		return;
	char text[2048];
	struct ef_buf b = EF_BUF(text);
	uint64_t counts[EF_GC_COUNT];
	for (int i = 0; i < EF_GC_COUNT; i++)
		counts[i] = atomic_load(&shared->count[i]);
	ef_go_report((long)atomic_load(&shared->supervisor), shared->program, counts, &b);
	/* What the pair cost (the benchmark's figure): this one's, and its
	 * partner's, still running, from /proc. */
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0 && b.len > 0) {
		long switches = ru.ru_nvcsw;
		long long cpu_us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
				   ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
		char buf[2048];
		const char *v;
		if (partner_pid > 0 && ef_proc_read(partner_pid, "status", buf, sizeof(buf)) > 0 &&
		    (v = strstr(buf, "\nvoluntary_ctxt_switches:")))
			switches += strtol(v + sizeof("\nvoluntary_ctxt_switches:") - 1, NULL, 10);
		if (partner_pid > 0 && ef_proc_read(partner_pid, "schedstat", buf, sizeof(buf)) > 0)
			cpu_us += strtoll(buf, NULL, 10) / 1000; /* ns on a CPU */
		b.len--; /* its newline */
		ef_fmt(&b, "; supervisor and heir: %ld voluntary switches, %lld us CPU\n", switches, cpu_us);
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

/* The program (the pid epollfix started) has exited: a report to stderr is
 * written now, with the counts so far, and stderr let go of. A shell's
 * `$(epollfix PROGRAM 2>&1)` waits for every writer of its pipe: the pair
 * outlives the program as long as a process it started (a daemon) runs
 * under the filter, and must not hold the caller's pipe that long. */
static void program_exited(void)
{
	if (stats && strcmp(stats, "1") == 0)
		write_report();
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 2);
		close(null);
	}
	epoll_ctl(loop, EPOLL_CTL_DEL, program_fd, NULL);
	close(program_fd);
	program_fd = -1;
}

/* How far past the highest id known a notification received but not yet
 * published is looked for (ids withdrawn by signals leave gaps), and how many
 * ids are probed at most: each probe is one ioctl, under the filter's lock. */
#define PROBE_AHEAD 64
#define PROBE_MAX 1024

/* Answers a notification still waiting for an answer (received, unanswered:
 * ID_VALID succeeds only in the kernel's SENT state). */
static void answer_orphan(uint64_t id)
{
	if (ioctl(listener, EF_NOTIF_ID_VALID, &id) == 0) {
		send_continue(id);
		count(EF_GC_RESCUED);
	}
}

/* The other answerer's notification, held since before HOLD_NS ago (or
 * held at its death): answered CONTINUE here. Its own late answer then
 * fails with ENOENT, and its timer armed late only adds a break. One it
 * received but had not yet published (stopped or killed right after its
 * RECV) is found by its id: the kernel numbers a filter's notifications in
 * sequence (its next_id), and this answerer, in its loop, holds none, so any
 * received and unanswered is the other's. They are probed from PROBE_AHEAD
 * past the highest id received down to the one the other began its claim
 * after (at most PROBE_MAX). The filter's first id is random (its
 * listener's next_id starts at get_random_u64()): the launcher's call made
 * before the program runs (priming) is the first, and says where they
 * start. */
static void rescue(int slot, int dead)
{
	struct ef_go_slot *s = &shared->slot[slot];
	if (!dead && now_ns() - atomic_load(&s->taken_ns) < hold_ns - hold_ns / 8)
		return;
	uint64_t id = atomic_load(&s->id);
	if (id) {
		answer_orphan(id);
	} else if (atomic_load(&shared->last_id)) { /* 0: none received yet */
		/* after <= last_id (it is a past last_id); 0: never claimed. */
		uint64_t after = atomic_load(&s->after), top = atomic_load(&shared->last_id) + PROBE_AHEAD;
		uint64_t span = after && top - after < PROBE_MAX ? top - after : PROBE_MAX;
		for (uint64_t n = 0; n < span; n++)
			answer_orphan(top - n);
	}
	if (dead)
		atomic_store(&s->id, 0);
}

/* The highest id received, raised (ids wrap: compared by difference; the
 * first, random, is taken whatever it is). */
static void saw_id(uint64_t id)
{
	uint64_t top = atomic_load(&shared->last_id);
	while ((!top || (int64_t)(id - top) > 0) && !atomic_compare_exchange_weak(&shared->last_id, &top, id))
		;
}

/* EPOLLFIX_GO_TEST_STOP (tests only, doc/go.md): "claim", "recv" or "prime", an
 * answerer stops itself (SIGSTOP), once a pair, right after its claim or its
 * RECV: the two windows no kill from outside can hit. "claim": the first
 * claim once an id is known; "recv": the RECV of the program's first
 * notification (see rescue); "prime": the RECV of the launcher's, before
 * the program runs. And "late": once an id is known, an answerer about to
 * RECV waits for the program's exit first, as one starved there would for
 * long: the other steals its claim and takes every notification, and this
 * RECV finds none left (see recv_bounded). Which answerer, the scheduler
 * decides. */
static const char *test_stop;

static void test_stop_at(const char *where)
{
	if (!test_stop || strcmp(test_stop, where) != 0 ||
	    ((strcmp(where, "claim") == 0 || strcmp(where, "late") == 0) && !atomic_load(&shared->last_id)) ||
	    atomic_exchange(&shared->test_stopped, 1))
		return;
	if (strcmp(where, "late") != 0) {
		raise(SIGSTOP);
		return;
	}
	struct pollfd end = { program_fd, POLLIN, 0 };
	while (program_fd >= 0 && poll(&end, 1, -1) < 0 && errno == EINTR)
		;
}

/* A RECV blocks in the kernel until a notification waits. One is looked for
 * first (take), but the other answerer, stealing a claim held too long, may
 * receive it in between: the RECV then waits for the next, deaf to the
 * listener's hang-up before Linux 6.6 (its semaphore), and after the
 * program's last call none comes: this answerer would outlive the program
 * for good, holding its stderr (a shell's $(...) waits on it). A periodic
 * SIGALRM, unblocked only for the RECV, bounds it to hold_ns: EINTR, and the
 * loop sees what happened meanwhile. With no timer, unbounded as before. */
static timer_t recv_timer;
static int recv_timed;
static sigset_t alrm;

static void recv_interrupt(int sig)
{
	(void)sig;
}

/* In each answerer (a timer is not kept across fork). */
static void recv_bound_setup(void)
{
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, NULL);
	struct sigaction on = { .sa_handler = recv_interrupt }; /* no SA_RESTART: EINTR */
	sigaction(SIGALRM, &on, NULL);
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	recv_timed = timer_create(CLOCK_MONOTONIC, &sev, &recv_timer) == 0;
}

static int recv_bounded(struct ef_notif *note)
{
	struct timespec every = { (time_t)(hold_ns / 1000000000), (long)(hold_ns % 1000000000) };
	struct itimerspec on = { every, every }, off = { { 0, 0 }, { 0, 0 } };
	if (recv_timed)
		timer_settime(recv_timer, 0, &on, NULL);
	sigprocmask(SIG_UNBLOCK, &alrm, NULL);
	int r = ioctl(listener, EF_NOTIF_RECV, note), err = errno;
	sigprocmask(SIG_BLOCK, &alrm, NULL);
	if (recv_timed)
		timer_settime(recv_timer, 0, &off, NULL);
	errno = err;
	return r;
}

/* The launcher's first trapped call (golaunch.c's prime), made before the
 * program runs: answered, never counted. A program's own epoll_pwait on fd
 * -1 would be taken for it, and fails with EBADF just the same. */
static int priming(const struct ef_notif *n)
{
	return n->data.nr == EF_NR_EPOLL_PWAIT && (int32_t)n->data.args[0] == EF_GO_PRIME_FD;
}

/* Takes the notifications waiting and answers them, one RECV at a time
 * between the two: each notification wakes both (edge-triggered), the
 * first to claim the listener in the page takes it, and the other goes
 * back to sleep. A claim is covered by the claimer's watch timer, armed
 * before the claim (and disarmed if the claim fails): were it stopped
 * anywhere from its claim to its answer, the other wakes HOLD_NS later,
 * answers what it received (rescue) and steals the claim. Under its claim
 * it looks again that a notification waits before its RECV, which would
 * otherwise block it in the kernel: one the other received just before
 * letting go of its claim leaves nothing. A RECV that still finds nothing
 * (the call withdrawn by a signal in between: ENOENT; or taken by the other
 * after it stole this one's claim, old: blocked) returns within hold_ns
 * (recv_bounded). */
static void take(void)
{
	struct pollfd q = { listener, POLLIN, 0 };
	while (poll(&q, 1, 0) == 1 && (q.revents & POLLIN)) {
		int64_t t = now_ns(), held = 0;
		atomic_store(&shared->slot[mine].taken_ns, t);
		atomic_store(&shared->slot[mine].after, atomic_load(&shared->last_id));
		set_watch(mine, t + hold_ns);
		if (!atomic_compare_exchange_strong(&shared->claim, &held, t) &&
		    (t - held < hold_ns || !atomic_compare_exchange_strong(&shared->claim, &held, t))) {
			set_watch(mine, 0);
			return; /* the other takes them */
		}
		test_stop_at("claim");
		/* Nothing left to receive (the other took it before it let go of
		 * its claim): a RECV would block this answerer in the kernel, where
		 * it can answer for no one, until the next notification. */
		struct pollfd left = { listener, POLLIN, 0 };
		if (poll(&left, 1, 0) != 1 || !(left.revents & POLLIN)) {
			held = t;
			atomic_compare_exchange_strong(&shared->claim, &held, 0);
			set_watch(mine, 0);
			break;
		}
		if (!busy_since)
			busy_since = t;
		struct ef_notif note;
		memset(&note, 0, sizeof(note));
		test_stop_at("late");
		int r = recv_bounded(&note);
		held = t;
		atomic_compare_exchange_strong(&shared->claim, &held, 0);
		if (r != 0) { /* ENOENT: withdrawn by a signal; EINTR: none came */
			set_watch(mine, 0);
			break;
		}
		test_stop_at(priming(&note) ? "prime" : "recv");
		atomic_store(&shared->slot[mine].id, note.id);
		saw_id(note.id);
		if (priming(&note)) {
			answer(note.id);
		} else if (t - busy_since > behind_ns) {
			count(EF_GC_NOTIFIED);
			count(EF_GC_OVERLOAD);
			answer(note.id);
		} else {
			struct ef_go_arming arm;
			ef_go_read(&note, &arm);
			answer(note.id);
			ef_go_arm(&arm);
		}
		q.revents = 0;
	}
	busy_since = 0; /* caught up */
}

static void watch_partner(pid_t pid);

/* The listener's hang-up (5.8): no task uses the filter any more. */
static int hung_up(void)
{
	struct pollfd q = { listener, 0, 0 };
	return poll(&q, 1, 0) > 0 && (q.revents & POLLHUP);
}

/* The other answerer is gone: its notification answered, the supervisor's
 * role taken if it was the supervisor, and a new heir made. */
static void partner_died(void)
{
	epoll_ctl(loop, EPOLL_CTL_DEL, partner, NULL);
	close(partner);
	partner = -1;
	partner_pid = 0;
	while (waitpid(-1, NULL, WNOHANG) > 0) /* an heir, our child, is a zombie */
		;
	rescue(1 - mine, 1);
	atomic_store(&shared->claim, 0); /* had it claimed, none would take */
	if (hung_up()) {
		write_report();
		_exit(0);
	}
	if (heir) {
		heir = 0;
		prctl(PR_SET_NAME, EF_GO_COMM, 0, 0, 0);
		atomic_store(&shared->supervisor, (int)self);
		count(EF_GC_TAKEOVERS);
	}
	watch_partner(0);
	take(); /* what waits now wakes no one (edge-triggered) */
}

/* A stopped answerer (SIGSTOP, a terminal's Ctrl-Z) holds the listener
 * and answers nothing: alone, were the other to die, it would stall every
 * trapped call until continued. It is killed, and replaced by the usual
 * way of a death (partner_died). A tracer's stop ('t') is left alone. */
static void replace_if_stopped(void)
{
	char buf[512];
	const char *p;
	if (partner < 0 || partner_pid <= 0 || ef_proc_read(partner_pid, "stat", buf, sizeof(buf)) <= 0 ||
	    !(p = strrchr(buf, ')')) || p[1] != ' ' || p[2] != 'T')
		return;
	if (syscall(SYS_pidfd_send_signal, partner, SIGKILL, NULL, 0) == 0)
		count(EF_GC_REPLACED);
}

/* The heir, our child, reported stopped (CLD_STOPPED): replaced at once. */
static void child_signalled(void)
{
	struct signalfd_siginfo si;
	int stopped = 0;
	while (read(child_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		stopped |= si.ssi_code == CLD_STOPPED && (pid_t)si.ssi_pid == partner_pid;
	if (stopped)
		replace_if_stopped();
}

/* Each wake-up is stamped; the partner's stamp, old while ours moves, has
 * it looked at (its parent is told of a stop at once; the heir is not). */
static void stamp_and_look(void)
{
	int64_t t = now_ns();
	atomic_store(&shared->awake_ns[mine], t);
	if (partner_pid > 0 && t - atomic_load(&shared->awake_ns[1 - mine]) > ASLEEP_NS &&
	    t - looked_ns > ASLEEP_NS) {
		looked_ns = t;
		replace_if_stopped();
	}
}

/* A trapped wait waits for an answerer to run: beside busy processes, at
 * the same weight, that can be milliseconds. Its work is a few tens of us a
 * wake-up: it asks, where allowed, the weight of nice -10 and a 100 us
 * slice (Linux 6.12's custom slice: an earlier deadline, so a wake-up
 * preempts), and keeps what it gets. */
static void prefer_answers(void)
{
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t priority;
		uint64_t runtime, deadline, period;
	} attr = { .size = sizeof(attr), .policy = 0 /* SCHED_OTHER */, .nice = -10, .runtime = 100000 };
	if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0)
		return;
	attr.nice = 0; /* no CAP_SYS_NICE: the slice alone */
	if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0)
		setpriority(PRIO_PROCESS, 0, -10);
}

__attribute__((noreturn)) static void serve(void)
{
	self = getpid();
	prefer_answers();
	recv_bound_setup();
	prctl(PR_SET_NAME, heir ? "epollfix-goheir" : EF_GO_COMM, 0, 0, 0); /* for ps, status, tests */
	if (!heir)
		atomic_store(&shared->supervisor, (int)self);
	/* SIGCHLD blocked, not ignored: read from a signalfd, it says when
	 * the heir stops; its zombie is reaped in partner_died. */
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sigaction(SIGCHLD, &dfl, NULL);
	if (child_fd >= 0)
		close(child_fd); /* the parent's, inherited */
	child_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	atomic_store(&shared->awake_ns[mine], now_ns());
	loop = epoll_create1(EPOLL_CLOEXEC);
	/* Not EPOLLEXCLUSIVE: that wakes one answerer, and one woken but
	 * not yet run (starved, or stopped on its way out of epoll_wait)
	 * would hold the notification with no one the wiser. Both are woken
	 * by each (edge-triggered: once); the first to claim it takes it. */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = TAG(TAG_LISTENER, 0) };
	if (loop < 0 || epoll_ctl(loop, EPOLL_CTL_ADD, listener, &ev) != 0)
		_exit(1); /* the other answers alone, and makes a new partner */
	ef_go_answer_setup(&(struct ef_go_answerer){ listener, loop, TAG(TAG_PROC, 0), shared });
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = TAG(TAG_PROGRAM, 0) };
	if (program_fd >= 0)
		epoll_ctl(loop, EPOLL_CTL_ADD, program_fd, &ev);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = TAG(TAG_CHILD, 0) };
	if (child_fd >= 0)
		epoll_ctl(loop, EPOLL_CTL_ADD, child_fd, &ev);
	watch_partner(heir ? getppid() : 0);
	for (;;) {
		struct epoll_event evs[16];
		int n = epoll_wait(loop, evs, 16, -1);
		if (n > 0)
			stamp_and_look();
		for (int i = 0; i < n; i++) {
			uint32_t kind = (uint32_t)(evs[i].data.u64 >> 32), at = (uint32_t)evs[i].data.u64;
			if (kind == TAG_LISTENER && !(evs[i].events & EPOLLHUP)) {
				take();
			} else if (kind == TAG_LISTENER) {
				/* No task uses the filter any more (5.8). */
				write_report();
				_exit(0);
			} else if (kind == TAG_PARTNER) {
				partner_died();
			} else if (kind == TAG_WATCH) {
				uint64_t fired;
				if (read(watch[1 - mine], &fired, sizeof(fired)) > 0) {
					rescue(1 - mine, 0);
					take(); /* a claim it holds too long is stolen */
				}
			} else if (kind == TAG_PROGRAM) {
				program_exited();
			} else if (kind == TAG_CHILD) {
				child_signalled();
			} else if (kind == TAG_PROC) {
				ef_go_proc_gone(at);
			}
		}
	}
}

/* Watches the other answerer: pid, the parent that made this heir; 0, a
 * new heir made here. The pair's watch timers are made anew each time. */
static void watch_partner(pid_t pid)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_WATCH, 0) };
	if (pid) {
		partner = (int)syscall(SYS_pidfd_open, pid, 0);
		if (partner >= 0 && getppid() != pid) { /* it died before we looked */
			close(partner);
			partner = -1;
		}
		if (partner < 0) { /* its slot, and the supervisor's role, are ours */
			partner_died();
			return;
		}
	} else {
		for (int k = 0; k < 2; k++) {
			if (watch[k] >= 0) {
				epoll_ctl(loop, EPOLL_CTL_DEL, watch[k], NULL);
				close(watch[k]);
			}
			watch[k] = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		}
		pid_t child = fork();
		if (child == 0) {
			/* Named first: status finds the supervisor by its name
			 * (and the page), and must not find two. */
			prctl(PR_SET_NAME, "epollfix-goheir", 0, 0, 0);
			/* Out of this one's session too: one kill -STOP of a
			 * session or group stops one answerer, not both. */
			setsid();
			close(loop);
			heir = 1;
			mine = 1 - mine;
			serve();
		}
		if (child < 0)
			return; /* none for now; tried again at the next process exit */
		partner = (int)syscall(SYS_pidfd_open, child, 0);
		pid = child;
	}
	partner_pid = partner >= 0 ? pid : 0;
	struct epoll_event pev = { .events = EPOLLIN, .data.u64 = TAG(TAG_PARTNER, 0) };
	if (partner >= 0)
		epoll_ctl(loop, EPOLL_CTL_ADD, partner, &pev);
	if (watch[1 - mine] >= 0)
		epoll_ctl(loop, EPOLL_CTL_ADD, watch[1 - mine], &ev);
}

void ef_go_supervise(int sock, const char *stats_to, int program)
{
	stats = stats_to;
	test_stop = getenv("EPOLLFIX_GO_TEST_STOP");
	hold_ns = HOLD_NS * ef_go_test_slow();
	behind_ns = BEHIND_NS * ef_go_test_slow();
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
	/* Its exit lets go of stderr (program_exited); still there: it waits
	 * for the ack. */
	program_fd = (int)syscall(SYS_pidfd_open, program, 0);
	/* The thread's CPU wakes the supervisor at once (6.6); EINVAL before. */
	ioctl(listener, EF_NOTIF_SET_FLAGS, EF_NOTIF_FD_SYNC_WAKE_UP);
	/* The ack, and who we are: under Yama's ptrace_scope 1 the program
	 * names us its ptracer (process_vm_readv and pidfd_getfd need it; our
	 * descendants, the heir, are allowed too). */
	char ack[1 + sizeof(int)] = { 'A' };
	int me = (int)getpid();
	memcpy(ack + 1, &me, sizeof(me));
	while (write(sock, ack, sizeof(ack)) < 0 && errno == EINTR)
		;
	close(sock);
	serve();
}
