/* epollfix_go_* (gometrics.h). One table names every series: its family,
 * its extra labels, and where each mechanism keeps its value (-1: that
 * mechanism has no such count, and its series sets have no such sample).
 * The supervisor cannot see when a wait returns: only the agent has the
 * waits it ended and how late the program had them back. */
#define _GNU_SOURCE
#include "gometrics.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agentlook.h"
#include "golook.h"

enum mech { SUPERVISOR, AGENT };
static const char *const mech_name[] = { "supervisor", "agent" };

static const struct {
	const char *family, *labels, *help;
	int at[2]; /* the supervisor's enum ef_go_counter, the agent's enum ef_agent_counter */
} rows[] = {
	{ "epollfix_go_waits_total", NULL,
	  "The Go runtime's 1 ms netpoll waits of served programs: trapped to the supervisor, or seen asleep by the agent.",
	  { EF_GC_NOTIFIED, EF_AC_WAITS } },
	{ "epollfix_go_timers_total", NULL, "Timers set at the Go runtime's own deadline.",
	  { EF_GC_ARMED, EF_AC_ARMED } },
	{ "epollfix_go_ended_waits_total", NULL,
	  "Netpoll waits ended at the runtime's deadline (the agent's task work; the supervisor's timer wakes the wait itself, uncounted).",
	  { -1, EF_AC_ENDED } },
	{ "epollfix_go_fallbacks_total", "reason=\"not_polling\"",
	  "Waits or timers left to the runtime's own 1 ms, by reason.",
	  { EF_GC_NOT_POLLING, EF_AC_NOT_POLLING } },
	{ "epollfix_go_fallbacks_total", "reason=\"other_fd\"", NULL, { EF_GC_OTHER_FD, EF_AC_OTHER_FD } },
	{ "epollfix_go_fallbacks_total", "reason=\"unreadable\"", NULL,
	  { EF_GC_UNREADABLE, EF_AC_UNREADABLE } },
	{ "epollfix_go_fallbacks_total", "reason=\"gone\"", NULL, { EF_GC_GONE, -1 } },
	{ "epollfix_go_fallbacks_total", "reason=\"no_tag\"", NULL, { EF_GC_NO_TAG, -1 } },
	{ "epollfix_go_fallbacks_total", "reason=\"no_fd\"", NULL, { EF_GC_NO_FD, -1 } },
	{ "epollfix_go_fallbacks_total", "reason=\"overload\"", NULL, { EF_GC_OVERLOAD, -1 } },
	{ "epollfix_go_fallbacks_total", "reason=\"out_of_range\"", NULL, { -1, EF_AC_OUT_OF_RANGE } },
	{ "epollfix_go_fallbacks_total", "reason=\"repeated\"", NULL, { EF_GC_STALE, EF_AC_REPEATED } },
	{ "epollfix_go_fallbacks_total", "reason=\"full\"", NULL, { -1, EF_AC_FULL } },
	{ "epollfix_go_fallbacks_total", "reason=\"stale\"", NULL, { -1, EF_AC_STALE } },
	{ "epollfix_go_fallbacks_total", "reason=\"awake\"", NULL, { -1, EF_AC_AWAKE } },
	{ "epollfix_go_fallbacks_total", "reason=\"detached\"", NULL, { -1, EF_AC_DETACHED } },
	{ "epollfix_go_fallbacks_total", "reason=\"busy\"", NULL, { -1, EF_AC_BUSY } },
	{ "epollfix_go_passed_total", NULL,
	  "Trapped waits of processes passed through (not Go, an unknown release, addresses not found).",
	  { EF_GC_PASSED, -1 } },
	{ "epollfix_go_supervised_processes_total", "kind=\"go\"",
	  "Processes the supervisor saw, supervised or passed through.", { EF_GC_PROCS_GO, -1 } },
	{ "epollfix_go_supervised_processes_total", "kind=\"passed\"", NULL, { EF_GC_PROCS_PASS, -1 } },
	{ "epollfix_go_takeovers_total", NULL, "Heirs that took over from a supervisor that died.",
	  { EF_GC_TAKEOVERS, -1 } },
	{ "epollfix_go_epoll_instances_total", NULL,
	  "The runtimes' epoll instances given a timer (one per answerer, anew after an exec).",
	  { EF_GC_INSTANCES, -1 } },
	{ "epollfix_go_rescued_total", NULL,
	  "Notifications one of the supervisor's answerers held too long, answered by the other.",
	  { EF_GC_RESCUED, -1 } },
	{ "epollfix_go_replaced_total", NULL,
	  "The supervisor's answerers found stopped (SIGSTOP), killed and replaced by the other.",
	  { EF_GC_REPLACED, -1 } },
};

/* One served process (the supervisor's: the program it started), with its
 * series' labels. */
struct served {
	enum mech mech;
	uint64_t sup[EF_GC_COUNT];
	struct ef_agentrec ag;
	char *labels; /* the process's, then mechanism's */
};

