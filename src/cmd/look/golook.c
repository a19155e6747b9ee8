/* Reading a Go supervisor's counters from outside (golook.h). */
#define _GNU_SOURCE
#include "golook.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "maps.h"
#include "proc.h"

void ef_go_report(long pid, long program, const uint64_t *c, struct ef_buf *b)
{
	ef_fmt(b, "epollfix[%ld] Go supervisor of pid %ld: %" PRIu64 " notifications, %" PRIu64
		  " timers set at the runtime's deadline; passed %" PRIu64 " (processes: %" PRIu64
		  " Go, %" PRIu64 " passed through); fell back: %" PRIu64 " not polling, %" PRIu64
		  " other fd, %" PRIu64 " gone, %" PRIu64 " unreadable, %" PRIu64 " no tag, %" PRIu64
		  " no fd, %" PRIu64 " stale deadline, %" PRIu64 " overload; %" PRIu64 " epoll instances; %" PRIu64
		  " takeovers; %" PRIu64 " answered for the other, %" PRIu64 " stopped and replaced\n",
	       pid, program, c[EF_GC_NOTIFIED], c[EF_GC_ARMED], c[EF_GC_PASSED], c[EF_GC_PROCS_GO],
	       c[EF_GC_PROCS_PASS], c[EF_GC_NOT_POLLING], c[EF_GC_OTHER_FD], c[EF_GC_GONE],
	       c[EF_GC_UNREADABLE], c[EF_GC_NO_TAG], c[EF_GC_NO_FD], c[EF_GC_STALE], c[EF_GC_OVERLOAD], c[EF_GC_INSTANCES],
	       c[EF_GC_TAKEOVERS], c[EF_GC_RESCUED], c[EF_GC_REPLACED]);
}

/* The mapping of the supervisor's memfd, "/memfd:NAME (deleted)". */
static int shared_page(const struct ef_map_line *m, void *arg)
{
	if (strncmp(m->name, "/memfd:" EF_GO_MEMFD " ", sizeof("/memfd:" EF_GO_MEMFD " ") - 1) != 0 ||
	    m->end - m->start < sizeof(struct ef_go_shared))
		return 0;
	*(unsigned long long *)arg = m->start;
	return 1;
}

int ef_golook_at(long pid, struct ef_golook *g)
{
	char comm[32];
	if (ef_proc_read(pid, "comm", comm, sizeof(comm)) <= 0 ||
	    strcmp(comm, EF_GO_COMM "\n") != 0)
		return 0;
	unsigned long long start = 0;
	if (ef_maps_each(pid, shared_page, &start) != 1)
		return 0;
	struct ef_go_shared s;
	struct iovec local = { &s, sizeof(s) }, remote = { (void *)(uintptr_t)start, sizeof(s) };
	if (process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(s) ||
	    memcmp(s.magic, EF_GO_SHARED_MAGIC, sizeof(s.magic)) != 0)
		return 0;
	/* A new heir is named the supervisor's until its first instructions
	 * rename it: the page names the one supervisor. */
	if (s.supervisor != (int)pid)
		return 0;
	g->pid = pid;
	g->program = s.program;
	for (int i = 0; i < EF_GC_COUNT; i++)
		g->count[i] = s.count[i];
	return 1;
}

static long only; /* a pid: only the supervisor that is it or serves it; 0: all */

/* Calls fn for each supervisor found; the number found. */
static int each(void (*fn)(const struct ef_golook *, FILE *, int), FILE *out)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;
	struct ef_golook g;
	while (d && (de = readdir(d)))
		if (ef_proc_is_pid(de->d_name) && ef_golook_at(atol(de->d_name), &g) &&
		    (!only || g.pid == only || g.program == only))
			fn(&g, out, n++);
	if (d)
		closedir(d);
	return n;
}

static void line(const struct ef_golook *g, FILE *out, int i)
{
	char text[1024];
	struct ef_buf b = EF_BUF(text);
	(void)i;
	ef_go_report(g->pid, g->program, g->count, &b);
	fputs(text, out);
}

int ef_golook_list(FILE *out)
{
	return each(line, out);
}

