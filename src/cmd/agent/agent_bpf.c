/* The agent's kernel side, through libbpf (agent_bpf.h). */
#define _GNU_SOURCE
#include "agent_bpf.h"

#include <errno.h>
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "netpoll.h"
#include "netpoll.skel.h"

struct ef_abpf {
	struct ef_netpoll *skel;
	struct ring_buffer *rb;
	void (*fn)(uint32_t, void *);
	void *arg;
};

/* libbpf's own messages: only its warnings, as one line each, when asked. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level, (void)fmt, (void)ap;
	return 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct ef_abpf *b = ctx;
	struct ef_bpf_event e;
	if (size < sizeof(e) || !b->fn)
		return 0;
	memcpy(&e, data, sizeof(e));
	b->fn(e.tgid, b->arg);
	return 0;
}

struct ef_abpf *ef_abpf_open(struct ef_buf *why)
{
	struct ef_abpf *b = calloc(1, sizeof(*b));
	const char *what = "out of memory";
	if (!b)
		goto fail;
	libbpf_set_print(getenv("EPOLLFIX_BPF_DEBUG") ? NULL : quiet);
	what = "the kernel refused the program";
	if (!(b->skel = ef_netpoll__open_and_load()))
		goto fail;
	what = "the kernel refused to attach the program";
	if (ef_netpoll__attach(b->skel) != 0)
		goto fail;
	what = "no ring buffer";
	if (!(b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.events), on_event, b, NULL)))
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
	free(b);
}

uint64_t ef_abpf_generation(struct ef_abpf *b, uint32_t tgid)
{
	__u64 gen = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.gens), &tgid, &gen) != 0)
		gen = 0;
	return gen;
}

int ef_abpf_attach(struct ef_abpf *b, uint32_t tgid, uint64_t gen, uint64_t start,
		   uint64_t sched_addr, uint64_t epfd_addr)
{
	struct ef_bpf_proc p = { .sched_addr = sched_addr, .epfd_addr = epfd_addr, .start = start };
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.procs), &tgid, &p, BPF_ANY) != 0)
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
	return bpf_map_delete_elem(bpf_map__fd(b->skel->maps.procs), &tgid);
}

int ef_abpf_attached(struct ef_abpf *b, uint32_t tgid)
{
	struct ef_bpf_proc p;
	return bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.procs), &tgid, &p) == 0;
}

void ef_abpf_counters(struct ef_abpf *b, uint64_t *count, size_t n)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *v = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*v)) : NULL;
	for (__u32 k = 0; k < n; k++) {
		count[k] = 0;
		if (!v || k >= EF_BC_COUNT ||
		    bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.counters), &k, v) != 0)
			continue;
		for (int c = 0; c < ncpu; c++)
			count[k] += v[c];
	}
	free(v);
}

size_t ef_abpf_each(struct ef_abpf *b, void (*fn)(uint32_t tgid, const struct ef_bpf_proc *p, void *arg),
		    void *arg)
{
	int fd = bpf_map__fd(b->skel->maps.procs);
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

int ef_abpf_events(struct ef_abpf *b, void (*fn)(uint32_t tgid, void *arg), void *arg)
{
	b->fn = fn;
	b->arg = arg;
	int n = ring_buffer__consume(b->rb);
	b->fn = NULL;
	return n;
}

int ef_abpf_kernel_has(const char *name, int kind_func)
{
	struct btf *btf = btf__load_vmlinux_btf();
	if (!btf)
		return 0;
	int id = btf__find_by_name_kind(btf, name, kind_func ? BTF_KIND_FUNC : BTF_KIND_STRUCT);
	btf__free(btf);
	return id > 0;
}
