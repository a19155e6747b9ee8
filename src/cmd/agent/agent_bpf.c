/* The agent's kernel side, through libbpf (agent_bpf.h). */
#define _GNU_SOURCE
#include "agent_bpf.h"

#include <errno.h>
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "netpoll.h"
#include "netpoll.skel.h"
#include "netpoll7.skel.h"
#include "netpollrt.skel.h"
#include "netpollwake.skel.h"

struct ef_abpf {
	struct ef_netpoll *skel;      /* task work's object, or */
	struct ef_netpollwake *wskel; /* the wake-up and signal mechanisms' (no kfunc) */
	struct ef_netpollrt *rskel;   /* the timerfd mechanism's (no kfunc, no timer) */
	struct bpf_map *procs, *gens, *counters, *sigwaits, *wakers, *events, *deadlines;
	struct ring_buffer *rb;
	void (*fn)(uint32_t, uint32_t, void *);
	void *arg;
	void (*deadline_fn)(const struct ef_bpf_deadline *, void *);
	void *deadline_arg;
};

const char *const ef_mechanism_name[EF_MECH_COUNT] = { "auto", "taskwork", "wakeup", "signal", "timerfd" };

#define ALL (1u << EF_MECH_TASKWORK | 1u << EF_MECH_WAKEUP | 1u << EF_MECH_SIGNAL | 1u << EF_MECH_TIMERFD)
#define TASKWORK (1u << EF_MECH_TASKWORK)
#define TIMERS (1u << EF_MECH_TASKWORK | 1u << EF_MECH_WAKEUP)

/* Each feature: how it is found in the kernel's BTF (a function, or an
 * enum's value; `also`, another name that serves as well), and what --check
 * says of it. */
static const struct {
	const char *name;
	int kind; /* BTF_KIND_FUNC or BTF_KIND_ENUM (a value of an enum) */
	const char *also;
} probes[EF_KF_COUNT] = {
	[EF_KF_RINGBUF] = { .name = "BPF_MAP_TYPE_RINGBUF", .kind = BTF_KIND_ENUM },
	[EF_KF_PT_REGS] = { .name = "BPF_FUNC_task_pt_regs", .kind = BTF_KIND_ENUM },
	[EF_KF_TIMER] = { .name = "BPF_FUNC_timer_init", .kind = BTF_KIND_ENUM },
	[EF_KF_TIMER_ABS] = { .name = "BPF_F_TIMER_ABS", .kind = BTF_KIND_ENUM },
	/* 6.18 and 6.19 name it _impl, 7.0 without (netpoll.bpf.c calls either). */
	[EF_KF_TASKWORK] = { .name = "bpf_task_work_schedule_signal_impl", .kind = BTF_KIND_FUNC,
			     .also = "bpf_task_work_schedule_signal" },
};

const struct ef_kfeature_info ef_kfeatures[EF_KF_COUNT] = {
	[EF_KF_RINGBUF] = { "ring buffer", "BPF_MAP_TYPE_RINGBUF: the kernel's events to the agent",
			    "no BPF_MAP_TYPE_RINGBUF (Linux 5.8 or later)", ALL },
	[EF_KF_PT_REGS] = { "task regs", "bpf_task_pt_regs: the system call a thread sleeps in",
			    "no bpf_task_pt_regs (Linux 5.15 or later)", ALL },
	[EF_KF_TIMER] = { "bpf_timer", "bpf_timer: a kernel timer at the deadline",
			  "no bpf_timer (Linux 5.15 or later)", TIMERS },
	[EF_KF_TIMER_ABS] = { "absolute", "BPF_F_TIMER_ABS: the timer set at the runtime's deadline as is",
			      "no BPF_F_TIMER_ABS (Linux 6.7 or later)", TASKWORK },
	[EF_KF_TASKWORK] = { "task work", "bpf_task_work_schedule_signal: ends a wait with no signal",
			     "no bpf_task_work_schedule_signal kfunc (Linux 6.18 or later)", TASKWORK },
};

static int btf_has(const struct btf *btf, const char *name, int kind)
{
	if (kind == BTF_KIND_FUNC)
		return btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) > 0;
	__u32 n = btf__type_cnt(btf);
	for (__u32 id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		if (!btf_is_enum(t))
			continue;
		const struct btf_enum *e = btf_enum(t);
		for (__u16 i = 0; i < btf_vlen(t); i++)
			if (strcmp(btf__name_by_offset(btf, e[i].name_off), name) == 0)
				return 1;
	}
	return 0;
}

