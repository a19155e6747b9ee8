// SPDX-License-Identifier: GPL-2.0
/* Runs in the kernel (src/README.md): ends a Go runtime's 1 ms netpoll wait
 * at the runtime's own deadline (doc/agent.md).
 *
 * Go's netpoller waits for its next timer with a raw
 * epoll_pwait(runtime.epfd, events, 128, 1, NULL) when that timer is under
 * 1 ms away, after storing the timer's absolute CLOCK_MONOTONIC deadline in
 * runtime.sched.pollUntil. When such a thread goes to sleep (sched_switch,
 * run in its context: its memory is the current one), this program reads
 * pollUntil and arms a bpf_timer at it; the timer's callback schedules task
 * work in signal mode on the thread, which ends the wait with EINTR and
 * sends no signal. Go's netpoll(delay > 0) takes EINTR as "re-check timers".
 * On kernels without that kfunc, a second sched_switch program arms the
 * timer too and, at the deadline, writes the process's waker: a ring buffer
 * the agent put into the runtime's epoll set with the data of the runtime's
 * own wake-up, whose event the runtime takes as a netpollBreak (no signal,
 * no EINTR; agent_wake.c). Only when asked, a third sends the deadline to
 * the agent, which sends SIGURG, Go's own preemption signal, at the deadline
 * if the thread is still in that wait (agent_signal.c), or, on kernels that
 * refuse bpf_timer (PREEMPT_RT), arms at that deadline a timerfd of its own
 * that it put into the runtime's epoll set as the runtime's wake-up
 * (agent_served.c): the object built with EF_NO_TIMERS holds no timer at
 * all, which such a kernel refuses even in a map no program uses. The agent
 * loads one of them (agent_bpf.c).
 *
 * What makes a wrong or stale address harmless: the program only reads the
 * process's memory, never writes it; the callback acts only on a thread still
 * asleep in the same call (epoll_pwait on the epfd it armed for, timeout 1),
 * of a process still attached; a deadline already interrupted for is never
 * armed again (a stale pollUntil cannot spin the program). The worst case is
 * one early EINTR of a netpoll wait, which the runtime expects (and, by the
 * signal mechanism, a SIGURG, which the runtime ignores).
 *
 * Nothing here waits on user space: the agent that loaded it only fills
 * `procs`; killed, its maps and their timers go with its file descriptors;
 * stopped, the kernel goes on alone (task work; wake-up, until a waker is
 * full) or the waits keep their own 1 ms (signal: the deadlines the agent
 * does not read are dropped). */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "netpoll.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_INTERRUPTIBLE 0x1
#define CLOCK_MONOTONIC 1
#define NSEC_PER_SEC 1000000000ULL
#define NSEC_PER_MSEC 1000000ULL
#define BPF_F_TIMER_ABS_ (1ULL << 0) /* Linux 6.7; older vmlinux.h lack it */

/* The registers a thread in a system call saved (bpf_task_pt_regs), read by
 * the number of the call and its arguments. One source and one vmlinux.h
 * (the build machine's) for both architectures: each one's struct pt_regs
 * is declared here under a flavour of its own (CO-RE ignores the "___"
 * suffix and finds the fields in the running kernel's BTF, anonymous unions
 * included), with only the fields read. Not bpf_tracing.h's PT_REGS_*_CORE:
 * on arm64 they read struct user_pt_regs, which an x86 vmlinux.h lacks, and
 * it has no macro for the call's number. epoll_pwait's number is the
 * architecture's own (no table is shared: x86-64 281, arm64 22). */
#if defined(__TARGET_ARCH_x86)
/* The number in orig_ax, the arguments in di, si, dx, r10, r8. In the
 * kernel's order, up to orig_ax: the object's offsets before relocation are
 * then the kernel's too, as when it read vmlinux.h's x86 struct pt_regs. */
