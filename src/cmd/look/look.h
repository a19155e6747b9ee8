/* One look at a process running libepollfix, as `epollfix status` reads it
 * (look.c) and shows it: text, JSON (show.c) and metrics (metrics.c). The
 * strings are the process's own: whatever shows them escapes them first. */
#ifndef EPOLLFIX_LOOK_H
#define EPOLLFIX_LOOK_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "fmt.h"
#include "live.h"
#include "pod.h"
#include "totals.h"

/* Whether the library is in the process. A look at a process that has none
 * mapped though its LD_PRELOAD names one (a pod the policy injected, a
 * service's drop-in) says why: such a look holds the process's identity
 * (pid, comm, ns_pid, cgroup, pod) and in lib the path LD_PRELOAD names,
 * nothing else. */
enum ef_lib_state {
	EF_LIB_UNKNOWN = 0, /* the look failed: nothing to show */
	EF_LIB_LOADED,
	EF_LIB_MISSING,    /* no file at that path, as the process sees its file system */
	EF_LIB_STATIC,     /* a statically linked program: no loader read LD_PRELOAD */
	EF_LIB_NOT_LOADED, /* the loader did not load it (another libc's build, secure execution) */
};

struct look {
	long pid;
	enum ef_lib_state lib_state;
	unsigned long long start_ticks;
	double age_s; /* since the process started */
	char comm[64];
	long ns_pid;      /* its pid in its own pid namespace (NSpid's last); 0: unknown */
	char cgroup[PATH_MAX]; /* its cgroup: the path that names its pod, else v2's, else the first (pod.h); "" unknown */
	struct ef_pod pod; /* its Kubernetes pod, when it runs in one (pod.h) */
	char lib[PATH_MAX]; /* as mapped; for a look not loaded, as LD_PRELOAD names it */
	struct ef_live block;
	char build_id[65]; /* the block's, in hex */
	struct ef_totals t;
	struct ef_config c;
	int selected, pw2_state, pw2_why;
	unsigned runtimes;
	struct ef_site_row rows[EF_SITE_ROWS]; /* as read */
	struct ef_site_view sites[EF_SITE_ROWS]; /* with their counters from the slots */
	char where[EF_SITE_ROWS][512]; /* their names, escaped (ef_look_name_sites); "" until named */
};

/* Exit statuses of `epollfix status`, one per kind of answer (doc/epollfix.1.in). */
enum {
	EF_ST_OK = 0,
	EF_ST_USAGE = 2,
	EF_ST_GONE = 3,     /* no such process, or it exited while being read */
	EF_ST_PERM = 4,     /* the kernel's ptrace rules refuse the read */
	EF_ST_NOLIB = 5,    /* libepollfix is not loaded there (or has not started) */
	EF_ST_LAYOUT = 6,   /* another version's block, or none */
};

/* Who a process is, as the metrics label it (the identity of a look, for a
 * process without the library: a Go program the supervisor or the agent
 * serves). 1 and *w filled, or 0 when it is gone. */
struct ef_who {
	long pid, ns_pid;
	unsigned long long start_ticks;
	char comm[64];
	char cgroup[PATH_MAX];
	struct ef_pod pod;
};
int ef_look_who(long pid, struct ef_who *w);

/* The process's start time (/proc/PID/stat, clock ticks since boot): a pid
 * and its start name one process for good. 0 when there is none. */
unsigned long long ef_look_start(long pid);

/* One look at pid (look.c): 1 and *l filled, or 0; then ef_look_failure gives
 * the exit status and the one line that says why, escaped, and a process
 * whose LD_PRELOAD names the library that is not loaded is still shown: its
 * lib_state says why (ef_look_unloaded). */
int ef_look_at(long pid, struct look *l);

static inline int ef_look_unloaded(const struct look *l)
{
	return l->lib_state > EF_LIB_LOADED;
}

/* The state as a word for JSON and metrics ("loaded", "missing", "static",
 * "not_loaded"), and as the end of a sentence for text. */
const char *ef_look_lib_word(const struct look *l);
const char *ef_look_lib_why(const struct look *l);
int ef_look_failure(const char **why);

/* Seconds since boot, the clock of /proc/PID/stat's start time. */
double ef_look_now(void);

/* Names each call site in l->where as the exit report does with dladdr(3),
 * "libfoo.so (fn+42)", from outside: a look that shows sites calls it once,
 * after ef_look_at, so that showing them reads nothing. */
void ef_look_name_sites(struct look *l);

/* How an epoll_pwait2 state reads: "works", "fell back" or "not probed". */
const char *ef_look_pwait2_word(const struct look *l);

/* The metrics of every look, in Prometheus's text format (version 0.0.4, which
 * node_exporter's textfile collector reads): one HELP and TYPE a family,
 * counters named _total, base units, no timestamps (metrics.c). A series
 * stands for the processes of one program in one container, their values
 * summed, or for one process (its pid among its labels). 0, or -1 when there
 * was no memory (nothing written). */
enum ef_metrics_by { EF_METRICS_BY_CONTAINER, EF_METRICS_BY_PROCESS };
int ef_metrics_write(FILE *out, const struct look *looks, size_t n, enum ef_metrics_by by);

/* The labels of a process's series (metrics.c): per process
 * `pid="..",program="..",ns_pid="..",cgroup=".."`, else `program=".."`; then
 * its pod's that are known. A string to free, or NULL without memory. */
char *ef_metrics_labels(long pid, const char *comm, long ns_pid, const char *cgroup,
			const struct ef_pod *pod, enum ef_metrics_by by);

/* Prometheus's exposition text: "# HELP" and "# TYPE" of a family. */
void ef_metrics_family(FILE *out, const char *name, const char *type, const char *help);

#endif