int ef_abpf_probe(int has[EF_KF_COUNT])
{
	struct btf *btf = btf__load_vmlinux_btf();
	for (int i = 0; i < EF_KF_COUNT; i++)
		has[i] = btf && (btf_has(btf, probes[i].name, probes[i].kind) ||
				 (probes[i].also && btf_has(btf, probes[i].also, probes[i].kind)));
	btf__free(btf);
	return btf ? 0 : -1;
}

static int applies(enum ef_mechanism m, const int has[EF_KF_COUNT])
{
	for (int i = 0; i < EF_KF_COUNT; i++)
		if ((ef_kfeatures[i].needs & (1u << m)) && !has[i])
			return 0;
	return 1;
}

enum ef_mechanism ef_abpf_choose(enum ef_mechanism want, const int has[EF_KF_COUNT])
{
	if (want != EF_MECH_AUTO)
		return applies(want, has) ? want : EF_MECH_AUTO;
	if (applies(EF_MECH_TASKWORK, has))
		return EF_MECH_TASKWORK;
	return applies(EF_MECH_WAKEUP, has) ? EF_MECH_WAKEUP : EF_MECH_AUTO;
}

/* libbpf's own messages: none. They are many lines, several for one failure,
 * of no use to an operator; the agent says in one line why it failed
 * (ef_abpf_open's why, and `agent --check`). */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level, (void)fmt, (void)ap;
	return 0;
}

/* The object for this kernel's name of the task-work kfunc (netpoll.bpf.c:
 * one source, built for each): 7.0's where the kernel has the plain name,
 * else 6.18's (_impl), which a kernel without task work loads too (only the
 * signal program runs there). Both have the same maps and programs: the
 * skeleton is ef_netpoll's, with the other object's bytes. */
static struct ef_netpoll *open_object(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int plain = btf && btf__find_by_name_kind(btf, probes[EF_KF_TASKWORK].also, BTF_KIND_FUNC) > 0;
	btf__free(btf);
	if (!plain)
		return ef_netpoll__open();
	struct ef_netpoll *skel = calloc(1, sizeof(*skel));
	if (!skel || ef_netpoll__create_skeleton(skel) != 0) {
		ef_netpoll__destroy(skel);
		return NULL;
	}
	skel->skeleton->data = (void *)ef_netpoll7__elf_bytes(&skel->skeleton->data_sz);
	if (bpf_object__open_skeleton(skel->skeleton, NULL) != 0) {
		ef_netpoll__destroy(skel);
		return NULL;
	}
	return skel;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct ef_abpf *b = ctx;
	struct ef_bpf_event e;
	if (size < sizeof(e) || !b->fn)
		return 0;
	memcpy(&e, data, sizeof(e));
	b->fn(e.tgid, e.kind, b->arg);
	return 0;
}

static int on_deadline(void *ctx, void *data, size_t size)
{
	struct ef_abpf *b = ctx;
	struct ef_bpf_deadline d;
	if (size < sizeof(d) || !b->deadline_fn)
		return 0;
	memcpy(&d, data, sizeof(d));
	b->deadline_fn(&d, b->deadline_arg);
	return 0;
}

/* The maps every mechanism uses, from either skeleton (the same names). */
#define TAKE_MAPS(b, k)                                                                       \
	((b)->procs = (k)->maps.procs, (b)->gens = (k)->maps.gens, (b)->counters = (k)->maps.counters, \
	 (b)->sigwaits = (k)->maps.sigwaits, (b)->wakers = (k)->maps.wakers,                        \
	 (b)->events = (k)->maps.events, (b)->deadlines = (k)->maps.deadlines)