struct pt_regs___ef_x86 {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di;
	unsigned long orig_ax;
} __attribute__((preserve_access_index));
#define NR_EPOLL_PWAIT 281
#define SYSCALL_NR(r) BPF_CORE_READ((struct pt_regs___ef_x86 *)(r), orig_ax)
#define SYSCALL_ARG1(r) BPF_CORE_READ((struct pt_regs___ef_x86 *)(r), di)
#define SYSCALL_ARG4(r) BPF_CORE_READ((struct pt_regs___ef_x86 *)(r), r10)
#define SYSCALL_ARG5(r) BPF_CORE_READ((struct pt_regs___ef_x86 *)(r), r8)
#elif defined(__TARGET_ARCH_arm64)
/* The number in syscallno; the first argument in orig_x0 (x0, regs[0], is
 * the return value's), the others in regs[1..5]. */
struct pt_regs___ef_arm64 {
	__u64 regs[31];
	__u64 orig_x0;
	__s32 syscallno;
} __attribute__((preserve_access_index));
#define NR_EPOLL_PWAIT 22
#define SYSCALL_NR(r) BPF_CORE_READ((struct pt_regs___ef_arm64 *)(r), syscallno)
#define SYSCALL_ARG1(r) BPF_CORE_READ((struct pt_regs___ef_arm64 *)(r), orig_x0)
#define SYSCALL_ARG4(r) BPF_CORE_READ((struct pt_regs___ef_arm64 *)(r), regs[3])
#define SYSCALL_ARG5(r) BPF_CORE_READ((struct pt_regs___ef_arm64 *)(r), regs[4])
#else
#error "built for x86-64 or arm64 only: -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64"
#endif

/* The kernel's functions (kfuncs), resolved at load; weak: only the task
 * work program calls them, and it is not loaded on a kernel without them.
 * The object for the wake-up and signal mechanisms (EF_NO_KFUNCS, Linux
 * 5.15 on) declares none, nor the task-work program and its map: libbpf then
 * never looks for a kfunc in the modules' BTF, which needs CAP_SYS_ADMIN. */
#ifndef EF_NO_KFUNCS
struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym __weak;
void bpf_task_release(struct task_struct *p) __ksym __weak;
void bpf_rcu_read_lock(void) __ksym __weak;
void bpf_rcu_read_unlock(void) __ksym __weak;
/* Task work in signal mode has two names: Linux 6.18 and 6.19 export
 * `_impl`, whose last argument the verifier fills (NULL here); 7.0 exports
 * the plain name, with that argument implicit, and keeps `_impl` in its BTF
 * as the function behind it, of another prototype. This source is built once
 * for each (EF_TASKWORK_IMPLICIT: 7.0's), and the agent loads the object
 * whose name the kernel has (agent_bpf.c): an object naming a kfunc the
 * kernel lacks, even weak and unused, makes libbpf search the modules' BTF,
 * which needs CAP_SYS_ADMIN (the unit does not grant it), and libbpf before
 * 1.3 refuses a weak kfunc of another prototype. */
#ifdef EF_TASKWORK_IMPLICIT
int bpf_task_work_schedule_signal(struct task_struct *task, struct bpf_task_work *tw,
				  void *map__map, bpf_task_work_callback_t callback) __ksym __weak;
#define schedule_signal(task, tw, map, cb) bpf_task_work_schedule_signal(task, tw, map, cb)
#else
int bpf_task_work_schedule_signal_impl(struct task_struct *task, struct bpf_task_work *tw,
				       void *map__map, bpf_task_work_callback_t callback,
				       void *aux__prog) __ksym __weak;
#define schedule_signal(task, tw, map, cb) bpf_task_work_schedule_signal_impl(task, tw, map, cb, NULL)
#endif
#endif

/* Attached processes, by tgid: filled and emptied by user space only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EF_BPF_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ef_bpf_proc);
} procs SEC(".maps");

#ifndef EF_NO_KFUNCS
/* One entry per thread of an attached process that has slept in a netpoll
 * wait: its timer, the thread (a counted reference, so the callback can name
 * it), its task work, and the wait it was armed for. */
struct thread {
	struct bpf_timer timer;
	struct task_struct __kptr *task;
	struct bpf_task_work tw;
	__u64 deadline;  /* host CLOCK_MONOTONIC; 0: not in an armed wait */
	__u64 pollUntil; /* the runtime's deadline armed for (its clock) */
	__u64 fired;     /* the runtime's deadline last interrupted for */
	__u64 ended;     /* host CLOCK_MONOTONIC deadline of the wait last ended */
	__u32 tgid;
	__s32 epfd;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EF_BPF_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct thread);
} threads SEC(".maps");
#endif