static const struct {
	enum ef_go_counter c;
	const char *name, *labels;
} series[] = {
	{ EF_GC_NOTIFIED, "epollfix_go_notifications_total", NULL },
	{ EF_GC_ARMED, "epollfix_go_timers_total", NULL },
	{ EF_GC_PASSED, "epollfix_go_passed_total", NULL },
	{ EF_GC_NOT_POLLING, "epollfix_go_fallbacks_total", "reason=\"not_polling\"" },
	{ EF_GC_OTHER_FD, "epollfix_go_fallbacks_total", "reason=\"other_fd\"" },
	{ EF_GC_GONE, "epollfix_go_fallbacks_total", "reason=\"gone\"" },
	{ EF_GC_UNREADABLE, "epollfix_go_fallbacks_total", "reason=\"unreadable\"" },
	{ EF_GC_NO_TAG, "epollfix_go_fallbacks_total", "reason=\"no_tag\"" },
	{ EF_GC_NO_FD, "epollfix_go_fallbacks_total", "reason=\"no_fd\"" },
	{ EF_GC_STALE, "epollfix_go_fallbacks_total", "reason=\"stale_deadline\"" },
	{ EF_GC_OVERLOAD, "epollfix_go_fallbacks_total", "reason=\"overload\"" },
	{ EF_GC_PROCS_GO, "epollfix_go_processes_total", "kind=\"go\"" },
	{ EF_GC_PROCS_PASS, "epollfix_go_processes_total", "kind=\"passed\"" },
	{ EF_GC_TAKEOVERS, "epollfix_go_takeovers_total", NULL },
	{ EF_GC_INSTANCES, "epollfix_go_epoll_instances_total", NULL },
	{ EF_GC_RESCUED, "epollfix_go_rescued_total", NULL },
	{ EF_GC_REPLACED, "epollfix_go_replaced_total", NULL },
};
static unsigned current;

static void sample(const struct ef_golook *g, FILE *out, int i)
{
	(void)i;
	fprintf(out, "%s{pid=\"%ld\",program_pid=\"%ld\"%s%s} %" PRIu64 "\n", series[current].name,
		g->pid, g->program,
		series[current].labels ? "," : "", series[current].labels ? series[current].labels : "",
		g->count[series[current].c]);
}

static void none(const struct ef_golook *g, FILE *out, int i)
{
	(void)g, (void)out, (void)i;
}

void ef_golook_metrics(FILE *out, long pid)
{
	only = pid;
	static const char *const help[][2] = {
		{ "epollfix_go_notifications_total", "1 ms netpoll waits of supervised Go programs trapped to the supervisor." },
		{ "epollfix_go_timers_total", "Timers the supervisor set at the Go runtime's own deadline." },
		{ "epollfix_go_passed_total", "Trapped waits of processes passed through (not Go, stripped, unknown release)." },
		{ "epollfix_go_fallbacks_total", "Trapped waits let run as asked, by reason." },
		{ "epollfix_go_processes_total", "Processes the supervisor saw, supervised or passed through." },
		{ "epollfix_go_takeovers_total", "Heirs that took over from a supervisor that died." },
		{ "epollfix_go_epoll_instances_total", "Timers added to the runtimes' epoll instances (one per answerer, anew after an exec)." },
		{ "epollfix_go_rescued_total", "Notifications one answerer held too long, answered CONTINUE by the other." },
		{ "epollfix_go_replaced_total", "Answerers found stopped (SIGSTOP), killed and replaced by the other." },
	};
	/* No supervisor, no families: the library's metrics stay as they were. */
	if (each(none, out) == 0)
		return;
	for (unsigned k = 0; k < sizeof(series) / sizeof(series[0]); k++) {
		current = k;
		for (unsigned h = 0; h < sizeof(help) / sizeof(help[0]); h++)
			if (strcmp(help[h][0], series[k].name) == 0 &&
			    (k == 0 || strcmp(series[k - 1].name, series[k].name) != 0))
				fprintf(out, "# HELP %s %s\n# TYPE %s counter\n", help[h][0], help[h][1],
					help[h][0]);
		each(sample, out);
	}
}