struct ef_abpf *ef_abpf_open(enum ef_mechanism m, struct ef_buf *why)
{
	struct ef_abpf *b = calloc(1, sizeof(*b));
	const char *what = "out of memory";
	if (!b)
		goto fail;
	libbpf_set_print(quiet);
	what = "the kernel refused the program";
	if (m == EF_MECH_TASKWORK) {
		/* Its sched_switch program alone: the others' maps shrink to one entry. */
		struct ef_netpoll *k = b->skel = open_object();
		if (!k || bpf_program__set_autoload(k->progs.on_switch_signal, 0) != 0 ||
		    bpf_program__set_autoload(k->progs.on_switch_wake, 0) != 0 ||
		    bpf_map__set_max_entries(k->maps.sigwaits, 1) != 0 ||
		    bpf_map__set_max_entries(k->maps.wakewaits, 1) != 0 ||
		    bpf_map__set_max_entries(k->maps.wakers, 1) != 0 ||
		    bpf_map__set_max_entries(k->maps.deadlines, 4096) != 0 || ef_netpoll__load(k) != 0)
			goto fail;
		TAKE_MAPS(b, k);
		what = "the kernel refused to attach the program";
		if (ef_netpoll__attach(k) != 0)
			goto fail;
	} else if (m == EF_MECH_TIMERFD || m == EF_MECH_SIGNAL) {
		/* The object with no kfunc and no timer (a real-time kernel
		 * refuses bpf_timer even in a map no program uses): its signal
		 * program sends the deadlines; the agent arms timerfds in the
		 * programs' epoll sets (timerfd), or sends SIGURG (signal). */
		struct ef_netpollrt *k = b->rskel = ef_netpollrt__open();
		if (!k || bpf_map__set_max_entries(k->maps.wakewaits, 1) != 0 ||
		    bpf_map__set_max_entries(k->maps.wakers, 1) != 0 ||
		    bpf_map__set_max_entries(k->maps.deadlines, 64 * 1024) != 0 || ef_netpollrt__load(k) != 0)
			goto fail;
		TAKE_MAPS(b, k);
		what = "the kernel refused to attach the program";
		if (ef_netpollrt__attach(k) != 0)
			goto fail;
	} else {
		/* The object with no kfunc (Linux 5.15 on): its wake-up program. */
		struct ef_netpollwake *k = b->wskel = ef_netpollwake__open();
		if (!k || bpf_program__set_autoload(k->progs.on_switch_signal, 0) != 0 ||
		    bpf_map__set_max_entries(k->maps.sigwaits, 1) != 0 ||
		    bpf_map__set_max_entries(k->maps.deadlines, 4096) != 0 || ef_netpollwake__load(k) != 0)
			goto fail;
		TAKE_MAPS(b, k);
		what = "the kernel refused to attach the program";
		if (ef_netpollwake__attach(k) != 0)
			goto fail;
	}
	int signal = m == EF_MECH_SIGNAL || m == EF_MECH_TIMERFD; /* deadlines sent */
	what = "no ring buffer";
	if (!(b->rb = ring_buffer__new(bpf_map__fd(b->events), on_event, b, NULL)) ||
	    (signal && ring_buffer__add(b->rb, bpf_map__fd(b->deadlines), on_deadline, b) != 0))
		goto fail;
	return b;
fail:;
	int err = errno;
	ef_fmt(why, "%s: %s", what, strerror(err));
	ef_abpf_close(b);
	errno = err;
	return NULL;
}

void ef_abpf_close(struct ef_abpf *b)
{
	if (!b)
		return;
	ring_buffer__free(b->rb);
	ef_netpoll__destroy(b->skel);
	ef_netpollwake__destroy(b->wskel);
	ef_netpollrt__destroy(b->rskel);
	free(b);
}

uint64_t ef_abpf_generation(struct ef_abpf *b, uint32_t tgid)
{
	__u64 gen = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(b->gens), &tgid, &gen) != 0)
		gen = 0;
	return gen;
}

int ef_abpf_attach(struct ef_abpf *b, uint32_t tgid, uint64_t gen, uint64_t start,
		   uint64_t sched_addr, uint64_t epfd_addr)
{
	struct ef_bpf_proc p = { .sched_addr = sched_addr, .epfd_addr = epfd_addr, .start = start };
	if (bpf_map_update_elem(bpf_map__fd(b->procs), &tgid, &p, BPF_ANY) != 0)
		return -1;
	/* An exec or the end after the process was read: what was read may
	 * name another image; the kernel dropped its entry before this one. */
	if (ef_abpf_generation(b, tgid) != gen) {
		ef_abpf_detach(b, tgid);
		return 1;
	}
	return 0;
}

int ef_abpf_detach(struct ef_abpf *b, uint32_t tgid)
{
	/* Its threads' entries stay until they exit: a timer still pending
	 * finds the process detached and does nothing. */
	return bpf_map_delete_elem(bpf_map__fd(b->procs), &tgid);
}

int ef_abpf_attached(struct ef_abpf *b, uint32_t tgid)
{
	struct ef_bpf_proc p;
	return bpf_map_lookup_elem(bpf_map__fd(b->procs), &tgid, &p) == 0;
}