/* The signal mechanism's threads (struct ef_bpf_sigwait): the agent reads
 * them. Each mechanism's map is sized to 1 when the other is loaded. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EF_BPF_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct ef_bpf_sigwait);
} sigwaits SEC(".maps");

/* Per tgid, how many times it exec'd or ended (agent_bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EF_BPF_MAX_PROCS * 4);
	__type(key, __u32);
	__type(value, __u64);
} gens SEC(".maps");

/* Execs, for the agent to look at the new image (struct ef_bpf_event). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EF_BPF_EVENTS_SIZE);
} events SEC(".maps");
/* When an exec last woke the agent (changed()). */
static __u64 exec_woken_at;


/* The signal mechanism's waits (struct ef_bpf_deadline), to the agent:
 * 2048 records; when the agent falls behind, waits keep their own 1 ms. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} deadlines SEC(".maps");

/* The wake-up mechanism's threads: the timer at the deadline of the wait
 * each sleeps in, and that wait, cleared when the thread runs again. */
struct wakewait {
#ifndef EF_NO_TIMERS
	struct bpf_timer timer;
#endif
	__u64 waiting;   /* host CLOCK_MONOTONIC deadline of the wait it sleeps in; 0: none */
	__u64 pollUntil; /* that wait's deadline, the runtime's clock */
	__u64 fired;     /* a runtime deadline woken for: never armed again */
	__u64 woken;     /* the deadline of the wait woken, until the thread runs: its lateness */
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EF_BPF_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct wakewait);
} wakewaits SEC(".maps");

/* Each attached process's waker, by tgid: a ring buffer the agent made and
 * put into the runtime's epoll set, tagged as the runtime's own wake-up
 * (agent_wake.c). Only user space adds and removes them. */
struct waker {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EF_BPF_WAKER_SIZE);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, EF_BPF_MAX_PROCS);
	__type(key, __u32);
	__array(values, struct waker);
} wakers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EF_BC_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* The machine's counter, and the process's own when it is attached. */
static __always_inline void count(__u32 which, struct ef_bpf_proc *p)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		(*c)++;
	if (p && which < EF_BC_COUNT)
		__sync_fetch_and_add(&p->count[which], 1);
}

/* The task-work callback runs when the thread returns to user space, the
 * wait over with EINTR: how late after the runtime's deadline the program
 * has its thread back, the lateness the program sees. */
/* How late after the runtime's deadline the program had its thread back,
 * the lateness the program sees, in the library's buckets (live.h's
 * ef_late_bucket): at most 2^b us. */
static __always_inline void record_late(struct ef_bpf_proc *p, __u64 late)
{
	__u64 us = (late + 999) / 1000;
	__u32 b = 0;
	for (__u32 i = 0; i < EF_BPF_LATE_BUCKETS - 1; i++)
		if (us > (1ULL << i))
			b = i + 1;
	if (b < EF_BPF_LATE_BUCKETS) {
		__sync_fetch_and_add(&p->late[b], 1);
		__sync_fetch_and_add(&p->late_ns, late);
	}
}

#ifndef EF_NO_KFUNCS
static int work_done(struct bpf_map *map, void *key, void *value)
{
	struct thread *t = value;
	__u64 now = bpf_ktime_get_ns(), ended = t->ended;
	struct ef_bpf_proc *p = bpf_map_lookup_elem(&procs, &t->tgid);
	if (!p || !ended || now < ended)
		return 0;
	record_late(p, now - ended);
	t->ended = 0;
	return 0;
}

/* The thread sleeps in epoll_pwait(epfd, ..., 1, NULL). */
static __always_inline int in_netpoll_wait(struct pt_regs *regs, __s32 epfd)
{
	return SYSCALL_NR(regs) == NR_EPOLL_PWAIT && (__s32)SYSCALL_ARG1(regs) == epfd &&
	       SYSCALL_ARG4(regs) == 1 && SYSCALL_ARG5(regs) == 0;
}

