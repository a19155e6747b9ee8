/* Reading a Go supervisor's counters from outside (golook.h). */
#define _GNU_SOURCE
#include "golook.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/* The real uid of /proc/PID/status, and whether a seccomp filter is in
 * force (Seccomp: 2); -1 when it cannot be read. */
static int uid_and_filter(long pid, unsigned *uid, int *filtered)
{
	char u[128], sc[16];
	struct ef_proc_field f[2];
	ef_proc_field_init(&f[0], "Uid", u, sizeof(u));
	ef_proc_field_init(&f[1], "Seccomp", sc, sizeof(sc));
	if (ef_proc_fields_via(syscall, pid, "status", f, 2) != 0 || sscanf(u, "%u", uid) != 1)
		return -1;
	*filtered = strcmp(sc, "2") == 0;
	return 0;
}

/* Anyone can name a process epollfix-gosup and map a memfd of that name:
 * the page is believed only when the program it names is under a seccomp
 * filter and of the same user as the page's owner (or its owner is root).
 * A supervisor whose program has exited (serving a daemon it started) is
 * then not listed: the pid it names may be anyone's by now. */
static int owns_program(long pid, long program)
{
	unsigned uid, puid;
	int filtered;
	return program > 0 && uid_and_filter(pid, &uid, &filtered) == 0 &&
	       uid_and_filter(program, &puid, &filtered) == 0 && filtered && (uid == 0 || uid == puid);
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
	if (s.supervisor != (int)pid || !owns_program(pid, s.program))
		return 0;
	g->pid = pid;
	g->program = s.program;
	for (int i = 0; i < EF_GC_COUNT; i++)
		g->count[i] = s.count[i];
	return 1;
}

int ef_golook_each(long only, void (*fn)(const struct ef_golook *g, void *arg), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;
	struct ef_golook g;
	while (d && (de = readdir(d)))
		if (ef_proc_is_pid(de->d_name) && ef_golook_at(atol(de->d_name), &g) &&
		    (!only || g.pid == only || g.program == only)) {
			fn(&g, arg);
			n++;
		}
	if (d)
		closedir(d);
	return n;
}

static void line(const struct ef_golook *g, void *arg)
{
	char text[1024];
	struct ef_buf b = EF_BUF(text);
	ef_go_report(g->pid, g->program, g->count, &b);
	fputs(text, arg);
}

int ef_golook_list(long only, FILE *out)
{
	return ef_golook_each(only, line, out);
}