int ef_abpf_asked(struct ef_abpf *b, uint32_t tgid)
{
	struct ef_bpf_proc p;
	if (bpf_map_lookup_elem(bpf_map__fd(b->procs), &tgid, &p) != 0)
		return -1;
	return p.asked != 0;
}

void ef_abpf_counters(struct ef_abpf *b, uint64_t *count, size_t n)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *v = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*v)) : NULL;
	for (__u32 k = 0; k < n; k++) {
		count[k] = 0;
		if (!v || k >= EF_BC_COUNT ||
		    bpf_map_lookup_elem(bpf_map__fd(b->counters), &k, v) != 0)
			continue;
		for (int c = 0; c < ncpu; c++)
			count[k] += v[c];
	}
	free(v);
}

size_t ef_abpf_each(struct ef_abpf *b, void (*fn)(uint32_t tgid, const struct ef_bpf_proc *p, void *arg),
		    void *arg)
{
	int fd = bpf_map__fd(b->procs);
	__u32 key, next;
	struct ef_bpf_proc p;
	size_t n = 0;
	/* Bounded: the map holds at most EF_BPF_MAX_PROCS, and an entry removed
	 * under the walk restarts it at worst (get_next_key of a missing key). */
	for (int r = bpf_map_get_next_key(fd, NULL, &next); r == 0 && n < 2 * EF_BPF_MAX_PROCS;
	     r = bpf_map_get_next_key(fd, &key, &next)) {
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &p) == 0) {
			fn(key, &p, arg);
			n++;
		}
	}
	return n;
}

int ef_abpf_events_fd(struct ef_abpf *b)
{
	return ring_buffer__epoll_fd(b->rb);
}

int ef_abpf_events(struct ef_abpf *b, void (*fn)(uint32_t tgid, uint32_t kind, void *arg), void *arg)
{
	b->fn = fn;
	b->arg = arg;
	int n = ring_buffer__consume(b->rb);
	b->fn = NULL;
	return n;
}

void ef_abpf_on_deadline(struct ef_abpf *b, void (*fn)(const struct ef_bpf_deadline *, void *),
			 void *arg)
{
	b->deadline_fn = fn;
	b->deadline_arg = arg;
}

int ef_abpf_sigwait(struct ef_abpf *b, uint32_t tid, struct ef_bpf_sigwait *s)
{
	return bpf_map_lookup_elem(bpf_map__fd(b->sigwaits), &tid, s);
}

/* A waker: EF_BPF_WAKER_SIZE, or one page where pages are larger (arm64
 * kernels of 16 or 64 KiB pages): the kernel takes a ring buffer of a
 * power-of-two number of whole pages only. libbpf sizes the object's own ring
 * buffers so (the wakers' template among them); this one is made here. The
 * drain at EF_BPF_WAKER_DRAIN bytes then empties it as often as on 4 KiB
 * pages, and it holds more wake-ups before it is full. */
int ef_abpf_waker_new(void)
{
	long page = sysconf(_SC_PAGESIZE);
	__u32 size = page > EF_BPF_WAKER_SIZE ? (__u32)page : EF_BPF_WAKER_SIZE;
	return bpf_map_create(BPF_MAP_TYPE_RINGBUF, "waker", 0, 0, size, NULL);
}

/* A change to a map of maps waits for every BPF program running to end
 * (synchronize_rcu: 8-20 ms here), so the agent makes its changes in
 * batches: one wait per batch where the kernel takes the map's batch
 * operations (6.18 does), one per change where it refuses them. */
int ef_abpf_set_wakers(struct ef_abpf *b, const uint32_t *tgids, const int *fds, size_t n)
{
	int map = bpf_map__fd(b->wakers), failed = 0;
	__u32 count = (__u32)n;
	if (!n || bpf_map_update_batch(map, tgids, fds, &count, NULL) == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		__u32 v = (__u32)fds[i];
		failed |= bpf_map_update_elem(map, &tgids[i], &v, BPF_ANY) != 0;
	}
	return failed ? -1 : 0;
}

void ef_abpf_drop_wakers(struct ef_abpf *b, const uint32_t *tgids, size_t n)
{
	int map = bpf_map__fd(b->wakers);
	__u32 count = (__u32)n;
	if (!n || bpf_map_delete_batch(map, tgids, &count, NULL) == 0)
		return;
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(map, &tgids[i]); /* one gone already: ENOENT, and on */
}