static int timer_fired(void *map, __u32 *key, struct thread *t)
{
	struct task_struct *task = NULL;
	struct ef_bpf_proc *p;
	__u64 deadline = t->deadline;

	p = bpf_map_lookup_elem(&procs, &t->tgid);
	/* Cleared by a later sleep that was not an armed wait, or re-armed. */
	if (!deadline || bpf_ktime_get_ns() < deadline) {
		count(EF_BC_STALE, p);
		return 0;
	}
	t->deadline = 0;
	if (!p) {
		count(EF_BC_DETACHED, NULL);
		return 0;
	}
	bpf_rcu_read_lock();
	task = t->task;
	if (task)
		task = bpf_task_acquire(task);
	bpf_rcu_read_unlock();
	if (!task) {
		count(EF_BC_STALE, p);
		return 0;
	}
	/* The thread the entry is keyed by, and of the process it was armed
	 * in (never another's that took over its tid). */
	if (task->pid != (pid_t)*key || task->tgid != (pid_t)t->tgid) {
		count(EF_BC_STALE, p);
		bpf_task_release(task);
		return 0;
	}
	/* Still asleep in the very call it was armed for. */
	if (task->__state != TASK_INTERRUPTIBLE ||
	    !in_netpoll_wait((struct pt_regs *)bpf_task_pt_regs(task), t->epfd)) {
		count(EF_BC_AWAKE, p);
		bpf_task_release(task);
		return 0;
	}
	t->fired = t->pollUntil;
	t->ended = deadline;
	if (schedule_signal(task, &t->tw, &threads, work_done) == 0)
		count(EF_BC_ENDED, p);
	else
		count(EF_BC_BUSY, p);
	bpf_task_release(task);
	return 0;
}
#endif

/* The offset of the task's time namespace from the host's monotonic clock:
 * the runtime's nanotime() is read in its namespace. */
static __always_inline __s64 timens_offset(struct task_struct *task)
{
	struct timespec64 ts;
	ts = BPF_CORE_READ(task, nsproxy, time_ns, offsets.monotonic);
	return ts.tv_sec * (__s64)NSEC_PER_SEC + ts.tv_nsec;
}

/* The wait prev goes to sleep in, when it is its runtime's netpoll wait
 * (epoll_pwait(runtime.epfd, ..., 1, NULL), the netpoller blocking) and the
 * runtime's deadline falls within its 1 ms: 0 with *w filled, or -1 (counted
 * when it was such a call). Shared by both mechanisms. */
struct wait {
	__u64 deadline; /* host CLOCK_MONOTONIC */
	__u64 until;    /* the runtime's pollUntil, its clock */
	__s32 epfd;
};

static __always_inline int netpoll_wait(bool preempt, struct task_struct *prev,
					 struct ef_bpf_proc *p, struct wait *w)
{
	struct pt_regs *regs;
	__s32 epfd;
	__s64 sched[3]; /* goidgen, lastpoll, pollUntil: runtime.schedt's first words */

	if (preempt || prev->__state != TASK_INTERRUPTIBLE)
		return -1;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (SYSCALL_NR(regs) != NR_EPOLL_PWAIT || SYSCALL_ARG4(regs) != 1 || SYSCALL_ARG5(regs) != 0)
		return -1;
	count(EF_BC_WAITS, p);
	if (bpf_probe_read_user(&epfd, sizeof(epfd), (void *)p->epfd_addr) != 0 ||
	    bpf_probe_read_user(sched, sizeof(sched), (void *)p->sched_addr) != 0) {
		count(EF_BC_UNREADABLE, p);
		return -1;
	}
	if ((__s32)SYSCALL_ARG1(regs) != epfd) {
		count(EF_BC_OTHER_FD, p);
		return -1;
	}
	/* lastpoll is 0 while the netpoller blocks (runtime/proc.go). */
	if (sched[1] != 0 || sched[2] <= 0) {
		count(EF_BC_NOT_POLLING, p);
		return -1;
	}
	__u64 now = bpf_ktime_get_ns();
	w->until = (__u64)sched[2];
	w->deadline = w->until - timens_offset(prev);
	w->epfd = epfd;
	/* A deadline this wait of 1 ms would miss, not one long past (a stale
	 * address). */
	if (w->deadline >= now + NSEC_PER_MSEC || w->deadline + NSEC_PER_MSEC < now) {
		count(EF_BC_OUT_OF_RANGE, p);
		return -1;
	}
	return 0;
}