struct gather {
	struct served *s;
	size_t n, cap;
	enum ef_metrics_by by;
	int failed;
};

static struct served *add(struct gather *g, enum mech mech, long pid, long fallback)
{
	struct ef_who who;
	if (g->failed)
		return NULL;
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		struct served *more = realloc(g->s, cap * sizeof(*more));
		if (!more)
			return g->failed = 1, NULL;
		g->s = more, g->cap = cap;
	}
	/* A supervisor whose program has ended serves what the program left:
	 * named by its own process then. */
	if (!ef_look_who(pid, &who) && (!fallback || !ef_look_who(fallback, &who)))
		return NULL; /* gone */
	struct served *s = &g->s[g->n];
	memset(s, 0, sizeof(*s));
	s->mech = mech;
	char *l = ef_metrics_labels(who.pid, who.comm, who.ns_pid, who.cgroup, &who.pod, g->by);
	if (!l || asprintf(&s->labels, "%s,mechanism=\"%s\"", l, mech_name[mech]) < 0) {
		free(l);
		return g->failed = 1, NULL;
	}
	free(l);
	g->n++;
	return s;
}

static void of_supervisor(const struct ef_golook *gl, void *arg)
{
	struct served *s = add(arg, SUPERVISOR, gl->program, gl->pid);
	if (s)
		memcpy(s->sup, gl->count, sizeof(s->sup));
}

static void of_agent(const struct ef_agentrec *r, void *arg)
{
	struct served *s = add(arg, AGENT, r->pid, 0);
	if (s)
		s->ag = *r;
}

static int by_labels(const void *a, const void *b)
{
	return strcmp(((const struct served *)a)->labels, ((const struct served *)b)->labels);
}

static uint64_t value(const struct served *s, int at)
{
	return s->mech == SUPERVISOR ? s->sup[at] : s->ag.count[at];
}

/* The series sets: runs of equal labels (one mechanism each). */
static void write_all(FILE *out, const struct served *s, size_t n)
{
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		if (rows[r].help)
			ef_metrics_family(out, rows[r].family, "counter", rows[r].help);
		for (size_t i = 0, j; i < n; i = j) {
			uint64_t sum = 0;
			int at = rows[r].at[s[i].mech];
			for (j = i; j < n && strcmp(s[j].labels, s[i].labels) == 0; j++)
				sum += at >= 0 ? value(&s[j], at) : 0;
			if (at < 0)
				continue;
			fprintf(out, "%s{%s%s%s} %" PRIu64 "\n", rows[r].family, s[i].labels,
				rows[r].labels ? "," : "", rows[r].labels ? rows[r].labels : "", sum);
		}
	}
	ef_metrics_family(out, "epollfix_go_processes", "gauge",
			  "Go processes served now: attached by the agent, or started under a supervisor.");
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && strcmp(s[j].labels, s[i].labels) == 0; j++)
			;
		fprintf(out, "epollfix_go_processes{%s} %zu\n", s[i].labels, j - i);
	}
	ef_metrics_family(out, "epollfix_go_wait_lateness_seconds", "histogram",
			  "How late after the Go runtime's deadline the program had back a wait the agent ended.");
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t late[EF_AGENT_NBUCKETS] = { 0 }, late_ns = 0, cum = 0;
		for (j = i; j < n && strcmp(s[j].labels, s[i].labels) == 0; j++) {
			for (int b = 0; b < EF_AGENT_NBUCKETS; b++)
				late[b] += s[j].ag.late[b];
			late_ns += s[j].ag.late_ns;
		}
		if (s[i].mech != AGENT)
			continue;
		for (int b = 0; b < EF_AGENT_NBUCKETS; b++) {
			cum += late[b];
			if (b == EF_AGENT_NBUCKETS - 1)
				fprintf(out, "epollfix_go_wait_lateness_seconds_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n",
					s[i].labels, cum);
			else
				fprintf(out, "epollfix_go_wait_lateness_seconds_bucket{%s,le=\"%g\"} %" PRIu64 "\n",
					s[i].labels, (double)(1u << b) * 1e-6, cum);
		}
		fprintf(out, "epollfix_go_wait_lateness_seconds_sum{%s} %.9f\n", s[i].labels,
			(double)late_ns * 1e-9);
		fprintf(out, "epollfix_go_wait_lateness_seconds_count{%s} %" PRIu64 "\n", s[i].labels, cum);
	}
}

int ef_gometrics_write(FILE *out, long only, enum ef_metrics_by by)
{
	struct gather g = { .by = by };
	ef_golook_each(only, of_supervisor, &g);
	ef_agentlook_each(only, of_agent, &g);
	if (!g.failed && g.n) {
		qsort(g.s, g.n, sizeof(*g.s), by_labels);
		write_all(out, g.s, g.n);
	}
	for (size_t i = 0; i < g.n; i++)
		free(g.s[i].labels);
	free(g.s);
	return g.failed ? -1 : 0;
}