/* The entry of thread tid in a per-thread map (threads, sigwaits,
 * wakewaits: values holding their process's tgid at tgid_at) when it is this
 * process's. One that another process's thread left, of this tid once, is
 * not this thread's (nor, for task work, is its task reference): deleted. */
static __always_inline void *own_entry(void *map, __u32 tid, __u32 tgid, __u32 tgid_at)
{
	void *e = bpf_map_lookup_elem(map, &tid);
	if (e && *(__u32 *)((char *)e + tgid_at) != tgid) {
		bpf_map_delete_elem(map, &tid);
		return NULL;
	}
	return e;
}

/* Thread tid's new entry in map, made from fresh; NULL, counted, when the
 * map is full. */
static __always_inline void *new_entry(void *map, __u32 tid, const void *fresh, struct ef_bpf_proc *p)
{
	if (bpf_map_update_elem(map, &tid, fresh, BPF_NOEXIST) != 0) {
		count(EF_BC_FULL, p);
		return NULL;
	}
	return bpf_map_lookup_elem(map, &tid);
}

#ifndef EF_NO_KFUNCS
/* Task work (Linux 6.18): a bpf_timer at the deadline whose callback ends
 * the wait. Loaded when the kernel has the kfunc (agent_bpf.c). */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ef_bpf_proc *p;
	struct thread *t;
	struct wait w;

	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return 0;
	t = own_entry(&threads, tid, tgid, offsetof(struct thread, tgid));
	if (t)
		t->deadline = 0; /* whatever this sleep is, the one armed for is over */
	if (netpoll_wait(preempt, prev, p, &w) != 0)
		return 0;
	/* A deadline already interrupted for: a stale one would spin. */
	if (t && t->fired == w.until) {
		count(EF_BC_REPEATED, p);
		return 0;
	}
	if (!t) {
		struct thread fresh = { .tgid = tgid };
		t = new_entry(&threads, tid, &fresh, p);
		if (!t)
			return 0;
		bpf_timer_init(&t->timer, &threads, CLOCK_MONOTONIC);
		struct task_struct *ref = bpf_task_acquire(prev);
		if (ref) {
			ref = bpf_kptr_xchg(&t->task, ref);
			if (ref)
				bpf_task_release(ref);
		}
	}
	t->tgid = tgid;
	t->epfd = w.epfd;
	t->pollUntil = w.until;
	t->deadline = w.deadline;
	bpf_timer_set_callback(&t->timer, timer_fired);
	if (bpf_timer_start(&t->timer, w.deadline, BPF_F_TIMER_ABS_) == 0)
		count(EF_BC_ARMED, p);
	else
		t->deadline = 0, count(EF_BC_FULL, p);
	return 0;
}
#endif

/* A thread of the signal mechanism that runs (or sleeps again): the wait
 * recorded is over; a deadline that passed in it is never sent again (a
 * stale pollUntil would spin). Back after the deadline and before its own
 * 1 ms, the wait was ended at the deadline (by the agent's SIGURG, or an
 * event that came after it): counted as such, with how late the program
 * had its thread back, as the task work's callback does. */
static __always_inline void sigwait_over(struct ef_bpf_sigwait *s)
{
	__u64 now;
	if (!s->waiting)
		return;
	s->waiting = 0;
	now = bpf_ktime_get_ns();
	if (now < s->deadline)
		return;
	s->fired = s->pollUntil;
	if (now < s->slept + NSEC_PER_MSEC) {
		struct ef_bpf_proc *p = bpf_map_lookup_elem(&procs, &s->tgid);
		if (p) {
			count(EF_BC_ENDED, p);
			record_late(p, now - s->deadline);
		}
	}
}

/* Signal (Linux 5.15 and later, no task-work kfunc): the deadline goes to
 * the agent through the ring buffer; it sends SIGURG at the deadline to a
 * thread whose entry still names that wait (agent_signal.c). The thread
 * that runs next clears its entry: running, it is in no wait, and a late
 * signal finds it stale. One hash lookup per context switch on top of the
 * attached-process lookup; no system call is hooked. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_signal, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, ntid = next->pid;
	struct ef_bpf_proc *p;
	struct ef_bpf_sigwait *s;
	struct ef_bpf_deadline *e;
	struct wait w;

	s = bpf_map_lookup_elem(&sigwaits, &ntid);
	if (s)
		sigwait_over(s);
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return 0;
	s = own_entry(&sigwaits, tid, tgid, offsetof(struct ef_bpf_sigwait, tgid));
	if (s)
		sigwait_over(s);
	if (netpoll_wait(preempt, prev, p, &w) != 0)
		return 0;
	if (s && s->fired == w.until) {
		count(EF_BC_REPEATED, p);
		return 0;
	}
	if (!s) {
		struct ef_bpf_sigwait fresh = { .tgid = tgid };
		s = new_entry(&sigwaits, tid, &fresh, p);
		if (!s)
			return 0;
	}
	e = bpf_ringbuf_reserve(&deadlines, sizeof(*e), 0);
	if (!e) {
		count(EF_BC_FULL, p); /* the agent is behind, or stopped */
		return 0;
	}
	s->seq++;
	s->tgid = tgid;
	s->pollUntil = w.until;
	s->deadline = w.deadline;
	s->slept = bpf_ktime_get_ns();
	s->waiting = s->seq;
	e->tgid = tgid;
	e->tid = tid;
	e->deadline = w.deadline;
	e->seq = s->seq;
	bpf_ringbuf_submit(e, 0);
	count(EF_BC_ARMED, p);
	return 0;
}

/* An event to the agent about tgid, at once (a waker to make, or to empty). */
static __always_inline void tell(__u32 tgid, __u32 kind)
{
	struct ef_bpf_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return;
	e->tgid = tgid;
	e->kind = kind;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

#ifndef EF_NO_TIMERS
/* The wake-up mechanism's timer: at the deadline of a wait its thread still
 * sleeps in (it has not run since: the switch program clears `waiting` when
 * it does), one record with a wake-up in the process's waker, which the
 * runtime's epoll_pwait returns as its own wake-up. */
static int wake_fired(void *map, __u32 *key, struct wakewait *w)
{
	struct ef_bpf_proc *p = bpf_map_lookup_elem(&procs, &w->tgid);
	__u64 deadline = w->waiting;
	void *rb;

	if (!deadline) {
		count(EF_BC_AWAKE, p);
		return 0;
	}
	if (!p) {
		count(EF_BC_DETACHED, NULL);
		return 0;
	}
	rb = bpf_map_lookup_elem(&wakers, &w->tgid);
	if (!rb) {
		count(EF_BC_DETACHED, p);
		return 0;
	}
	w->fired = w->pollUntil;
	if (bpf_ringbuf_output(rb, &deadline, 0, BPF_RB_FORCE_WAKEUP) != 0) {
		count(EF_BC_FULL, p); /* the agent has not emptied it: stopped, or behind */
		return 0;
	}
	w->woken = deadline;
	count(EF_BC_ENDED, p);
	if (bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) >= EF_BPF_WAKER_DRAIN &&
	    bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) < EF_BPF_WAKER_DRAIN + 8)
		tell(w->tgid, EF_BPF_EV_DRAIN); /* once, as it crosses the quarter */
	return 0;
}

/* A thread of the wake-up mechanism that runs: in no wait now; woken at a
 * deadline, how late it came back. */
static __always_inline void wakewait_over(struct wakewait *w)
{
	__u64 woken = w->woken;
	w->waiting = 0;
	if (woken) {
		struct ef_bpf_proc *p = bpf_map_lookup_elem(&procs, &w->tgid);
		__u64 now = bpf_ktime_get_ns();
		w->woken = 0;
		if (p && now >= woken)
			record_late(p, now - woken);
	}
}

/* Wake-up (Linux 5.15 and later: bpf_timer, ring buffers, no kfunc): a
 * bpf_timer at the deadline (relative: BPF_F_TIMER_ABS is 6.7), whose
 * callback writes the process's waker (wake_fired). No signal, no EINTR:
 * the runtime's wait returns one event, exactly EPOLLIN, with its own
 * wake-up's data, which it reads as a netpollBreak. The first such wait of
 * a process with no waker yet asks the agent for one (the runtime makes its
 * epoll instance at its first use). One hash lookup per context switch on
 * top of the attached-process lookup (the thread switched in). */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_wake, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, ntid = next->pid;
	struct ef_bpf_proc *p;
	struct wakewait *w;
	struct wait wt;

	w = bpf_map_lookup_elem(&wakewaits, &ntid);
	if (w)
		wakewait_over(w);
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return 0;
	w = own_entry(&wakewaits, tid, tgid, offsetof(struct wakewait, tgid));
	if (w)
		w->waiting = 0; /* whatever this sleep is, the wait armed for is over */
	if (netpoll_wait(preempt, prev, p, &wt) != 0)
		return 0;
	if (w && w->fired == wt.until) {
		count(EF_BC_REPEATED, p);
		return 0;
	}
	if (!bpf_map_lookup_elem(&wakers, &tgid)) {
		/* Asked once per image (the entry goes at an exec); two CPUs
		 * may both ask: the agent makes one. */
		if (!p->asked) {
			p->asked = 1;
			tell(tgid, EF_BPF_EV_WAKER);
		}
		count(EF_BC_UNREADABLE, p);
		return 0;
	}
	if (!w) {
		struct wakewait fresh = { .tgid = tgid };
		w = new_entry(&wakewaits, tid, &fresh, p);
		if (!w)
			return 0;
		bpf_timer_init(&w->timer, &wakewaits, CLOCK_MONOTONIC);
		bpf_timer_set_callback(&w->timer, wake_fired);
	}
	__u64 now = bpf_ktime_get_ns();
	w->tgid = tgid;
	w->pollUntil = wt.until;
	w->waiting = wt.deadline;
	if (bpf_timer_start(&w->timer, wt.deadline > now ? wt.deadline - now : 0, 0) == 0)
		count(EF_BC_ARMED, p);
	else
		w->waiting = 0, count(EF_BC_FULL, p);
	return 0;
}

#endif /* EF_NO_TIMERS */

/* Changes of a process that make its entry stale: an exec (another image)
 * and the end of its thread group. Its entry goes at once; the generation
 * tells the agent, which read the process before, that what it read may be
 * stale (agent_bpf.c), and the ring buffer tells it to look again. */
static __always_inline void changed(__u32 tgid, int exec)
{
	__u64 one = 1, *gen = bpf_map_lookup_elem(&gens, &tgid);
	if (gen)
		__sync_fetch_and_add(gen, 1);
	else
		bpf_map_update_elem(&gens, &tgid, &one, BPF_ANY);
	if (bpf_map_delete_elem(&procs, &tgid) == 0)
		count(EF_BC_DROPPED, NULL);
	if (exec) {
		struct ef_bpf_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (e) {
			__u64 now = bpf_ktime_get_ns();
			int wake = now - exec_woken_at >= EF_BPF_WAKE_GAP_NS ||
				   bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= EF_BPF_WAKE_AT;
			e->tgid = tgid;
			e->kind = EF_BPF_EV_EXEC;
			/* Every exec of the machine lands here. The first after
			 * a quiet spell wakes the agent at once (a service that
			 * starts is served from its first waits); in a storm
			 * the agent is woken at most once a gap, or when they
			 * fill a quarter of the buffer, and reads the rest each
			 * second. (Two CPUs may both wake it: harmless.) */
			if (wake)
				exec_woken_at = now;
			bpf_ringbuf_submit(e, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
		}
	}
}

/* An exec by a thread other than the leader takes the leader's pid: the
 * entries under its old tid (old_pid), and its reference to the task, go
 * here, as no exit of that tid will come. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, old = (__u32)old_pid;
#ifndef EF_NO_KFUNCS
	bpf_map_delete_elem(&threads, &old);
	bpf_map_delete_elem(&threads, &tid);
#endif
	bpf_map_delete_elem(&sigwaits, &old);
	bpf_map_delete_elem(&sigwaits, &tid);
	bpf_map_delete_elem(&wakewaits, &old);
	bpf_map_delete_elem(&wakewaits, &tid);
	changed(id >> 32, 1);
	return 0;
}

/* A thread's entry (and its reference to the task) goes with the thread, a
 * process's with its last thread (signal->live is already counted down). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
#ifndef EF_NO_KFUNCS
	bpf_map_delete_elem(&threads, &tid);
#endif
	bpf_map_delete_elem(&sigwaits, &tid);
	bpf_map_delete_elem(&wakewaits, &tid);
	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		changed(id >> 32, 0);
	return 0;
}
